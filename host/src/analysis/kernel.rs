//! Every analysis of one launch, gathered for `ikp analyze` (text and `--json`).
//!
//! Figures are computed **per block first** and summed ("block-time", see
//! [`super::blocks`]; every term is defined in [`crate::definitions`]); the only whole-GPU
//! figure is `gpu_wall_ns`. A figure the input
//! cannot support is `null`, never a number made up from nothing (SM figures of a
//! TVM-format buffer, which records no SM ids).
//!
//! # Format (JSON, written by `ikp analyze BUF --json OUT`)
//! One object. Times are integer ns on the trace's axis (`start`-like fields) or durations;
//! shares are not stored (divide by the named total). Fields:
//! - `format`: `"ikp"` or `"tvm"`: the wire format, which decides what can be known.
//! - `gpu_wall_ns`: first stamp of any lane to the last: how long the launch took on the
//!   GPU. Not a denominator for shares.
//! - `blocks`: number of blocks that recorded anything.
//! - `block_time_ns`: the sum over blocks of each block's length (first to last stamp of its
//!   lanes): the total every kernel-level share below is a share of.
//! - `breakdown`: `{total, compute, exposed_wait, exposed_load, exposed_store,
//!   exposed_comm, exposed_other, idle}`, each the **sum over `block_breakdowns`** of that
//!   field; `total == block_time_ns` and the seven parts add up to `total` exactly.
//! - `block_breakdowns`: one object per block, by block id ascending: `block`, `start` (its
//!   first stamp) and the eight fields of `breakdown` for that block alone: within a block,
//!   `compute` is the time some lane of the block is in a compute region (innermost region
//!   wins), `exposed_<c>` the time some lane is in a region of category `c` and none in an
//!   earlier category (compute, wait, load, store, comm, other), `idle` the time no lane of
//!   the block is in any region, and the parts add up to the block's `total` exactly.
//! - `breakdown_spread`: for each part name of `breakdown` (`compute`, `exposed_wait`, ...,
//!   `idle`) and for `total`, its distribution across blocks: `{min, median, p90, max}` in
//!   ns (lower median and nearest-rank p90: every figure is some block's value).
//! - `compute_isolation`: the tt-metal compute-isolation proposal's `compute = length -
//!   blocked` (docs/references.md), per block:
//!   - `length_ns`, `blocked_ns`, `compute_ns`: sums over `per_block`
//!     (`length_ns == block_time_ns`, `compute_ns == length_ns - blocked_ns`);
//!   - `overlap_ns`: sum over `per_block`;
//!   - `wait_sum_ns`: the plain sum of all wait-region durations, shown for contrast (it
//!     counts concurrent waits twice);
//!   - `blocked_from_counters_ns`: the sum of the per-block counter estimates, or null
//!     without counter samples or a rate; `ns_per_iteration`: the rate used (given with
//!     `--ns-per-iteration` or fitted), or null;
//!   - `compute_spread`, `blocked_spread`: `{min, median, p90, max}` of the per-block
//!     figures;
//!   - `per_block`: `{block, length_ns, blocked_ns, compute_ns, overlap_ns,
//!     blocked_from_counters_ns}` by block id, where `blocked_ns` is the union of the self
//!     time of the block's wait-category regions (concurrent waits of two groups count
//!     once) clipped to the block, `compute_ns = length_ns - blocked_ns`, `overlap_ns` the
//!     part of `blocked_ns` during which some group of the block is in a compute region
//!     (waits hidden behind the block's own math), and `blocked_from_counters_ns` the
//!     union over the block's counter samples of `[ts - iterations x rate, ts)` (or null).
//! - `imbalance`: `lanes`, `blocks`: spreads of lane lengths and block lengths, each
//!   `{count, min, median, p90, max, max_over_median, slowest}` where `slowest` lists up
//!   to 5 `[id, ns]` pairs, slowest first (lane ids are `block x groups_per_block +
//!   group`); `sms`: the same for SM busy time (union of its lanes' lifetimes), **null
//!   without SM ids**; `sm_occupancy`: `[time, active SMs]` change points (empty without
//!   SM ids); `tail`: ns from the last moment at least half the peak number of SMs were
//!   active to the launch's end, null without SM ids.
//! - `gaps`: per pair of consecutive top-level regions of a lane, largest total first:
//!   `{from, to}` (region ids), `count`, `total`, `max`.
//! - `links`: signal → wait links: `block`, `from_lane`, `from_ts`, `from` (`{kind:
//!   "instant"|"span"|"async", index}`; `async`: an async range, `index` into
//!   `Trace::async_ranges`), `to_lane`, `to_span`, `to_ts`, `token` (see
//!   [`super::links`]).
//! - `critical_path`: `{block, length_ns, steps}` for the slowest block (`block` null and
//!   `steps` empty without blocks); `length_ns` is that block's length; `steps` as in
//!   [`super::critical`]'s `# Format`.
//! - `roofline`: with annotations, one object per annotated region: `region` (id), `name`,
//!   `count`, `flops`, `bytes`, `sm_time_ns`, `tflops`, `tb_per_s`, `intensity` (FLOP/B,
//!   null when no bytes), `memory_bound`, `percent_of_roof`, `impossible` (true when the
//!   rate is above the roof: the annotation or the GPU preset is wrong, the figure is no
//!   finding); empty without annotations.

