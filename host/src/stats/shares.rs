//! Self and inclusive time per region, and the lane time they are shares of: the one
//! computation behind every region percentage ikp shows. The terms are defined in
//! [`crate::definitions`].

use crate::model::{Lane, Spans, Trace};
use crate::time::{DurationNs, Timestamp};

/// One region's time over the lanes of a [`Shares`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionTime {
    /// Region id.
    pub region: u16,
    /// Spans of the region.
    pub count: u64,
    /// Inclusive time: the spans' durations, summed.
    pub inclusive: DurationNs,
    /// Self time: the spans' self times, summed.
    pub self_time: DurationNs,
}

/// Region times of a set of lanes, with the lane time they are shares of.
///
/// `self_time` of the regions plus `outside` is `lane_time` exactly.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shares {
    /// Lanes counted.
    pub lanes: u64,
    /// Lane time: each lane's first-to-last-stamp time, summed (a lane counts at least
    /// the self time of its spans, which nested spans never exceed).
    pub lane_time: DurationNs,
    /// Lane time in no region.
    pub outside: DurationNs,
    /// Regions with at least one span, ascending by id.
    pub regions: Vec<RegionTime>,
}

/// One displayed row: a region, or the time outside any region (`region: None`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row<'a> {
    /// The region, or `None` for the row outside any region.
    pub region: Option<&'a RegionTime>,
    /// Self time of the row.
    pub self_time: DurationNs,
    /// `self_time` as a fraction of the lane time.
    pub share: f64,
    /// The rows' self times up to and including this one, as a fraction of the lane time.
    pub cumulative: f64,
}

/// A lane's time: from its first stamp to its last (its start and end, widened to cover
/// its spans should any stamp of theirs lie outside).
pub fn lane_time(trace: &Trace, lane: &Lane) -> DurationNs {
    let s = &trace.spans;
    let r = lane.spans.clone();
    let first = s.begin[r.clone()]
        .iter()
        .min()
        .map_or(lane.start, |&b| b.min(lane.start));
    let last = s.end[r].iter().max().map_or(lane.end, |&e| e.max(lane.end));
    last.saturating_sub(first)
}

impl Shares {
    /// The shares of `lanes` of `trace`, given the self time of every span of `trace`
    /// (as [`self_times`] returns them, computed once for several calls).
    pub fn new<'a>(
        trace: &Trace,
        span_self: &[DurationNs],
        lanes: impl IntoIterator<Item = &'a Lane>,
    ) -> Shares {
        let s = &trace.spans;
        let mut by_id: Vec<RegionTime> = Vec::new();
        let mut out = Shares::default();
        for lane in lanes {
            let mut inside: DurationNs = 0;
            for i in lane.spans.clone() {
                let r = s.region[i] as usize;
                if by_id.len() <= r {
                    by_id.extend((by_id.len()..=r).map(|id| RegionTime {
                        region: id as u16,
                        count: 0,
                        inclusive: 0,
                        self_time: 0,
                    }));
                }
                let e = &mut by_id[r];
                e.count += 1;
                e.inclusive += s.dur(i);
                e.self_time += span_self[i];
                inside += span_self[i];
            }
            let t = lane_time(trace, lane);
            out.lanes += 1;
            out.lane_time += t.max(inside);
            out.outside += t.saturating_sub(inside);
        }
        out.regions = by_id.into_iter().filter(|r| r.count > 0).collect();
        out
    }

    /// The shares of `lanes` of `trace`.
    pub fn of<'a>(trace: &Trace, lanes: impl IntoIterator<Item = &'a Lane>) -> Shares {
        Shares::new(trace, &self_times(trace), lanes)
    }

    /// `ns` as a fraction of the lane time (0 when there is no lane time).
    pub fn share(&self, ns: DurationNs) -> f64 {
        if self.lane_time == 0 {
            0.0
        } else {
            ns as f64 / self.lane_time as f64
        }
    }

    /// The region with id `region`, if it has spans.
    pub fn region(&self, region: u16) -> Option<&RegionTime> {
        self.regions
            .binary_search_by_key(&region, |r| r.region)
            .ok()
            .map(|k| &self.regions[k])
    }

    /// The rows every output shows, in order: regions by self time, largest first (ties
    /// by id), then the time outside any region.
    pub fn rows(&self) -> Vec<Row<'_>> {
        let mut ranked: Vec<&RegionTime> = self.regions.iter().collect();
        ranked.sort_by(|a, b| b.self_time.cmp(&a.self_time).then(a.region.cmp(&b.region)));
        let mut sum: DurationNs = 0;
        let mut row = |region, self_time| {
            sum += self_time;
            Row {
                region,
                self_time,
                share: self.share(self_time),
                cumulative: self.share(sum),
            }
        };
        let mut rows: Vec<Row<'_>> = ranked
            .into_iter()
            .map(|r| row(Some(r), r.self_time))
            .collect();
        rows.push(row(None, self.outside));
        rows
    }
}

/// The label of the row outside any region, as every output writes it.
pub const OUTSIDE: &str = "(outside any region)";

