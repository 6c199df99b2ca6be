//! Timeline breakdown: where each block's time goes, and the sum over blocks.
//!
//! Every instant of a lane's time belongs to its innermost open region, the open one that
//! began last ("self time", [`crate::stats::self_intervals`]), so a `wait` nested in a
//! `mainloop` counts as waiting, not twice, and so does a `wait` begun inside a `load` and
//! still open after the load ended. Across the lanes of **one
//! block**, each category's self time is a union of intervals; categories are then made
//! disjoint by priority (compute, wait, load, store, comm, other: each keeps only the time
//! no earlier category covers, its "exposed" time), and what is left of the block's window
//! is idle. Hence, per block, `compute + exposed_wait + exposed_load + exposed_store +
//! exposed_comm + exposed_other + idle == total` exactly, in integer ns.
//!
//! The union stops at the block (see [`super::blocks`]): a lane of block 3 computing does
//! not hide a wait of block 5, which runs on another SM. The kernel's breakdown
//! ([`block_time_breakdown`]) is the field-by-field **sum** of the block breakdowns, so the
//! equation holds for it too, with `total` the block-time (summed block lengths).

use super::blocks::{Block, BlockView};
use super::categories::Category;
use super::intervals::IntervalSet;
use crate::model::Trace;
use crate::stats::self_intervals;
use crate::time::{DurationNs, Timestamp};

/// Time split into disjoint parts: one block's window, or a sum of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TimeBreakdown {
    /// Length: the block's first to last stamp (for a sum, the block-time).
    pub total: DurationNs,
    /// Time some lane of the block computes.
    pub compute: DurationNs,
    /// Time some lane of the block waits and none computes.
    pub exposed_wait: DurationNs,
    /// Time some lane loads and none computes or waits.
    pub exposed_load: DurationNs,
    /// Time some lane stores and none computes, waits or loads.
    pub exposed_store: DurationNs,
    /// Time some lane communicates and none of the above.
    pub exposed_comm: DurationNs,
    /// Time only uncategorised regions run.
    pub exposed_other: DurationNs,
    /// Time no lane of the block is inside any region.
    pub idle: DurationNs,
}

impl TimeBreakdown {
    /// The parts with their names as the text and JSON use them, in priority order,
    /// idle last; their values add up to `total`.
    pub fn parts(&self) -> [(&'static str, DurationNs); 7] {
        [
            ("compute", self.compute),
            ("exposed_wait", self.exposed_wait),
            ("exposed_load", self.exposed_load),
            ("exposed_store", self.exposed_store),
            ("exposed_comm", self.exposed_comm),
            ("exposed_other", self.exposed_other),
            ("idle", self.idle),
        ]
    }
}

impl std::ops::Add for TimeBreakdown {
    type Output = TimeBreakdown;
    fn add(self, o: TimeBreakdown) -> TimeBreakdown {
        TimeBreakdown {
            total: self.total + o.total,
            compute: self.compute + o.compute,
            exposed_wait: self.exposed_wait + o.exposed_wait,
            exposed_load: self.exposed_load + o.exposed_load,
            exposed_store: self.exposed_store + o.exposed_store,
            exposed_comm: self.exposed_comm + o.exposed_comm,
            exposed_other: self.exposed_other + o.exposed_other,
            idle: self.idle + o.idle,
        }
    }
}

impl std::iter::Sum for TimeBreakdown {
    fn sum<I: Iterator<Item = TimeBreakdown>>(it: I) -> TimeBreakdown {
        it.fold(TimeBreakdown::default(), |a, b| a + b)
    }
}

/// The breakdown of one block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BlockBreakdown {
    /// Linear block id.
    pub block: u32,
    /// The block's first stamp (same time base as the trace).
    pub start: Timestamp,
    /// Its parts; `total` is the block's length.
    #[serde(flatten)]
    pub time: TimeBreakdown,
}

/// Per-category unions of self time over a set of lanes.
#[derive(Clone, Debug, Default)]
pub struct CategoryTime {
    /// Indexed like [`Category::ALL`].
    pub sets: [IntervalSet; 6],
}

/// Self-time intervals of one lane, per category (unsorted, may be appended to `out`):
/// [`self_intervals`], so the breakdown and the region shares agree on what is whose.
fn lane_self_time(
    trace: &Trace,
    lane_pos: usize,
    cats: &[Category],
    stack: &mut Vec<(usize, Timestamp)>,
    out: &mut [Vec<(Timestamp, Timestamp)>; 6],
) {
    let region = &trace.spans.region;
    self_intervals(trace, &trace.lanes[lane_pos], stack, |i, from, to| {
        out[cats[region[i] as usize] as usize].push((from, to));
    });
}

/// Unions of self time per category over the lanes at `lane_positions`.
pub fn category_time(
    trace: &Trace,
    lane_positions: impl IntoIterator<Item = usize>,
    cats: &[Category],
) -> CategoryTime {
    let mut raw: [Vec<(Timestamp, Timestamp)>; 6] = Default::default();
    let mut stack = Vec::new();
    for p in lane_positions {
        lane_self_time(trace, p, cats, &mut stack, &mut raw);
    }
    CategoryTime {
        sets: raw.map(IntervalSet::from_unsorted),
    }
}

fn breakdown_of(window: (Timestamp, Timestamp), ct: &CategoryTime) -> TimeBreakdown {
    let win = IntervalSet::span(window.0, window.1);
    let mut covered = IntervalSet::new();
    let mut parts = [0 as DurationNs; 6];
    for (k, set) in ct.sets.iter().enumerate() {
        let exposed = set.intersect(&win).subtract(&covered);
        parts[k] = exposed.len();
        covered = covered.union(&exposed);
    }
    let total = window.1.saturating_sub(window.0);
    TimeBreakdown {
        total,
        compute: parts[0],
        exposed_wait: parts[1],
        exposed_load: parts[2],
        exposed_store: parts[3],
        exposed_comm: parts[4],
        exposed_other: parts[5],
        idle: total - covered.len(),
    }
}

/// The breakdown of `block` (its lanes' self time, clipped to its window).
pub fn block_breakdown(trace: &Trace, block: &Block, cats: &[Category]) -> BlockBreakdown {
    let ct = category_time(trace, block.lanes.iter().copied(), cats);
    BlockBreakdown {
        block: block.id,
        start: block.start,
        time: breakdown_of((block.start, block.end), &ct),
    }
}

/// The breakdown of every block that recorded anything, by block id ascending.
pub fn block_breakdowns(v: &BlockView) -> Vec<BlockBreakdown> {
    (v.blocks.iter())
        .map(|b| block_breakdown(v.trace, b, &v.categories))
        .collect()
}

/// The kernel's breakdown in block-time: the sum of [`block_breakdowns`].
pub fn block_time_breakdown(v: &BlockView) -> TimeBreakdown {
    block_breakdowns(v).iter().map(|b| b.time).sum()
}

/// Per category, the sum over blocks of the union of that category's self time in the
/// block (before exposure: categories may overlap one another), indexed like
/// [`Category::ALL`]. The "total time of a category" in block-time.
pub fn block_time_by_category(v: &BlockView) -> [DurationNs; 6] {
    let mut out = [0 as DurationNs; 6];
    for b in &v.blocks {
        let win = IntervalSet::span(b.start, b.end);
        let ct = category_time(v.trace, b.lanes.iter().copied(), &v.categories);
        for (o, set) in out.iter_mut().zip(&ct.sets) {
            *o += set.intersect(&win).len();
        }
    }
    out
}
