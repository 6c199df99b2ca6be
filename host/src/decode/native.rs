//! Decoder of the ikp native wire format v2 (layout in `ikp_device::wire`, `# Format`).
//!
//! Per lane: the prologue gives the 64-bit start stamps, the SM / warp ids and the record
//! cost, the trailer the end stamps and the written / dropped (or, in a ring, overwritten)
//! counts. Records are read up to `written` for a
//! finalized lane (non-zero words past it were written after finalize and are counted in
//! `after_finalize`), and up to the last non-zero word for a lane that never finalized.
//! Stamps unwrap from the lane's own 64-bit start stamp, each relative to the one before
//! it; a stamp behind its predecessor is a backward step of the timer, clamped and counted
//! in `backward_steps` ([`super`], `# Unwrapping`). A finalized lane whose end
//! globaltimer is before its start globaltimer ends at its start, and counts as a
//! backward step too (as does, in clock mode, an end clock64 before the start clock64).
//!
//! # Ring lanes
//!
//! A lane whose IDS flags say `RING` (the header's `RING` flag is then required, else the
//! lane is an error naming it) wrote record `i` at slot `i mod R` and so holds its newest
//! `R` records; its trailer counts `written` (present) and `overwritten`. A finalized ring:
//! - with nothing overwritten reads as any lane (slots `0..written`);
//! - that wrapped (`overwritten > 0`, which needs `written == R`, else the trailer is an
//!   error) is read from its oldest record, at slot `(written + overwritten) mod R`, to the
//!   end of the event area, then from slot 0: the order written, in two runs of the same
//!   walk, with no copy. Its first surviving record may be any time after its start, far
//!   more than the 2^31 ticks a stamp unwraps across, so its stamps unwrap **backward from
//!   its end stamp** (end `%globaltimer`, or in clock mode end clock64): each record at
//!   most 2^31 ticks before the record after it (a later stamp is a timer step back and
//!   keeps that record's tick). That gives the 64-bit tick of the oldest record, not
//!   before the lane's start, from which the walk unwraps forward as for any lane. A
//!   counter sample before its first timed record takes that record's time.
//!
//! Pairing runs on what survives. An end with no open begin of its region in a ring that
//! wrapped closed a begin that was overwritten (as far as the lane can tell): it is
//! counted in [`Diagnostics::ends_of_overwritten_begins`], not in `unmatched_end`, and
//! never made into a span (its begin time is lost). A begin still open at the end is
//! unmatched as in any lane. Each lane's [`Lane::overwritten`] and the launch's total
//! ([`Trace::overwritten`](crate::Trace::overwritten)) say what was lost.
//!
//! A ring that never ran finalize has no trailer counts: if its last slot holds a record
//! it may have wrapped any number of times, and where its oldest record is cannot be
//! known, so it is **set aside** ([`SetAsideReason::UnorderedRing`]), named and not
//! decoded; one whose last slot is empty never wrapped and reads up to its last record.
//! A lane without the `RING` flag in a ring launch reads as a drop-newest lane (its counts
//! are then `dropped`). The cost over drop-newest lanes is a test per lane, not per record.
//!
//! # Epochs
//!
//! A buffer of `epochs > 1` holds one segment per lane and launch. Each launch is decoded
//! on its own, exactly as a buffer of one launch, with every rule of this module applied
//! to its segments alone ([`super::decode_launches`], one trace per epoch where any segment
//! holds anything, ascending; an epoch that no lane ran is left out, as is the trace of a
//! launch that was never recorded). The launch counters say how many launches ran: the
//! largest counter, and at least one more than the last epoch recorded (counters left at
//! 0, as by a host that wrote the segments itself, are so not an error); launches past
//! `epochs` ran but recorded nothing, and each trace's
//! [`Source::epoch`](crate::Source::epoch) says how many. A counter above
//! [`MAX_LAUNCH_COUNT`] cannot be a count of launches: an error naming the lane
//! ([`DecodeError::LaunchCounter`]). Errors in a segment name its launch (`launch k: `).
//! [`super::decode`] and [`super::load`] return the one launch of a buffer that recorded
//! at most one, and refuse one of several ([`DecodeError::SeveralLaunches`], which says to
//! use the launches API): handing back the first launch alone would drop the others
//! silently. Finding the epochs that were recorded reads the IDS words of each epoch's
//! segments (the whole segments only of an epoch whose IDS words are all zero, so that
//! garbage there is not left out unseen); a buffer of one epoch reads no launch counter.
//!
//! # Overhead correction
//!
//! With [`DecodeOptions::correct_overhead`] (default off; checked on a GPU by
//! `ikp-gpucheck`'s `overhead-correction`), each
//! span's duration is reduced by the cost of the records its lane wrote inside it, as
//! Proton does: its end moves earlier by `cost x n`, `n` the records of its lane strictly
//! between its begin and end records (of any kind: each was a store and, but for meta
//! records, a timer read), the begin stays. A lane's cost is its `CALIB` word (cycles per
//! record of back-to-back records at init, `ikp_device::wire`) in cycles, converted to ns with the
//! ratio its stamps convert with in clock mode (its own or the pooled one, `# Clock
//! mode`), and in globaltimer mode with the ratio pooled the same way over the lanes'
//! (globaltimer, clock64) pairs at start and end. A span never ends before its begin, nor
//! after the corrected end of the span it is nested in (the span open at its begin one
//! level up, when that one ends no earlier). A lane whose cost word is 0 (not measured),
//! or of a launch where no ratio can be measured, is left as recorded and counted. What
//! was done is in [`Source::overhead_correction`](crate::Source::overhead_correction).
//! The correction is its own pass over the corrected lanes' records (it replays each
//! lane's pairing to count the records inside each span), taken only when asked for: the
//! decode's walk carries no record index.
//!
//! # Clock mode
//!
//! A lane whose IDS flags say `CLOCK` (ikp.cuh's `Timer::Clock`) stamps its records with
//! the low 32 bits of `%clock` (SM cycles); the others with `%globaltimer_lo` (ns). The
//! timer is each lane's own choice, so a launch may mix both, whatever the header's
//! `timer` says: the decoder follows each lane's flag. Every lane has its (globaltimer,
//! clock64) pair at init and, if it finalized, at finalize. Cycles convert to ns as
//! `start_gt + (cycles - start_clk) * ns / cycles`, with one of two ratios:
//! - **pooled**: `Σ ns / Σ cycles` over the init-to-finalize intervals of every finalized
//!   lane whose end stamps are not before its start stamps (and whose clock advanced),
//!   lanes set aside excepted (`# Lanes set aside`). All
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
//! init, an IDS word without the lane mark, a ring flag without the header's, a
//! trailer that counts more records than fit, drops in a lane that was not full.
//!
//! # Lanes set aside
//!
//! The counting pass sets aside every lane whose stamps cannot belong to the same launch
//! as the others, before the clock calibration and the time base, so that it poisons
//! neither: it is named in [`Diagnostics::set_aside`] with its stamps and the rule, and
//! none of its records is decoded. The rules (**span**, **clock**, **apart**, **range**)
//! are every format's, in [`super::set_aside`] (`# Lanes set aside`): a native lane is
//! judged by its init and finalize `%globaltimer` as written (its init alone if it never
//! finalized), and in clock mode by its (clock64, globaltimer) pairs; rule 1 lane by lane
//! as the counting pass reads them. A lane kept so starts before 2^63 ns, and its records,
//! at most 2^31 ticks apart, never unwrap past 2^64.

