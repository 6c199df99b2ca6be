//! Reading raw buffers: a file (or bytes) becomes a validated little-endian `u64` view.
//!
//! Both wire formats are arrays of little-endian `u64` words, so the only checks that
//! belong here are the ones that do not depend on the format: the input is not empty and
//! its length is a whole number of words. Everything else is the decoders' job.

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
        // A file that grew while we read it is still read as it was at open time.
        if cfg!(target_endian = "big") {
            for w in &mut words {
                *w = u64::from_le(*w);
            }
        }
        Ok(RawBuffer {
            name: path.to_path_buf(),
            words,
        })
    }

    /// Wraps little-endian bytes.
    pub fn from_bytes(name: impl Into<PathBuf>, bytes: &[u8]) -> Result<RawBuffer, BufferError> {
        check_len(bytes.len() as u64)?;
        let words = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("chunks_exact(8)")))
            .collect();
        Ok(RawBuffer {
            name: name.into(),
            words,
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

fn check_len(len: u64) -> Result<(), BufferError> {
    if len == 0 {
        return Err(BufferError::Empty);
    }
    if !len.is_multiple_of(8) {
        return Err(BufferError::NotWordAligned { len });
    }
    Ok(())
}
