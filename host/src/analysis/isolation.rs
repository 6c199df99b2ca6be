//! Compute isolation as tt-metal proposes (reference 004): `compute = kernel length -
//! blocked`, where blocked time is the **union** of the lanes' waits, never their sum
//! (lanes wait concurrently; summing would count that time twice and under-report compute).
//!
//! Waits are known either from timed wait regions, or from wait counters (spin iterations,
//! one register add per spin). Counters become time through a rate in ns per iteration,
//! given by the user or fitted from waits that have both a timed region and a sample.

use super::breakdown::{category_time, region_categories};
use super::categories::{Category, CategoryTable};
use super::intervals::IntervalSet;
use crate::model::{Ns, Trace};

/// Compute time of a kernel with its blocked time removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ComputeIsolation {
    /// First lane start to last lane end.
    pub kernel_length: Ns,
    /// Union of timed wait regions across lanes.
    pub blocked: Ns,
    /// The (wrong) sum of wait durations, shown for contrast.
    pub blocked_sum: Ns,
    /// `kernel_length - blocked`.
    pub compute: Ns,
    /// Blocked time estimated from counter samples (each sample becomes the interval of
    /// `iterations x rate` ending at its timestamp; intervals unioned), if a rate is known.
    pub blocked_from_counters: Option<Ns>,
    /// The rate used, ns per spin iteration.
    pub ns_per_iteration: Option<f64>,
}

/// Fits ns per spin iteration from counter samples that directly follow a timed wait
/// region in the same lane (the sample's time equals that region's end): least squares
/// through the origin, `rate = Σ dur·iters / Σ iters²`. `None` without such pairs.
pub fn fit_ns_per_iteration(trace: &Trace, table: &CategoryTable) -> Option<f64> {
    let cats = region_categories(trace, table);
    let (mut num, mut den) = (0f64, 0f64);
    for lane in &trace.lanes {
        let spans = lane.spans.clone();
        for k in lane.samples.clone() {
            let ts = trace.samples.ts[k];
            let iters = trace.samples.value[k] as f64;
            let hit = spans.clone().rev().find(|&i| {
                trace.spans.end[i] == ts && cats[trace.spans.region[i] as usize] == Category::Wait
            });
            if let Some(i) = hit {
                num += trace.spans.dur(i) as f64 * iters;
                den += iters * iters;
            }
        }
    }
    (den > 0.0).then(|| num / den)
}

/// Compute isolation for the whole kernel. `rate` overrides the fitted ns per iteration.
pub fn isolate_compute(
    trace: &Trace,
    table: &CategoryTable,
    rate: Option<f64>,
) -> ComputeIsolation {
    let cats = region_categories(trace, table);
    let start = trace.lanes.iter().map(|l| l.start).min().unwrap_or(0);
    let end = trace
        .lanes
        .iter()
        .map(|l| l.end)
        .max()
        .unwrap_or(start)
        .max(start);
    let window = IntervalSet::span(start, end);
    let wait_idx = Category::ALL
        .iter()
        .position(|&c| c == Category::Wait)
        .unwrap_or(1);
    let ct = category_time(trace, 0..trace.lanes.len(), &cats);
    let blocked = ct.sets[wait_idx].intersect(&window).len();
    let blocked_sum = (0..trace.spans.len())
        .filter(|&i| cats[trace.spans.region[i] as usize] == Category::Wait)
        .map(|i| trace.spans.dur(i))
        .sum();
    let ns_per_iteration = rate.or_else(|| fit_ns_per_iteration(trace, table));
    let blocked_from_counters = ns_per_iteration
        .filter(|_| !trace.samples.is_empty())
        .map(|r| {
            let v = (0..trace.samples.len())
                .map(|k| {
                    let ts = trace.samples.ts[k];
                    let len = (trace.samples.value[k] as f64 * r).round() as Ns;
                    (ts.saturating_sub(len), ts)
                })
                .collect();
            IntervalSet::from_unsorted(v).intersect(&window).len()
        });
    let kernel_length = end - start;
    ComputeIsolation {
        kernel_length,
        blocked,
        blocked_sum,
        compute: kernel_length - blocked,
        blocked_from_counters,
        ns_per_iteration,
    }
}
