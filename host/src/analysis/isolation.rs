//! Compute isolation as the tt-metal compute-isolation proposal defines it
//! (docs/references.md), per block: `compute = length - blocked`, where a block's blocked
//! time is the **union** of its lanes' waits, never their sum (the lanes of a block wait
//! concurrently; summing would count that time twice and under-report compute).
//!
//! The proposal defines the figure for one core whose threads wait at the same time; in a
//! CUDA kernel the unit whose threads (warp groups) wait for each other is the block. A
//! union across blocks would be wrong the other way: one block waiting somewhere on the GPU
//! would mark every other block's time as blocked. So each block gets its own figures, and
//! the kernel's are their sums (block-time, see [`super::blocks`]).
//!
//! Blocked time is the self time of wait-category regions (a region nested in a wait counts
//! as that region, as in the [`breakdown`](super::breakdown)). Waits are also known from
//! wait counters (spin iterations, one register add per spin): a counter becomes time
//! through a rate in ns per iteration, given by the user or fitted from waits that have
//! both a timed region and a sample.

use super::blocks::{distribution, Block, BlockView, Distribution};
use super::breakdown::category_time;
use super::categories::Category;
use super::intervals::IntervalSet;
use crate::model::Trace;
use crate::time::DurationNs;

/// Compute isolation of one block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BlockIsolation {
    /// Linear block id.
    pub block: u32,
    /// The block's length: its lanes' first to last stamp.
    pub length_ns: DurationNs,
    /// Union of the block's wait-category self time, clipped to its window.
    pub blocked_ns: DurationNs,
    /// `length_ns - blocked_ns`.
    pub compute_ns: DurationNs,
    /// The part of `blocked_ns` during which another group of the block computes: time
    /// the block's waits are hidden behind its own math (warp specialization). It is why
    /// `compute_ns` can be far below the breakdown's compute for the same block.
    pub overlap_ns: DurationNs,
    /// Blocked time estimated from the block's counter samples (each sample becomes the
    /// interval of `iterations x rate` ending at its timestamp; intervals unioned and
    /// clipped to the window), if a rate is known and the trace has samples.
    pub blocked_from_counters_ns: Option<DurationNs>,
}

/// Compute isolation of a kernel: per block, and summed over blocks.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ComputeIsolation {
    /// Block-time: the sum of the blocks' lengths.
    pub length_ns: DurationNs,
    /// Sum of the blocks' `blocked_ns`.
    pub blocked_ns: DurationNs,
    /// Sum of the blocks' `compute_ns` (= `length_ns - blocked_ns`).
    pub compute_ns: DurationNs,
    /// Sum of the blocks' `overlap_ns`.
    pub overlap_ns: DurationNs,
    /// The (wrong) sum of all wait durations, for contrast with the unions.
    pub wait_sum_ns: DurationNs,
    /// Sum of the blocks' `blocked_from_counters_ns`, if known.
    pub blocked_from_counters_ns: Option<DurationNs>,
    /// The rate the counter estimate used, ns per spin iteration.
    pub ns_per_iteration: Option<f64>,
    /// How `compute_ns` spreads across blocks.
    pub compute_spread: Distribution,
    /// How `blocked_ns` spreads across blocks.
    pub blocked_spread: Distribution,
    /// One entry per block, by block id ascending.
    pub per_block: Vec<BlockIsolation>,
}

/// Fits ns per spin iteration from counter samples that directly follow a timed wait
/// region in the same lane (the sample's time equals that region's end): least squares
/// through the origin, `rate = Σ dur·iters / Σ iters²`. `None` without such pairs.
pub fn fit_ns_per_iteration(v: &BlockView) -> Option<f64> {
    let (trace, cats) = (v.trace, &v.categories);
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

/// Compute isolation of every block and their sums. `rate` overrides the fitted ns per
/// iteration.
pub fn isolate_compute(v: &BlockView, rate: Option<f64>) -> ComputeIsolation {
    let (trace, cats) = (v.trace, &v.categories);
    let ns_per_iteration = rate.or_else(|| fit_ns_per_iteration(v));
    let counter_rate = ns_per_iteration.filter(|_| !trace.samples.is_empty());
    let per_block: Vec<BlockIsolation> = (v.blocks.iter())
        .map(|b| isolate_block(trace, b, cats, counter_rate))
        .collect();
    let wait_sum_ns = (0..trace.spans.len())
        .filter(|&i| cats[trace.spans.region[i] as usize] == Category::Wait)
        .map(|i| trace.spans.dur(i))
        .sum();
    ComputeIsolation {
        length_ns: per_block.iter().map(|b| b.length_ns).sum(),
        blocked_ns: per_block.iter().map(|b| b.blocked_ns).sum(),
        compute_ns: per_block.iter().map(|b| b.compute_ns).sum(),
        overlap_ns: per_block.iter().map(|b| b.overlap_ns).sum(),
        wait_sum_ns,
        blocked_from_counters_ns: counter_rate.map(|_| {
            per_block
                .iter()
                .filter_map(|b| b.blocked_from_counters_ns)
                .sum()
        }),
        ns_per_iteration,
        compute_spread: distribution(per_block.iter().map(|b| b.compute_ns)),
        blocked_spread: distribution(per_block.iter().map(|b| b.blocked_ns)),
        per_block,
    }
}

/// Compute isolation of one block; `counter_rate` (ns per iteration) turns its samples into
/// blocked time.
pub fn isolate_block(
    trace: &Trace,
    block: &Block,
    cats: &[Category],
    counter_rate: Option<f64>,
) -> BlockIsolation {
    let window = IntervalSet::span(block.start, block.end);
    let ct = category_time(trace, block.lanes.iter().copied(), cats);
    let blocked = ct.sets[Category::Wait as usize].intersect(&window);
    let blocked_ns = blocked.len();
    let overlap_ns = blocked
        .intersect(&ct.sets[Category::Compute as usize])
        .len();
    let blocked_from_counters_ns = counter_rate.map(|r| {
        let v = block
            .lanes
            .iter()
            .flat_map(|&p| trace.lanes[p].samples.clone())
            .map(|k| {
                let ts = trace.samples.ts[k];
                let len = (trace.samples.value[k] as f64 * r).round() as DurationNs;
                (ts.saturating_sub(len), ts)
            })
            .collect();
        IntervalSet::from_unsorted(v).intersect(&window).len()
    });
    let length_ns = block.length();
    BlockIsolation {
        block: block.id,
        length_ns,
        blocked_ns,
        compute_ns: length_ns - blocked_ns,
        overlap_ns,
        blocked_from_counters_ns,
    }
}
