//! Lanes whose stamps cannot belong to the launch: one rule for damaged stamps, for
//! every format ikp reads, in one place. Every decoder's lanes pass through it before
//! the launch's time base and any figure is computed, so that one corrupted stamp word
//! never turns into plausible nonsense (a GPU wall time of 544 years, a time axis past
//! what a trace file can hold) in one output while another refuses the buffer.
//!
//! # Lanes set aside
//!
//! A lane's stamps place it on the launch's time axis: a native lane's 64-bit start and
//! end stamps (its records unwrap from the start stamp), and in every other format its
//! records' own times (yao-jz's 64-bit `%globaltimer`, Proton's cycles placed from its
//! CTA's init time, the TVM family's 32-bit stamps unwrapped from a shared base). One
//! corrupted stamp word (a flipped bit, an overwritten word) can so throw a lane centuries
//! away, and with it the launch's figures. Every lane whose stamps cannot belong to the
//! same launch as the others is therefore **set aside**: it is named in
//! [`Diagnostics::set_aside`](crate::model::Diagnostics::set_aside) with its stamps and the
//! rule, none of its records or counts is in the trace, and the launch decodes exactly as
//! if that lane had never run. Every output says so in the same words: the warning line of
//! every command, `set_aside_lanes` in the summary JSON, `ikp summary`'s table and the
//! report.
//!
//! A lane is judged by its interval:
//! - a **native** lane by its init and finalize `%globaltimer` as written (one that never
//!   finalized by its init alone, its records being known only after the walk), in the
//!   counting pass, before the clock calibration and the time base, so that it poisons
//!   neither and none of its records is walked;
//! - a lane of **every other format** by the times of its first and latest records, as
//!   decoded (they carry no start and end stamps of their own); the lanes set aside are
//!   then decoded again without them (`without_lanes_set_aside`): a damaged buffer pays
//!   a second decode, a sound one a pass over its lanes.
//!
//! A native buffer decoded lane by lane ([`super::StreamedBuffer`]) goes through the same
//! counting pass as one decoded whole. A host trace's threads (`ikp merge`,
//! [`super::chrome_host`]) are judged likewise, by rules 1, 3 and 4, from their earliest
//! begin to their latest end.
//!
//! The rules, in this order:
//!
//! 1. **span**: a lane whose end is more than [`LANE_SPAN_MAX_NS`] (2^44 ns, about 4.9 h)
//!    after its start, or as far before it. A lane lives inside one kernel; a persistent
//!    kernel may keep its lanes open for as long as it runs, and ikp decodes lanes of hours
//!    (native and TVM-family records at most 2.1 s apart), but not of more than a bound no
//!    profiled launch is expected to reach. A timer that steps back (a resync) does so by
//!    microseconds, not hours.
//! 2. **clock** (native lanes, when any lane stamped cycles): a finalized lane whose
//!    clock64 interval, at the launch's clock rate, and globaltimer interval differ by
//!    more than a factor [`CLOCK_DISAGREEMENT_MAX`] (16) plus [`CLOCK_SLACK_NS`] (4 us, a
//!    few ticks of the coarsest `%globaltimer`). The launch's rate is the lower median of
//!    the lanes' own ns / cycles, over the lanes that span at least
//!    [`OWN_RATIO_MIN_NS`] (over those that measured any ns, if none does). Every SM
//!    counts cycles at one rate, and a GPU's clock varies by less than 16x (idle to boost
//!    is under 10x), so a lane that disagrees has a corrupted stamp, which would skew the
//!    pooled ratio and with it every lane's times. The rule applies only when the lanes
//!    that agree are a strict majority of the lanes with a pair: with fewer, there is no
//!    telling which lane is wrong. The other formats carry no such pair.
//! 3. **apart**: lanes are grouped by their intervals: by start, a lane joins the group
//!    before it if it starts at most [`LAUNCH_GAP_MAX_NS`] (2^40 ns, about 18 min) after
//!    the latest end in that group. The largest group (by lanes; the earliest among
//!    equals) is the launch; every other lane is set aside. Groups chain through
//!    intervals, not starts alone, so that late lanes are kept: a wave of blocks starts as
//!    the blocks before it end, and a lane that starts late in a persistent kernel starts
//!    while others run. A genuine launch has no 18 min stretch with no lane open, unless
//!    it records only a short part of blocks that each run for longer than that, wave
//!    after wave.
//! 4. **range**: a lane the rules above kept whose interval reaches [`STAMP_END_NS`]
//!    (2^63 ns since 1970, the year 2262) or beyond: no timer reads that, no trace
//!    format's int64 time axis holds it, and a native lane's records, unwrapped forward
//!    from such a start, could run past 2^64 and wrap. It matters only when the lanes
//!    thrown there are all the launch has, or most of it (one lane alone, say); every
//!    lane of a launch kept by the rules so starts before 2^63 ns, and no lane's times
//!    wrap.
//!
//! A native ring lane that never finalized with every slot full is set aside too, for
//! another reason: its records cannot be ordered ([`super::native`], `# Ring lanes`).
//!
//! The rules cost O(lanes), never O(records): the first is checked lane by lane as a
//! decoder goes (`span`), which also notes the lanes' extent (`Extent`), so that the
//! third looks at the lanes again (and sorts them) only when they span more than its
//! bound, and the fourth only when they reach its; the second takes a pass and a median
//! in clock mode.
//!
//! What the bounds let through: a stamp corrupted by less than the bounds is a plausible
//! stamp and cannot be told from one. Its lane is decoded, and one corrupted stamp word
//! moves the GPU wall time by at most [`LANE_SPAN_MAX_NS`]. The TVM family's stamps are
//! 32 bits, read forward from a shared base and each from the one before it: one
//! corrupted stamp moves its lane by less than 2^32 ns (4.3 s), within the bounds, so its
//! lane is decoded; the records after a stamp thrown forward are then behind it, each
//! clamped and counted in
//! [`Diagnostics::backward_steps`](crate::model::Diagnostics::backward_steps).

