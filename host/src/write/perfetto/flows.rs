//! Signal → wait links as Perfetto flows: which events of each lane start or terminate
//! which flow ids (the module's `# Format`, item 4, says where they are written).

use std::collections::HashMap;

use crate::analysis::links::{self, SignalEvent};
use crate::model::Trace;

/// Flow ids of one lane's events (see the module's `# Format`), each list sorted by
/// event index (local to the lane), parallel index / id vectors.
#[derive(Debug, Default)]
pub(super) struct LaneFlows {
    /// Spans whose begin starts flows (signal spans), and the flow ids.
    pub(super) out_span: Vec<usize>,
    pub(super) out_span_id: Vec<u64>,
    /// Instants that start flows (signal instants), and the flow ids.
    pub(super) out_instant: Vec<usize>,
    pub(super) out_instant_id: Vec<u64>,
    /// Spans whose end terminates a flow (linked waits: one flow each), and the flow ids.
    pub(super) in_span: Vec<usize>,
    pub(super) in_span_id: Vec<u64>,
}

/// The flows of a launch's lanes, by lane position; lanes without flows are absent.
pub(super) type LaunchFlows = HashMap<usize, LaneFlows>;

/// The flows of every link of `trace` (see [`links::links`]): flow id `base + w + 1` for
/// the link into wait span `w`, `async_base + k + 1` for async range `k`'s (which starts
/// on the range's own slice, not in a lane). Empty at once when the names allow no link
/// and there is no async range.
pub(super) fn lane_flows(trace: &Trace, base: u64, async_base: u64) -> LaunchFlows {
    let mut out = LaunchFlows::default();
    if !links::may_link(&trace.names) && trace.async_ranges.is_empty() {
        return out;
    }
    let all = drawn_links(trace);
    if all.is_empty() {
        return out;
    }
    let pos_of: HashMap<u32, usize> = trace
        .lanes
        .iter()
        .enumerate()
        .map(|(pos, l)| (l.id, pos))
        .collect();
    let mut out_span: HashMap<usize, Vec<(usize, u64)>> = HashMap::new();
    let mut out_instant: HashMap<usize, Vec<(usize, u64)>> = HashMap::new();
    let mut in_span: HashMap<usize, Vec<(usize, u64)>> = HashMap::new();
    for l in &all {
        let id = match l.from {
            SignalEvent::Async(k) => async_base + k as u64 + 1,
            _ => base + l.to_span as u64 + 1,
        };
        let (from, to) = (pos_of[&l.from_lane], pos_of[&l.to_lane]);
        let (fl, tl) = (&trace.lanes[from], &trace.lanes[to]);
        match l.from {
            SignalEvent::Async(_) => {}
            SignalEvent::Instant(i) => out_instant
                .entry(from)
                .or_default()
                .push((i - fl.instants.start, id)),
            SignalEvent::Span(i) => out_span
                .entry(from)
                .or_default()
                .push((i - fl.spans.start, id)),
        }
        in_span
            .entry(to)
            .or_default()
            .push((l.to_span - tl.spans.start, id));
    }
    let split = |mut v: Vec<(usize, u64)>| -> (Vec<usize>, Vec<u64>) {
        v.sort_unstable();
        v.into_iter().unzip()
    };
    for (pos, v) in out_span {
        let f = out.entry(pos).or_default();
        (f.out_span, f.out_span_id) = split(v);
    }
    for (pos, v) in out_instant {
        let f = out.entry(pos).or_default();
        (f.out_instant, f.out_instant_id) = split(v);
    }
    for (pos, v) in in_span {
        let f = out.entry(pos).or_default();
        (f.in_span, f.in_span_id) = split(v);
    }
    out
}

/// The links drawn as flows: [`links::links`], at most one per wait span (a slice end
/// terminates one flow): the naming convention's, else the first async range's.
pub(super) fn drawn_links(trace: &Trace) -> Vec<links::Link> {
    let mut all = links::links(trace);
    all.dedup_by_key(|l| l.to_span);
    all
}

/// The entries of the sorted `idx` from `*k` on that equal `i` (advancing `*k` past
/// smaller ones): `k..end`.
#[inline]
pub(super) fn run_of(idx: &[usize], k: usize, i: usize) -> std::ops::Range<usize> {
    let mut k = k;
    while k < idx.len() && idx[k] < i {
        k += 1;
    }
    let mut e = k;
    while e < idx.len() && idx[e] == i {
        e += 1;
    }
    k..e
}
