//! Decoder of the ikp native wire format v1 (layout in `ikp_device::wire`, `# Format`).
//!
//! Per lane: the prologue gives the 64-bit start stamps and the SM / warp ids, the trailer
//! the end stamps and the written / dropped counts. Records are read up to `written` for a
//! finalized lane (non-zero words past it were written after finalize and are counted in
//! `after_finalize`), and up to the last non-zero word for a lane that never finalized.
//! Stamps unwrap from the lane's own 64-bit start stamp, each relative to the one before
//! it; a stamp behind its predecessor is a backward step of the timer, clamped and counted
//! in `backward_steps` ([`super::lane`], `# Unwrapping`). A finalized lane whose end
//! globaltimer is before its start globaltimer ends at its start, and counts as a
//! backward step too (as does, in clock mode, an end clock64 before the start clock64).
//!
//! Clock mode: cycles convert to ns per lane with the lane's (clock64, globaltimer) pairs
//! at start and end. A lane that never finalized, or whose end stamps are before its
//! start stamps, has no end pair; it borrows the calibration of the finalized lane with
//! the median ns-per-cycle ratio. With no finalized lane at all the buffer is refused
//! ([`DecodeError::NoClockCalibration`]): ikp never assumes a clock frequency.
//!
//! Inconsistent segments are errors naming the lane: records in a lane that never ran
//! init, an IDS word without the lane mark, a clock flag that contradicts the header, a
//! trailer that counts more records than fit, drops in a lane that was not full.

use super::assemble::{self, Caps, ChunkDone, Recycled};
use super::lane::{ChunkOut, Clock, Cursor, Cycles, Globaltimer, LaneWalk};
use super::{DecodeError, DecodeOptions};
use crate::model::{Lane, Names, Ns, Source, Trace, WireFormat};
use ikp_device::wire::{self, lane, Kind};
use ikp_device::{Header, TimerMode};
use rayon::prelude::*;

/// What the counting pass learned about one lane.
#[derive(Clone, Copy, Debug, Default)]
struct LaneInfo {
    used: bool,
    ids: Option<wire::LaneIds>,
    /// Records to walk (from the start of the event area).
    n: usize,
    finalized: bool,
    start_gt: u64,
    start_clk: u64,
    end_gt: u64,
    end_clk: u64,
    /// Finalized with an end stamp before its start stamp (the end was clamped).
    end_backward: bool,
    dropped: u64,
    after_finalize: u64,
    caps: Caps,
}

/// Decodes a native buffer, reusing the memory of `reuse`'s columns.
pub fn decode(words: &[u64], opts: &DecodeOptions, reuse: Recycled) -> Result<Trace, DecodeError> {
    let p = prepare(words, opts, &|_| {})?;
    p.decode_lanes_reusing(0..p.lane_count(), reuse)
}

/// Lanes inspected between two calls of [`prepare`]'s `inspected` callback: at least this
/// many words (and whole lanes), so a mapped buffer can release what was read.
const INSPECT_CHUNK_WORDS: usize = 1 << 23;

/// A native buffer whose header and every lane segment have been checked (the counting
/// pass): its lanes can be walked all at once ([`decode`]) or range by range, in any
/// order, by the streaming Perfetto path, which decodes one lane at a time so memory stays
/// bounded by the largest lane. Walking a checked lane cannot fail.
#[derive(Debug)]
pub struct Prepared<'a> {
    words: &'a [u64],
    h: Header,
    infos: Vec<LaneInfo>,
    /// Clock mode: the calibration of lanes without their own.
    fallback: Option<(u64, u64)>,
    parallel: bool,
}

/// Checks the header and every lane segment of a native buffer. `inspected` is called with
/// each range of words (whole lanes, ascending) once it has been read, so that a
/// memory-mapped caller can drop those pages.
pub fn prepare<'a>(
    words: &'a [u64],
    opts: &DecodeOptions,
    inspected: &(dyn Fn(std::ops::Range<usize>) + Sync),
) -> Result<Prepared<'a>, DecodeError> {
    let h = Header::parse(words)?;
    let n_lanes = h.layout.lane_count() as usize;
    let parallel = !opts.single_threaded && words.len() >= assemble::PARALLEL_MIN_RECORDS;
    let per_chunk = (INSPECT_CHUNK_WORDS / h.layout.lane_stride().max(1) as usize).max(1);
    let mut infos: Vec<LaneInfo> = Vec::with_capacity(n_lanes);
    let mut l0 = 0;
    while l0 < n_lanes {
        let l1 = (l0 + per_chunk).min(n_lanes);
        if parallel {
            let part: Vec<LaneInfo> = (l0..l1)
                .into_par_iter()
                .map(|l| inspect(&h, words, l))
                .collect::<Result<_, _>>()?;
            infos.extend(part);
        } else {
            for l in l0..l1 {
                infos.push(inspect(&h, words, l)?);
            }
        }
        inspected(h.lane_range(l0 as u64).start..h.lane_range(l1 as u64 - 1).end);
        l0 = l1;
    }
    let clock = h.layout.timer == TimerMode::Clock;
    let fallback = if clock { calibration(&infos) } else { None };
    Ok(Prepared {
        words,
        h,
        infos,
        fallback,
        parallel,
    })
}

