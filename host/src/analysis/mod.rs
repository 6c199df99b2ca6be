//! Analysis of a decoded trace: the answer behind the timeline.
//!
//! - [`categories`]: what kind of work each region is;
//! - [`intervals`]: union / intersection / difference of ns intervals;
//! - [`breakdown`]: compute + exposed wait / memory + idle = total, per block and kernel;
//! - [`isolation`]: compute = kernel length - union of waits (reference 004);
//! - [`imbalance`]: stragglers per lane / block / SM, SM occupancy, last-wave tail;
//! - [`gaps`]: bubbles between consecutive regions;
//! - [`links`]: signal → wait links between lanes and the critical path of a block;
//! - [`roofline`]: achieved FLOP/s and bytes/s per region against GPU presets;
//! - [`steps`]: per-region statistics over several launches (steps, ranks);
//! - [`diff`]: two runs compared region by region, regressions flagged.
pub mod breakdown;
pub mod categories;
pub mod diff;
pub mod gaps;
pub mod imbalance;
pub mod intervals;
pub mod isolation;
pub mod links;
pub mod roofline;
pub mod steps;

#[cfg(test)]
mod tests;
