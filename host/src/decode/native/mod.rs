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
//! counted in [`Diagnostics::ends_of_overwritten_begins`](crate::Diagnostics::ends_of_overwritten_begins), not in `unmatched_end`, and
//! never made into a span (its begin time is lost). A begin still open at the end is
//! unmatched as in any lane. Each lane's [`Lane::overwritten`](crate::Lane::overwritten) and the launch's total
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
//!   [`OWN_RATIO_MIN_NS`](super::OWN_RATIO_MIN_NS) (so one tick is a small error). It
//!   follows the clock's actual rate over that lane's interval, which matters when the
//!   clock changes during a long launch.
//!
//! Every other lane (shorter, or never finalized) takes the pooled ratio. The calibration
//! used is recorded in [`Source::clock`](crate::model::Source::clock). When the pooled
//! ratio cannot be measured, a buffer with lanes is refused
//! ([`DecodeError::NoClockCalibration`]): with no usable pair ([`NoCalibration::NoPair`](super::NoCalibration::NoPair)),
//! or when every pair spans 0 ns, all lanes having ended within one globaltimer tick
//! ([`NoCalibration::WithinOneTick`](super::NoCalibration::WithinOneTick)). ikp never assumes a clock frequency.
//!
//! Inconsistent segments are errors naming the lane: records in a lane that never ran
//! init, an IDS word without the lane mark, a ring flag without the header's, a
//! trailer that counts more records than fit, drops in a lane that was not full.
//!
//! # Lanes set aside
//!
//! The counting pass sets aside every lane whose stamps cannot belong to the same launch
//! as the others, before the clock calibration and the time base, so that it poisons
//! neither: it is named in [`Diagnostics::set_aside`](crate::Diagnostics::set_aside) with its stamps and the rule, and
//! none of its records is decoded. The rules (**span**, **clock**, **apart**, **range**)
//! are every format's, in [`super::set_aside`] (`# Lanes set aside`): a native lane is
//! judged by its init and finalize `%globaltimer` as written (its init alone if it never
//! finalized), and in clock mode by its (clock64, globaltimer) pairs; rule 1 lane by lane
//! as the counting pass reads them. A lane kept so starts before 2^63 ns, and its records,
//! at most 2^31 ticks apart, never unwrap past 2^64.

mod clock;
mod inspect;
mod walk;

