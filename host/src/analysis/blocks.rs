//! Blocks: the unit every per-kernel figure is built from.
//!
//! A CUDA block owns its warp groups (its lanes) the way a core owns its threads in the
//! tt-metal compute-isolation proposal (docs/references.md): they share one SM's resources
//! and wait for each other. So "while one of them waits, the others may still compute" is a
//! statement about one block, never about the GPU: two blocks on different SMs say nothing
//! about each other's time. Analyses therefore work block by block first, and a
//! kernel-level figure is a **sum over blocks** ("block-time"), whose shares are shares of
//! the summed block lengths. The distribution across blocks ([`Distribution`]) says whether
//! that sum hides a few outliers.
//!
//! The one whole-GPU figure kept is the **GPU wall time** ([`gpu_wall`]): the first stamp of
//! any block to the last, which answers "how long did the launch take".

use super::categories::{region_categories, Category, CategoryTable};
use crate::model::Trace;
use crate::time::{DurationNs, Timestamp};
use std::collections::BTreeMap;

/// A launch block by block, with the category of every region: built once per launch
/// ([`BlockView::new`]) and read by every per-block analysis (breakdown, compute
/// isolation, imbalance, critical path), so that none of them builds it again.
#[derive(Clone, Debug)]
pub struct BlockView<'t> {
    /// The trace.
    pub trace: &'t Trace,
    /// Its blocks ([`blocks`]).
    pub blocks: Vec<Block>,
    /// The category of every region id ([`region_categories`]).
    pub categories: Vec<Category>,
}

impl<'t> BlockView<'t> {
    /// The view of `trace`, its regions categorised by `table`.
    pub fn new(trace: &'t Trace, table: &CategoryTable) -> BlockView<'t> {
        BlockView {
            trace,
            blocks: blocks(trace),
            categories: region_categories(trace, table),
        }
    }

    /// The slowest block (see [`slowest_block`]).
    pub fn slowest(&self) -> Option<&Block> {
        slowest(&self.blocks)
    }
}

/// One block's lanes and window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Linear block id.
    pub id: u32,
    /// Positions of its lanes in [`Trace::lanes`], ascending.
    pub lanes: Vec<usize>,
    /// Its lanes' first stamp (the earliest lane start).
    pub start: Timestamp,
    /// Its lanes' last stamp (the latest lane end), never before `start`.
    pub end: Timestamp,
}

impl Block {
    /// `end - start`: the block's length.
    pub fn length(&self) -> DurationNs {
        self.end - self.start
    }
}

/// Every block that has a lane, by block id ascending.
pub fn blocks(trace: &Trace) -> Vec<Block> {
    let mut by_id: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (p, l) in trace.lanes.iter().enumerate() {
        by_id.entry(l.block).or_default().push(p);
    }
    by_id
        .into_iter()
        .map(|(id, lanes)| {
            let lane = |p: &usize| &trace.lanes[*p];
            let start = (lanes.iter().map(|p| lane(p).start)).min().unwrap_or(0);
            let end = (lanes.iter().map(|p| lane(p).end))
                .max()
                .unwrap_or(start)
                .max(start);
            Block {
                id,
                lanes,
                start,
                end,
            }
        })
        .collect()
}

/// The slowest block: the longest, the lowest id among equals (the block analyses of a
/// single block, such as the critical path, look at). `None` without lanes.
pub fn slowest_block(trace: &Trace) -> Option<Block> {
    slowest(&blocks(trace)).cloned()
}

fn slowest(blocks: &[Block]) -> Option<&Block> {
    (blocks.iter()).min_by_key(|b| (std::cmp::Reverse(b.length()), b.id))
}

/// GPU wall time: first lane start to last lane end over the whole launch (0 without
/// lanes). A whole-GPU figure: use it for "how long did the launch take", never as the
/// denominator of a per-block share.
pub fn gpu_wall(trace: &Trace) -> DurationNs {
    let start = trace.lanes.iter().map(|l| l.start).min().unwrap_or(0);
    let end = trace.lanes.iter().map(|l| l.end).max().unwrap_or(start);
    end.saturating_sub(start)
}

/// How one figure spreads across blocks (or any set of keys), in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Distribution {
    /// Smallest value.
    pub min: DurationNs,
    /// Lower median: the `⌈n/2⌉`-th smallest value.
    pub median: DurationNs,
    /// 90th percentile, nearest rank: the `⌈0.9·n⌉`-th smallest value.
    pub p90: DurationNs,
    /// Largest value.
    pub max: DurationNs,
}

/// The distribution of `values`; all zero when there are none. Every figure is one of the
/// values (nearest rank, no interpolation), so it can be traced back to a block.
pub fn distribution(values: impl IntoIterator<Item = DurationNs>) -> Distribution {
    let mut v: Vec<DurationNs> = values.into_iter().collect();
    if v.is_empty() {
        return Distribution::default();
    }
    v.sort_unstable();
    let n = v.len();
    let rank = |num: usize, den: usize| v[(n * num).div_ceil(den).max(1) - 1];
    Distribution {
        min: v[0],
        median: rank(1, 2),
        p90: rank(9, 10),
        max: v[n - 1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_distribution() {
        assert_eq!(distribution([]), Distribution::default());
        assert_eq!(
            distribution([7]),
            Distribution {
                min: 7,
                median: 7,
                p90: 7,
                max: 7
            }
        );
        // 1..=10: lower median 5, p90 = 9th value, max 10.
        let d = distribution((1..=10).rev());
        assert_eq!((d.min, d.median, d.p90, d.max), (1, 5, 9, 10));
        // 1..=11: median 6th = 6, p90 = ⌈9.9⌉ = 10th value.
        let d = distribution(1..=11);
        assert_eq!((d.median, d.p90), (6, 10));
    }
}
