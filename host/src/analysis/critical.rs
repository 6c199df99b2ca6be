//! The critical path of a block as steps a reader can follow: where each step ran (block,
//! group, warp, SM, never an internal lane index), which region, when, for how long, and
//! which signal it waited on.
//!
//! The path itself comes from [`critical_path_links`]; this module only names its
//! steps and marks the longest waits on it, the first places to look.
//!
//! # Format (JSON, `critical_path.steps` of `ikp analyze --json`)
//! One object per step, first to last:
//! - `span`: index of the step's span in the decoded trace (stable for one input);
//! - `block`, `group`, `warp`, `sm`: where it ran (`warp` / `sm` null when the format
//!   records none); `track`: the same as text, `block B · group G (warp W, SM S)`;
//! - `region`: region name; `category`: its category (`compute`, `wait`, ...);
//! - `start_ns`: begin time on the trace's axis; `offset_ns`: begin minus the block's first
//!   stamp; `dur_ns`: duration;
//! - `waited_on`: null, or the signal that released this step's wait: its `block`,
//!   `group`, `warp`, `sm`, `track`, `region` (the `signal.<channel>` name) and
//!   `signal_ns` (its time on the trace's axis);
//! - `longest_wait`: true for the [`LONGEST_WAITS`] longest wait-category steps.

use super::blocks::BlockView;
use super::categories::Category;
use super::links::{critical_path_links, Link};
use crate::model::TrackId;
use crate::time::{DurationNs, Timestamp};

/// How many of the longest wait steps are marked.
pub const LONGEST_WAITS: usize = 3;

/// The signal that released a step.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct WaitedOn {
    /// Where the signal was issued.
    #[serde(flatten)]
    pub at: TrackId,
    /// The same, as text.
    pub track: String,
    /// The signal's region name.
    pub region: String,
    /// Signal time.
    pub signal_ns: Timestamp,
}

/// One step of a critical path.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PathStep {
    /// Index of the span in [`Trace::spans`](crate::model::Trace::spans).
    pub span: usize,
    /// Where it ran.
    #[serde(flatten)]
    pub at: TrackId,
    /// The same, as text.
    pub track: String,
    /// Region name.
    pub region: String,
    /// Region category.
    pub category: Category,
    /// Begin time.
    pub start_ns: Timestamp,
    /// Begin time minus the block's first stamp.
    pub offset_ns: DurationNs,
    /// Duration.
    pub dur_ns: DurationNs,
    /// The signal that released it, if it was a wait held up by another group.
    pub waited_on: Option<WaitedOn>,
    /// Whether it is one of the [`LONGEST_WAITS`] longest wait steps of the path.
    pub longest_wait: bool,
}

/// The critical path of `block` as named steps, first to last (empty when the block has no
/// leaf region).
pub fn critical_path_steps(v: &BlockView, block: u32, links: &[Link]) -> Vec<PathStep> {
    let (trace, cats) = (v.trace, &v.categories);
    let track_of = |id: u32| trace.lane(id).map(|l| l.track()).unwrap_or_default();
    let block_start = trace
        .lanes
        .iter()
        .filter(|l| l.block == block)
        .map(|l| l.start)
        .min()
        .unwrap_or(0);
    let s = &trace.spans;
    let mut steps: Vec<PathStep> = critical_path_links(trace, block, links)
        .into_iter()
        .map(|(i, link)| {
            let at = track_of(s.lane[i]);
            let waited_on = link.map(|l| {
                let region = l.from.region(trace);
                let from = track_of(l.from_lane);
                WaitedOn {
                    at: from,
                    track: from.name(),
                    region: trace.names.region(region).into_owned(),
                    signal_ns: l.from_ts,
                }
            });
            PathStep {
                span: i,
                at,
                track: at.name(),
                region: trace.names.region(s.region[i]).into_owned(),
                category: cats[s.region[i] as usize],
                start_ns: s.begin[i],
                offset_ns: s.begin[i].saturating_sub(block_start),
                dur_ns: s.dur(i),
                waited_on,
                longest_wait: false,
            }
        })
        .collect();
    let mut waits: Vec<usize> = (0..steps.len())
        .filter(|&k| steps[k].category == Category::Wait && steps[k].dur_ns > 0)
        .collect();
    waits.sort_by(|&a, &b| steps[b].dur_ns.cmp(&steps[a].dur_ns).then(a.cmp(&b)));
    for k in waits.into_iter().take(LONGEST_WAITS) {
        steps[k].longest_wait = true;
    }
    steps
}