use super::assemble::Caps;
use super::assemble::{self, Recycled};
use super::set_aside::{self, Extent, Judged};
use super::{DecodeError, DecodeOptions};
use crate::model::{ClockCalibration, Epoch, SetAsideReason, Trace};
use crate::time::Timestamp;
use clock::{calibration, pair};
use ikp_device::wire::{self, lane};
use ikp_device::Header;
use inspect::inspect;
use rayon::prelude::*;
#[cfg(test)]
use {super::NoCalibration, clock::own_ratio};

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
    /// Whether the lane stamped its records with the SM clock (its IDS flag `CLOCK`).
    fn clock(&self) -> bool {
        self.ids
            .is_some_and(|i| i.flags & wire::lane_flags::CLOCK != 0)
    }

    /// A finalized lane's end: its end globaltimer, or its start if that is later.
    fn end(&self) -> u64 {
        self.end_gt.max(self.start_gt)
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

impl Judged for LaneInfo {
    /// Whether the lane ran and is decoded.
    fn live(&self) -> bool {
        self.used && self.set_aside.is_none()
    }
    fn aside(&self) -> bool {
        self.set_aside.is_some()
    }
    fn start(&self) -> u64 {
        self.start_gt
    }
    /// Its end, or for a lane that never finalized its start (its last record is only
    /// known after the walk).
    fn reach(&self) -> u64 {
        if self.finalized {
            self.end()
        } else {
            self.start_gt
        }
    }
    fn pair(&self) -> Option<(u64, u64)> {
        pair(self)
    }
    fn set_aside(&mut self, why: SetAsideReason) {
        self.set_aside = Some(why);
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
    let p = prepare_epoch(h, words, Segments::Epoch(epoch), l.as_ref(), opts, &|_| {})?;
    p.decode_lanes_reusing(words, 0..p.lane_count(), reuse)
}

/// Decodes a native buffer of one launch whose lane segments are not the layout's
/// rectangle: `words` holds the header words, then lane `l`'s segment at
/// `offsets[l]..offsets[l + 1]`, each as long as its own records (prologue, records,
/// trailer; its capacity is what lies between). Every rule of the module applies as to a
/// rectangular buffer; the header's `records_per_lane` is not read. This is how a stream
/// capture, whose lanes may differ by orders of magnitude, is decoded without padding
/// every lane to the longest.
pub(crate) fn decode_ragged(
    words: &[u64],
    offsets: Vec<usize>,
    opts: &DecodeOptions,
    reuse: Recycled,
) -> Result<Trace, DecodeError> {
    let p = prepare_ragged(words, offsets, opts)?;
    p.decode_lanes_reusing(words, 0..p.lane_count(), reuse)
}

/// [`prepare`] for ragged segments ([`decode_ragged`]).
pub(crate) fn prepare_ragged(
    words: &[u64],
    offsets: Vec<usize>,
    opts: &DecodeOptions,
) -> Result<Prepared, DecodeError> {
    let h = Header::parse_header(words)?;
    debug_assert_eq!(offsets.len() as u64, h.layout.lane_count() + 1);
    debug_assert_eq!(h.layout.epochs, 1);
    prepare_epoch(h, words, Segments::Ragged(offsets), None, opts, &|_| {})
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
            let p = prepare_epoch(
                h.clone(),
                words,
                Segments::Epoch(e),
                Some(&l),
                opts,
                &|_| {},
            )?;
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
    segs: Segments,
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
    prepare_epoch(h, words, Segments::Epoch(0), l.as_ref(), opts, inspected)
}

/// Where the lane segments of the launch decoded are.
#[derive(Debug)]
enum Segments {
    /// The layout's rectangle: the segments of this epoch (the launch of that index).
    Epoch(u32),
    /// Lane `l`'s segment is `offsets[l]..offsets[l + 1]` ([`decode_ragged`]).
    Ragged(Vec<usize>),
}

impl Segments {
    /// Lane slot `l`'s segment and its capacity in records.
    fn of(&self, h: &Header, l: usize) -> (std::ops::Range<usize>, usize) {
        match self {
            Segments::Epoch(e) => (
                h.segment_range(*e, l as u64),
                h.layout.records_per_lane as usize,
            ),
            Segments::Ragged(o) => {
                let fixed = wire::lane_stride(0, h.layout.counters.len() as u32) as usize;
                (o[l]..o[l + 1], o[l + 1] - o[l] - fixed)
            }
        }
    }

    /// The epoch whose segments are decoded (0 for ragged segments, of one launch).
    fn epoch(&self) -> u32 {
        match self {
            Segments::Epoch(e) => *e,
            Segments::Ragged(_) => 0,
        }
    }
}

/// [`prepare`] for the segments `segs` of a buffer whose [`launches`] are `l` (`None`: a
/// buffer of one epoch).
fn prepare_epoch(
    h: Header,
    words: &[u64],
    segs: Segments,
    l: Option<&Launches>,
    opts: &DecodeOptions,
    inspected: &(dyn Fn(std::ops::Range<usize>) + Sync),
) -> Result<Prepared, DecodeError> {
    let n_lanes = h.layout.lane_count() as usize;
    let parallel = !opts.single_threaded && words.len() >= assemble::PARALLEL_MIN_RECORDS;
    let per_chunk = match &segs {
        Segments::Epoch(_) => INSPECT_CHUNK_WORDS / h.layout.lane_stride().max(1) as usize,
        Segments::Ragged(_) => n_lanes,
    }
    .max(1);
    let mut infos: Vec<LaneInfo> = Vec::with_capacity(n_lanes);
    let mut seen = Extent::default();
    let mut l0 = 0;
    while l0 < n_lanes {
        let l1 = (l0 + per_chunk).min(n_lanes);
        if parallel {
            let part: Vec<LaneInfo> = (l0..l1)
                .into_par_iter()
                .map(|l| inspect(&h, words, &segs, l))
                .collect::<Result<_, _>>()?;
            part.iter().for_each(|i| seen.note(i));
            infos.extend(part);
        } else {
            for l in l0..l1 {
                let i = inspect(&h, words, &segs, l)?;
                seen.note(&i);
                infos.push(i);
            }
        }
        inspected(segs.of(&h, l0).0.start..segs.of(&h, l1 - 1).0.end);
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
        index: segs.epoch(),
        epochs: h.layout.epochs,
        launches: l.ran,
    });
    Ok(Prepared {
        h,
        segs,
        infos,
        clock,
        parallel,
        set_aside,
        epoch,
        correct: opts.correct_overhead,
        cost_clock,
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
        self.segs.of(&self.h, l).0
    }

    /// Lane slot `l`'s event area (its records' slots) in `words`.
    fn events<'w>(&self, words: &'w [u64], l: usize) -> &'w [u64] {
        let (range, cap) = self.segs.of(&self.h, l);
        &words[range][lane::EVENTS as usize..][..cap]
    }

    /// Lane slot `l`'s trailer in `words`.
    fn trailer<'w>(&self, words: &'w [u64], l: usize) -> &'w [u64] {
        let (range, cap) = self.segs.of(&self.h, l);
        &words[range][lane::EVENTS as usize + cap..]
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
}

#[cfg(test)]
mod tests {
    use super::{calibration, inspect, own_ratio, LaneInfo, NoCalibration, Segments};
    use crate::decode::set_aside::{LANE_SPAN_MAX_NS, OWN_RATIO_MIN_NS};
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
        let why = |l| {
            inspect(&h, &words, &Segments::Epoch(0), l)
                .unwrap()
                .set_aside
        };
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
            let info = |l| inspect(&h, &words, &Segments::Epoch(0), l).unwrap();
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
