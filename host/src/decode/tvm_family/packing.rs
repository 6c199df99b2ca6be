//! The TVM family of formats: one slot layout (`ikp_device::tvm`, `# Format`), three
//! packings of the record's tag. [`Family`] says where a format keeps the fields the
//! decoder checks and reads; the decoder ([`super`]) is generic over it, so each
//! format's hot loops are compiled for its own fields and TVM's are the same as before.
//!
//! | format | its record's tag (low 32 bits) | what names the slot | more |
//! |---|---|---|---|
//! | [`Tvm`] | `lane << 12 \| event << 2 \| type` | lane, 20 bits | type 3 finalizes |
//! | [`FlashInfer`] | `sm << 24 \| block << 12 \| event << 2 \| type` | block, 12 bits | SM id per lane |
//! | [`Mirage`] | `event_no << 19 \| lane << 11 \| event << 2 \| type` | lane, 8 bits | event number as payload |
//!
//! The formats are specified in `ikp_device::tvm`, `ikp_device::flashinfer` and
//! `ikp_device::mirage` (`# Format`, with their sources).

use super::super::{DecodeError, Probe};
use crate::model::WireFormat;
use ikp_device::{flashinfer as fi, mirage as mpk, tvm};

/// Where a format of the TVM family keeps the fields of its records' tags.
pub(crate) trait Family: Copy + Send + Sync + 'static {
    /// The format.
    const FORMAT: WireFormat;
    /// Bits of a record that say which slot column it belongs to (its lane, or its
    /// block): they must equal [`Family::slot_bits`] of the lane of its slot.
    const SLOT_MASK: u64;
    /// Bits of a record that hold its lane's SM (0: the format has none). All records of
    /// a lane must agree.
    const SM_MASK: u64;
    /// Whether type 3 finalizes the lane (TVM). Otherwise the format never writes it,
    /// and a record of type 3 is an error.
    const FINALIZE: bool;
    /// Whether [`Family::slot_bits`] divides by the groups (the slot is named by its
    /// block): the counting pass then reads them from a table instead.
    const BY_BLOCK: bool;
    /// Whether records carry a payload: the walk then reads [`Family::walk_word`]'s
    /// words as ikp records (payload in bits 12..32).
    const PAYLOAD: bool;
    /// Checks slot 0's `(groups, blocks)`, both already at least 1.
    fn check_header(groups: u64, blocks: u64) -> Result<(), &'static str>;
    /// The error for an unusable slot 0.
    fn header_error(word: u64, why: &'static str) -> DecodeError;
    /// The slot bits the records of `lane` carry.
    fn slot_bits(lane: usize, groups: usize) -> u64;
    /// A record as the lane walk reads it: kind in bits 0..2, event in 2..12, and (with
    /// [`Family::PAYLOAD`]) the payload in 12..32.
    #[inline(always)]
    fn walk_word(w: u64) -> u64 {
        w
    }
    /// The SM of a lane whose first record is `w`.
    #[inline(always)]
    fn sm(_w: u64) -> Option<u32> {
        None
    }
    /// The error for record `w` at body index `at` (slot `at + 1`), which is not what its
    /// slot allows: wrong slot bits, type 3 where there is no finalize, or an SM other
    /// than that of `first`, its lane's first record.
    fn bad_record(at: usize, w: u64, first: u64, groups: usize, stride: usize) -> DecodeError;
}

/// Whether `w`, a record in the column of lane `lane` whose first record is `first`, is
/// one the format allows there (the checks of [`Family::bad_record`]).
#[inline(always)]
pub(crate) fn allowed<L: Family>(w: u64, lane: usize, first: u64, groups: usize) -> bool {
    let want = L::slot_bits(lane, groups) | (first & L::SM_MASK);
    (w ^ want) & (L::SLOT_MASK | L::SM_MASK) == 0 && (L::FINALIZE || w & 3 != 3)
}

/// `(groups, blocks)` of slot 0 if they make a usable layout of format `L`.
pub(crate) fn header<L: Family>(w0: u64) -> Result<(u64, u64), DecodeError> {
    let (groups, blocks) = tvm::unpack_header(w0);
    let why = if groups == 0 || blocks == 0 {
        Err("groups and blocks must both be at least 1")
    } else {
        L::check_header(groups, blocks)
    };
    why.map(|()| (groups, blocks))
        .map_err(|why| L::header_error(w0, why))
}

/// TVM / warpscope.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tvm;

impl Family for Tvm {
    const FORMAT: WireFormat = WireFormat::Tvm;
    const SLOT_MASK: u64 = (tvm::MAX_LANES - 1) << tvm::LANE_SHIFT;
    const SM_MASK: u64 = 0;
    const FINALIZE: bool = true;
    const BY_BLOCK: bool = false;
    const PAYLOAD: bool = false;