/// Self time of every span (indexed like [`Trace::spans`]): the time it is the innermost
/// open region of its lane, the open one that began last ([`self_intervals`]). A span
/// nested in another takes its own time from it (its duration minus the durations of the
/// spans directly nested in it, clipped to it); where two regions overlap (one ends
/// while a region begun inside it is still open), the time both are open is the later
/// one's. Summed over a lane, self times never count a nanosecond twice, so percentages
/// of their total add up to 100.
pub fn self_times(trace: &Trace) -> Vec<DurationNs> {
    let mut out: Vec<DurationNs> = vec![0; trace.spans.len()];
    let mut stack = Vec::new();
    for lane in &trace.lanes {
        self_intervals(trace, lane, &mut stack, |i, from, to| out[i] += to - from);
    }
    out
}

/// Calls `f(span, from, to)` for every stretch `[from, to)` (non-empty) of `lane`'s time
/// that is `span`'s self time: each nanosecond inside some span of the lane goes to the
/// open span listed last (spans are in begin order, so the one that began last, the
/// later record on a tie), and no nanosecond goes to two spans. `stack` is scratch space.
///
/// One pass over the spans with a stack of open ones, each with a cursor (the time up to
/// which it has had its self time): a span gets the stretch from its cursor to the next
/// begin while it is on top, and when it is popped (at a begin after its end) the rest up
/// to its end; its cursor then moves the cursor of the span under it past its end. A
/// span that ended while one begun after it was open (overlap) stays in the stack under
/// it, and gets nothing more: its cursor is past its end by then.
pub fn self_intervals(
    trace: &Trace,
    lane: &Lane,
    stack: &mut Vec<(usize, Timestamp)>,
    mut f: impl FnMut(usize, Timestamp, Timestamp),
) {
    let s = &trace.spans;
    stack.clear();
    for i in lane.spans.clone() {
        let b = s.begin[i];
        while stack.last().is_some_and(|&(j, _)| s.end[j] <= b) {
            pop(s, stack, &mut f);
        }
        if let Some(p) = stack.last_mut() {
            if b > p.1 {
                f(p.0, p.1, b);
            }
            p.1 = p.1.max(b);
        }
        stack.push((i, b));
    }
    while !stack.is_empty() {
        pop(s, stack, &mut f);
    }
}

/// Pops the top span of [`self_intervals`]' stack: the rest of its self time, then the
/// cursor of the span under it.
fn pop<F: FnMut(usize, Timestamp, Timestamp)>(
    s: &Spans,
    stack: &mut Vec<(usize, Timestamp)>,
    f: &mut F,
) {
    let (j, cur) = stack.pop().expect("a span on the stack");
    let end = s.end[j];
    if end > cur {
        f(j, cur, end);
    }
    if let Some(p) = stack.last_mut() {
        p.1 = p.1.max(end).max(cur);
    }
}

#[cfg(test)]
mod tests {
    use super::{self_intervals, self_times};
    use crate::testutil::{lane, trace};
    use proptest::prelude::*;

    #[test]
    fn overlapping_regions_time_goes_to_the_one_begun_last() {
        // a [0, 10) with b [5, 15) begun inside it and ending after it; then p [20, 120)
        // holding x [30, 50) and y [40, 70), begun inside x and outliving it, and z
        // [55, 60) begun inside y after x ended.
        let spans = [
            (0, 0, 10),
            (1, 5, 15),
            (2, 20, 120),
            (3, 30, 50),
            (4, 40, 70),
            (5, 55, 60),
        ];
        let t = trace(
            &["a", "b", "p", "x", "y", "z"],
            vec![lane(0, 0, 0, 130, &spans)],
        );
        assert_eq!(
            self_times(&t),
            [5, 10, 100 - 40, 10, 30 - 5, 5],
            "a keeps [0, 5); p keeps [20, 30) and [70, 120); y all but z"
        );
        let mut v = Vec::new();
        self_intervals(&t, &t.lanes[0], &mut Vec::new(), |i, a, b| {
            v.push((i, a, b))
        });
        v.sort_by_key(|x| x.1);
        let want = [
            (0, 0, 5),
            (1, 5, 15),
            (2, 20, 30),
            (3, 30, 40),
            (4, 40, 55),
            (5, 55, 60),
            (4, 60, 70),
            (2, 70, 120),
        ];
        assert_eq!(v, want);
    }

    proptest! {
        /// Any spans in begin order, nested, overlapping or apart: each nanosecond is the
        /// self time of the open span listed last, found by looking at every nanosecond.
        #[test]
        fn self_time_is_the_time_a_span_is_the_last_begun_open_one(
            raw in prop::collection::vec((0u64..60, 0u64..30), 0..12),
        ) {
            let mut spans: Vec<(u16, u64, u64)> = (raw.iter().enumerate())
                .map(|(k, &(b, d))| (k as u16, b, b + d))
                .collect();
            spans.sort_by_key(|s| s.1);
            let mut t = trace(&[], vec![lane(0, 0, 0, 100, &[])]);
            // As listed (`trace` would reorder them by `(begin, end desc)`).
            for &(r, b, e) in &spans {
                t.spans.push(t.lanes[0].id, r, 0, 0, b, e);
            }
            t.lanes[0].spans = 0..spans.len();
            let mut want = vec![0u64; spans.len()];
            for ns in 0..100u64 {
                if let Some(i) = (0..spans.len()).rev().find(|&i| spans[i].1 <= ns && ns < spans[i].2) {
                    want[i] += 1;
                }
            }
            prop_assert_eq!(self_times(&t), want);
        }
    }
}