use super::assemble::Recycled;
use crate::model::{Lane, SetAsideLane, SetAsideReason, Trace};

/// The longest a lane may run, start to end: 2^44 ns, about 4.9 h. A lane whose end is
/// further from its start is set aside (module docs, rule 1).
pub const LANE_SPAN_MAX_NS: u64 = 1 << 44;

/// The longest stretch of a launch with no lane open: 2^40 ns, about 18 min. Lanes
/// further from the launch's lanes are set aside (module docs, rule 3).
pub const LAUNCH_GAP_MAX_NS: u64 = 1 << 40;

/// The first ns no stamp may reach: 2^63 ns since 1970, the year 2262, where every int64
/// time axis ends (module docs, rule 4).
pub const STAMP_END_NS: u64 = 1 << 63;

/// Clock mode: how many times longer (or shorter) a lane's clock64 interval, at the
/// launch's clock rate, may be than its globaltimer interval, beyond [`CLOCK_SLACK_NS`]
/// (module docs, rule 2). A GPU's clock varies by less than 10x.
pub const CLOCK_DISAGREEMENT_MAX: u64 = 16;

/// Clock mode: the difference between a lane's two intervals always allowed: 4 us, a few
/// ticks of the coarsest `%globaltimer` (a short lane measures its interval to a tick).
pub const CLOCK_SLACK_NS: u64 = 1 << 12;

/// The globaltimer span from which a lane converts its cycles with its own ratio rather
/// than the pooled one: 1 ms. `%globaltimer` ticks are up to about 1 us on some GPUs, and
/// the interval between two ticked stamps is off by less than one tick, so a lane of at
/// least 1 ms measures its own rate to better than 0.1 %. Shorter lanes are better served
/// by the pooled ratio (`super::native`, `# Clock mode`); rule 2 takes the
/// launch's rate from the lanes that long (module docs).
pub const OWN_RATIO_MIN_NS: u64 = 1_000_000;