use super::assemble::{self, Caps, ChunkDone, Recycled};
use super::async_ranges::{self, AsyncMask, AsyncRecord};
use super::lane::{ChunkOut, Clock, Cursor, Cycles, Globaltimer, LaneWalk};
use super::set_aside::{self, Extent, Judged};
use super::{DecodeError, DecodeOptions, NoCalibration};
use crate::model::{
    ClockCalibration, Diagnostics, Epoch, Lane, Names, SetAsideLane, SetAsideReason, Source, Trace,
    TrackId, WireFormat,
};
use crate::time::Timestamp;
use ikp_device::wire::{self, lane, Kind};
use ikp_device::{Header, Overflow};
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
    /// As written ([`LaneInfo::end`] is the end the lane gets).
    end_gt: u64,
    end_clk: u64,
    /// Finalized with an end stamp before its start stamp (the end is clamped).
    end_backward: bool,
    dropped: u64,
    /// Ring lanes: records overwritten (the trailer's second count).
    overwritten: u64,
    /// A ring lane that wrapped: index of its oldest record (records run from it to the
    /// end of the event area, then from its start).
    oldest: usize,
    /// The `CALIB` word: cycles of one record (0: not measured).
    calib: u32,
    after_finalize: u64,
    caps: Caps,
    /// Why the lane is not decoded (module docs, `# Lanes set aside`).
    set_aside: Option<SetAsideReason>,
}

