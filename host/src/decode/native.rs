//! Decoder of the ikp native wire format v1 (layout in `ikp_device::wire`, `# Format`).
//!
//! Per lane: the prologue gives the 64-bit start stamps and the SM / warp ids, the trailer
//! the end stamps and the written / dropped counts. Records are read up to `written` for a
//! finalized lane (non-zero words past it were written after finalize and are counted in
//! `after_finalize`), and up to the last non-zero word for a lane that never finalized.
//! Stamps unwrap from the lane's own 64-bit start stamp, each relative to the one before
//! it; a stamp behind its predecessor is a backward step of the timer, clamped and counted
//! in `backward_steps` ([`super`], `# Unwrapping`). A finalized lane whose end
//! globaltimer is before its start globaltimer ends at its start, and counts as a
//! backward step too (as does, in clock mode, an end clock64 before the start clock64).
//!
//! # Clock mode
//!
//! Records carry the low 32 bits of `%clock` (SM cycles); each lane has its (globaltimer,
//! clock64) pair at init and, if it finalized, at finalize. Cycles convert to ns as
//! `start_gt + (cycles - start_clk) * ns / cycles`, with one of two ratios:
//! - **pooled**: `Σ ns / Σ cycles` over the init-to-finalize intervals of every finalized
//!   lane whose end stamps are not before its start stamps (and whose clock advanced). All
//!   SMs of a GPU share one clock rate, and `%globaltimer` ticks are coarse (tens of ns to
//!   about 1 us, depending on the GPU): one lane's interval is off by up to a tick, but
//!   those errors average out in the sums. A lane shorter than one tick measures 0 ns; on
//!   its own ratio, all its records would collapse onto its start.
//! - **own**: the lane's own `ns / cycles`, for a lane whose globaltimer span is at least
//!   [`OWN_RATIO_MIN_NS`] (so one tick is a small error). It follows the clock's actual
//!   rate over that lane's interval, which matters when the clock changes during a long
//!   launch.
//!
//! Every other lane (shorter, or never finalized) takes the pooled ratio. The calibration
//! used is recorded in [`Source::clock`](crate::model::Source::clock). When the pooled
//! ratio cannot be measured, a buffer with lanes is refused
//! ([`DecodeError::NoClockCalibration`]): with no usable pair ([`NoCalibration::NoPair`]),
//! or when every pair spans 0 ns, all lanes having ended within one globaltimer tick
//! ([`NoCalibration::WithinOneTick`]). ikp never assumes a clock frequency.
//!
//! Inconsistent segments are errors naming the lane: records in a lane that never ran
//! init, an IDS word without the lane mark, a clock flag that contradicts the header, a
//! trailer that counts more records than fit, drops in a lane that was not full.

use super::assemble::{self, Caps, ChunkDone, Recycled};
use super::lane::{ChunkOut, Clock, Cursor, Cycles, Globaltimer, LaneWalk};
use super::{DecodeError, DecodeOptions, NoCalibration};
use crate::model::{ClockCalibration, Lane, Names, Ns, Source, Trace, WireFormat};
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
pub(crate) fn decode(
    words: &[u64],
    opts: &DecodeOptions,
    reuse: Recycled,
) -> Result<Trace, DecodeError> {
    let p = prepare(words, opts, &|_| {})?;
    p.decode_lanes_reusing(words, 0..p.lane_count(), reuse)
}

/// Lanes inspected between two calls of [`prepare`]'s `inspected` callback: at least this
/// many words (and whole lanes), so a mapped buffer can release what was read.
const INSPECT_CHUNK_WORDS: usize = 1 << 23;

/// A native buffer whose header and every lane segment have been checked (the counting
/// pass): its lanes can be walked all at once ([`decode`]) or range by range, in any
/// order, by the streaming Perfetto path, which decodes one lane at a time so memory stays
/// bounded by the largest lane. Walking a checked lane cannot fail, given the words that
/// were checked.
#[derive(Debug)]
pub(crate) struct Prepared {
    h: Header,
    infos: Vec<LaneInfo>,
    /// Clock mode: the pooled calibration, for lanes without their own.
    clock: Option<ClockCalibration>,
    parallel: bool,
}

