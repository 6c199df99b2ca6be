//! The counting pass over one native lane segment: check it, learn what its walk needs
//! ([`LaneInfo`]: its stamps, trailer counts, ring order and rows), or refuse it naming
//! the lane.

use super::super::assemble::Caps;
use super::super::set_aside;
use super::super::DecodeError;
use super::{LaneInfo, Segments};
use crate::model::SetAsideReason;
use ikp_device::wire::{self, lane, Kind};
use ikp_device::{Header, Overflow};

/// Checks lane `l`'s segment (of `segs`) and learns what its walk needs.
pub(super) fn inspect(
    h: &Header,
    words: &[u64],
    segs: &Segments,
    l: usize,
) -> Result<LaneInfo, DecodeError> {
    let (range, cap) = segs.of(h, l);
    let epoch = segs.epoch();
    let bad = |why: String| DecodeError::Lane {
        lane: l as u64,
        first: range.start as u64,
        end: range.end as u64,
        why: if h.layout.epochs > 1 {
            format!("launch {epoch}: {why}")
        } else {
            why
        },
    };
    let seg = &words[range.clone()];
    let ev0 = lane::EVENTS as usize;
    let events = &seg[ev0..ev0 + cap];
    let trailer = &seg[ev0 + cap..];
    let ids_word = seg[lane::IDS as usize];
    if ids_word == 0 {
        if seg.iter().any(|&w| w != 0) {
            return Err(bad(
                "holds data but never ran init (its IDS word is zero)".into()
            ));
        }
        return Ok(LaneInfo::default());
    }
    let ids = wire::unpack_ids(ids_word).ok_or_else(|| {
        bad(format!(
            "IDS word {ids_word:#018x} lacks the lane mark: not written by ikp"
        ))
    })?;
    // The lane's own flag, not the header's timer, says how its records were stamped
    // (`# Clock mode`).
    let lane_clock = ids.flags & wire::lane_flags::CLOCK != 0;
    let ring = ids.flags & wire::lane_flags::RING != 0;
    if ring && h.layout.overflow != Overflow::Ring {
        return Err(bad(
            "lane flags say ring but the header does not (the kernel was built for rings, the \
             host's layout was not)"
                .into(),
        ));
    }
    let mut info = LaneInfo {
        used: true,
        ids: Some(ids),
        calib: seg[lane::CALIB as usize] as u32,
        start_gt: seg[lane::START_GT as usize],
        start_clk: seg[lane::START_CLK as usize],
        end_gt: trailer[lane::T_END_GT as usize],
        end_clk: trailer[lane::T_END_CLK as usize],
        ..Default::default()
    };
    let count = trailer[lane::T_COUNT as usize];
    info.finalized = info.end_gt != 0;
    if info.finalized {
        let (written, dropped) = (count as u32 as usize, count >> 32);
        if written > cap {
            return Err(bad(format!(
                "trailer counts {written} records written, more than the {cap} that fit"
            )));
        }
        if dropped > 0 && written < cap {
            let what = if ring { "overwritten" } else { "dropped" };
            return Err(bad(format!(
                "trailer counts {dropped} {what} records but only {written} of {cap} slots were used"
            )));
        }
        // A timer that stepped back: the lane ends at its start (and has no calibration
        // pair of its own), counted in `backward_steps`.
        let clock_back = lane_clock && info.end_clk < info.start_clk;
        info.end_backward = info.end_gt < info.start_gt || clock_back;
        info.set_aside = set_aside::span(info.start_gt, info.end_gt);
        info.n = written;
        if ring {
            info.overwritten = dropped;
            // The device's cursor is `written + overwritten` mod 2^32, which `cap` divides.
            info.oldest = ((written as u64 + dropped) % cap as u64) as usize;
        } else {
            info.dropped = dropped;
        }
        info.after_finalize = events[written..].iter().filter(|&&w| w != 0).count() as u64;
    } else {
        if count != 0 || info.end_clk != 0 {
            return Err(bad(
                "trailer is partly written (counts or end clock without an end globaltimer)".into(),
            ));
        }
        info.n = events.iter().rposition(|&w| w != 0).map_or(0, |i| i + 1);
        if ring && info.n == cap && cap > 0 {
            // It may have wrapped, any number of times: where its oldest record is, only
            // the trailer it never wrote would say.
            info.set_aside = Some(SetAsideReason::UnorderedRing);
        }
    }
    let (spans, insts, samps) = count_kinds(&events[..info.n]);
    info.caps = Caps {
        spans,
        insts,
        samps,
        records: info.n,
    };
    Ok(info)
}

/// Begins, instants and meta records among `events`. The kinds are two bits, so three
/// sums of bits give all four counts (ends are the rest): `b0` (set in ends and metas),
/// `b1` (instants and metas) and `b0 & b1` (metas). Plain masked adds of whole words,
/// which vectorize without unpacking the tags.
fn count_kinds(events: &[u64]) -> (usize, usize, usize) {
    const _: () = assert!(
        wire::KIND_MASK == 3
            && Kind::Begin as u32 == 0
            && Kind::End as u32 == 1
            && Kind::Instant as u32 == 2
            && Kind::Meta as u32 == 3
    );
    let (mut b0, mut b1, mut both) = (0u64, 0u64, 0u64);
    for &w in events {
        b0 += w & 1;
        b1 += w & 2;
        both += w & (w >> 1) & 1;
    }
    let (b0, b1, metas) = (b0 as usize, (b1 >> 1) as usize, both as usize);
    let begins = events.len() + metas - b0 - b1;
    (begins, b1 - metas, metas)
}