/// A lane as the rules see it.
pub(crate) trait Judged {
    /// Whether the rules look at it: it ran, and nothing set it aside yet.
    fn live(&self) -> bool;
    /// Whether it was set aside.
    fn aside(&self) -> bool;
    /// Where it starts, ns.
    fn start(&self) -> u64;
    /// How far its interval is known to reach, ns.
    fn reach(&self) -> u64;
    /// Its `(ns, cycles)` from start to end, when it has a usable pair (rule 2).
    fn pair(&self) -> Option<(u64, u64)> {
        None
    }
    /// Sets it aside.
    fn set_aside(&mut self, why: SetAsideReason);
}

/// Rule 1 (module docs), for a lane from `start` to `end`.
#[inline]
pub(crate) fn span(start: u64, end: u64) -> Option<SetAsideReason> {
    (start.abs_diff(end) > LANE_SPAN_MAX_NS).then_some(SetAsideReason::Span)
}

/// What a decoder notes of each lane as it goes, so that a sound launch needs no further
/// pass over its lanes for rules 3 and 4.
#[derive(Debug)]
pub(crate) struct Extent {
    /// Earliest start and latest reach of the lanes not set aside.
    lo: u64,
    hi: u64,
    /// Lanes set aside so far.
    set_aside: usize,
}

impl Default for Extent {
    fn default() -> Self {
        Extent {
            lo: u64::MAX,
            hi: 0,
            set_aside: 0,
        }
    }
}

impl Extent {
    /// Notes lane `l` (after rule 1).
    pub(crate) fn note(&mut self, l: &impl Judged) {
        if l.live() {
            (self.lo, self.hi) = (self.lo.min(l.start()), self.hi.max(l.reach()));
        } else if l.aside() {
            self.set_aside += 1;
        }
    }
}

/// Rules 2 (when `cycles`: some lane stamped cycles), 3 and 4 over `lanes`, whose extent
/// (after rule 1) is `seen`; how many lanes are set aside in all.
pub(crate) fn launch_rules<L: Judged>(lanes: &mut [L], seen: &Extent, cycles: bool) -> usize {
    let mut n = seen.set_aside;
    if cycles {
        n += clock(lanes);
    }
    // Lanes that all lie within the gap are one group (no pass over them needed).
    if seen.hi.saturating_sub(seen.lo) > LAUNCH_GAP_MAX_NS {
        n += apart(lanes);
    }
    if seen.hi >= STAMP_END_NS {
        n += range(lanes);
    }
    n
}

/// Rule 4 (module docs): sets aside the lanes that reach [`STAMP_END_NS`]; how many.
fn range<L: Judged>(lanes: &mut [L]) -> usize {
    let mut n = 0;
    for l in lanes.iter_mut().filter(|l| l.live()) {
        if l.start().max(l.reach()) >= STAMP_END_NS {
            l.set_aside(SetAsideReason::Range);
            n += 1;
        }
    }
    n
}

/// Rule 2 (module docs): sets aside the lanes whose clock64 and globaltimer intervals
/// disagree at the launch's clock rate; how many.
fn clock<L: Judged>(lanes: &mut [L]) -> usize {
    let ratio = |(ns, cycles): (u64, u64)| ns as f64 / cycles as f64;
    let pairs = || lanes.iter().filter(|l| l.live()).filter_map(Judged::pair);
    let mut rates: Vec<f64> = (pairs())
        .filter(|&(ns, _)| ns >= OWN_RATIO_MIN_NS)
        .map(ratio)
        .collect();
    if rates.is_empty() {
        rates = pairs().filter(|&(ns, _)| ns > 0).map(ratio).collect();
    }
    if rates.is_empty() {
        return 0;
    }
    let mid = (rates.len() - 1) / 2;
    let rate = *rates.select_nth_unstable_by(mid, f64::total_cmp).1;
    let (k, slack) = (CLOCK_DISAGREEMENT_MAX as f64, CLOCK_SLACK_NS as f64);
    let agrees = |(ns, cycles): (u64, u64)| {
        let (ns, at_rate) = (ns as f64, cycles as f64 * rate);
        ns <= k * at_rate + slack && at_rate <= k * ns + slack
    };
    let (n, agreeing) = pairs().fold((0, 0), |(n, a), p| (n + 1, a + usize::from(agrees(p))));
    if 2 * agreeing <= n {
        return 0;
    }
    for l in lanes.iter_mut().filter(|l| l.live()) {
        if l.pair().is_some_and(|p| !agrees(p)) {
            l.set_aside(SetAsideReason::Clock);
        }
    }
    n - agreeing
}

