//! The writer's output: a buffer of whole packets, written to the underlying writer as
//! they are, or as one `compressed_packets` bundle each time it fills (the module's
//! `# Format`, **Compression**).

use std::io;

use super::{enc, Compression};

/// Output buffered before a write to the underlying writer.
const FLUSH_AT: usize = 1 << 20;
/// Uncompressed bytes per `compressed_packets` bundle: Perfetto asks for bundles below
/// 512 KiB, and deflate never grows data by more than a few bytes per 16 KiB.
const BUNDLE_AT: usize = 480 << 10;

/// The output buffer and the writer it is flushed to.
pub(super) struct Sink<W: io::Write> {
    out: W,
    /// `buf[..pos]` is pending; `buf.len()` is its size, fixed unless one packet needs
    /// more. The lane event loop encodes straight into it.
    pub(super) buf: Vec<u8>,
    pub(super) pos: usize,
    /// Framing scratch of a bundle.
    frame: Vec<u8>,
    /// The deflate stream state and output, when compressing.
    deflate: Option<(flate2::Compress, Vec<u8>)>,
    /// Bytes written to `out`.
    pub(super) bytes: u64,
}

impl<W: io::Write> Sink<W> {
    pub(super) fn new(out: W, compression: Compression) -> Self {
        let (size, deflate) = match compression {
            Compression::None => (FLUSH_AT, None),
            Compression::Deflate => {
                let z = flate2::Compress::new(flate2::Compression::fast(), true);
                (BUNDLE_AT, Some((z, Vec::new())))
            }
        };
        Sink {
            out,
            buf: vec![0; size],
            pos: 0,
            frame: Vec::new(),
            deflate,
            bytes: 0,
        }
    }

    /// Writes the pending output (whole packets) to the writer, as one
    /// `compressed_packets` bundle when compressing.
    pub(super) fn flush_buf(&mut self) -> io::Result<()> {
        if self.pos == 0 {
            return Ok(());
        }
        let Some((z, zbuf)) = &mut self.deflate else {
            self.out.write_all(&self.buf[..self.pos])?;
            self.bytes += self.pos as u64;
            self.pos = 0;
            return Ok(());
        };
        let input = &self.buf[..self.pos];
        z.reset();
        zbuf.clear();
        zbuf.reserve(input.len() + input.len() / 64 + 64);
        loop {
            let consumed = z.total_in() as usize;
            let status = z
                .compress_vec(&input[consumed..], zbuf, flate2::FlushCompress::Finish)
                .map_err(io::Error::other)?;
            match status {
                flate2::Status::StreamEnd => break,
                _ => zbuf.reserve(zbuf.len().max(4096)),
            }
        }
        self.frame.clear();
        enc::put_compressed_bundle(&mut self.frame, zbuf.len());
        self.out.write_all(&self.frame)?;
        self.out.write_all(zbuf)?;
        self.bytes += (self.frame.len() + zbuf.len()) as u64;
        self.pos = 0;
        Ok(())
    }

    /// Makes room for `n` more bytes in the buffer.
    #[inline]
    pub(super) fn room(&mut self, n: usize) -> io::Result<()> {
        if self.pos + n > self.buf.len() {
            self.flush_buf()?;
            if n > self.buf.len() {
                self.buf.resize(n, 0);
            }
        }
        Ok(())
    }

    pub(super) fn put_bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.room(b.len())?;
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
        Ok(())
    }

    /// Writes what is pending and flushes the writer.
    pub(super) fn finish(&mut self) -> io::Result<()> {
        self.flush_buf()?;
        self.out.flush()
    }
}
