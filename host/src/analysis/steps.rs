//! Per-region statistics over several launches (steps, ranks), keyed like the trace
//! statistics of the dPRO trace format (docs/references.md): average, count, total time,
//! min, max, first-seen order and the steps (launch indices) the region appears in.
//!
//! # Format (JSON, as written by `ikp report --steps-json` and [`steps_json`])
//! ```json
//! { "mma": { "avg": 602.1, "cnt": 1150, "time": 692415, "min_t": 560, "max_t": 640,
//!            "id": 0, "step_ids": [0, 1] } }
//! ```
//! Times are integer ns except `avg` (ns, float). `id` is the order in which regions were
//! first met (launch order, then region id).

use crate::stats::TraceStats;
use crate::time::DurationNs;
use std::collections::BTreeMap;

/// Statistics of one region over all launches.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct StepStat {
    /// Mean duration, ns.
    pub avg: f64,
    /// Occurrences.
    pub cnt: u64,
    /// Total duration, ns.
    pub time: DurationNs,
    /// Shortest, ns.
    pub min_t: DurationNs,
    /// Longest, ns.
    pub max_t: DurationNs,
    /// First-seen order.
    pub id: usize,
    /// Launch indices the region occurs in, ascending.
    pub step_ids: Vec<usize>,
    /// Per launch: `(launch index, count, total ns)`.
    #[serde(skip)]
    pub per_step: Vec<(usize, u64, DurationNs)>,
}

/// Statistics by region name over `launches` (their statistics, in launch order).
pub fn step_stats(launches: &[&TraceStats]) -> BTreeMap<String, StepStat> {
    let mut out: BTreeMap<String, StepStat> = BTreeMap::new();
    let mut next_id = 0;
    for (step, t) in launches.iter().enumerate() {
        for r in &t.all.regions {
            let (cnt, time) = (r.stats.count, r.stats.total);
            let name = t.trace.names.region(r.region).into_owned();
            let s = out.entry(name).or_insert_with(|| {
                next_id += 1;
                StepStat {
                    min_t: DurationNs::MAX,
                    id: next_id - 1,
                    ..Default::default()
                }
            });
            s.cnt += cnt;
            s.time += time;
            s.min_t = s.min_t.min(r.stats.min);
            s.max_t = s.max_t.max(r.stats.max);
            s.step_ids.push(step);
            s.per_step.push((step, cnt, time));
            s.avg = s.time as f64 / s.cnt as f64;
        }
    }
    out
}

/// [`step_stats`] as the JSON of the module's `# Format`.
pub fn steps_json(launches: &[&TraceStats]) -> serde_json::Value {
    serde_json::to_value(step_stats(launches)).unwrap_or_default()
}
