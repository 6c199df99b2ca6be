//! Signal → wait links as Perfetto flows: which events of each lane start or terminate
//! which flow ids (the module's `# Format`, item 4, says where they are written).

use crate::analysis::links::{self, SignalEvent};
use crate::model::Trace;

/// Flow ids of one lane's events (see the module's `# Format`), each list sorted by
/// event index (local to the lane), parallel index / id vectors.
#[derive(Debug, Default)]
pub(super) struct LaneFlows {
    /// Spans whose begin starts flows (signal spans), and the flow ids.
    pub(super) out_span: Vec<u32>,
    pub(super) out_span_id: Vec<u64>,
    /// Instants that start flows (signal instants), and the flow ids.
    pub(super) out_instant: Vec<u32>,
    pub(super) out_instant_id: Vec<u64>,
    /// Spans whose end terminates a flow (linked waits: one flow each), and the flow ids.
    pub(super) in_span: Vec<u32>,
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
    let lanes = &trace.lanes;
    // Lanes ascend by id: a table from id to position where the ids are dense (they are
    // in every decoder's traces), else a binary search.
    let max_id = lanes.last().map_or(0, |l| l.id as usize);
    let dense: Vec<u32> = if max_id < 2 * lanes.len() + 64 {
        let mut t = vec![u32::MAX; max_id + 1];
        (lanes.iter().enumerate()).for_each(|(p, l)| t[l.id as usize] = p as u32);
        t
    } else {
        Vec::new()
    };
    let pos_of = |id: u32| match dense.get(id as usize) {
        Some(&p) if p != u32::MAX => p as usize,
        _ => (lanes.binary_search_by_key(&id, |l| l.id)).expect("a link's lanes are in its trace"),
    };
    let id_of = |l: &links::Link| match l.from {
        SignalEvent::Async(k) => async_base + k as u64 + 1,
        _ => base + l.to_span as u64 + 1,
    };
    // Event indices local to a lane, as u32 (half the bytes of the lists, which are at
    // the writer's peak with the links); the out lists' entries as (index, flow id) in
    // three u32s (12 bytes, not 16), which sort as (index, id).
    let local = |i: usize| u32::try_from(i).expect("a lane holds fewer than 2^32 events");
    let entry = |i: usize, id: u64| [local(i), (id >> 32) as u32, id as u32];
    let mut flows: LaunchFlows = (0..lanes.len()).map(|_| LaneFlows::default()).collect();
    // The spans that terminate a flow: the links are sorted by wait span, at most one per
    // span, and a lane's spans are consecutive, so each lane's are one run of them,
    // already in span order: written straight into their lists, sized once.
    for run in all.chunk_by(|a, b| a.to_lane == b.to_lane) {
        let p = pos_of(run[0].to_lane);
        let (f, start) = (&mut flows[p], lanes[p].spans.start);
        f.in_span.reserve_exact(run.len());
        f.in_span
            .extend(run.iter().map(|l| local(l.to_span - start)));
        f.in_span_id.reserve_exact(run.len());
        f.in_span_id.extend(run.iter().map(id_of));
    }
    // The spans and instants that start flows, in link order: (event index in the lane,
    // flow id), counted first so that each lane's list is sized once (grown by doubling,
    // they held up to twice their bytes at the writer's peak, next to the links).
    let mut counts = vec![[0usize; 2]; lanes.len()];
    for l in &all {
        match l.from {
            SignalEvent::Async(_) => {}
            SignalEvent::Span(_) => counts[pos_of(l.from_lane)][0] += 1,
            SignalEvent::Instant(_) => counts[pos_of(l.from_lane)][1] += 1,
        }
    }
    let mut per: Vec<[Vec<[u32; 3]>; 2]> = (counts.into_iter())
        .map(|[s, i]| [Vec::with_capacity(s), Vec::with_capacity(i)])
        .collect();
    for l in &all {
        let from = pos_of(l.from_lane);
        let fl = &lanes[from];
        match l.from {
            SignalEvent::Async(_) => {}
            SignalEvent::Span(i) => per[from][0].push(entry(i - fl.spans.start, id_of(l))),
            SignalEvent::Instant(i) => per[from][1].push(entry(i - fl.instants.start, id_of(l))),
        }
    }
    // Freed before the lists are split: less memory at the writer's peak.
    drop(all);
    let split = |mut v: Vec<[u32; 3]>| -> (Vec<u32>, Vec<u64>) {
        v.sort_unstable();
        (
            v.iter().map(|e| e[0]).collect(),
            v.iter()
                .map(|e| (e[1] as u64) << 32 | e[2] as u64)
                .collect(),
        )
    };
    for (f, [s, i]) in flows.iter_mut().zip(per) {
        (f.out_span, f.out_span_id) = split(s);
        (f.out_instant, f.out_instant_id) = split(i);
    }
    flows
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
pub(super) fn run_of(idx: &[u32], k: usize, i: usize) -> std::ops::Range<usize> {
    let k = k + idx[k..].iter().take_while(|&&x| (x as usize) < i).count();
    k..k + idx[k..].iter().take_while(|&&x| x as usize == i).count()
}
