//! The lane walk of checked native lanes: each lane's records become rows (its stamps
//! unwrapped, module docs of [`super::super`], `# Unwrapping`), then the trace of the
//! lanes walked, with the lanes set aside and the overhead correction.

use super::super::assemble::{self, Caps, Chunk, ChunkDone, Recycled};
use super::super::async_ranges::{self, AsyncMask, AsyncRecord};
use super::super::correct;
use super::super::lane::{ChunkOut, Clock, Cursor, Cycles, Globaltimer, LaneWalk};
use super::super::{set_aside::Judged, DecodeError};
use super::clock::own_ratio;
use super::{LaneInfo, Prepared};
use crate::model::{
    ClockCalibration, Diagnostics, Lane, Names, SetAsideLane, Source, Trace, TrackId, WireFormat,
};
use crate::time::Timestamp;
use ikp_device::wire::{self, lane, Kind};
use std::ops::Range;

impl Prepared {
    /// Decodes lane slots `lanes` of `words` (the words [`super::prepare`] checked) into a
    /// trace holding only those lanes (its `time_base` is the earliest start among them),
    /// reusing the memory of `reuse`'s columns; the async records of those lanes are
    /// paired among themselves ([`async_ranges::pair`]). Decoding every slot in one call
    /// is [`super::decode`].
    pub(super) fn decode_lanes_reusing(
        &self,
        words: &[u64],
        lanes: Range<usize>,
        reuse: Recycled,
    ) -> Result<Trace, DecodeError> {
        let (mut t, records) = self.decode_lanes_unpaired(words, lanes, reuse)?;
        async_ranges::pair_into(&mut t, records);
        Ok(t)
    }

    /// [`Prepared::decode_lanes_reusing`] with no async range (those lanes' async records,
    /// unpaired, in lane order, returned beside it): what a decode of some of a launch's
    /// lanes pairs with the others' ([`super::super::stream`]).
    pub(crate) fn decode_lanes_unpaired(
        &self,
        words: &[u64],
        lanes: Range<usize>,
        reuse: Recycled,
    ) -> Result<(Trace, Vec<AsyncRecord>), DecodeError> {
        let w = Walker {
            p: self,
            words,
            async_mask: AsyncMask::of(&self.h.layout.async_regions),
        };
        let caps: Vec<Caps> = (self.infos[lanes.clone()].iter())
            .map(|i| if i.live() { i.caps } else { Caps::default() })
            .collect();
        let asm = assemble::run(&caps, self.parallel, reuse, |chunk| {
            let mut done = ChunkDone::default();
            for k in chunk.lanes.clone() {
                if self.infos[lanes.start + k].live() {
                    let start = chunk.starts[k - chunk.lanes.start];
                    w.walk(lanes.start + k, start, chunk, &mut done);
                }
            }
            Ok(done)
        })?;
        let h = &self.h;
        let mut trace = Trace {
            source: Source {
                format: WireFormat::Ikp,
                version: h.version,
                timer: h.layout.timer,
                clock: self.clock,
                grid: h.layout.grid,
                groups_per_block: h.layout.groups_per_block,
                records_per_lane: h.layout.records_per_lane,
                time_base: asm.lanes.iter().map(|l| l.start).min().unwrap_or(0),
                clock_sync: h.layout.clock_sync,
                epoch: self.epoch,
                ..Default::default()
            },
            names: Names {
                regions: h.layout.regions.clone(),
                counters: h.layout.counters.clone(),
            },
            counter_totals: w.counter_totals(&asm.lanes),
            lanes: asm.lanes,
            spans: asm.spans,
            instants: asm.instants,
            samples: asm.samples,
            diagnostics: Diagnostics {
                set_aside: self.set_aside_lanes(lanes),
                ..asm.diag
            },
            ..Default::default()
        };
        if self.correct {
            let cost = |id: u32| self.record_cost(&self.infos[id as usize]);
            let at = |id: u32| w.events(id as usize);
            let c = correct::apply(&mut trace, cost, at, self.parallel);
            trace.source.overhead_correction = Some(c);
        }
        Ok((trace, asm.async_records))
    }