    fn check_header(groups: u64, blocks: u64) -> Result<(), &'static str> {
        if groups * blocks > tvm::MAX_LANES {
            return Err("blocks x groups exceeds the 2^20 lanes the 20-bit lane field can name");
        }
        Ok(())
    }

    fn header_error(word: u64, why: &'static str) -> DecodeError {
        DecodeError::TvmHeader { word, why }
    }

    #[inline(always)]
    fn slot_bits(lane: usize, _groups: usize) -> u64 {
        (lane as u64) << tvm::LANE_SHIFT
    }

    fn bad_record(at: usize, w: u64, _first: u64, _groups: usize, stride: usize) -> DecodeError {
        DecodeError::TvmLane {
            slot: at as u64 + 1,
            word: w,
            found: tvm::lane_of(w),
            expected: (at % stride) as u64,
            stride: stride as u64,
        }
    }
}

/// The error for a record of a format other than TVM: the format, the slot, the word.
fn record_error(format: WireFormat, at: usize, w: u64, why: String) -> DecodeError {
    DecodeError::Record {
        format,
        slot: at as u64 + 1,
        word: w,
        why,
    }
}

/// Why a record of a format without finalize has type 3.
fn type_3(format: WireFormat) -> String {
    format!("is of type 3, which {format}'s profiler never writes (it writes begin 0, end 1 and instant 2; type 3 is TVM's finalize)")
}

/// FlashInfer with SM ids.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FlashInfer;

impl Family for FlashInfer {
    const FORMAT: WireFormat = WireFormat::FlashInfer;
    const SLOT_MASK: u64 = fi::BLOCK_MASK;
    const SM_MASK: u64 = fi::SM_MASK;
    const FINALIZE: bool = false;
    const BY_BLOCK: bool = true;
    const PAYLOAD: bool = false;

    fn check_header(groups: u64, blocks: u64) -> Result<(), &'static str> {
        if blocks > fi::MAX_BLOCKS {
            return Err("more than the 4096 blocks the 12-bit block field can name (a larger block index spills into the SM field)");
        }
        if groups * blocks > tvm::MAX_LANES {
            return Err("blocks x groups exceeds the 2^20 lanes ikp decodes in this slot layout");
        }
        Ok(())
    }

    fn header_error(word: u64, why: &'static str) -> DecodeError {
        DecodeError::SlotHeader {
            format: WireFormat::FlashInfer,
            word,
            why,
        }
    }

    #[inline(always)]
    fn slot_bits(lane: usize, groups: usize) -> u64 {
        ((lane / groups) as u64) << fi::BLOCK_SHIFT
    }

    #[inline(always)]
    fn sm(w: u64) -> Option<u32> {
        Some(fi::sm_of(w))
    }

    fn bad_record(at: usize, w: u64, first: u64, groups: usize, stride: usize) -> DecodeError {
        let lane = at % stride;
        let (block, group) = (lane / groups, lane % groups);
        let why = if w & 3 == 3 {
            type_3(WireFormat::FlashInfer)
        } else if fi::block_of(w) != block as u64 {
            let out = if fi::block_of(w) >= (stride / groups) as u64 {
                " (block id out of range)"
            } else {
                ""
            };
            format!(
                "names block {}, but the layout (stride {stride} = blocks x groups, {groups} groups) puts block {block}, group {group} there{out}",
                fi::block_of(w)
            )
        } else {
            format!(
                "says SM {}, but the first record of its lane (block {block}, group {group}) says SM {}: a lane's records all carry the SM its block ran on",
                fi::sm_of(w),
                fi::sm_of(first)
            )
        };
        record_error(WireFormat::FlashInfer, at, w, why)
    }
}

/// Mirage's persistent-kernel profiler.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mirage;

impl Family for Mirage {
    const FORMAT: WireFormat = WireFormat::Mirage;
    const SLOT_MASK: u64 = mpk::LANE_MASK;
    const SM_MASK: u64 = 0;
    const FINALIZE: bool = false;
    const BY_BLOCK: bool = false;
    const PAYLOAD: bool = true;

    fn check_header(groups: u64, blocks: u64) -> Result<(), &'static str> {
        if groups * blocks > mpk::MAX_LANES {
            return Err("blocks x groups exceeds the 256 lanes the 8-bit lane field can name (a larger lane id spills into the event number)");
        }
        Ok(())
    }

    fn header_error(word: u64, why: &'static str) -> DecodeError {
        DecodeError::SlotHeader {
            format: WireFormat::Mirage,
            word,
            why,
        }
    }

    #[inline(always)]
    fn slot_bits(lane: usize, _groups: usize) -> u64 {
        (lane as u64) << mpk::LANE_SHIFT
    }

    /// The event number moves to bits 12..25, the payload of an ikp record; the event id
    /// (9 bits) stays in bits 2..11 and bit 11, the lane field's lowest, is cleared.
    #[inline(always)]
    fn walk_word(w: u64) -> u64 {
        let tag = w as u32;
        let walked =
            (tag & 0x7FF) | (tag >> mpk::EVENT_NO_SHIFT) << ikp_device::wire::PAYLOAD_SHIFT;
        (w & !0xFFFF_FFFF) | walked as u64
    }

    fn bad_record(at: usize, w: u64, _first: u64, _groups: usize, stride: usize) -> DecodeError {
        let why = if w & 3 == 3 {
            type_3(WireFormat::Mirage)
        } else {
            let out = if mpk::lane_of(w) >= stride as u64 {
                " (lane id out of range)"
            } else {
                ""
            };
            format!(
                "names lane {}, but the layout (stride {stride} = blocks x groups) puts lane {} there{out}",
                mpk::lane_of(w),
                at % stride
            )
        };
        record_error(WireFormat::Mirage, at, w, why)
    }
}

