//! Bubbles: idle time between consecutive top-level regions of a lane, by region pair.
//! A large `load → mma` gap says the consumer starts late after its data arrived.
//!
//! A top-level region is one begun with no region of its lane open (depth 0). A gap runs
//! from the latest end of the lane's regions begun before the next top-level one (a region
//! begun inside the previous top-level region may outlive it: the lane is not idle until
//! it ends too) to that region's begin; it is between the previous top-level region and
//! the next.

use crate::model::Trace;
use crate::time::DurationNs;
use std::collections::BTreeMap;

/// Gaps between one ordered pair of regions.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GapStats {
    /// Region that ends.
    pub from: u16,
    /// Region that begins next.
    pub to: u16,
    /// Number of such transitions (including zero-length gaps).
    pub count: u64,
    /// Sum of the gaps.
    pub total: DurationNs,
    /// Longest gap.
    pub max: DurationNs,
}

/// Gaps between consecutive depth-0 regions in every lane, by `(from, to)` pair, sorted by
/// total gap time, largest first.
pub fn gaps(trace: &Trace) -> Vec<GapStats> {
    let s = &trace.spans;
    let mut by_pair: BTreeMap<(u16, u16), GapStats> = BTreeMap::new();
    for lane in &trace.lanes {
        let mut prev: Option<usize> = None;
        // The latest end of the spans before `i`: where nested, the previous top-level
        // span's.
        let mut reach = 0;
        for i in lane.spans.clone() {
            let end = reach;
            reach = reach.max(s.end[i]);
            if s.depth[i] != 0 {
                continue;
            }
            if let Some(p) = prev {
                let gap = s.begin[i].saturating_sub(end);
                let g = by_pair
                    .entry((s.region[p], s.region[i]))
                    .or_insert_with(|| GapStats {
                        from: s.region[p],
                        to: s.region[i],
                        ..Default::default()
                    });
                g.count += 1;
                g.total += gap;
                g.max = g.max.max(gap);
            }
            prev = Some(i);
        }
    }
    let mut v: Vec<GapStats> = by_pair.into_values().collect();
    v.sort_by_key(|g| (std::cmp::Reverse(g.total), g.from, g.to));
    v
}