    /// The lanes of slots `lanes` set aside, with their stamps and why.
    fn set_aside_lanes(&self, lanes: Range<usize>) -> Vec<SetAsideLane> {
        if self.set_aside == 0 {
            // A sound buffer has none to look for (one pass less over many lanes).
            return Vec::new();
        }
        let groups = self.h.layout.groups_per_block;
        (lanes.clone().zip(&self.infos[lanes]))
            .filter_map(|(l, i)| {
                let reason = i.set_aside?;
                let l = l as u32;
                Some(SetAsideLane {
                    lane: l,
                    track: TrackId {
                        block: l / groups,
                        group: l % groups,
                        warp: i.ids.map(|i| i.warp),
                        sm: i.ids.map(|i| i.smid),
                    },
                    start: i.start_gt,
                    end: i.finalized.then_some(i.end_gt),
                    start_clock: Some(i.start_clk),
                    end_clock: i.finalized.then_some(i.end_clk),
                    reason,
                })
            })
            .collect()
    }
}

/// One decode's walk over checked lanes: the words and what every lane's walk shares.
struct Walker<'a> {
    p: &'a Prepared,
    words: &'a [u64],
    async_mask: AsyncMask,
}

impl<'a> Walker<'a> {
    /// Lane slot `l`'s records in the order written ([`LaneInfo::ordered`]).
    fn events(&self, l: usize) -> (&'a [u64], &'a [u64]) {
        self.p.infos[l].ordered(self.p.events(self.words, l))
    }

    /// Walks live lane slot `l`, its rows from `start` on in `chunk`: its lane and
    /// diagnostics go to `done`.
    fn walk(&self, l: usize, start: Cursor, chunk: &mut Chunk<'_>, done: &mut ChunkDone) {
        let info = &self.p.infos[l];
        let out = &mut chunk.out;
        let ends_before = out.unmatched_end.len();
        let job = LaneJob {
            info,
            lane: l as u32,
            start,
            // Each lane's own timer: a kernel may mix lanes of both.
            clock: self.p.clock.filter(|_| info.clock()),
            events: self.events(l),
            counters: self.p.h.layout.counters.len() as u32,
            async_mask: &self.async_mask,
        };
        let walked = if self.async_mask.is_empty() {
            walk_lane::<false>(&job, out)
        } else {
            walk_async(&job, out)
        };
        if info.wrapped() {
            // Ends whose begins the ring overwrote: counted, never spans.
            let orphans = out.unmatched_end.len() - ends_before;
            out.unmatched_end.truncate(ends_before);
            done.diag.ends_of_overwritten_begins += orphans as u64;
        }
        done.diag.unknown_records += walked.unknown;
        done.diag.backward_steps += walked.backward + u64::from(info.end_backward);
        done.diag.after_finalize += info.after_finalize;
        done.diag.unfinalized_lanes += u64::from(!info.finalized);
        let (b, l, groups) = (chunk.base, l as u32, self.p.h.layout.groups_per_block);
        done.lanes.push(Lane {
            id: l,
            block: l / groups,
            group: l % groups,
            sm: info.ids.map(|i| i.smid),
            warp: info.ids.map(|i| i.warp),
            start: info.start_gt,
            end: if info.finalized {
                info.end()
            } else {
                walked.last_ns
            },
            finalized: info.finalized,
            written: info.n as u64,
            dropped: info.dropped,
            overwritten: info.overwritten,
            spans: b.span + start.span..b.span + walked.cur.span,
            instants: b.inst + start.inst..b.inst + walked.cur.inst,
            samples: b.samp + start.samp..b.samp + walked.cur.samp,
        });
    }

    /// The counters' totals of `lanes` (their trailers), lane after lane.
    fn counter_totals(&self, lanes: &[Lane]) -> Vec<u64> {
        let (nc, t) = (self.p.h.layout.counters.len(), lane::T_COUNTERS as usize);
        let mut totals = Vec::with_capacity(lanes.len() * nc);
        for l in lanes {
            totals.extend_from_slice(&self.p.trailer(self.words, l.id as usize)[t..t + nc]);
        }
        totals
    }
}