impl LaneInfo {
    /// Whether the lane ran and is decoded.
    fn live(&self) -> bool {
        self.used && self.set_aside.is_none()
    }

    /// Whether the lane stamped its records with the SM clock (its IDS flag `CLOCK`).
    fn clock(&self) -> bool {
        self.ids
            .is_some_and(|i| i.flags & wire::lane_flags::CLOCK != 0)
    }

    /// A finalized lane's end: its end globaltimer, or its start if that is later.
    fn end(&self) -> u64 {
        self.end_gt.max(self.start_gt)
    }

    /// How far the lane's interval is known to reach: its end, or for a lane that never
    /// finalized its start (its last record is only known after the walk).
    fn reach(&self) -> u64 {
        if self.finalized {
            self.end()
        } else {
            self.start_gt
        }
    }

    /// Whether the lane is a ring that wrapped (its records do not start at slot 0).
    fn wrapped(&self) -> bool {
        self.overwritten > 0
    }

    /// The lane's records in the order written, as two runs of its event area `events`:
    /// from the oldest record to the end of the area and then from its start for a ring
    /// that wrapped, else the first `n` records and nothing.
    fn ordered<'w>(&self, events: &'w [u64]) -> (&'w [u64], &'w [u64]) {
        if self.wrapped() {
            let (a, b) = events.split_at(self.oldest);
            (b, a)
        } else {
            (&events[..self.n], &[])
        }
    }
}

/// Decodes a native buffer, reusing the memory of `reuse`'s columns.
pub(crate) fn decode(
    words: &[u64],
    opts: &DecodeOptions,
    reuse: Recycled,
) -> Result<Trace, DecodeError> {
    let h = Header::parse(words)?;
    let l = (h.layout.epochs > 1)
        .then(|| launches(&h, words))
        .transpose()?;
    let epoch = match l.as_ref().map(|l| &l.recorded[..]) {
        None | Some([]) => 0,
        Some(&[one]) => one,
        Some(more) => return Err(DecodeError::SeveralLaunches(more.len())),
    };
    let p = prepare_epoch(h, words, epoch, l.as_ref(), opts, &|_| {})?;
    p.decode_lanes_reusing(words, 0..p.lane_count(), reuse)
}

/// Decodes each launch of a native buffer: one trace per epoch where any lane ran
/// (module docs, `# Epochs`); a buffer of one epoch gives one trace, as [`decode`].
pub(crate) fn decode_launches(
    words: &[u64],
    opts: &DecodeOptions,
) -> Result<Vec<Trace>, DecodeError> {
    let h = Header::parse(words)?;
    if h.layout.epochs == 1 {
        return Ok(vec![decode(words, opts, Recycled::default())?]);
    }
    let l = launches(&h, words)?;
    let epochs = if l.recorded.is_empty() {
        vec![0]
    } else {
        l.recorded.clone()
    };
    epochs
        .into_iter()
        .map(|e| {
            let p = prepare_epoch(h.clone(), words, e, Some(&l), opts, &|_| {})?;
            p.decode_lanes_reusing(words, 0..p.lane_count(), Recycled::default())
        })
        .collect()
}

/// What a buffer of several epochs recorded (module docs, `# Epochs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Launches {
    /// Epochs where at least one lane ran, ascending.
    pub recorded: Vec<u32>,
    /// Launches that ran: the largest launch counter, and at least one past the last
    /// epoch recorded.
    pub ran: u64,
}

