//! Producer / consumer links inside a block, and the block's critical path.
//!
//! A **signal** is a region named `signal.<channel>` (an instant, or a span whose end is the
//! signal time); a **wait** is a region named `wait.<channel>`. Both carry a token in their
//! payload (a stage or buffer index and phase). A wait is linked to the latest signal of the
//! same block, channel and token issued from another lane at or before the wait's end: that
//! signal is what released it. Links become flow arrows in timelines (the Perfetto writer
//! draws one per link, see [`crate::write::perfetto`]) and edges of the block's dependency
//! graph (the dependency graph of the dPRO trace format, docs/references.md, inside one
//! kernel).
//!
//! **Async ranges** ([`Trace::async_ranges`]: a begin and an end paired by token across
//! lanes, `ikp_device::wire` "Async ranges") are the recommended way to say the same thing,
//! with no naming convention and across blocks too; the convention keeps working beside
//! them. A range whose begin and end lanes differ (and are both in the trace) links its
//! begin (the signal: [`SignalEvent::Async`], at the range's begin, when the producer
//! issued it) to the last span of the end lane that begins at or before the range's end
//! (the region in which, or right after which, the consumer observed the completion), with
//! `to_ts` the range's end and `token` its token; a range whose end lane has no span by
//! then links nothing. `block` is the end lane's block: the critical path of that block
//! follows the link only when the begin lane is in it too (it ignores the link otherwise,
//! as it stays inside its block).
//!
//! The critical path walks back from the block's last-ending leaf region (one with nothing
//! nested in it): a linked wait's predecessor is the region that issued its signal, if the
//! signal came after the wait began (the wait was held up by it); any other region's
//! predecessor is the previous leaf of its lane (a wait whose signal was already there
//! when it began waited on nothing but its own lane).

use crate::model::{Names, Trace};
use crate::time::Timestamp;
use std::collections::HashMap;

/// The event that issued a signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(tag = "kind", content = "index", rename_all = "snake_case")]
pub enum SignalEvent {
    /// An instant: its index in [`Trace::instants`]; the signal time is its time.
    Instant(usize),
    /// A span: its index in [`Trace::spans`]; the signal time is its end.
    Span(usize),
    /// An async range: its index in [`Trace::async_ranges`]; the signal time is its begin.
    Async(usize),
}

impl SignalEvent {
    /// The region of the signalling event.
    pub fn region(self, trace: &Trace) -> u16 {
        match self {
            SignalEvent::Instant(i) => trace.instants.region[i],
            SignalEvent::Span(i) => trace.spans.region[i],
            SignalEvent::Async(i) => trace.async_ranges.region[i],
        }
    }
}

/// One signal → wait link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Link {
    /// Block of both ends (of the waiting end, for an async range).
    pub block: u32,
    /// Lane that signalled.
    pub from_lane: u32,
    /// Signal time.
    pub from_ts: Timestamp,
    /// The signalling event.
    pub from: SignalEvent,
    /// Lane that waited.
    pub to_lane: u32,
    /// Index of the wait span in [`Trace::spans`].
    pub to_span: usize,
    /// The wait's end (when it was released).
    pub to_ts: Timestamp,
    /// Shared token (payload).
    pub token: u32,
}

/// Channel name of a signal or wait region: `Some((is_signal, channel))`.
fn role(name: &str) -> Option<(bool, &str)> {
    if let Some(c) = name.strip_prefix("signal.") {
        Some((true, c))
    } else {
        name.strip_prefix("wait.").map(|c| (false, c))
    }
}

/// Whether `names` can give links at all: some channel has both a `signal.` and a `wait.`
/// region. Cheap (names only): callers skip link work on traces without the convention.
pub fn may_link(names: &Names) -> bool {
    let (signals, waits): (Vec<_>, Vec<_>) = names
        .regions
        .iter()
        .filter_map(|n| role(n))
        .partition(|r| r.0);
    waits.iter().any(|w| signals.iter().any(|s| s.1 == w.1))
}

/// All links of `trace`, ordered by wait span index (for lanes in `Trace::lanes` order,
/// whose spans are stored lane by lane); at one wait span, the naming convention's link
/// first, then async ranges in range order.
pub fn links(trace: &Trace) -> Vec<Link> {
    let mut out = convention_links(trace);
    out.extend(async_links(trace));
    // Stable: the convention's link first at a span. The convention's links alone are in
    // order already (lane by lane, spans ascending): no sort, and no sort buffer.
    if !out.is_sorted_by_key(|l| l.to_span) {
        out.sort_by_key(|l| l.to_span);
    }
    out
}