/// One native lane to walk.
struct LaneJob<'a> {
    info: &'a LaneInfo,
    lane: u32,
    /// Where its rows start.
    start: Cursor,
    /// The pooled calibration, for a clock lane.
    clock: Option<ClockCalibration>,
    /// Its records in the order written ([`LaneInfo::ordered`]).
    events: (&'a [u64], &'a [u64]),
    counters: u32,
    async_mask: &'a AsyncMask,
}

/// The 64-bit tick a lane's first record unwraps from: its start stamp `start`; for a
/// ring that wrapped, whose first surviving record may be far more than 2^31 ticks after
/// its start, the stamp reached by unwrapping its records backward from its end stamp
/// `end` (each at most 2^31 ticks before the one after it; a record stamped after the
/// one after it is a backward step, and keeps that one's tick), never before `start`.
fn anchor(info: &LaneInfo, start: u64, end: u64, (a, b): (&[u64], &[u64])) -> u64 {
    if !info.wrapped() {
        return start;
    }
    let mut t = end.max(start);
    for &w in b.iter().rev().chain(a.iter().rev()) {
        if w as u32 & wire::KIND_MASK == Kind::Meta as u32 {
            continue;
        }
        let d = (t as u32).wrapping_sub((w >> wire::TIME_SHIFT) as u32);
        if (d as i32) >= 0 {
            t = t.wrapping_sub(d as u64);
        }
    }
    if t < start || t > end.max(start) {
        start
    } else {
        t
    }
}

/// What walking one native lane left.
struct Walked {
    last_ns: Timestamp,
    cur: Cursor,
    unknown: u64,
    backward: u64,
}

/// Walks a native lane (a clock lane when its `clock` is given) to the end: one instance per
/// clock, so the globaltimer walk has no conversion in its loop, and per `ASYNC`, so the
/// walk of a buffer without async regions has no test for them in its loop (with `ASYNC`,
/// the records of `async_mask`'s regions are set aside: [`LaneWalk::run_async`]).
#[inline(always)]
fn walk_lane<const ASYNC: bool>(j: &LaneJob<'_>, out: &mut ChunkOut<'_>) -> Walked {
    let info = j.info;
    match j.clock {
        Some(c) => {
            let (num, den) = own_ratio(info).unwrap_or((c.pooled_ns, c.pooled_cycles));
            let cycles = Cycles {
                clk0: info.start_clk,
                gt0: info.start_gt,
                num,
                den,
            };
            let a = anchor(info, info.start_clk, info.end_clk, j.events);
            let w = LaneWalk::new(j.lane, a, cycles, j.start);
            walk::<_, ASYNC>(w, j.events, j.counters, j.async_mask, out)
        }
        None => {
            let a = anchor(info, info.start_gt, info.end_gt, j.events);
            let w = LaneWalk::new(j.lane, a, Globaltimer, j.start);
            walk::<_, ASYNC>(w, j.events, j.counters, j.async_mask, out)
        }
    }
}

/// [`walk_lane`] with async regions, out of line: a buffer without them runs the plain
/// walk's code as it was.
#[cold]
#[inline(never)]
fn walk_async(j: &LaneJob<'_>, out: &mut ChunkOut<'_>) -> Walked {
    walk_lane::<true>(j, out)
}

/// Walks a lane's records to the end: `events`, then (a ring that wrapped) `more`.
fn walk<C: Clock, const ASYNC: bool>(
    mut w: LaneWalk<C>,
    (events, more): (&[u64], &[u64]),
    counters: u32,
    async_mask: &AsyncMask,
    out: &mut ChunkOut<'_>,
) -> Walked {
    let run = |w: &mut LaneWalk<C>, words: &[u64], out: &mut ChunkOut<'_>| {
        if ASYNC {
            w.run_async(words, counters, async_mask, out)
        } else {
            w.run::<false>(words, counters, out)
        }
    };
    let mut r = run(&mut w, events, out);
    if !more.is_empty() {
        // A ring that wrapped: its records from the start of the event area come last.
        let m = run(&mut w, more, out);
        (r.unknown, r.backward) = (r.unknown + m.unknown, r.backward + m.backward);
    }
    w.finish(out);
    Walked {
        last_ns: w.last_ns,
        cur: w.cur,
        unknown: r.unknown,
        backward: r.backward,
    }
}
