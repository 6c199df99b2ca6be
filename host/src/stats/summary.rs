//! The statistics of one trace, computed once ([`TraceStats::of`]) and only formatted by
//! every output that shows them: the summary JSON and its block distributions, the
//! terminal table, the HTML report and workbook, the plots, `ikp diff`. One computation, so
//! the same region shows the same figures in every output.

use super::{dur_stats, self_times, DurStats, LaneWaves, Shares};
use crate::model::{Lane, Trace};
use crate::time::DurationNs;
use std::collections::BTreeMap;

/// One region's spans over a set of lanes (all figures in ns).
#[derive(Clone, Debug, PartialEq)]
pub struct RegionStats {
    /// Region id.
    pub region: u16,
    /// The spans' durations, ascending (what histograms are drawn from).
    pub durations: Vec<DurationNs>,
    /// Their statistics.
    pub stats: DurStats,
}

/// Region statistics of a set of lanes, with the time shares of those lanes (self time
/// per region is in `shares`).
#[derive(Clone, Debug, PartialEq)]
pub struct LaneSetStats {
    /// Self and inclusive time per region, and the lane time they are shares of.
    pub shares: Shares,
    /// Regions with at least one span, ids ascending.
    pub regions: Vec<RegionStats>,
}

impl LaneSetStats {
    /// The statistics of `lanes`, given every span's self time (`span_self`).
    fn new(trace: &Trace, span_self: &[DurationNs], lanes: &[&Lane]) -> LaneSetStats {
        let shares = Shares::new(trace, span_self, lanes.iter().copied());
        let regions = durations_by_region(trace, lanes)
            .into_iter()
            .map(|(region, durations)| RegionStats {
                region,
                stats: dur_stats(&durations),
                durations,
            })
            .collect();
        LaneSetStats { shares, regions }
    }

    /// Region `region`'s statistics, if it has spans.
    pub fn region(&self, region: u16) -> Option<&RegionStats> {
        let k = self.regions.binary_search_by_key(&region, |r| r.region);
        k.ok().map(|k| &self.regions[k])
    }
}

/// Unmatched records of one region.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct UnmatchedRegion {
    /// Region id.
    pub region: u16,
    /// Region name.
    pub name: String,
    /// Begins never closed.
    pub begin: u64,
    /// Ends without an open begin.
    pub end: u64,
}

/// One async region's ranges and unmatched async records, durations in ns (the summary
/// JSON's async region entry).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AsyncRegionStats {
    /// Region id.
    pub region: u16,
    /// Region name.
    pub name: String,
    /// Ranges.
    pub count: u64,
    /// Durations summed.
    pub total_dur: f64,
    /// Mean duration (0 without ranges).
    pub mean_dur: f64,
    /// Shortest (0 without ranges).
    pub min_dur: f64,
    /// Longest (0 without ranges).
    pub max_dur: f64,
    /// Async begins never ended.
    pub unmatched_begin: u64,
    /// Async ends with no open begin.
    pub unmatched_end: u64,
}

/// The async ranges of a launch ([`Trace::async_ranges`]), per async region (the summary
/// JSON's `async_ranges`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AsyncStats {
    /// Ranges.
    pub count: u64,
    /// Async begins never ended.
    pub unmatched_begin: u64,
    /// Async ends with no open begin.
    pub unmatched_end: u64,
    /// Per async region with a range or an unmatched record, ids ascending.
    pub regions: Vec<AsyncRegionStats>,
}

impl AsyncStats {
    /// The same with every duration times `k` (output units per ns).
    pub fn scaled(&self, k: f64) -> AsyncStats {
        let mut s = self.clone();
        for r in &mut s.regions {
            (r.total_dur, r.mean_dur) = (r.total_dur * k, r.mean_dur * k);
            (r.min_dur, r.max_dur) = (r.min_dur * k, r.max_dur * k);
        }
        s
    }
}

/// The statistics of one trace (see the module docs).
#[derive(Clone, Debug)]
pub struct TraceStats<'t> {
    /// The trace they are of.
    pub trace: &'t Trace,
    /// Self time of every span, indexed like [`Trace::spans`].
    pub span_self: Vec<DurationNs>,
    /// Over every lane.
    pub all: LaneSetStats,
    /// Unmatched begins and ends per region, for regions with any, ids ascending.
    pub unmatched: Vec<UnmatchedRegion>,
    /// The async ranges; `None` without ranges or unmatched async records.
    pub async_ranges: Option<AsyncStats>,
    /// The lanes over time; `None` without lanes.
    pub lanes: Option<LaneWaves>,
}

