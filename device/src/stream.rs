//! The stream wire format, version 1: a launch whose lanes the host drains while the
//! kernel runs.
//!
//! A fixed buffer ([`crate::wire`]) keeps the first records of a lane and drops the rest;
//! a ring keeps the last. A **stream** launch keeps them all: each lane writes into a small
//! ring that the host reads while the kernel runs, so a persistent kernel running for
//! seconds loses nothing it was not told to lose.
//!
//! # Format
//!
//! A stream buffer is a native buffer ([`crate::wire`], `# Format`) with these differences:
//!
//! - word 0 is [`MAGIC`] (`"IKPSTRM\0"`), so no native decoder mistakes it for a trace, and
//!   the low half of word 1 is [`VERSION`] (this module's version, not the native one);
//! - header flags ([`header_flags`]): `WAIT` when the lanes wait for room rather than drop;
//!   the native `RING` flag is never set; `epochs` is 1 and the launch counters unused;
//! - `records_per_lane` (`R`) is the ring's capacity, a power of two of at least
//!   [`MIN_RING`];
//! - each lane segment has [`CTRL_WORDS`] control words between its prologue and its
//!   records, so `lane_stride = LANE_FIXED_WORDS + CTRL_WORDS + R + n_counters`:
//!
//! ```text
//! +0..+3   prologue, as native (start stamps, IDS with lane flag STREAM, CALIB)
//! +4       HEAD: dropped << 32 | stored      device, store-release at system scope
//! +5       TAIL: consumed (low 32 bits)      host, store-release; device load-acquire
//! +6       STALL_NS: ns spent waiting for room (wait mode)     device, before HEAD
//! +7       STALLS: waits for room (wait mode)                  device, before HEAD
//! +8       R ring records: record n (n counted from 0) at index n mod R
//! +8+R     trailer, as native: end stamps, dropped << 32 | stored, wait counters
//! ```
//!
//! `stored` counts the records the lane wrote into its ring and `dropped` the ones it did
//! not (both modulo 2^32). The device publishes HEAD with release semantics at system
//! scope after its record stores, so a host that reads HEAD with acquire semantics then
//! sees records `consumed..stored`; the host writes TAIL after copying them out, and the
//! device reads it with acquire semantics before reusing those slots. The device publishes
//! HEAD at the end of every chunk of `R >> PUBLISH_SHIFT` records (chunks aligned to the
//! ring), when the room it knows of runs out, and at finalize; it reads TAIL only when the
//! room it cached from its last read (`TAIL + R - stored`) is under two records, so a lane
//! whose host keeps up pays one system-scope release per chunk and one system-scope
//! acquire per lap of the ring, and its records are plain stores. (Which records the
//! device publishes when is its own business: the host relies only on HEAD's release and
//! TAIL's acquire.) Counts compare modulo 2^32 (`stored - consumed <= R`).
//!
//! **Full ring.** A ring counts as full when fewer than a chunk's worth of slots
//! (`R >> PUBLISH_SHIFT`, and never fewer than two) are free: a lane whose host lags does
//! not go back to it every few records, each time for a fence and a read across the link
//! that would slow the kernel without a drop or a stall to show for it, and the host gets
//! its records, and hands the slots back, a chunk at a time. In drop mode (the default) a lane
//! whose ring is full counts the record as dropped and goes on; it reads TAIL again on
//! every [`RECHECK`]th drop, so a full ring costs one system-scope load per `RECHECK`
//! records rather than per record. When it next has room it writes a **drop mark** first: a meta record (see [`crate::wire`], `# Event
//! record`) whose region field is [`META_DROPPED`] and whose value is the number of records
//! dropped just before it. In wait mode (header flag `WAIT`, lane flag `STREAM_WAIT`) it
//! sleeps until the ring is no longer full, then writes a **stall
//! mark** (region field [`META_STALLED`], value the ns it waited, saturating) and adds to
//! STALL_NS and STALLS. Marks take their time from the record before them, as counter
//! samples do; so the stream says where in a lane records went missing or waited, not only
//! how many.
//!
//! ## Versioning
//! [`VERSION`] changes with every change to this layout; [`layout_fingerprint`] hashes
//! every constant and a test pins it, as for the native format.

/// `b"IKPSTRM\0"` read as a little-endian `u64`: word 0 of a stream buffer.
pub const MAGIC: u64 = u64::from_le_bytes(*b"IKPSTRM\0");

/// Version of the stream format this build writes and reads.
pub const VERSION: u32 = 1;

/// Control word offsets, from the end of the lane prologue (segment word
/// [`crate::wire::lane::EVENTS`]).
pub mod ctrl {
    /// `dropped << 32 | stored`, published by the device.
    pub const HEAD: u32 = 0;
    /// Records consumed (low 32 bits), written by the host.
    pub const TAIL: u32 = 1;
    /// Nanoseconds the lane waited for room (wait mode).
    pub const STALL_NS: u32 = 2;
    /// Waits for room (wait mode).
    pub const STALLS: u32 = 3;
}

/// Control words per lane segment.
pub const CTRL_WORDS: u32 = 4;