/// The links of `trace`'s async ranges (module docs), in range order.
pub fn async_links(trace: &Trace) -> Vec<Link> {
    let a = &trace.async_ranges;
    if a.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for k in 0..a.len() {
        let (from, to) = (a.begin_lane[k], a.end_lane[k]);
        if from == to || trace.lane(from).is_none() {
            continue;
        }
        let Some(l) = trace.lane(to) else { continue };
        let begins = &trace.spans.begin[l.spans.clone()];
        let Some(w) = begins.partition_point(|&b| b <= a.end[k]).checked_sub(1) else {
            continue;
        };
        out.push(Link {
            block: l.block,
            from_lane: from,
            from_ts: a.begin[k],
            from: SignalEvent::Async(k),
            to_lane: to,
            to_span: l.spans.start + w,
            to_ts: a.end[k],
            token: a.token[k],
        });
    }
    out
}

/// The links of the naming convention (module docs), block by block: links never leave
/// a block, and a block's lanes are consecutive (lanes ascend by id, so by block).
fn convention_links(trace: &Trace) -> Vec<Link> {
    if !may_link(&trace.names) {
        return Vec::new();
    }
    // Each region's role and channel, the channel as the index of its name in `channels`.
    let mut channels: Vec<&str> = Vec::new();
    let roles: Vec<Option<(bool, usize)>> = (trace.names.regions.iter())
        .map(|n| {
            let (signal, ch) = role(n)?;
            let id = channels.iter().position(|&c| c == ch).unwrap_or_else(|| {
                channels.push(ch);
                channels.len() - 1
            });
            Some((signal, id))
        })
        .collect();
    let role_of = |r: u16| roles.get(r as usize).copied().flatten();
    let (ins, s) = (&trace.instants, &trace.spans);
    use SignalEvent::{Instant, Span};
    // (channel, token, time) as one sort key: channel ids are region ids or fewer (u16).
    let key = |ch: usize, token: u32, ts: Timestamp| {
        (ch as u128) << 96 | (token as u128) << 64 | ts as u128
    };
    // At most one link per wait: sized once, as growing it by doubling would hold up to
    // three times the links' bytes while it moves them.
    let waits = (s.region.iter()).filter(|&&r| matches!(role_of(r), Some((false, _))));
    let mut out = Vec::with_capacity(waits.count());
    // A block's signals: (key, lane, event), sorted by key. They are gathered lane by lane
    // (ascending), instants before spans, so that the stable sort leaves equal keys in
    // (lane, event) order.
    let mut signals: Vec<(u128, u32, SignalEvent)> = Vec::new();
    let mut groups: Vec<(u64, std::ops::Range<usize>)> = Vec::new();
    let mut times: Vec<u64> = Vec::new();
    for lanes in trace.lanes.chunk_by(|a, b| a.block == b.block) {
        signals.clear();
        for lane in lanes {
            let instants = (lane.instants.clone())
                .map(|i| (ins.region[i], ins.payload[i], ins.ts[i], Instant(i)));
            let spans =
                (lane.spans.clone()).map(|i| (s.region[i], s.payload[i], s.end[i], Span(i)));
            for (r, token, ts, ev) in instants.chain(spans) {
                if let Some((true, ch)) = role_of(r) {
                    signals.push((key(ch, token, ts), lane.id, ev));
                }
            }
        }
        if signals.is_empty() {
            continue;
        }
        signals.sort_by_key(|e| e.0);
        // The runs of one (channel, token), and the signal times alone (dense, for the
        // binary searches).
        groups.clear();
        for (i, e) in signals.iter().enumerate() {
            let g = (e.0 >> 64) as u64;
            match groups.last_mut() {
                Some((last, run)) if *last == g => run.end = i + 1,
                _ => groups.push((g, i..i + 1)),
            }
        }
        times.clear();
        times.extend(signals.iter().map(|e| e.0 as u64));
        for lane in lanes {
            for i in lane.spans.clone() {
                let Some((false, ch)) = role_of(s.region[i]) else {
                    continue;
                };
                let (token, end) = (s.payload[i], s.end[i]);
                let g = (key(ch, token, 0) >> 64) as u64;
                let Ok(k) = groups.binary_search_by_key(&g, |x| x.0) else {
                    continue;
                };
                // The signals of (channel, token) issued at or before the wait's end.
                let run = groups[k].1.clone();
                let n = times[run.clone()].partition_point(|&t| t <= end);
                let run = &signals[run.start..run.start + n];
                let found = run.iter().rev().find(|e| e.1 != lane.id);
                if let Some(&(k, from, ev)) = found {
                    out.push(Link {
                        block: lane.block,
                        from_lane: from,
                        from_ts: k as u64,
                        from: ev,
                        to_lane: lane.id,
                        to_span: i,
                        to_ts: end,
                        token,
                    });
                }
            }
        }
    }
    out
}

