//! Analysis of a decoded trace: the answer behind the timeline.
//!
//! - [`categories`]: what kind of work each region is;
//! - [`intervals`]: union / intersection / difference of ns intervals;
//! - [`breakdown`]: compute + exposed wait / memory + idle = total, per block and summed;
//! - [`blocks`]: blocks, the unit of every per-kernel figure (sums over blocks), and the
//!   [`blocks::BlockView`] of a launch that every per-block analysis reads, built once;
//! - [`isolation`]: compute = block length - union of its waits (the tt-metal
//!   compute-isolation proposal, docs/references.md), per block;
//! - [`imbalance`]: stragglers per lane / block / SM, SM occupancy, last-wave tail;
//! - [`gaps`]: bubbles between consecutive regions;
//! - [`links`]: signal → wait links between lanes and the critical path of a block;
//! - [`critical`]: that path as named steps (block, group, warp, SM), longest waits marked;
//! - [`roofline`]: achieved FLOP/s and bytes/s per region against GPU presets;
//! - [`steps`]: per-region statistics over several launches (steps, ranks);
//! - [`diff`]: two runs compared region by region, regressions flagged;
//! - [`kernel`]: all of the above for one launch, as `ikp analyze` reports it (JSON format).
pub mod blocks;
pub mod breakdown;
pub mod categories;
pub mod critical;
pub mod diff;
pub mod gaps;
pub mod imbalance;
pub mod intervals;
pub mod isolation;
pub mod kernel;
pub mod links;
pub mod roofline;
pub mod steps;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_kernel;