impl<'t> TraceStats<'t> {
    /// Computes the statistics of `trace`.
    pub fn of(trace: &'t Trace) -> TraceStats<'t> {
        let span_self = self_times(trace);
        let lanes: Vec<&Lane> = trace.lanes.iter().collect();
        let all = LaneSetStats::new(trace, &span_self, &lanes);
        let d = &trace.diagnostics;
        let mut unmatched: BTreeMap<u16, (u64, u64)> = BTreeMap::new();
        (d.unmatched_begin.iter()).for_each(|u| unmatched.entry(u.region).or_default().0 += 1);
        (d.unmatched_end.iter()).for_each(|u| unmatched.entry(u.region).or_default().1 += 1);
        let unmatched = (unmatched.into_iter())
            .map(|(region, (begin, end))| UnmatchedRegion {
                region,
                name: trace.names.region(region).into_owned(),
                begin,
                end,
            })
            .collect();
        TraceStats {
            trace,
            all,
            unmatched,
            async_ranges: async_stats(trace),
            lanes: LaneWaves::of(trace),
            span_self,
        }
    }

    /// The statistics of each lane with spans, in lane order.
    pub fn by_lane(&self) -> impl Iterator<Item = (&'t Lane, LaneSetStats)> + '_ {
        (self.trace.lanes.iter())
            .filter(|l| !l.spans.is_empty())
            .map(|l| (l, LaneSetStats::new(self.trace, &self.span_self, &[l])))
    }

    /// The statistics of each block with spans, by block id ascending.
    pub fn by_block(&self) -> Vec<(u32, LaneSetStats)> {
        let mut lanes: Vec<&Lane> = self.trace.lanes.iter().collect();
        lanes.sort_by_key(|l| l.block);
        let stats = |c: &[&Lane]| LaneSetStats::new(self.trace, &self.span_self, c);
        (lanes.chunk_by(|a, b| a.block == b.block))
            .map(|c| (c[0].block, stats(c)))
            .filter(|(_, s)| !s.regions.is_empty())
            .collect()
    }
}

/// Durations of the spans of `lanes`, grouped by region: `(region, ascending durations)`,
/// regions ascending.
///
/// Counted first, so each region's durations go straight into a vector of their size
/// and are sorted there: no `(region, duration)` pairs (twice the durations' bytes, on
/// top of them at the peak of `ikp summary`).
fn durations_by_region(trace: &Trace, lanes: &[&Lane]) -> Vec<(u16, Vec<DurationNs>)> {
    let s = &trace.spans;
    let mut counts: Vec<usize> = Vec::new();
    for l in lanes {
        for &r in &s.region[l.spans.clone()] {
            let r = r as usize;
            if counts.len() <= r {
                counts.resize(r + 1, 0);
            }
            counts[r] += 1;
        }
    }
    let mut by_id: Vec<Vec<DurationNs>> = counts.iter().map(|&n| Vec::with_capacity(n)).collect();
    for l in lanes {
        let r = l.spans.clone();
        for ((&g, &b), &e) in s.region[r.clone()]
            .iter()
            .zip(&s.begin[r.clone()])
            .zip(&s.end[r])
        {
            by_id[g as usize].push(e - b);
        }
    }
    (by_id.into_iter().enumerate())
        .filter(|(_, d)| !d.is_empty())
        .map(|(r, mut d)| {
            d.sort_unstable();
            (r as u16, d)
        })
        .collect()
}

/// The async ranges of `trace` per region (`None` without ranges or unmatched records).
fn async_stats(trace: &Trace) -> Option<AsyncStats> {
    let (a, d) = (&trace.async_ranges, &trace.diagnostics);
    let (ub, ue) = (&d.async_unmatched_begin, &d.async_unmatched_end);
    if a.is_empty() && ub.is_empty() && ue.is_empty() {
        return None;
    }
    // region -> (count, total, min, max, unmatched begins, unmatched ends)
    let mut per: BTreeMap<u16, (u64, u64, u64, u64, u64, u64)> = BTreeMap::new();
    let empty = (0, 0, u64::MAX, 0, 0, 0);
    for i in 0..a.len() {
        let (e, d) = (per.entry(a.region[i]).or_insert(empty), a.dur(i));
        (e.0, e.1, e.2, e.3) = (e.0 + 1, e.1 + d, e.2.min(d), e.3.max(d));
    }
    ub.iter()
        .for_each(|u| per.entry(u.region).or_insert(empty).4 += 1);
    ue.iter()
        .for_each(|u| per.entry(u.region).or_insert(empty).5 += 1);
    let regions = (per.into_iter())
        .map(|(region, (n, total, min, max, b, e))| AsyncRegionStats {
            region,
            name: trace.names.region(region).into_owned(),
            count: n,
            total_dur: total as f64,
            mean_dur: if n == 0 { 0.0 } else { total as f64 / n as f64 },
            min_dur: if n == 0 { 0.0 } else { min as f64 },
            max_dur: max as f64,
            unmatched_begin: b,
            unmatched_end: e,
        })
        .collect();
    Some(AsyncStats {
        count: a.len() as u64,
        unmatched_begin: ub.len() as u64,
        unmatched_end: ue.len() as u64,
        regions,
    })
}
