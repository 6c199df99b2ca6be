//! The stream file (`.ikps`): what the host's drain writes while a stream launch runs.
//!
//! A stream launch ([`ikp_device::stream`]) keeps each lane's records in a small ring that
//! the host empties while the kernel runs ([`crate::drain`]); this file is where they go,
//! written as they arrive, so memory stays bounded whatever the kernel's length. Every
//! reader of ikp takes it ([`read()`] here; the decoders turn it into a trace).
//!
//! # Format
//!
//! Version 1. Little-endian `u64` words:
//!
//! ```text
//! word 0   FILE_MAGIC ("IKPSFILE")
//! word 1   header_words n << 32 | FILE_VERSION
//! 2..2+n   the stream buffer's header as the host wrote it (ikp_device::stream, # Format:
//!          its magic "IKPSTRM\0", the launch's shape, names, clock sync)
//! then     blocks, each two words then `count` words:
//!            lane << 32 | kind
//!            count << 32 | first
//! ```
//!
//! - kind 1, **records**: `count` records of `lane` (the wire format's records, drop and
//!   stall marks included), the first being the lane's record number `first` (mod 2^32).
//!   A lane's blocks follow each other without gaps: each `first` is the previous block's
//!   `first + count`, the first block's is 0.
//! - kind 2, **lane**: the lane's final state, read after the kernel: its segment without
//!   the ring, `count = PROLOGUE_WORDS + CTRL_WORDS + TRAILER_WORDS + n_counters` words
//!   (start stamps, IDS, CALIB; HEAD, TAIL, STALL_NS, STALLS; end stamps, the count word,
//!   the wait counters); `first` is 0. At most one per lane, after its records.
//! - kind 3, **end**, last in the file (`lane` and `first` 0, `count` 4): records drained,
//!   drain polls, drain wall time in ns, and the largest backlog a poll found in one lane
//!   (records waiting; near the ring's capacity means the drain nearly fell behind).
//!
//! A file without its end block was not finished (the drain stopped, the disk filled): it
//! is refused as truncated, as is one whose blocks do not follow these rules; one of a newer
//! version asks for a newer ikp.
//!
//! Source: this crate (no peer profiler streams records out of a running kernel).

mod read;
mod write;

pub(crate) use read::read_words_releasing;
pub use read::{read, read_words, LaneCapture, StreamCapture, StreamFileError};
pub use write::StreamFileWriter;

pub use ikp_device::stream::file::{block, lane_state_words, END_WORDS, FILE_MAGIC, FILE_VERSION};

/// What the drain did, as the end block records it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrainStats {
    /// Records copied out of the rings (marks included).
    pub records: u64,
    /// Passes over the lanes.
    pub polls: u64,
    /// Wall time from the drain's start to its end, ns.
    pub wall_ns: u64,
    /// The most records one lane had waiting at a poll.
    pub max_backlog: u64,
}

/// True when `bytes` start like a stream file.
pub fn is_stream_file(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[..8] == FILE_MAGIC.to_le_bytes()
}

/// True when `words` start like a stream file.
pub fn is_stream_words(words: &[u64]) -> bool {
    words.first() == Some(&FILE_MAGIC)
}
