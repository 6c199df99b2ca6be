//! The TVM / warpscope v1 wire format (also FlashInfer's before it recorded SM ids): the
//! record packing the peers' kernels write, kept here beside ikp's own format so that the
//! decoder, the samples and the tests pack and unpack it through one definition. Its slot
//! layout is shared by [`crate::flashinfer`] and [`crate::mirage`], which repack the tag.
//!
//! # Format
//!
//! Source: the TVM TIRx `CudaProfiler` tutorial (apache/tvm), also written by FlashInfer's
//! profiler before its PR #1305 and by warpscope (PyPI `warpscope`, `warpscope/_decode.py`); the
//! citations are listed in the repository's `docs/references.md`.
//!
//! An array of little-endian `u64` slots, zeroed before launch.
//!
//! ```text
//! slot 0                  groups << 32 | blocks        (written by block 0, thread 0)
//! slot 1 + lane + k * S   record k of lane `lane`      S = blocks * groups
//! record                  globaltimer_lo << 32 | lane << 12 | event << 2 | type
//! ```
//! - `lane = block * groups + group` ([`LANE_BITS`] bits), `event` a 10-bit id, `type`
//!   [`BEGIN`], [`END`], [`INSTANT`] or [`FINALIZE`]. A zero slot is empty.
//! - There are no names, no payload, no SM / warp ids and no drop counts in this format.

/// Bits of the lane field of a record's tag.
pub const LANE_BITS: u32 = 20;
/// Shift of the lane field.
pub const LANE_SHIFT: u32 = 12;
/// Bits of the event (region) field.
pub const EVENT_BITS: u32 = 10;
/// Largest number of lanes (`blocks * groups`) the lane field can name.
pub const MAX_LANES: u64 = 1 << LANE_BITS;

/// Record type: a region begins.
pub const BEGIN: u32 = 0;
/// Record type: a region ends.
pub const END: u32 = 1;
/// Record type: a point event.
pub const INSTANT: u32 = 2;
/// Record type: the lane finished.
pub const FINALIZE: u32 = 3;

/// Slot 0 of a buffer of `blocks` blocks with `groups` lanes each.
pub const fn header(groups: u32, blocks: u32) -> u64 {
    (groups as u64) << 32 | blocks as u64
}

/// `(groups, blocks)` of slot 0.
pub const fn unpack_header(w0: u64) -> (u64, u64) {
    (w0 >> 32, w0 & 0xFFFF_FFFF)
}

/// Packs a record: the low 32 bits of the timer, the lane, the event id and the type
/// (fields wider than their bits are truncated, as the device's shifts and masks do).
pub const fn pack(time_lo: u32, lane: u32, event: u32, kind: u32) -> u64 {
    ((time_lo as u64) << 32)
        | ((lane as u64 & (MAX_LANES - 1)) << LANE_SHIFT)
        | ((event as u64 & ((1 << EVENT_BITS) - 1)) << 2)
        | (kind as u64 & 3)
}

/// The lane field of a record.
#[inline(always)]
pub const fn lane_of(w: u64) -> u64 {
    (w >> LANE_SHIFT) & (MAX_LANES - 1)
}

/// The event field of a record.
#[inline(always)]
pub const fn event_of(w: u64) -> u32 {
    ((w >> 2) & ((1 << EVENT_BITS) - 1)) as u32
}

/// The type field of a record.
#[inline(always)]
pub const fn kind_of(w: u64) -> u32 {
    (w & 3) as u32
}

/// A buffer of this slot layout being written, as the peers' kernels write it: each lane's
/// write pointer starts at slot `1 + lane` and moves `blocks * groups` slots per record.
/// Shared by the encoders of every format of this family ([`crate::flashinfer`],
/// [`crate::mirage`]), which differ only in their tags.
#[derive(Clone, Debug)]
pub struct Slots {
    words: Vec<u64>,
    stride: usize,
    /// Per lane: records its write pointer has moved past.
    next: Vec<usize>,
}

impl Slots {
    /// An empty buffer of `blocks` blocks with `groups` lanes each, slot 0 written.
    pub fn new(groups: u32, blocks: u32) -> Slots {
        let stride = groups as usize * blocks as usize;
        Slots {
            words: vec![header(groups, blocks)],
            stride,
            next: vec![0; stride],
        }
    }

    /// Stores `w` at the write pointer of `lane` and advances it.
    pub fn push(&mut self, lane: u32, w: u64) {
        self.store(lane, w);
        self.next[lane as usize] += 1;
    }

    /// Stores `w` at the write pointer of `lane` without advancing it (as FlashInfer's and
    /// Mirage's instants do: the lane's next record overwrites it).
    pub fn store(&mut self, lane: u32, w: u64) {
        let at = 1 + lane as usize + self.next[lane as usize] * self.stride;
        if at >= self.words.len() {
            // Whole rows, so that every lane has a slot in the last one.
            self.words
                .resize(1 + (at / self.stride + 1) * self.stride, 0);
        }
        self.words[at] = w;
    }

    /// The buffer: slot 0 and as many rows as the longest lane needs.
    pub fn into_words(self) -> Vec<u64> {
        self.words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_and_unpack_agree() {
        let w = pack(0xDEAD_BEEF, 0xF_FFFF, 1023, FINALIZE);
        assert_eq!(w >> 32, 0xDEAD_BEEF);
        assert_eq!(lane_of(w), 0xF_FFFF);
        assert_eq!(event_of(w), 1023);
        assert_eq!(kind_of(w), FINALIZE);
        // The layout the tutorial gives: lane << 12 | event << 2 | type.
        assert_eq!(pack(0, 5, 3, END), 5 << 12 | 3 << 2 | 1);
        assert_eq!(unpack_header(header(3, 132)), (3, 132));
    }

    #[test]
    fn slots_lay_each_lane_in_its_column_and_an_unadvanced_store_is_overwritten() {
        let mut s = Slots::new(2, 3);
        s.push(4, 10);
        s.store(1, 11);
        s.push(1, 12);
        s.push(1, 13);
        s.store(5, 14);
        let w = s.into_words();
        // Two rows of six lanes: lane 1's first store was overwritten by its next record;
        // lane 5's last store stays.
        assert_eq!(w.len(), 1 + 2 * 6);
        assert_eq!(w[0], header(2, 3));
        assert_eq!(
            (w[1 + 4], w[1 + 1], w[1 + 1 + 6], w[1 + 5]),
            (10, 12, 13, 14)
        );
        assert_eq!(w.iter().filter(|&&x| x != 0).count(), 5);
    }
}
