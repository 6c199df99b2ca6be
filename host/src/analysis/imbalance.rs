//! Load imbalance: which lanes, blocks and SMs finish last, and how long the kernel runs
//! on a shrinking number of SMs at its end (the tail of the last wave).
//!
//! SM figures need SM ids, which only native buffers record: for a TVM-format trace they
//! are `None` (not available), never a number computed from nothing.

use super::blocks::{distribution, BlockView};
use super::intervals::IntervalSet;
use crate::model::WireFormat;
use crate::time::{DurationNs, Timestamp};
use std::collections::BTreeMap;

/// How durations spread over a set of keys (lanes, blocks or SMs).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Spread {
    /// Number of keys.
    pub count: usize,
    /// Shortest duration.
    pub min: DurationNs,
    /// Median duration (lower median for an even count).
    pub median: DurationNs,
    /// 90th percentile (nearest rank, see [`distribution`]).
    pub p90: DurationNs,
    /// Longest duration.
    pub max: DurationNs,
    /// `max / median` (1.0 = perfectly balanced; 0 when the median is 0).
    pub max_over_median: f64,
    /// The slowest keys, slowest first, at most [`TOP`].
    pub slowest: Vec<(u32, DurationNs)>,
}

/// How many stragglers a [`Spread`] lists.
pub const TOP: usize = 5;

fn spread(mut v: Vec<(u32, DurationNs)>) -> Spread {
    if v.is_empty() {
        return Spread::default();
    }
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let d = distribution(v.iter().map(|x| x.1));
    let (median, max) = (d.median, d.max);
    Spread {
        count: v.len(),
        min: d.min,
        median,
        p90: d.p90,
        max,
        max_over_median: if median == 0 {
            0.0
        } else {
            max as f64 / median as f64
        },
        slowest: v.into_iter().take(TOP).collect(),
    }
}

/// Imbalance of one launch.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Imbalance {
    /// Lane durations (start to end), keyed by lane id.
    pub lanes: Spread,
    /// Block durations (first lane start to last lane end), keyed by block id.
    pub blocks: Spread,
    /// SM busy time (union of its lanes' lifetimes), keyed by SM id; `None` when no lane
    /// records an SM id (TVM-format buffers).
    pub sms: Option<Spread>,
    /// Number of SMs with a lane alive, as change points `(time, active SMs)`, ascending;
    /// empty without SM ids.
    pub sm_occupancy: Vec<(Timestamp, u32)>,
    /// Time from the last moment at least half the peak number of SMs were active to the
    /// kernel's end: how long the last wave's stragglers keep the GPU underused. `None`
    /// without SM ids.
    pub tail: Option<DurationNs>,
}

/// What user-facing text shows in place of an SM figure the trace cannot support.
pub fn sm_figures_unavailable(format: WireFormat) -> &'static str {
    match format {
        WireFormat::Tvm => "n/a (the TVM format records no SM ids)",
        WireFormat::Mirage => "n/a (the Mirage MPK format records no SM ids)",
        WireFormat::Ikp | WireFormat::FlashInfer | WireFormat::YaoJz | WireFormat::Proton => {
            "n/a (no lane recorded an SM id)"
        }
    }
}

/// Computes the imbalance of the launch of `v`.
pub fn imbalance(v: &BlockView) -> Imbalance {
    let trace = v.trace;
    let lane_lengths = (trace.lanes.iter()).map(|l| (l.id, l.end.saturating_sub(l.start)));
    let lanes = spread(lane_lengths.collect());
    let mut sm_lives: BTreeMap<u32, Vec<(Timestamp, Timestamp)>> = BTreeMap::new();
    for l in &trace.lanes {
        if let Some(sm) = l.sm {
            sm_lives.entry(sm).or_default().push((l.start, l.end));
        }
    }
    let blocks = spread(v.blocks.iter().map(|b| (b.id, b.length())).collect());
    let sm_sets: Vec<(u32, IntervalSet)> = sm_lives
        .into_iter()
        .map(|(sm, v)| (sm, IntervalSet::from_unsorted(v)))
        .collect();
    let has_sms = !sm_sets.is_empty();
    let sms = has_sms.then(|| spread(sm_sets.iter().map(|(sm, s)| (*sm, s.len())).collect()));

    // Occupancy: +1 / -1 events at each SM's busy runs.
    let mut events: Vec<(Timestamp, i64)> = Vec::new();
    for (_, set) in &sm_sets {
        for &(s, e) in set.runs() {
            events.push((s, 1));
            events.push((e, -1));
        }
    }
    events.sort_unstable();
    let mut active = 0i64;
    let sm_occupancy: Vec<(Timestamp, u32)> = (events.chunk_by(|a, b| a.0 == b.0))
        .map(|g| {
            active += g.iter().map(|e| e.1).sum::<i64>();
            (g[0].0, active as u32)
        })
        .collect();
    let peak = sm_occupancy.iter().map(|x| x.1).max().unwrap_or(0);
    let end = trace.lanes.iter().map(|l| l.end).max().unwrap_or(0);
    let tail = has_sms.then(|| {
        sm_occupancy
            .windows(2)
            .filter(|w| 2 * w[0].1 >= peak && peak > 0)
            .map(|w| w[1].0)
            .max()
            .map_or(0, |t| end.saturating_sub(t))
    });
    Imbalance {
        lanes,
        blocks,
        sms,
        sm_occupancy,
        tail,
    }
}