/// The epochs of a buffer with `epochs > 1` that hold a launch, and how many launches
/// ran; an error for a launch counter that cannot be a count of launches.
pub(crate) fn launches(h: &Header, words: &[u64]) -> Result<Launches, DecodeError> {
    let lanes = h.layout.lane_count();
    let mut ran = 0u64;
    for l in 0..lanes {
        let c = words[h.launch_counter(l)];
        if c > MAX_LAUNCH_COUNT {
            return Err(DecodeError::LaunchCounter {
                lane: l,
                word: h.launch_counter(l) as u64,
                value: c,
            });
        }
        ran = ran.max(c);
    }
    // An epoch is recorded when a segment of it holds anything: its lanes' IDS words
    // first (a launch sets them all), then every word (garbage in an epoch that no lane
    // ran is then an error of that epoch's decode, not left out unseen).
    let ids = lane::IDS as usize;
    let recorded: Vec<u32> = (0..h.layout.epochs)
        .filter(|&e| {
            (0..lanes).any(|l| words[h.segment_range(e, l)][ids] != 0)
                || (0..lanes).any(|l| words[h.segment_range(e, l)].iter().any(|&w| w != 0))
        })
        .collect();
    if let Some(&last) = recorded.last() {
        ran = ran.max(last as u64 + 1);
    }
    Ok(Launches { recorded, ran })
}

/// The largest launch counter read as a count of launches: 2^32 - 1 (the device's counter
/// is a 64-bit word, but no buffer sees four billion launches; a larger value is garbage).
pub const MAX_LAUNCH_COUNT: u64 = u32::MAX as u64;

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
    /// The pooled calibration, for clock lanes without their own (`None` when no lane
    /// stamped cycles).
    clock: Option<ClockCalibration>,
    parallel: bool,
    /// Lanes set aside (so that a sound buffer's decode looks for none).
    set_aside: usize,
    /// Which launch of a buffer of several epochs this is (`None`: one epoch).
    epoch: Option<Epoch>,
    /// [`DecodeOptions::correct_overhead`].
    correct: bool,
    /// With `correct`: the cycles-to-ns ratio the record costs convert with (clock mode:
    /// [`Prepared::clock`]; globaltimer mode: pooled over the lanes' start and end
    /// (globaltimer, clock64) pairs likewise), `None` when none can be measured.
    cost_clock: Option<ClockCalibration>,
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
    let l = (h.layout.epochs > 1)
        .then(|| launches(&h, words))
        .transpose()?;
    prepare_epoch(h, words, 0, l.as_ref(), opts, inspected)
}

/// [`prepare`] for the segments of epoch `epoch` (the launch of that index) of a buffer
/// whose [`launches`] are `l` (`None`: a buffer of one epoch).
fn prepare_epoch(
    h: Header,
    words: &[u64],
    epoch: u32,
    l: Option<&Launches>,
    opts: &DecodeOptions,
    inspected: &(dyn Fn(std::ops::Range<usize>) + Sync),
) -> Result<Prepared, DecodeError> {
    let n_lanes = h.layout.lane_count() as usize;
    let parallel = !opts.single_threaded && words.len() >= assemble::PARALLEL_MIN_RECORDS;
    let per_chunk = (INSPECT_CHUNK_WORDS / h.layout.lane_stride().max(1) as usize).max(1);
    let mut infos: Vec<LaneInfo> = Vec::with_capacity(n_lanes);
    let mut seen = Extent::default();
    let mut l0 = 0;
    while l0 < n_lanes {
        let l1 = (l0 + per_chunk).min(n_lanes);
        if parallel {
            let part: Vec<LaneInfo> = (l0..l1)
                .into_par_iter()
                .map(|l| inspect(&h, words, epoch, l))
                .collect::<Result<_, _>>()?;
            part.iter().for_each(|i| seen.note(i));
            infos.extend(part);
        } else {
            for l in l0..l1 {
                let i = inspect(&h, words, epoch, l)?;
                seen.note(&i);
                infos.push(i);
            }
        }
        inspected(
            h.segment_range(epoch, l0 as u64).start..h.segment_range(epoch, l1 as u64 - 1).end,
        );
        l0 = l1;
    }
    let cycles = infos.iter().any(|i| i.used && i.clock());
    let set_aside = set_aside::launch_rules(&mut infos, &seen, cycles);
    let clock = if infos.iter().any(|i| i.live() && i.clock()) {
        Some(calibration(&infos).map_err(DecodeError::NoClockCalibration)?)
    } else {
        None
    };
    // Globaltimer stamps need a cycles-to-ns ratio only to convert the record cost.
    let cost_clock = match (opts.correct_overhead, clock) {
        (false, _) => None,
        (true, Some(c)) => Some(c),
        (true, None) => calibration(&infos).ok(),
    };
    let epoch = l.map(|l| Epoch {
        index: epoch,
        epochs: h.layout.epochs,
        launches: l.ran,
    });
    Ok(Prepared {
        h,
        infos,
        clock,
        parallel,
        set_aside,
        epoch,
        correct: opts.correct_overhead,
        cost_clock,
    })
}

