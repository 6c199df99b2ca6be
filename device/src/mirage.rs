//! The format of Mirage's persistent-kernel (MPK) profiler: the TVM slot layout
//! ([`crate::tvm`]) with the tag repacked to carry an event number, kept here so that the
//! decoder, the samples and the tests pack and unpack it through one definition.
//!
//! # Format
//!
//! Source: mirage-project/mirage, `include/mirage/persistent_kernel/profiler.h`
//! (`encode_tag`, `make_event_tag_*`, `PROFILER_INIT`, `PROFILER_EVENT_*`),
//! `include/mirage/persistent_kernel/persistent_kernel.cuh` (where the worker records its
//! tasks) and `python/mirage/mpk/profiler_persistent.py` (`decode_tag`), read at commit
//! `de8745d`.
//!
//! ```text
//! slot 0                  groups << 32 | blocks       (block 0, thread 0)
//! slot 1 + lane + k * S   record k of lane `lane`     S = blocks * groups,
//!                                                     lane = block * groups + group
//! record                  globaltimer_lo << 32 | event_no << 19 | lane << 11 | event << 2 | type
//! ```
//! What the source says, field by field:
//! - `type` (bits 0–1): [`BEGIN`], [`END`] or [`INSTANT`]. There is no finalize record:
//!   type 3 is never written.
//! - `event` (bits 2–10): the event id, 9 bits. The persistent kernel records the task
//!   type there (`PROFILER_EVENT_START(task_desc->task_type, ..)`; the exporter's names
//!   table runs up to 302), and `TASK_SCHD_EVENTS` around the scheduling of a triggered
//!   event.
//! - `lane` (bits 11–18): `block * groups + group`, 8 bits, so at most [`MAX_LANES`]
//!   lanes; a larger lane id spills into the event number. The persistent kernel runs one
//!   group per block (its workers; scheduler blocks of the same grid record nothing).
//! - `event_no` (bits 19–31, 13 bits): the worker's running task count
//!   (`task_counter`), the same in a task's begin and end and incremented at each end: the
//!   n-th region the worker recorded. It wraps at 2^13 (the shift drops the higher bits).
//!   The exporter appends it to the event's name; ikp keeps it as the span's payload.
//! - As in FlashInfer, an instant does not advance the lane's write pointer: the lane's
//!   next record overwrites it. (The persistent kernel records no instants.)

/// Shift of the lane field.
pub const LANE_SHIFT: u32 = 11;
/// Bits of the lane field.
pub const LANE_BITS: u32 = 8;
/// Bits of the event field.
pub const EVENT_BITS: u32 = 9;
/// Shift of the event-number field.
pub const EVENT_NO_SHIFT: u32 = 19;
/// Bits of the event-number field.
pub const EVENT_NO_BITS: u32 = 13;
/// Largest number of lanes (`blocks * groups`) the lane field can name.
pub const MAX_LANES: u64 = 1 << LANE_BITS;
/// The lane field's bits in a record.
pub const LANE_MASK: u64 = (MAX_LANES - 1) << LANE_SHIFT;

/// The record types (TVM's, without its finalize).
pub use crate::tvm::{BEGIN, END, INSTANT};

/// Packs a record as `make_event_tag_*` does, with the stamp in the high half: fields are
/// shifted but not masked, so a lane of [`MAX_LANES`] or more spills into the event
/// number, an event id of 2^9 or more into the lane, and bits past 32 are lost, as on the
/// device.
pub const fn pack(time_lo: u32, lane: u32, event: u32, event_no: u32, kind: u32) -> u64 {
    let tag = (lane << LANE_SHIFT) | (event << 2) | (event_no << EVENT_NO_SHIFT) | kind;
    (time_lo as u64) << 32 | tag as u64
}

/// The lane field of a record.
#[inline(always)]
pub const fn lane_of(w: u64) -> u64 {
    (w & LANE_MASK) >> LANE_SHIFT
}

/// The event field of a record.
#[inline(always)]
pub const fn event_of(w: u64) -> u32 {
    ((w >> 2) & ((1 << EVENT_BITS) - 1)) as u32
}

/// The event-number field of a record.
#[inline(always)]
pub const fn event_no_of(w: u64) -> u32 {
    (w as u32) >> EVENT_NO_SHIFT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_and_unpack_agree() {
        let w = pack(0xDEAD_BEEF, 255, 511, 8191, INSTANT);
        assert_eq!(w >> 32, 0xDEAD_BEEF);
        assert_eq!((lane_of(w), event_of(w), event_no_of(w)), (255, 511, 8191));
        assert_eq!(w & 3, INSTANT as u64);
        // The layout of profiler.h: event_no << 19 | lane << 11 | event << 2 | type.
        assert_eq!(pack(0, 5, 201, 7, END), 7 << 19 | 5 << 11 | 201 << 2 | 1);
        // The task counter wraps at 2^13; lane 256 spills into the event number.
        assert_eq!(event_no_of(pack(0, 0, 0, 8192 + 3, BEGIN)), 3);
        assert_eq!(event_no_of(pack(0, 256, 0, 0, BEGIN)), 1);
    }
}
