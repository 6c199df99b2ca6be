//! Signal → wait links as Perfetto flows: which events of each lane start or terminate
//! which flow ids (the module's `# Format`, item 4, says where they are written).

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

impl LaneFlows {
    /// Whether the lane starts or terminates no flow.
    pub(super) fn is_empty(&self) -> bool {
        self.out_span.is_empty() && self.out_instant.is_empty() && self.in_span.is_empty()
    }
}

/// The flows of a launch's lanes, by lane position (empty when the launch has none).
pub(super) type LaunchFlows = Vec<LaneFlows>;

/// The flows of lane `pos`, if it has any.
pub(super) fn flows_of(flows: &LaunchFlows, pos: usize) -> Option<&LaneFlows> {
    flows.get(pos).filter(|f| !f.is_empty())
}

/// The flows of every link of `trace` (see [`links::links`]): flow id `base + w + 1` for
/// the link into wait span `w`, `async_base + k + 1` for async range `k`'s (which starts
/// on the range's own slice, not in a lane). Empty at once when the names allow no link
/// and there is no async range.
pub(super) fn lane_flows(trace: &Trace, base: u64, async_base: u64) -> LaunchFlows {
    if !links::may_link(&trace.names) && trace.async_ranges.is_empty() {
        return LaunchFlows::default();
    }
    let all = drawn_links(trace);
    // Lanes ascend by id.
    let pos_of = |id: u32| {
        (trace.lanes.binary_search_by_key(&id, |l| l.id)).expect("a link's lanes are in its trace")
    };
    // Per lane position: (event index in the lane, flow id) of the spans and instants
    // that start flows, and of the spans that terminate one.
    let mut per: Vec<[Vec<(usize, u64)>; 3]> = vec![Default::default(); trace.lanes.len()];
    for l in &all {
        let id = match l.from {
            SignalEvent::Async(k) => async_base + k as u64 + 1,
            _ => base + l.to_span as u64 + 1,
        };
        let (from, to) = (pos_of(l.from_lane), pos_of(l.to_lane));
        let (fl, tl) = (&trace.lanes[from], &trace.lanes[to]);
        match l.from {
            SignalEvent::Async(_) => {}
            SignalEvent::Span(i) => per[from][0].push((i - fl.spans.start, id)),
            SignalEvent::Instant(i) => per[from][1].push((i - fl.instants.start, id)),
        }
        per[to][2].push((l.to_span - tl.spans.start, id));
    }
    // Freed before the lists are split: less memory at the writer's peak.
    drop(all);
    let split = |mut v: Vec<(usize, u64)>| -> (Vec<usize>, Vec<u64>) {
        v.sort_unstable();
        v.into_iter().unzip()
    };
    (per.into_iter())
        .map(|[s, i, w]| {
            let ((out_span, out_span_id), (out_instant, out_instant_id)) = (split(s), split(i));
            let (in_span, in_span_id) = split(w);
            LaneFlows {
                out_span,
                out_span_id,
                out_instant,
                out_instant_id,
                in_span,
                in_span_id,
            }
        })
        .collect()
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
    let k = k + idx[k..].iter().take_while(|&&x| x < i).count();
    k..k + idx[k..].iter().take_while(|&&x| x == i).count()
}