/// Checks the header and every lane segment of a native buffer. `inspected` is called with
/// each range of words (whole lanes, ascending) once it has been read, so that a
/// memory-mapped caller can drop those pages.
pub(crate) fn prepare(
    words: &[u64],
    opts: &DecodeOptions,
    inspected: &(dyn Fn(std::ops::Range<usize>) + Sync),
) -> Result<Prepared, DecodeError> {
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
    let clock = match h.layout.timer {
        TimerMode::Clock if infos.iter().any(|i| i.used) => {
            Some(calibration(&infos).map_err(DecodeError::NoClockCalibration)?)
        }
        _ => None,
    };
    Ok(Prepared {
        h,
        infos,
        clock,
        parallel,
    })
}

impl Prepared {
    /// Lane slots of the layout (lanes that never ran are slots without a lane).
    pub(crate) fn lane_count(&self) -> usize {
        self.infos.len()
    }

    /// Whether the lane of slot `l` ran (init, or a record): a slot that did not decodes
    /// to no lane, no event and no diagnostic.
    pub(crate) fn lane_ran(&self, l: usize) -> bool {
        self.infos[l].used
    }

    /// The words of lane slot `l`'s segment.
    pub(crate) fn lane_words(&self, l: usize) -> std::ops::Range<usize> {
        self.h.lane_range(l as u64)
    }

    /// Decodes lane slots `lanes` of `words` (the words [`prepare`] checked) into a trace
    /// holding only those lanes (its `time_base` is the earliest start among them).
    /// Decoding every slot in one call is [`decode`].
    pub(crate) fn decode_lanes(
        &self,
        words: &[u64],
        lanes: std::ops::Range<usize>,
    ) -> Result<Trace, DecodeError> {
        self.decode_lanes_reusing(words, lanes, Recycled::default())
    }

    /// The earliest start of any lane that ran: the time base of the whole launch.
    pub(crate) fn time_base(&self) -> Ns {
        (self.infos.iter())
            .filter(|i| i.used)
            .map(|i| i.start_gt)
            .min()
            .unwrap_or(0)
    }

