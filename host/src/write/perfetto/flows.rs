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
/// the link into wait span `w`. Empty at once when the names allow no link.
pub(super) fn lane_flows(trace: &Trace, base: u64) -> LaunchFlows {
    let mut out = LaunchFlows::default();
    if !links::may_link(&trace.names) {
        return out;
    }
    let all = links::links(trace);
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
        let id = base + l.to_span as u64 + 1;
        let (from, to) = (pos_of[&l.from_lane], pos_of[&l.to_lane]);
        let (fl, tl) = (&trace.lanes[from], &trace.lanes[to]);
        match l.from {
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
