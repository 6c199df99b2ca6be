//! `ikp diff`: two runs compared region by region, with regressions flagged.
//!
//! A region regresses when both its median and its mean duration grew by more than the
//! threshold (in percent): requiring both keeps one outlier (mean only) or a shifted
//! quantile (median only) from raising a flag. Regions present in one run only are listed
//! as added or removed. Kernel length (first lane start to last lane end) is compared too.

use super::blocks::gpu_wall;
use crate::stats::{DurStats, TraceStats};
use crate::time::DurationNs;
use std::collections::BTreeMap;

/// One region in both runs.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RegionDiff {
    /// Region name (regions are matched by name).
    pub name: String,
    /// Occurrences in A and B.
    pub count: (u64, u64),
    /// Mean duration in A and B, ns.
    pub mean: (f64, f64),
    /// Median duration in A and B, ns.
    pub p50: (f64, f64),
    /// p99 in A and B, ns.
    pub p99: (f64, f64),
    /// Total in A and B, ns.
    pub total: (DurationNs, DurationNs),
    /// Relative change of the mean, percent (B vs A).
    pub mean_change_pct: f64,
    /// Relative change of the median, percent.
    pub p50_change_pct: f64,
    /// Whether both grew beyond the threshold.
    pub regression: bool,
    /// Whether both shrank beyond the threshold.
    pub improvement: bool,
}

/// Two runs compared.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RunDiff {
    /// Kernel length of A and B, ns.
    pub kernel: (DurationNs, DurationNs),
    /// Relative change of the kernel length, percent.
    pub kernel_change_pct: f64,
    /// Regions in both, by name.
    pub regions: Vec<RegionDiff>,
    /// Regions only in B.
    pub added: Vec<String>,
    /// Regions only in A.
    pub removed: Vec<String>,
    /// Threshold used, percent.
    pub threshold_pct: f64,
}

impl RunDiff {
    /// Regions flagged as regressions.
    pub fn regressions(&self) -> impl Iterator<Item = &RegionDiff> {
        self.regions.iter().filter(|r| r.regression)
    }
}

fn change(a: f64, b: f64) -> f64 {
    match (a == 0.0, b == 0.0) {
        (false, _) => 100.0 * (b - a) / a,
        (true, true) => 0.0,
        (true, false) => f64::INFINITY,
    }
}

fn by_name<'s>(s: &'s TraceStats) -> BTreeMap<String, &'s DurStats> {
    (s.all.regions.iter())
        .map(|r| (s.trace.names.region(r.region).into_owned(), &r.stats))
        .collect()
}

const P50: usize = 3;
const P99: usize = 7;

/// Compares run `b` against baseline `a` (their statistics) with a regression threshold
/// in percent.
pub fn diff(a: &TraceStats, b: &TraceStats, threshold_pct: f64) -> RunDiff {
    let (sa, sb) = (by_name(a), by_name(b));
    let mut regions = Vec::new();
    for (name, x) in &sa {
        let Some(y) = sb.get(name) else { continue };
        let mean_change_pct = change(x.mean, y.mean);
        let p50_change_pct = change(x.percentiles[P50], y.percentiles[P50]);
        regions.push(RegionDiff {
            name: name.clone(),
            count: (x.count, y.count),
            mean: (x.mean, y.mean),
            p50: (x.percentiles[P50], y.percentiles[P50]),
            p99: (x.percentiles[P99], y.percentiles[P99]),
            total: (x.total, y.total),
            mean_change_pct,
            p50_change_pct,
            regression: mean_change_pct > threshold_pct && p50_change_pct > threshold_pct,
            improvement: mean_change_pct < -threshold_pct && p50_change_pct < -threshold_pct,
        });
    }
    regions.sort_by(|p, q| {
        q.mean_change_pct
            .total_cmp(&p.mean_change_pct)
            .then(p.name.cmp(&q.name))
    });
    let (ka, kb) = (gpu_wall(a.trace), gpu_wall(b.trace));
    let only = |x: &BTreeMap<String, _>, y: &BTreeMap<String, _>| {
        (x.keys())
            .filter(|k| !y.contains_key(*k))
            .cloned()
            .collect()
    };
    RunDiff {
        kernel: (ka, kb),
        kernel_change_pct: change(ka as f64, kb as f64),
        regions,
        added: only(&sb, &sa),
        removed: only(&sa, &sb),
        threshold_pct,
    }
}