impl Prepared<'_> {
    /// Lane slots of the layout (lanes that never ran are slots without a lane).
    pub fn lane_count(&self) -> usize {
        self.infos.len()
    }

    /// The words of lane slot `l`'s segment.
    pub fn lane_words(&self, l: usize) -> std::ops::Range<usize> {
        self.h.lane_range(l as u64)
    }

    /// Decodes lane slots `lanes` into a trace holding only those lanes (its
    /// `time_base` is the earliest start among them). Decoding every slot in one call is
    /// [`decode`].
    pub fn decode_lanes(&self, lanes: std::ops::Range<usize>) -> Result<Trace, DecodeError> {
        self.decode_lanes_reusing(lanes, Recycled::default())
    }

    /// [`Prepared::decode_lanes`], reusing the memory of `reuse`'s columns.
    fn decode_lanes_reusing(
        &self,
        lanes: std::ops::Range<usize>,
        reuse: Recycled,
    ) -> Result<Trace, DecodeError> {
        let (h, words, infos) = (&self.h, self.words, &self.infos[lanes.clone()]);
        let l_base = lanes.start;
        let clock = h.layout.timer == TimerMode::Clock;
        let fallback = self.fallback;
        let caps: Vec<Caps> = infos.iter().map(|i| i.caps).collect();
        let cap = h.layout.records_per_lane as usize;
        let counters = h.layout.counters.len() as u32;
        let groups = h.layout.groups_per_block;

        let asm = assemble::run(&caps, self.parallel, reuse, |chunk| {
            let mut done = ChunkDone::default();
            for k in chunk.lanes.clone() {
                let info = &infos[k];
                let l = l_base + k;
                if !info.used {
                    continue;
                }
                let start = chunk.starts[k - chunk.lanes.start];
                let seg = &words[h.lane_range(l as u64)];
                let events = &seg[lane::EVENTS as usize..lane::EVENTS as usize + info.n];
                let (l, out) = (l as u32, &mut chunk.out);
                let walked = if clock {
                    let (num, den) = match own_ratio(info) {
                        Some(r) => r,
                        None => fallback.ok_or(DecodeError::NoClockCalibration)?,
                    };
                    let cycles = Cycles {
                        clk0: info.start_clk,
                        gt0: info.start_gt,
                        num,
                        den,
                    };
                    walk(
                        LaneWalk::new(l, info.start_clk, cycles, start),
                        events,
                        counters,
                        out,
                    )
                } else {
                    walk(
                        LaneWalk::new(l, info.start_gt, Globaltimer, start),
                        events,
                        counters,
                        out,
                    )
                };
                done.diag.unknown_records += walked.unknown;
                done.diag.backward_steps += walked.backward + u64::from(info.end_backward);
                let b = chunk.base;
                done.diag.after_finalize += info.after_finalize;
                done.diag.unfinalized_lanes += u64::from(!info.finalized);
                let ids = info.ids;
                done.lanes.push(Lane {
                    id: l,
                    block: l / groups,
                    group: l % groups,
                    sm: ids.map(|i| i.smid),
                    warp: ids.map(|i| i.warp),
                    start: info.start_gt,
                    end: if info.finalized {
                        info.end_gt
                    } else {
                        walked.last_ns
                    },
                    finalized: info.finalized,
                    written: info.n as u64,
                    dropped: info.dropped,
                    spans: b.span + start.span..b.span + walked.cur.span,
                    instants: b.inst + start.inst..b.inst + walked.cur.inst,
                    samples: b.samp + start.samp..b.samp + walked.cur.samp,
                });
            }
            Ok(done)
        })?;

        let nc = h.layout.counters.len();
        let mut counter_totals = Vec::with_capacity(asm.lanes.len() * nc);
        for l in &asm.lanes {
            let seg = &words[h.lane_range(l.id as u64)];
            let t = (lane::EVENTS + lane::T_COUNTERS) as usize + cap;
            counter_totals.extend_from_slice(&seg[t..t + nc]);
        }
        let time_base = asm.lanes.iter().map(|l| l.start).min().unwrap_or(0);
        Ok(Trace {
            source: Source {
                format: WireFormat::Ikp,
                version: h.version,
                timer: h.layout.timer,
                grid: h.layout.grid,
                groups_per_block: groups,
                records_per_lane: h.layout.records_per_lane,
                time_base,
            },
            names: Names {
                regions: h.layout.regions.clone(),
                counters: h.layout.counters.clone(),
            },
            lanes: asm.lanes,
            spans: asm.spans,
            instants: asm.instants,
            samples: asm.samples,
            counter_totals,
            diagnostics: asm.diag,
        })
    }
}

