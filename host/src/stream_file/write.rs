//! Writes a stream file block by block (see the module's `# Format`).

use super::{block, DrainStats, END_WORDS, FILE_MAGIC, FILE_VERSION};
use std::io::{self, Write};

/// Appends the blocks of a stream file to `W` as the drain produces them. Buffer `W`
/// (a `BufWriter`): blocks are written a few words at a time.
#[derive(Debug)]
pub struct StreamFileWriter<W: Write> {
    out: W,
}

impl<W: Write> StreamFileWriter<W> {
    /// Starts the file: magic, version and the stream buffer's `header` words.
    pub fn new(mut out: W, header: &[u64]) -> io::Result<Self> {
        put(&mut out, FILE_MAGIC)?;
        put(&mut out, (header.len() as u64) << 32 | FILE_VERSION as u64)?;
        put_all(&mut out, header)?;
        Ok(StreamFileWriter { out })
    }

    /// Appends `records` of `lane`, the first being the lane's record number `first`.
    pub fn records(&mut self, lane: u32, first: u32, records: &[u64]) -> io::Result<()> {
        self.block(block::RECORDS, lane, first, records)
    }

    /// Appends `lane`'s final state (its segment without the ring).
    pub fn lane(&mut self, lane: u32, state: &[u64]) -> io::Result<()> {
        self.block(block::LANE, lane, 0, state)
    }

    /// Appends the end block and returns the sink, flushed.
    pub fn finish(mut self, stats: &DrainStats) -> io::Result<W> {
        let words = [stats.records, stats.polls, stats.wall_ns, stats.max_backlog];
        debug_assert_eq!(words.len(), END_WORDS as usize);
        self.block(block::END, 0, 0, &words)?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn block(&mut self, kind: u32, lane: u32, first: u32, words: &[u64]) -> io::Result<()> {
        put(&mut self.out, (lane as u64) << 32 | kind as u64)?;
        put(&mut self.out, (words.len() as u64) << 32 | first as u64)?;
        put_all(&mut self.out, words)
    }
}

fn put(out: &mut impl Write, word: u64) -> io::Result<()> {
    out.write_all(&word.to_le_bytes())
}

fn put_all(out: &mut impl Write, words: &[u64]) -> io::Result<()> {
    out.write_all(bytemuck::cast_slice(words))
}