use super::blocks::{distribution, gpu_wall, BlockView, Distribution};
use super::breakdown::{block_breakdowns, BlockBreakdown, TimeBreakdown};
use super::categories::CategoryTable;
use super::critical::{critical_path_steps, PathStep};
use super::gaps::{gaps, GapStats};
use super::imbalance::{imbalance, Imbalance};
use super::isolation::{isolate_compute, ComputeIsolation};
use super::links::{links, Link};
use super::roofline::{roofline, GpuPreset, RegionRoofline, Work};
use crate::model::{Trace, WireFormat};
use crate::time::DurationNs;
use std::collections::{BTreeMap, HashMap};

/// What the analysis needs beyond the trace. The defaults are `ikp analyze`'s.
#[derive(Clone, Debug)]
pub struct KernelOptions<'a> {
    /// Region categories.
    pub categories: CategoryTable,
    /// Work per region for the roofline (no roofline when empty).
    pub work: HashMap<String, Work>,
    /// GPU whose peaks the roofline uses (no roofline without one; default
    /// [`roofline::DEFAULT_GPU`](super::roofline::DEFAULT_GPU)).
    pub gpu: Option<&'a GpuPreset>,
    /// ns per spin iteration for the counter estimate (fitted when `None`).
    pub ns_per_iteration: Option<f64>,
}

impl Default for KernelOptions<'_> {
    fn default() -> Self {
        KernelOptions {
            categories: CategoryTable::default(),
            work: HashMap::new(),
            gpu: Some(super::roofline::default_preset()),
            ns_per_iteration: None,
        }
    }
}

/// The critical path of one block.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CriticalPath {
    /// The block (the slowest one); `None` without blocks.
    pub block: Option<u32>,
    /// The block's length.
    pub length_ns: DurationNs,
    /// Its steps, first to last.
    pub steps: Vec<PathStep>,
}

/// Everything `ikp analyze` reports about one launch (see the module's `# Format`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct KernelAnalysis {
    /// Wire format of the buffer.
    pub format: WireFormat,
    /// First stamp to last stamp over the whole launch.
    pub gpu_wall_ns: DurationNs,
    /// Blocks that recorded anything.
    pub blocks: usize,
    /// Sum of the blocks' lengths.
    pub block_time_ns: DurationNs,
    /// Sum of `block_breakdowns`.
    pub breakdown: TimeBreakdown,
    /// Per block.
    pub block_breakdowns: Vec<BlockBreakdown>,
    /// Per part of the breakdown (and `total`), its distribution across blocks.
    pub breakdown_spread: BTreeMap<&'static str, Distribution>,
    /// Compute isolation as in the tt-metal compute-isolation proposal
    /// (docs/references.md), per block and summed.
    pub compute_isolation: ComputeIsolation,
    /// Stragglers and SM occupancy.
    pub imbalance: Imbalance,
    /// Bubbles between consecutive top-level regions.
    pub gaps: Vec<GapStats>,
    /// Signal → wait links.
    pub links: Vec<Link>,
    /// Critical path of the slowest block.
    pub critical_path: CriticalPath,
    /// Roofline per annotated region.
    pub roofline: Vec<RegionRoofline>,
}

/// Analyses `trace`.
pub fn analyze(trace: &Trace, opts: &KernelOptions<'_>) -> KernelAnalysis {
    let view = BlockView::new(trace, &opts.categories);
    let bbs = block_breakdowns(&view);
    let breakdown: TimeBreakdown = bbs.iter().map(|b| b.time).sum();
    let mut breakdown_spread = BTreeMap::new();
    breakdown_spread.insert("total", distribution(bbs.iter().map(|b| b.time.total)));
    for (k, (name, _)) in TimeBreakdown::default().parts().iter().enumerate() {
        breakdown_spread.insert(*name, distribution(bbs.iter().map(|b| b.time.parts()[k].1)));
    }
    let l = links(trace);
    let slowest = view.slowest();
    let critical_path = CriticalPath {
        block: slowest.map(|b| b.id),
        length_ns: slowest.map_or(0, |b| b.length()),
        steps: slowest
            .map(|b| critical_path_steps(&view, b.id, &l))
            .unwrap_or_default(),
    };
    let roofline = match opts.gpu {
        Some(gpu) if !opts.work.is_empty() => roofline(trace, &opts.work, gpu),
        _ => vec![],
    };
    KernelAnalysis {
        format: trace.source.format,
        gpu_wall_ns: gpu_wall(trace),
        blocks: bbs.len(),
        block_time_ns: breakdown.total,
        breakdown,
        block_breakdowns: bbs,
        breakdown_spread,
        compute_isolation: isolate_compute(&view, opts.ns_per_iteration),
        imbalance: imbalance(&view),
        gaps: gaps(trace),
        links: l,
        critical_path,
        roofline,
    }
}