fn inspect(h: &Header, words: &[u64], l: usize) -> Result<LaneInfo, DecodeError> {
    let range = h.lane_range(l as u64);
    let bad = |why: String| DecodeError::Lane {
        lane: l as u64,
        first: range.start as u64,
        end: range.end as u64,
        why,
    };
    let seg = &words[range.clone()];
    let cap = h.layout.records_per_lane as usize;
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
    let lane_clock = ids.flags & wire::lane_flags::CLOCK != 0;
    if lane_clock != (h.layout.timer == TimerMode::Clock) {
        return Err(bad(format!(
            "lane flags say {} but the header says {:?}",
            if lane_clock { "clock" } else { "globaltimer" },
            h.layout.timer
        )));
    }
    let mut info = LaneInfo {
        used: true,
        ids: Some(ids),
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
            return Err(bad(format!(
                "trailer counts {dropped} dropped records but only {written} of {cap} slots were used"
            )));
        }
        // A timer that stepped back: the lane ends at its start (and has no calibration
        // pair of its own), counted in `backward_steps`.
        let clock_back = lane_clock && info.end_clk < info.start_clk;
        if info.end_gt < info.start_gt || clock_back {
            info.end_backward = true;
            info.end_gt = info.end_gt.max(info.start_gt);
        }
        info.n = written;
        info.dropped = dropped;
        info.after_finalize = events[written..].iter().filter(|&&w| w != 0).count() as u64;
    } else {
        if count != 0 || info.end_clk != 0 {
            return Err(bad(
                "trailer is partly written (counts or end clock without an end globaltimer)".into(),
            ));
        }
        info.n = events.iter().rposition(|&w| w != 0).map_or(0, |i| i + 1);
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

/// What walking one native lane left.
struct Walked {
    last_ns: Ns,
    cur: Cursor,
    unknown: u64,
    backward: u64,
}

/// Walks a native lane's records to the end (one instance per clock, so the globaltimer
/// walk has no conversion in its loop).
fn walk<C: Clock>(
    mut w: LaneWalk<C>,
    events: &[u64],
    counters: u32,
    out: &mut ChunkOut<'_>,
) -> Walked {
    let run = w.run::<false>(events, counters, out);
    w.finish(out);
    Walked {
        last_ns: w.last_ns,
        cur: w.cur,
        unknown: run.unknown,
        backward: run.backward,
    }
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

/// `(ns, cycles)` elapsed between a finalized lane's start and end, if usable.
fn own_ratio(i: &LaneInfo) -> Option<(u64, u64)> {
    if !i.finalized || i.end_backward || i.end_clk <= i.start_clk {
        return None;
    }
    Some((i.end_gt - i.start_gt, i.end_clk - i.start_clk))
}

/// The median ns-per-cycle calibration among finalized lanes, for lanes without their own.
fn calibration(infos: &[LaneInfo]) -> Option<(u64, u64)> {
    let mut r: Vec<(u64, u64)> = infos.iter().filter_map(own_ratio).collect();
    if r.is_empty() {
        return None;
    }
    r.sort_by(|a, b| (a.0 as u128 * b.1 as u128).cmp(&(b.0 as u128 * a.1 as u128)));
    Some(r[r.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::inspect;
    use ikp_device::encoder::BufferWriter;
    use ikp_device::wire::lane_flags;
    use ikp_device::{Header, Layout, TimerMode};

    #[test]
    fn an_end_stamp_before_the_start_is_clamped_and_flagged_not_an_error() {
        for timer in [TimerMode::Globaltimer, TimerMode::Clock] {
            let mut b = BufferWriter::new(Layout {
                grid: [1, 1, 1],
                groups_per_block: 3,
                records_per_lane: 4,
                timer,
                regions: vec![],
                counters: vec![],
            })
            .unwrap();
            let f = if timer == TimerMode::Clock {
                lane_flags::CLOCK
            } else {
                0
            };
            // Lane 0's end globaltimer, lane 1's end clock64 is before its start.
            b.lane(0).init(0, 0, f, 5_000, 100).finalize(4_000, 900);
            b.lane(1).init(0, 0, f, 5_000, 100).finalize(6_000, 90);
            b.lane(2).init(0, 0, f, 5_000, 100).finalize(6_000, 900);
            let words = b.into_words();
            let h = Header::parse(&words).unwrap();
            let info = |l| inspect(&h, &words, l).unwrap();
            assert!(info(0).end_backward && info(0).end_gt == 5_000, "{timer:?}");
            // The end clock64 only matters in clock mode.
            assert_eq!(info(1).end_backward, timer == TimerMode::Clock);
            assert_eq!(info(1).end_gt, 6_000);
            assert!(!info(2).end_backward);
        }
    }
}
