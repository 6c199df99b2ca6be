//! Self and inclusive time per region, and the lane time they are shares of: the one
//! computation behind every region percentage ikp shows. The terms are defined in
//! [`crate::definitions`].

use crate::model::{Lane, Trace};
use crate::time::DurationNs;

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

/// Self time of every span: its duration minus the durations of the spans directly nested
/// in it (indexed like [`Trace::spans`]). Summed over a lane, self times never count a
/// nanosecond twice, so percentages of their total add up to 100.
pub fn self_times(trace: &Trace) -> Vec<DurationNs> {
    let s = &trace.spans;
    let mut out: Vec<DurationNs> = (0..s.len()).map(|i| s.dur(i)).collect();
    for lane in &trace.lanes {
        let mut stack: Vec<usize> = Vec::new();
        for i in lane.spans.clone() {
            // The parent is the nearest span up the stack (depths come from the decoder) that
            // is still open. Depths alone are not enough: after a begin that was never
            // closed, a span one level deeper follows that begin's closed sibling.
            while stack
                .last()
                .is_some_and(|&p| s.depth[p] >= s.depth[i] || s.end[p] <= s.begin[i])
            {
                stack.pop();
            }
            if let Some(&p) = stack.last() {
                // Clip: a child overrunning its parent only takes what overlaps.
                let overlap = s.end[i]
                    .min(s.end[p])
                    .saturating_sub(s.begin[i].max(s.begin[p]));
                out[p] = out[p].saturating_sub(overlap);
            }
            stack.push(i);
        }
    }
    out
}