/// Rule 3 (module docs): keeps the largest group of lanes whose intervals are linked by
/// gaps of at most [`LAUNCH_GAP_MAX_NS`], sets aside the others; how many.
fn apart<L: Judged>(lanes: &mut [L]) -> usize {
    let mut by_start: Vec<(u64, u64, usize)> = (lanes.iter().enumerate())
        .filter(|(_, l)| l.live())
        .map(|(k, l)| (l.start(), l.reach(), k))
        .collect();
    if by_start.is_empty() {
        return 0;
    }
    by_start.sort_unstable();
    let (mut best, mut first, mut end) = (0..0, 0, by_start[0].1);
    for k in 1..=by_start.len() {
        match by_start.get(k) {
            Some(&(start, r, _)) if start <= end.saturating_add(LAUNCH_GAP_MAX_NS) => {
                end = end.max(r);
            }
            next => {
                if k - first > best.len() {
                    best = first..k;
                }
                if let Some(&(_, r, _)) = next {
                    (first, end) = (k, r);
                }
            }
        }
    }
    for (k, &(_, _, l)) in by_start.iter().enumerate() {
        if !best.contains(&k) {
            lanes[l].set_aside(SetAsideReason::Apart);
        }
    }
    by_start.len() - best.len()
}

/// A decoded lane of a format other than the native one: its first and latest record
/// times.
#[derive(Clone, Copy, Debug)]
struct Decoded {
    start: u64,
    end: u64,
    why: Option<SetAsideReason>,
}

impl Judged for Decoded {
    fn live(&self) -> bool {
        self.why.is_none()
    }
    fn aside(&self) -> bool {
        self.why.is_some()
    }
    fn start(&self) -> u64 {
        self.start
    }
    fn reach(&self) -> u64 {
        self.end
    }
    fn set_aside(&mut self, why: SetAsideReason) {
        self.why = Some(why);
    }
}

/// Rules 1, 3 and 4 over lanes known by their intervals `(start, end)` (first and latest
/// times): why each is set aside, or `None` when none is.
pub(crate) fn judge_intervals(
    intervals: impl ExactSizeIterator<Item = (u64, u64)>,
) -> Option<Vec<Option<SetAsideReason>>> {
    let mut seen = Extent::default();
    let mut judged: Vec<Decoded> = Vec::with_capacity(intervals.len());
    for (start, end) in intervals {
        let d = Decoded {
            start,
            end,
            why: span(start, end),
        };
        seen.note(&d);
        judged.push(d);
    }
    (launch_rules(&mut judged, &seen, false) > 0).then(|| judged.iter().map(|d| d.why).collect())
}

/// The decoded lanes `lanes` (of a format other than the native one) that the rules set
/// aside, ascending by lane, each with its first and latest record times.
pub(crate) fn judge(lanes: &[Lane]) -> Vec<SetAsideLane> {
    let Some(why) = judge_intervals(lanes.iter().map(|l| (l.start, l.end))) else {
        return Vec::new();
    };
    (lanes.iter().zip(why))
        .filter_map(|(l, why)| {
            Some(SetAsideLane {
                lane: l.id,
                track: l.track(),
                start: l.start,
                end: Some(l.end),
                start_clock: None,
                end_clock: None,
                reason: why?,
            })
        })
        .collect()
}

/// Lane ids a decoder leaves out, ascending: the lanes set aside, decoded as if they had
/// never run.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Skip<'a>(&'a [u32]);

impl Skip<'_> {
    /// Whether lane `id` is left out.
    #[inline]
    pub(crate) fn skips(&self, id: u32) -> bool {
        !self.0.is_empty() && self.0.binary_search(&id).is_ok()
    }
}

