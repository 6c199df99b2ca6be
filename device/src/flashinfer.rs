//! FlashInfer's profiler format with SM ids: the TVM slot layout ([`crate::tvm`]) with the
//! tag repacked to carry the block's SM, kept here so that the decoder, the samples and
//! the tests pack and unpack it through one definition.
//!
//! # Format
//!
//! Source: flashinfer-ai/flashinfer, `include/flashinfer/profiler.cuh` (`encode_tag`,
//! `PROFILER_INIT`, `PROFILER_EVENT_*`) and `flashinfer/profiler/__init__.py`
//! (`decode_tag`, `export_to_perfetto_trace`), read at commit `fb28d72` (the same files
//! ship in the flashinfer-python 0.7.2 wheel). The SM id entered the tag in FlashInfer PR
//! #1305; before it FlashInfer wrote the TVM format.
//!
//! ```text
//! slot 0                  groups << 32 | blocks       (block 0, thread 0)
//! slot 1 + lane + k * S   record k of lane `lane`     S = blocks * groups,
//!                                                     lane = block * groups + group
//! record                  globaltimer_lo << 32 | sm << 24 | block << 12 | event << 2 | type
//! ```
//! What the source says, field by field:
//! - `type` (bits 0–1): [`BEGIN`], [`END`] or [`INSTANT`]. There is no finalize record:
//!   type 3 is never written.
//! - `event` (bits 2–11): the event index, 10 bits.
//! - bits 12–23: the device stores the **block index** there
//!   (`encode_tag(%smid, get_block_idx(), ..)`), not `block * groups + group`; a lane's
//!   group is only known from its slot. (FlashInfer's Python exporter reads the field as
//!   `block * groups + group` and divides by `groups`, which agrees with its device code
//!   only when `groups == 1`.) The field has 12 bits: a block index of [`MAX_BLOCKS`] or
//!   more overflows into the SM field, so such a launch cannot be recorded faithfully.
//! - `sm` (bits 24–31): `%smid` of the thread, read once in `PROFILER_INIT`, so every
//!   record of a lane carries the same SM.
//! - An instant does not advance the lane's write pointer (`PROFILER_EVENT_INSTANT` stores
//!   without `+= stride`): the lane's next record overwrites it, so an instant survives
//!   only as a lane's last record.

/// Shift of the block field.
pub const BLOCK_SHIFT: u32 = 12;
/// Bits of the block field.
pub const BLOCK_BITS: u32 = 12;
/// Shift of the SM field.
pub const SM_SHIFT: u32 = 24;
/// Bits of the SM field.
pub const SM_BITS: u32 = 8;
/// Bits of the event field.
pub const EVENT_BITS: u32 = 10;
/// Largest number of blocks the block field can name.
pub const MAX_BLOCKS: u64 = 1 << BLOCK_BITS;
/// The block field's bits in a record.
pub const BLOCK_MASK: u64 = (MAX_BLOCKS - 1) << BLOCK_SHIFT;
/// The SM field's bits in a record.
pub const SM_MASK: u64 = ((1 << SM_BITS) - 1) << SM_SHIFT;

/// The record types (TVM's, without its finalize) and the event field, as in TVM's format.
pub use crate::tvm::{event_of, BEGIN, END, INSTANT};
const _: () = assert!(EVENT_BITS == crate::tvm::EVENT_BITS);

/// Packs a record as `encode_tag` does, with the stamp in the high half: fields are
/// shifted but not masked, so a block index of [`MAX_BLOCKS`] or more spills into the SM
/// field and bits past 32 are lost, as on the device.
pub const fn pack(time_lo: u32, sm: u32, block: u32, event: u32, kind: u32) -> u64 {
    let tag = (sm << SM_SHIFT) | (block << BLOCK_SHIFT) | (event << 2) | kind;
    (time_lo as u64) << 32 | tag as u64
}

/// The block field of a record.
#[inline(always)]
pub const fn block_of(w: u64) -> u64 {
    (w & BLOCK_MASK) >> BLOCK_SHIFT
}

/// The SM field of a record.
#[inline(always)]
pub const fn sm_of(w: u64) -> u32 {
    ((w & SM_MASK) >> SM_SHIFT) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_and_unpack_agree() {
        let w = pack(0xDEAD_BEEF, 131, 4095, 1023, INSTANT);
        assert_eq!(w >> 32, 0xDEAD_BEEF);
        assert_eq!((sm_of(w), block_of(w), event_of(w)), (131, 4095, 1023));
        assert_eq!(w & 3, INSTANT as u64);
        // The layout of profiler.cuh: sm << 24 | block << 12 | event << 2 | type.
        assert_eq!(pack(0, 7, 5, 3, END), 7 << 24 | 5 << 12 | 3 << 2 | 1);
        // Block 4096 spills into the SM field, as the device's unmasked shift does.
        assert_eq!(sm_of(pack(0, 2, 4096, 0, BEGIN)), 3);
    }
}