/// A block's critical path: leaf span indices (regions with no region nested in them),
/// from first to last.
pub fn critical_path(trace: &Trace, block: u32, links: &[Link]) -> Vec<usize> {
    (critical_path_links(trace, block, links).into_iter())
        .map(|(i, _)| i)
        .collect()
}

/// [`critical_path`] with, for each step, the link whose signal released it (the step is
/// the last leaf of a wait that was still waiting when the signal came), if any.
pub fn critical_path_links<'a>(
    trace: &Trace,
    block: u32,
    links: &'a [Link],
) -> Vec<(usize, Option<&'a Link>)> {
    let s = &trace.spans;
    // Leaves of each lane, ascending: spans are in begin order, and a span is followed by
    // a deeper one when that one began while it was open (one begun after it closed is no
    // deeper, unless a begin never closed lies between them); a leaf is not. No two leaves
    // of a lane overlap, so they also end in this order.
    let leaves = |r: std::ops::Range<usize>| -> Vec<usize> {
        r.clone()
            .filter(|&i| i + 1 >= r.end || s.depth[i + 1] <= s.depth[i])
            .collect()
    };
    let per_lane: HashMap<u32, Vec<usize>> = trace
        .lanes
        .iter()
        .filter(|l| l.block == block)
        .map(|l| (l.id, leaves(l.spans.clone())))
        .collect();
    // The leaf of `lane` that began last at or before `ts`, one that began exactly at `ts`
    // only if it also ended there (a zero-length signal span): a leaf that starts at the
    // signal's time cannot have issued it (with a coarse timer such ties are common).
    let at = |lane: u32, ts: Timestamp| -> Option<usize> {
        let v = per_lane.get(&lane)?;
        let mut k = v.partition_point(|&i| s.begin[i] <= ts);
        while k > 0 && s.begin[v[k - 1]] == ts && s.end[v[k - 1]] > ts {
            k -= 1;
        }
        k.checked_sub(1).map(|k| v[k])
    };
    // A link releases the last leaf inside its wait (the wait itself when it is a leaf),
    // if its signal came after the wait began.
    let mut released: HashMap<usize, &Link> = HashMap::new();
    // An async range may begin in another block: the path does not leave the block, so
    // such a link releases nothing here.
    let in_block = |l: &&Link| l.block == block && per_lane.contains_key(&l.from_lane);
    for l in links.iter().filter(in_block) {
        let w = l.to_span;
        if l.from_ts <= s.begin[w] {
            continue;
        }
        let leaf = per_lane.get(&l.to_lane).and_then(|v| {
            v.iter()
                .rev()
                .find(|&&i| {
                    s.begin[i] >= s.begin[w] && s.begin[i] <= s.end[w] && s.end[i] <= s.end[w]
                })
                .copied()
        });
        if let Some(leaf) = leaf {
            let e = released.entry(leaf).or_insert(l);
            if l.to_ts > e.to_ts {
                *e = l;
            }
        }
    }
    let Some(mut cur) = per_lane
        .values()
        .filter_map(|v| v.last().copied())
        .max_by_key(|&i| (s.end[i], i))
    else {
        return vec![];
    };
    let mut path = vec![(cur, released.get(&cur).copied())];
    loop {
        let prev = match released.get(&cur) {
            Some(l) => at(l.from_lane, l.from_ts),
            None => {
                let v = &per_lane[&s.lane[cur]];
                let k = v.iter().position(|&i| i == cur).unwrap_or(0);
                k.checked_sub(1).map(|k| v[k])
            }
        };
        match prev {
            // Strictly earlier (end, begin): the walk always terminates.
            Some(p) if (s.end[p], s.begin[p]) < (s.end[cur], s.begin[cur]) => {
                path.push((p, released.get(&p).copied()));
                cur = p;
            }
            _ => break,
        }
    }
    path.reverse();
    path
}