/// Decodes with `decode` (a decoder of a format other than the native one, which leaves
/// out the lanes its [`Skip`] names and may reuse the memory of its [`Recycled`]), and
/// sets aside the lanes the rules reject (module docs): when there are any, they are
/// decoded again without them, into the first decode's columns (whatever `decode` does
/// not reuse of them is freed first, so that the second decode needs no more memory than
/// the first), and named in the trace's diagnostics.
pub(crate) fn without_lanes_set_aside<E>(
    reuse: Recycled,
    mut decode: impl FnMut(Skip<'_>, Recycled) -> Result<Trace, E>,
) -> Result<Trace, E> {
    let first = decode(Skip::default(), reuse)?;
    let aside = judge(&first.lanes);
    if aside.is_empty() {
        return Ok(first);
    }
    let ids: Vec<u32> = aside.iter().map(|s| s.lane).collect();
    let mut t = decode(Skip(&ids), Recycled::of(first))?;
    t.diagnostics.set_aside = aside;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::{apart, clock, judge_intervals, Judged, SetAsideReason, STAMP_END_NS};
    use super::{CLOCK_DISAGREEMENT_MAX, CLOCK_SLACK_NS, LAUNCH_GAP_MAX_NS, OWN_RATIO_MIN_NS};

    /// A lane: its interval, its clock pair, and why it was set aside.
    #[derive(Clone, Copy, Debug, Default)]
    struct T {
        ran: bool,
        start: u64,
        reach: u64,
        pair: Option<(u64, u64)>,
        why: Option<SetAsideReason>,
    }

    impl Judged for T {
        fn live(&self) -> bool {
            self.ran && self.why.is_none()
        }
        fn aside(&self) -> bool {
            self.why.is_some()
        }
        fn start(&self) -> u64 {
            self.start
        }
        fn reach(&self) -> u64 {
            self.reach
        }
        fn pair(&self) -> Option<(u64, u64)> {
            self.pair
        }
        fn set_aside(&mut self, why: SetAsideReason) {
            self.why = Some(why);
        }
    }

    /// A lane from `start` to `end`.
    fn interval(start: u64, end: u64) -> T {
        T {
            ran: true,
            start,
            reach: end,
            ..T::default()
        }
    }

    /// A lane that never finalized, started at `start`: its start alone places it.
    fn open(start: u64) -> T {
        interval(start, start)
    }

    /// A lane that ran `ns` of globaltimer and `cycles` of clock64.
    fn lane(ns: u64, cycles: u64) -> T {
        T {
            pair: Some((ns, cycles)),
            ..interval(1_000, 1_000 + ns)
        }
    }

    fn reasons(lanes: &[T]) -> Vec<Option<SetAsideReason>> {
        lanes.iter().map(|i| i.why).collect()
    }

    #[test]
    fn waves_and_late_lanes_chain_into_one_launch_however_long() {
        let (g, min) = (LAUNCH_GAP_MAX_NS, 60_000_000_000u64);
        let t0 = 1u64 << 52;
        // Four waves of lanes 25 min long (longer than the gap), each starting as the one
        // before ends; one that starts late, 17 min after the last wave ended, and one
        // that never finalized, starting just within the gap after that.
        let mut lanes: Vec<T> = (0..4u64)
            .flat_map(|w| (0..3).map(move |_| interval(t0 + w * 25 * min, t0 + (w + 1) * 25 * min)))
            .collect();
        lanes.push(interval(t0 + 117 * min, t0 + 118 * min));
        lanes.push(open(t0 + 118 * min + g));
        lanes.push(T::default()); // never ran
        apart(&mut lanes);
        assert_eq!(reasons(&lanes), vec![None; lanes.len()]);
    }

    #[test]
    fn lanes_apart_from_the_largest_group_are_set_aside() {
        let t0 = 1u64 << 52;
        let g = LAUNCH_GAP_MAX_NS;
        let mut lanes = vec![
            interval(t0, t0 + 1_000),
            interval(t0 + 10, t0 + 2_000),
            // Starts one ns further than the gap allows after the latest end.
            interval(t0 + 2_000 + g + 1, t0 + 2_000 + g + 5),
            // 544 years later (an overwritten word), as an unfinalized lane.
            open(t0.wrapping_add(17_175_002_975_966_379_653)),
            interval(t0 + 500, t0 + 600),
        ];
        apart(&mut lanes);
        let a = Some(SetAsideReason::Apart);
        assert_eq!(reasons(&lanes), [None, None, a, a, None]);
        // Ties go to the earliest group; a lane set aside before does not count.
        let mut lanes = vec![
            interval(t0 + 3 * g, t0 + 3 * g + 5),
            interval(t0, t0 + 5),
            T {
                why: Some(SetAsideReason::Span),
                ..interval(t0 + 3 * g + 1, t0 + 3 * g + 7)
            },
        ];
        apart(&mut lanes);
        let span = Some(SetAsideReason::Span);
        assert_eq!(reasons(&lanes), [a, None, span]);
    }

    #[test]
    fn a_clock_pair_that_disagrees_with_the_launch_s_rate_is_set_aside() {
        let m = OWN_RATIO_MIN_NS;
        let k = CLOCK_DISAGREEMENT_MAX;
        // 2 cycles per ns; a lane at the bound of the rate's tolerance, one beyond it;
        // short lanes measured to a tick; an end clock64 with a high bit set; an end
        // globaltimer 18 min late; a lane without a pair.
        let mut lanes = vec![
            lane(3 * m, 6 * m),
            lane(2 * m, 4 * m),
            lane(5 * m, 10 * m),
            lane(k * m, 2 * m),
            lane(k * m + CLOCK_SLACK_NS + 1, 2 * m),
            lane(0, 2 * CLOCK_SLACK_NS),
            lane(1_000, 10),
            lane(m, 2 * m + (1 << 60)),
            lane(m + LAUNCH_GAP_MAX_NS, 2 * m),
            open(1_000),
        ];
        clock(&mut lanes);
        let c = Some(SetAsideReason::Clock);
        let want = [None, None, None, None, c, None, None, c, c, None];
        assert_eq!(reasons(&lanes), want);
        // Only lanes that measured 1 ms or more set the rate, when there are any: here
        // short lanes at 1 cycle per ns would otherwise outvote them.
        let mut lanes = vec![
            lane(2 * m, 4 * m),
            lane(2 * m, 4 * m),
            lane(50_000, 50_000),
            lane(50_000, 50_000),
            lane(50_000, 50_000),
        ];
        clock(&mut lanes);
        assert_eq!(reasons(&lanes), [None; 5]);
    }

    #[test]
    fn without_a_majority_no_clock_pair_is_set_aside() {
        let m = OWN_RATIO_MIN_NS;
        // Two lanes 1000x apart: no telling which one is wrong.
        let mut lanes = vec![lane(m, m), lane(m, 1_000 * m)];
        clock(&mut lanes);
        assert_eq!(reasons(&lanes), [None, None]);
        // Two against one: the one.
        let mut lanes = vec![lane(m, m), lane(m, 1_000 * m), lane(2 * m, 2 * m)];
        clock(&mut lanes);
        assert_eq!(reasons(&lanes), [None, Some(SetAsideReason::Clock), None]);
    }

    #[test]
    fn lanes_at_the_end_of_the_time_axis_are_set_aside_when_nothing_else_is() {
        let (end, r) = (STAMP_END_NS, Some(SetAsideReason::Range));
        // A lane alone, or all lanes together, past 2^63 ns; a lane reaching it.
        assert_eq!(
            judge_intervals([(end + 5, end + 9)].into_iter()),
            Some(vec![r])
        );
        let both = [(end, end + 9), (end + 3, end + 4)];
        assert_eq!(judge_intervals(both.into_iter()), Some(vec![r, r]));
        let reaching = [(end - 10, end), (end - 20, end - 15)];
        assert_eq!(judge_intervals(reaching.into_iter()), Some(vec![r, None]));
        // Beside the launch, such a lane lies apart; a sound launch is left alone.
        let apart = [(1_000, 2_000), (1_500, 1_600), (end + 1, end + 2)];
        let a = Some(SetAsideReason::Apart);
        assert_eq!(
            judge_intervals(apart.into_iter()),
            Some(vec![None, None, a])
        );
        assert_eq!(judge_intervals([(end - 2, end - 1)].into_iter()), None);
    }
}