    /// [`Prepared::decode_lanes`], reusing the memory of `reuse`'s columns.
    fn decode_lanes_reusing(
        &self,
        words: &[u64],
        lanes: std::ops::Range<usize>,
        reuse: Recycled,
    ) -> Result<Trace, DecodeError> {
        let (h, infos) = (&self.h, &self.infos[lanes.clone()]);
        let l_base = lanes.start;
        let clock = self.clock;
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
                let walked = if let Some(c) = clock {
                    let (num, den) = own_ratio(info).unwrap_or((c.pooled_ns, c.pooled_cycles));
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
                clock: self.clock,
                grid: h.layout.grid,
                groups_per_block: groups,
                records_per_lane: h.layout.records_per_lane,
                time_base,
                block_filter: Default::default(),
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

/// The globaltimer span from which a lane converts its cycles with its own ratio rather
/// than the pooled one: 1 ms. `%globaltimer` ticks are up to about 1 us on some GPUs, and
/// the interval between two ticked stamps is off by less than one tick, so a lane of at
/// least 1 ms measures its own rate to better than 0.1 %. Shorter lanes are better served
/// by the pooled ratio (module docs, `# Clock mode`).
pub const OWN_RATIO_MIN_NS: u64 = 1_000_000;

/// `(ns, cycles)` elapsed between a finalized lane's start and end, if both advanced
/// (ns may be 0: a lane shorter than one globaltimer tick).
fn pair(i: &LaneInfo) -> Option<(u64, u64)> {
    if !i.finalized || i.end_backward || i.end_clk <= i.start_clk {
        return None;
    }
    Some((i.end_gt - i.start_gt, i.end_clk - i.start_clk))
}

/// The lane's own `(ns, cycles)`, if it spans at least [`OWN_RATIO_MIN_NS`].
fn own_ratio(i: &LaneInfo) -> Option<(u64, u64)> {
    pair(i).filter(|&(ns, _)| ns >= OWN_RATIO_MIN_NS)
}

/// The pooled calibration of the lanes `infos`, and how many lanes use which ratio.
fn calibration(infos: &[LaneInfo]) -> Result<ClockCalibration, NoCalibration> {
    let (mut ns, mut cycles, mut lanes) = (0u128, 0u128, 0u64);
    for (n, c) in infos.iter().filter_map(pair) {
        (ns, cycles, lanes) = (ns + n as u128, cycles + c as u128, lanes + 1);
    }
    if lanes == 0 {
        return Err(NoCalibration::NoPair);
    }
    if ns == 0 {
        let cycles = u64::try_from(cycles).unwrap_or(u64::MAX);
        return Err(NoCalibration::WithinOneTick { lanes, cycles });
    }
    // `Cycles::ns` multiplies in 128 bits by a 64-bit numerator: halve both sums until
    // they fit (the ratio keeps at least 63 significant bits).
    while ns > u64::MAX as u128 || cycles > u64::MAX as u128 {
        (ns, cycles) = (ns >> 1, cycles >> 1);
    }
    let used = infos.iter().filter(|i| i.used);
    let own = used.clone().filter(|i| own_ratio(i).is_some()).count() as u64;
    Ok(ClockCalibration {
        pooled_ns: ns as u64,
        // Non-zero: at least one cycle per pooled lane, unless halved away by an absurd
        // ns sum (garbage); one cycle then keeps the division defined.
        pooled_cycles: (cycles as u64).max(1),
        pool_lanes: lanes,
        own_ratio_lanes: own,
        pooled_ratio_lanes: used.count() as u64 - own,
    })
}

#[cfg(test)]
mod tests {
    use super::{calibration, inspect, own_ratio, LaneInfo, NoCalibration, OWN_RATIO_MIN_NS};
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

    /// A finalized lane that ran `ns` of globaltimer and `cycles` of clock64.
    fn lane(ns: u64, cycles: u64) -> LaneInfo {
        LaneInfo {
            used: true,
            finalized: true,
            start_gt: 1_000,
            start_clk: 50,
            end_gt: 1_000 + ns,
            end_clk: 50 + cycles,
            ..Default::default()
        }
    }

    #[test]
    fn a_lane_keeps_its_own_ratio_only_from_the_threshold_on() {
        let m = OWN_RATIO_MIN_NS;
        assert_eq!(own_ratio(&lane(m, 3 * m)), Some((m, 3 * m)));
        assert_eq!(own_ratio(&lane(m - 1, 3 * m)), None);
        // Stamps that went backwards, or a lane that never finalized: no pair at all.
        let back = LaneInfo {
            end_backward: true,
            ..lane(2 * m, 3 * m)
        };
        let open = LaneInfo {
            finalized: false,
            ..lane(2 * m, 3 * m)
        };
        assert_eq!((own_ratio(&back), own_ratio(&open)), (None, None));
    }

    #[test]
    fn the_pool_sums_every_pair_and_counts_who_uses_which_ratio() {
        let m = OWN_RATIO_MIN_NS;
        let unfinalized = LaneInfo {
            finalized: false,
            ..lane(0, 0)
        };
        let never_ran = LaneInfo::default();
        let lanes = [
            lane(2 * m, 3 * m),
            lane(0, 700), // shorter than one tick: in the pool, on the pooled ratio
            lane(1_000, 1_400),
            unfinalized,
            never_ran,
        ];
        let c = calibration(&lanes).unwrap();
        assert_eq!(
            (c.pooled_ns, c.pooled_cycles, c.pool_lanes),
            (2 * m + 1_000, 3 * m + 2_100, 3)
        );
        assert_eq!((c.own_ratio_lanes, c.pooled_ratio_lanes), (1, 3));
    }

    #[test]
    fn a_pool_without_elapsed_time_is_refused_with_the_reason() {
        assert_eq!(calibration(&[]), Err(NoCalibration::NoPair));
        let open = LaneInfo {
            finalized: false,
            ..lane(5, 5)
        };
        assert_eq!(calibration(&[open]), Err(NoCalibration::NoPair));
        assert_eq!(
            calibration(&[lane(0, 700), lane(0, 300)]),
            Err(NoCalibration::WithinOneTick {
                lanes: 2,
                cycles: 1_000
            })
        );
    }

    #[test]
    fn sums_past_64_bits_are_halved_together() {
        let big = lane(u64::MAX / 2, u64::MAX / 2 - 5);
        let c = calibration(&[big; 4]).unwrap();
        // 4 x (2^63 - 1) ns and 4 x (2^63 - 6) cycles do not fit: both are halved once.
        assert_eq!(
            (c.pooled_ns, c.pooled_cycles),
            (u64::MAX - 1, u64::MAX - 11)
        );
        assert_eq!(c.pool_lanes, 4);
    }
}