/// Whether the probed words can be a buffer of format `L`: slot 0 is a usable header and
/// every record of the probe is allowed in its slot (slot bits, record types, one SM per
/// lane); if not, why (the first record that disagrees). Strict, so that a buffer of
/// another format fails it on its first disagreeing record; cheap, since the probe is
/// bounded.
pub(crate) fn fits<L: Family>(p: &Probe<'_>) -> Result<(), String> {
    let (groups, blocks) =
        header::<L>(p.head.first().copied().unwrap_or(0)).map_err(|e| reason(&e))?;
    let (groups, stride) = (groups as usize, (groups * blocks) as usize);
    // Each lane's first record seen, for the SM check (formats with SM ids only).
    let mut firsts = std::collections::HashMap::new();
    let mut check = |at: usize, words: &[u64]| {
        // The lane of `words[0]`, counted up rather than divided for each word.
        let mut lane = (at - 1) % stride;
        for (i, &w) in words.iter().enumerate() {
            if w != 0 {
                let first = if L::SM_MASK != 0 {
                    *firsts.entry(lane).or_insert(w)
                } else {
                    0
                };
                if !allowed::<L>(w, lane, first, groups) {
                    return Err(reason(&L::bad_record(at + i - 1, w, first, groups, stride)));
                }
            }
            lane += 1;
            if lane == stride {
                lane = 0;
            }
        }
        Ok(())
    };
    check(1, p.head.get(1..).unwrap_or(&[]))?;
    if !p.tail.is_empty() {
        check(p.tail_at, p.tail)?;
    }
    Ok(())
}

/// A decode error of this family without the format's name (a list of misfits names it).
fn reason(e: &DecodeError) -> String {
    match e {
        DecodeError::Record {
            slot, word, why, ..
        } => {
            format!("slot {slot}: record {word:#018x} {why}")
        }
        DecodeError::TvmLane {
            slot,
            word,
            found,
            expected,
            stride,
        } => {
            let why = super::super::tvm_lane_why(*found, *expected, *stride);
            format!("slot {slot}: record {word:#018x} {why}")
        }
        DecodeError::SlotHeader { word, why, .. } | DecodeError::TvmHeader { word, why } => {
            format!("slot 0 = {word:#018x}: {why}")
        }
        e => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirage_records_walk_as_ikp_records_with_the_event_number_as_payload() {
        use ikp_device::wire::{PAYLOAD_SHIFT, REGION_MASK, REGION_SHIFT};
        let w = mpk::pack(0xABCD_0123, 255, 511, 8191, mpk::END);
        let r = Mirage::walk_word(w);
        assert_eq!(r >> 32, 0xABCD_0123);
        assert_eq!(r & 3, mpk::END as u64);
        assert_eq!((r as u32 >> REGION_SHIFT) & REGION_MASK, 511);
        assert_eq!(r as u32 >> PAYLOAD_SHIFT, 8191);
    }

    #[test]
    fn allowed_checks_slot_bits_type_3_and_the_sm() {
        // FlashInfer, 2 groups: lane 3 is block 1, group 1.
        let first = fi::pack(0, 9, 1, 4, fi::BEGIN);
        assert!(allowed::<FlashInfer>(
            fi::pack(5, 9, 1, 4, fi::END),
            3,
            first,
            2
        ));
        assert!(!allowed::<FlashInfer>(
            fi::pack(5, 8, 1, 4, fi::END),
            3,
            first,
            2
        ));
        assert!(!allowed::<FlashInfer>(
            fi::pack(5, 9, 3, 4, fi::END),
            3,
            first,
            2
        ));
        assert!(!allowed::<FlashInfer>(fi::pack(5, 9, 1, 4, 3), 3, first, 2));
        assert!(allowed::<Tvm>(tvm::pack(5, 3, 4, tvm::FINALIZE), 3, 0, 2));
        assert!(!allowed::<Mirage>(mpk::pack(5, 3, 4, 0, 3), 3, 0, 2));
        assert!(allowed::<Mirage>(mpk::pack(5, 3, 4, 77, mpk::END), 3, 0, 2));
    }
}