/// Shift of the dropped count in HEAD (stored is the low half).
pub const HEAD_DROPPED_SHIFT: u32 = 32;

/// A lane publishes HEAD at the end of every chunk of `R >> PUBLISH_SHIFT` records.
pub const PUBLISH_SHIFT: u32 = 2;

/// Smallest ring: room for a mark, a record and a publish interval of at least one.
pub const MIN_RING: u32 = 1 << PUBLISH_SHIFT;

/// A full lane in drop mode reads TAIL again on every `RECHECK`th dropped record (a power
/// of two).
pub const RECHECK: u32 = 32;

/// Meta kind of a drop mark: value = records dropped just before it.
pub const META_DROPPED: u32 = 1;

/// Meta kind of a stall mark: value = ns the lane waited for room just before it.
pub const META_STALLED: u32 = 2;

/// How long a waiting lane sleeps between reads of TAIL, ns (`nanosleep`'s hint).
pub const WAIT_SLEEP_NS: u32 = 256;

/// Header flags of a stream buffer (word 3, bits 47..40).
pub mod header_flags {
    /// Lanes wait for room instead of dropping.
    pub const WAIT: u32 = 1 << 1;
    /// Every flag this version defines.
    pub const ALL: u32 = WAIT;
}

/// Lane flags of stream lanes (IDS word bits 39..32, beside [`crate::wire::lane_flags`]).
pub mod lane_flags {
    /// The lane records into a stream ring.
    pub const STREAM: u32 = 1 << 3;
    /// ... and waits for room when it is full.
    pub const STREAM_WAIT: u32 = 1 << 4;
}

/// Kernel-argument flags ([`crate::wire::KernelArg::flags`]).
pub mod arg_flags {
    /// The buffer is a stream buffer: stream lanes record only into one.
    pub const STREAM: u32 = 1 << 0;
}

/// The constants of the stream file (`.ikps`), the file a host drain writes. Its format is
/// specified with its reader and writer (`ikp_host::stream_file`, `# Format`); the numbers
/// live here so that `ikp_host.hpp`'s drain, generated from this crate, writes the same.
pub mod file {
    /// `b"IKPSFILE"` as a little-endian `u64`: word 0 of a stream file.
    pub const FILE_MAGIC: u64 = u64::from_le_bytes(*b"IKPSFILE");

    /// Version of the stream file this build writes and the newest it reads.
    pub const FILE_VERSION: u32 = 1;

    /// Block kinds (the low half of a block's first word).
    pub mod block {
        /// Records of one lane.
        pub const RECORDS: u32 = 1;
        /// One lane's final state.
        pub const LANE: u32 = 2;
        /// The end of the file, with the drain's figures.
        pub const END: u32 = 3;
    }

    /// Words of the end block.
    pub const END_WORDS: u32 = 4;

    /// Words of a lane's final state (the lane block): its segment without the ring.
    pub const fn lane_state_words(n_counters: u32) -> u32 {
        use crate::wire::lane;
        lane::PROLOGUE_WORDS + super::CTRL_WORDS + lane::TRAILER_WORDS + n_counters
    }
}

/// Words per lane segment of a stream buffer.
#[inline]
pub const fn lane_stride(records_per_lane: u32, n_counters: u32) -> u64 {
    crate::wire::lane_stride(records_per_lane, n_counters) + CTRL_WORDS as u64
}

/// Splits HEAD into `(stored, dropped)`.
#[inline]
pub const fn unpack_head(word: u64) -> (u32, u32) {
    (word as u32, (word >> HEAD_DROPPED_SHIFT) as u32)
}

/// A hash of every layout constant of this module and of the native layout it extends.
/// Pinned per [`VERSION`] by a test. [`WAIT_SLEEP_NS`] is not one: how long a lane sleeps
/// changes no word's meaning.
pub const fn layout_fingerprint() -> u64 {
    let parts: [u64; 15] = [
        MAGIC,
        VERSION as u64,
        ctrl::HEAD as u64,
        ctrl::TAIL as u64,
        ctrl::STALL_NS as u64,
        ctrl::STALLS as u64,
        CTRL_WORDS as u64,
        HEAD_DROPPED_SHIFT as u64,
        PUBLISH_SHIFT as u64,
        RECHECK as u64,
        META_DROPPED as u64 | (META_STALLED as u64) << 8,
        header_flags::WAIT as u64,
        lane_flags::STREAM as u64 | (lane_flags::STREAM_WAIT as u64) << 8,
        arg_flags::STREAM as u64,
        crate::wire::layout_fingerprint(),
    ];
    crate::wire::fnv1a(&parts)
}

const _: () = assert!(RECHECK.is_power_of_two());
const _: () = assert!(
    lane_flags::STREAM & crate::wire::lane_flags::CLOCK == 0
        && lane_flags::STREAM & crate::wire::lane_flags::BLOCK_FENCE == 0
        && lane_flags::STREAM & crate::wire::lane_flags::RING == 0
);
const _: () = assert!(header_flags::WAIT & crate::wire::header_flags::ALL == 0);