impl Judged for LaneInfo {
    fn live(&self) -> bool {
        LaneInfo::live(self)
    }
    fn aside(&self) -> bool {
        self.set_aside.is_some()
    }
    fn start(&self) -> u64 {
        self.start_gt
    }
    fn reach(&self) -> u64 {
        LaneInfo::reach(self)
    }
    fn pair(&self) -> Option<(u64, u64)> {
        pair(self)
    }
    fn set_aside(&mut self, why: SetAsideReason) {
        self.set_aside = Some(why);
    }
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
        self.h.segment_range(self.epoch_index(), l as u64)
    }

    /// The epoch whose segments are decoded.
    fn epoch_index(&self) -> u32 {
        self.epoch.map_or(0, |e| e.index)
    }

    /// Whether the buffer has room for several launches (epochs): only the first is
    /// prepared.
    pub(crate) fn several_launches(&self) -> bool {
        self.h.layout.epochs > 1
    }

    /// The earliest start of any lane decoded: the time base of the whole launch.
    pub(crate) fn time_base(&self) -> Timestamp {
        (self.infos.iter())
            .filter(|i| i.live())
            .map(|i| i.start_gt)
            .min()
            .unwrap_or(0)
    }

    /// Decodes lane slots `lanes` of `words` (the words [`prepare`] checked) into a trace
    /// holding only those lanes (its `time_base` is the earliest start among them),
    /// reusing the memory of `reuse`'s columns; the async records of those lanes are
    /// paired among themselves ([`async_ranges::pair`]). Decoding every slot in one call
    /// is [`decode`].
    fn decode_lanes_reusing(
        &self,
        words: &[u64],
        lanes: std::ops::Range<usize>,
        reuse: Recycled,
    ) -> Result<Trace, DecodeError> {
        let (mut t, records) = self.decode_lanes_unpaired(words, lanes, reuse)?;
        async_ranges::pair_into(&mut t, records);
        Ok(t)
    }

    /// [`Prepared::decode_lanes_reusing`] with no async range (those lanes' async records,
    /// unpaired, in lane order, returned beside it): what a decode of some of a launch's
    /// lanes pairs with the others' ([`super::stream`]).
    pub(crate) fn decode_lanes_unpaired(
        &self,
        words: &[u64],
        lanes: std::ops::Range<usize>,
        reuse: Recycled,
    ) -> Result<(Trace, Vec<AsyncRecord>), DecodeError> {
        let async_mask = AsyncMask::of(&self.h.layout.async_regions);
        let (h, infos) = (&self.h, &self.infos[lanes.clone()]);
        let l_base = lanes.start;
        let epoch = self.epoch_index();
        let clock = self.clock;
        let caps: Vec<Caps> = (infos.iter())
            .map(|i| if i.live() { i.caps } else { Caps::default() })
            .collect();
        let cap = h.layout.records_per_lane as usize;
        let counters = h.layout.counters.len() as u32;
        let groups = h.layout.groups_per_block;

        let asm = assemble::run(&caps, self.parallel, reuse, |chunk| {
            let mut done = ChunkDone::default();
            for k in chunk.lanes.clone() {
                let info = &infos[k];
                let l = l_base + k;
                if !info.live() {
                    continue;
                }
                let start = chunk.starts[k - chunk.lanes.start];
                let seg = &words[h.segment_range(epoch, l as u64)];
                let events = info.ordered(&seg[lane::EVENTS as usize..][..cap]);
                let (l, out) = (l as u32, &mut chunk.out);
                let ends_before = out.unmatched_end.len();
                // Each lane's own timer: a kernel may mix lanes of both.
                let clock = clock.filter(|_| info.clock());
                let walked = if async_mask.is_empty() {
                    walk_lane::<false>(info, l, start, clock, events, counters, &async_mask, out)
                } else {
                    walk_async(info, l, start, clock, events, counters, &async_mask, out)
                };
                if info.wrapped() {
                    // Ends whose begins the ring overwrote: counted, never spans.
                    let orphans = out.unmatched_end.len() - ends_before;
                    out.unmatched_end.truncate(ends_before);
                    done.diag.ends_of_overwritten_begins += orphans as u64;
                }
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
            Ok(done)
        })?;

        let nc = h.layout.counters.len();
        let mut counter_totals = Vec::with_capacity(asm.lanes.len() * nc);
        for l in &asm.lanes {
            let seg = &words[h.segment_range(epoch, l.id as u64)];
            let t = (lane::EVENTS + lane::T_COUNTERS) as usize + cap;
            counter_totals.extend_from_slice(&seg[t..t + nc]);
        }
        let time_base = asm.lanes.iter().map(|l| l.start).min().unwrap_or(0);
        // A sound buffer has none to look for (one pass less over many lanes).
        let with_set_aside = if self.set_aside > 0 { infos } else { &[] };
        let set_aside = (with_set_aside.iter().enumerate())
            .filter_map(|(k, i)| {
                let reason = i.set_aside?;
                let l = (l_base + k) as u32;
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
            .collect();
        let mut trace = Trace {
            source: Source {
                format: WireFormat::Ikp,
                version: h.version,
                timer: h.layout.timer,
                clock: self.clock,
                assumed_clock: None,
                grid: h.layout.grid,
                groups_per_block: groups,
                records_per_lane: h.layout.records_per_lane,
                time_base,
                block_filter: Default::default(),
                clock_sync: h.layout.clock_sync,
                epoch: self.epoch,
                overhead_correction: None,
            },
            names: Names {
                regions: h.layout.regions.clone(),
                counters: h.layout.counters.clone(),
            },
            lanes: asm.lanes,
            spans: asm.spans,
            instants: asm.instants,
            samples: asm.samples,
            async_ranges: Default::default(),
            counter_totals,
            diagnostics: Diagnostics {
                set_aside,
                ..asm.diag
            },
        };
        if self.correct {
            let costs = |i: &LaneInfo| self.record_cost(i);
            let at = |id: u32| {
                let (info, seg) = (
                    &infos[id as usize - l_base],
                    h.segment_range(epoch, id as u64),
                );
                info.ordered(&words[seg][lane::EVENTS as usize..][..cap])
            };
            let cost = |id: u32| costs(&infos[id as usize - l_base]);
            let c = super::correct::apply(&mut trace, cost, at, self.parallel);
            trace.source.overhead_correction = Some(c);
        }
        Ok((trace, asm.async_records))
    }

    /// A lane's cost of one record as `(cycles, ns, per cycles)`: its `CALIB` cycles and
    /// the ratio its stamps convert with (module docs, `# Overhead correction`); `None`
    /// when the cost was not measured or no ratio is known.
    fn record_cost(&self, i: &LaneInfo) -> Option<(u64, u64, u64)> {
        let c = self.cost_clock.filter(|_| i.calib > 0)?;
        let (num, den) = match self.clock.filter(|_| i.clock()) {
            Some(_) => own_ratio(i).unwrap_or((c.pooled_ns, c.pooled_cycles)),
            None => (c.pooled_ns, c.pooled_cycles),
        };
        Some((i.calib as u64, num, den))
    }
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

fn inspect(h: &Header, words: &[u64], epoch: u32, l: usize) -> Result<LaneInfo, DecodeError> {
    let range = h.segment_range(epoch, l as u64);
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

/// What walking one native lane left.
struct Walked {
    last_ns: Timestamp,
    cur: Cursor,
    unknown: u64,
    backward: u64,
}

/// Walks native lane `l` (a clock lane when `clock` is given) to the end: one instance per
/// clock, so the globaltimer walk has no conversion in its loop, and per `ASYNC`, so the
/// walk of a buffer without async regions has no test for them in its loop (with `ASYNC`,
/// the records of `async_mask`'s regions are set aside: [`LaneWalk::run_async`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn walk_lane<const ASYNC: bool>(
    info: &LaneInfo,
    l: u32,
    start: Cursor,
    clock: Option<ClockCalibration>,
    events: (&[u64], &[u64]),
    counters: u32,
    async_mask: &AsyncMask,
    out: &mut ChunkOut<'_>,
) -> Walked {
    match clock {
        Some(c) => {
            let (num, den) = own_ratio(info).unwrap_or((c.pooled_ns, c.pooled_cycles));
            let cycles = Cycles {
                clk0: info.start_clk,
                gt0: info.start_gt,
                num,
                den,
            };
            let a = anchor(info, info.start_clk, info.end_clk, events);
            let w = LaneWalk::new(l, a, cycles, start);
            walk::<_, ASYNC>(w, events, counters, async_mask, out)
        }
        None => {
            let a = anchor(info, info.start_gt, info.end_gt, events);
            let w = LaneWalk::new(l, a, Globaltimer, start);
            walk::<_, ASYNC>(w, events, counters, async_mask, out)
        }
    }
}

/// [`walk_lane`] with async regions, out of line: a buffer without them runs the plain
/// walk's code as it was.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn walk_async(
    info: &LaneInfo,
    l: u32,
    start: Cursor,
    clock: Option<ClockCalibration>,
    events: (&[u64], &[u64]),
    counters: u32,
    async_mask: &AsyncMask,
    out: &mut ChunkOut<'_>,
) -> Walked {
    walk_lane::<true>(info, l, start, clock, events, counters, async_mask, out)
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

/// `(ns, cycles)` elapsed between a decoded finalized lane's start and end, if both
/// advanced (ns may be 0: a lane shorter than one globaltimer tick).
fn pair(i: &LaneInfo) -> Option<(u64, u64)> {
    if !i.live() || !i.finalized || i.end_backward || i.end_clk <= i.start_clk {
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
    let used = infos.iter().filter(|i| i.live());
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
    use crate::decode::set_aside::LANE_SPAN_MAX_NS;
    use crate::model::SetAsideReason;
    use ikp_device::encoder::BufferWriter;
    use ikp_device::wire::lane_flags;
    use ikp_device::{Header, Layout, TimerMode};

    #[test]
    fn a_lane_longer_than_the_span_bound_either_way_is_set_aside() {
        let mut b = BufferWriter::new(Layout {
            grid: [1, 1, 1],
            groups_per_block: 4,
            records_per_lane: 2,
            timer: TimerMode::Globaltimer,
            regions: vec![],
            counters: vec![],
            ..Layout::default()
        })
        .unwrap();
        let t0 = 1u64 << 50;
        b.lane(0)
            .init(0, 0, 0, t0, 0)
            .finalize(t0 + LANE_SPAN_MAX_NS, 0);
        b.lane(1)
            .init(0, 0, 0, t0, 0)
            .finalize(t0 + LANE_SPAN_MAX_NS + 1, 0);
        b.lane(2)
            .init(0, 0, 0, t0, 0)
            .finalize(t0 - LANE_SPAN_MAX_NS - 1, 0);
        b.lane(3)
            .init(0, 0, 0, t0, 0)
            .finalize(t0 - LANE_SPAN_MAX_NS, 0);
        let words = b.into_words();
        let h = Header::parse(&words).unwrap();
        let why = |l| inspect(&h, &words, 0, l).unwrap().set_aside;
        let span = Some(SetAsideReason::Span);
        assert_eq!([why(0), why(1), why(2), why(3)], [None, span, span, None]);
    }

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
                ..Layout::default()
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
            let info = |l| inspect(&h, &words, 0, l).unwrap();
            assert!(info(0).end_backward && info(0).end() == 5_000, "{timer:?}");
            // The end clock64 only matters in clock mode.
            assert_eq!(info(1).end_backward, timer == TimerMode::Clock);
            assert_eq!(info(1).end(), 6_000);
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
