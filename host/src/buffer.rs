//! Reading raw buffers: a file (or bytes) becomes a validated little-endian `u64` view.
//!
//! The binary formats are arrays of little-endian `u64` words, so the only checks that
//! belong here are the ones that do not depend on the format: the input is not empty and
//! its length is a whole number of words. Everything else is the decoders' job. (A Proton
//! trace is JSON text: [`crate::decode::load`] reads it without these checks.)
//!
//! [`RawBuffer`] owns its words; [`MappedBuffer`] maps a file instead, so a multi-GB
//! buffer is never copied into memory, and can hand pages it has finished with back to
//! the kernel ([`MappedBuffer::release`]) so that a streaming decode keeps its resident
//! set bounded.

use std::path::{Path, PathBuf};

/// Why a buffer could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BufferError {
    /// The file could not be read.
    #[error("cannot read the buffer: {0}")]
    Io(#[from] std::io::Error),
    /// Zero bytes.
    #[error("the buffer is empty (0 bytes)")]
    Empty,
    /// Not a whole number of 8-byte words.
    #[error("the buffer is {len} bytes, not a multiple of 8 (a buffer is an array of u64 words): truncated or not a trace")]
    NotWordAligned {
        /// Length in bytes.
        len: u64,
    },
}

/// A buffer of little-endian `u64` words and the name it came from (a path, or a label
/// for in-memory buffers), so that every later error can say which input it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawBuffer {
    /// Where the words came from.
    pub name: PathBuf,
    /// The words, in host order.
    pub words: Vec<u64>,
}

impl RawBuffer {
    /// Reads a whole file. The words are read straight into an aligned `Vec<u64>`, so the
    /// file's bytes are held once, not twice.
    pub fn read(path: &Path) -> Result<RawBuffer, BufferError> {
        use std::io::Read;
        let mut f = std::fs::File::open(path)?;
        let len = f.metadata()?.len();
        check_len(len)?;
        let n = (len / 8) as usize;
        let mut words = vec![0u64; n];
        f.read_exact(bytemuck::cast_slice_mut(&mut words))?;
        // A file that grew while we read it is still read as it was at open time. The
        // words are little-endian (a no-op on little-endian hosts).
        words.iter_mut().for_each(|w| *w = u64::from_le(*w));
        Ok(RawBuffer {
            name: path.to_path_buf(),
            words,
        })
    }

    /// Wraps little-endian bytes.
    pub fn from_bytes(name: impl Into<PathBuf>, bytes: &[u8]) -> Result<RawBuffer, BufferError> {
        check_len(bytes.len() as u64)?;
        Ok(RawBuffer {
            name: name.into(),
            words: le_words(bytes),
        })
    }

    /// Wraps words already in memory (a device read-back).
    pub fn from_words(name: impl Into<PathBuf>, words: Vec<u64>) -> Result<RawBuffer, BufferError> {
        if words.is_empty() {
            return Err(BufferError::Empty);
        }
        Ok(RawBuffer {
            name: name.into(),
            words,
        })
    }
}

/// A buffer file mapped read-only into memory (little-endian hosts; see
/// [`MappedBuffer::open`]).
///
/// The mapping is shared with the page cache: nothing is read until a word is touched,
/// and [`MappedBuffer::release`] drops pages from this process again. The file must not be
/// modified or truncated while it is mapped (ikp only reads it; a writer racing with the
/// decode could make it see inconsistent words, and a truncation ends the process with
/// SIGBUS, as for any mapped file).
#[derive(Debug)]
pub(crate) struct MappedBuffer {
    /// Where the words came from.
    pub name: PathBuf,
    map: memmap2::Mmap,
}

impl MappedBuffer {
    /// Maps a whole file. Fails like [`RawBuffer::read`] on an empty or ragged file, and
    /// with an I/O error where mapping is impossible (a pipe, big-endian hosts): callers
    /// fall back to [`RawBuffer::read`].
    pub fn open(path: &Path) -> Result<MappedBuffer, BufferError> {
        let f = std::fs::File::open(path)?;
        let meta = f.metadata()?;
        check_len(meta.len())?;
        if cfg!(target_endian = "big") || !meta.is_file() {
            return Err(BufferError::Io(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "cannot map this input (not a regular file, or a big-endian host)",
            )));
        }
        // SAFETY: read-only private view of a regular file; see the type's docs for the
        // (documented, unavoidable) concurrent-modification caveat.
        let map = unsafe { memmap2::MmapOptions::new().map(&f)? };
        let _ = map.advise(memmap2::Advice::Sequential);
        Ok(MappedBuffer {
            name: path.to_path_buf(),
            map,
        })
    }

    /// The words (the mapping is page-aligned, so the cast cannot fail).
    pub fn words(&self) -> &[u64] {
        bytemuck::cast_slice(&self.map[..])
    }

    /// Drops the pages holding `words` (rounded outward to whole pages) from this
    /// process's resident set; touching them again reads them back from the page cache or
    /// the file. Best effort: errors are ignored.
    pub fn release(&self, words: std::ops::Range<usize>) {
        const PAGE: usize = 4096;
        let len = self.map.len();
        let start = (words.start * 8).min(len) / PAGE * PAGE;
        let end = (words.end * 8).div_ceil(PAGE).saturating_mul(PAGE).min(len);
        if end > start {
            // SAFETY: the mapping is read-only and file-backed: MADV_DONTNEED only drops
            // pages, which are read back from the file on the next access; no reference
            // into the mapping is invalidated.
            let _ = unsafe {
                self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    start,
                    end - start,
                )
            };
        }
    }
}

/// Little-endian bytes as words (a trailing partial word dropped).
pub(crate) fn le_words(bytes: &[u8]) -> Vec<u64> {
    let word = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("chunks_exact(8)"));
    bytes.chunks_exact(8).map(word).collect()
}

fn check_len(len: u64) -> Result<(), BufferError> {
    match len {
        0 => Err(BufferError::Empty),
        _ if !len.is_multiple_of(8) => Err(BufferError::NotWordAligned { len }),
        _ => Ok(()),
    }
}
