//! Perfetto writer: decode the output with the `perfetto_protos` types and check it against
//! the model it was written from, the way trace processor would read it.

use crate::golden_check::golden;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use ikp_host::analysis::blocks::slowest_block;
use ikp_host::analysis::links::{critical_path_links, links, SignalEvent};
use ikp_host::{
    write_perfetto, Compression, GroupBy, Launch, LaunchLayout, PerfettoOptions, PerfettoStats,
    WriteErrorKind,
};
use ikp_host::{ClockSync, HostClock};
use ikp_host::{
    CounterSamples, Diagnostics, Instants, Lane, Names, Source, Spans, Timestamp, Trace, WireFormat,
};
use perfetto_protos::trace::Trace as PTrace;
use perfetto_protos::track_event::track_event::{Counter_value_field, Name_field, Type};
use proptest::prelude::*;
use protobuf::Message;

/// The options these tests check against: plain packets (the golden format; the library's
/// default is compressed).
fn plain_opts() -> PerfettoOptions {
    PerfettoOptions {
        compression: Compression::None,
        ..PerfettoOptions::default()
    }
}

// ---------------------------------------------------------------------------------------
// Building model traces directly.

#[derive(Clone, Debug, Default)]
struct LaneSpec {
    block: u32,
    group: u32,
    sm: Option<u32>,
    warp: Option<u32>,
    start: Timestamp,
    end: Timestamp,
    /// (region, payload, begin, end)
    spans: Vec<(u16, u32, Timestamp, Timestamp)>,
    /// (region, payload, ts)
    instants: Vec<(u16, u32, Timestamp)>,
    /// (counter, ts, value)
    samples: Vec<(u16, Timestamp, u32)>,
}

fn build(groups_per_block: u32, names: Names, mut lanes: Vec<LaneSpec>) -> Trace {
    lanes.sort_by_key(|l| l.block * groups_per_block + l.group);
    let mut t = Trace {
        source: Source {
            format: WireFormat::Ikp,
            version: 1,
            timer: Default::default(),
            clock: None,
            assumed_clock: None,
            grid: [lanes.iter().map(|l| l.block + 1).max().unwrap_or(0), 1, 1],
            groups_per_block,
            records_per_lane: 0,
            time_base: 0,
            block_filter: Default::default(),
            clock_sync: None,
            epoch: None,
            overhead_correction: None,
            stream: None,
        },
        names,
        lanes: Vec::new(),
        spans: Spans::default(),
        instants: Instants::default(),
        samples: CounterSamples::default(),
        async_ranges: Default::default(),
        counter_totals: Vec::new(),
        diagnostics: Diagnostics::default(),
    };
    let mut base = u64::MAX;
    for mut l in lanes {
        let id = l.block * groups_per_block + l.group;
        l.spans
            .sort_by_key(|&(_, _, b, e)| (b, std::cmp::Reverse(e)));
        l.instants.sort_by_key(|i| i.2);
        l.samples.sort_by_key(|s| s.1);
        let s0 = t.spans.len();
        let mut open: Vec<Timestamp> = Vec::new();
        for &(r, p, b, e) in &l.spans {
            while open.last().is_some_and(|&end| end <= b) {
                open.pop();
            }
            t.spans.push(id, r, open.len() as u16, p, b, e);
            open.push(e);
            base = base.min(b);
        }
        let i0 = t.instants.len();
        for &(r, p, ts) in &l.instants {
            t.instants.push(id, r, p, ts);
            base = base.min(ts);
        }
        let c0 = t.samples.len();
        for &(c, ts, v) in &l.samples {
            t.samples.push(id, c, ts, v);
            base = base.min(ts);
        }
        base = base.min(l.start);
        t.lanes.push(Lane {
            id,
            block: l.block,
            group: l.group,
            sm: l.sm,
            warp: l.warp,
            start: l.start,
            end: l.end,
            finalized: true,
            written: 0,
            dropped: 0,
            overwritten: 0,
            spans: s0..t.spans.len(),
            instants: i0..t.instants.len(),
            samples: c0..t.samples.len(),
        });
    }
    t.source.time_base = if base == u64::MAX { 0 } else { base };
    t.counter_totals = vec![0; t.lanes.len() * t.names.counters.len()];
    t
}

fn names(regions: &[&str], counters: &[&str]) -> Names {
    Names {
        regions: regions.iter().map(|s| s.to_string()).collect(),
        counters: counters.iter().map(|s| s.to_string()).collect(),
    }
}

/// A small trace with nesting, crossing spans, instants, samples, two SMs and a lane
/// without events.
fn small_trace(t0: Timestamp) -> Trace {
    let lanes = vec![
        LaneSpec {
            block: 0,
            group: 0,
            sm: Some(10),
            warp: Some(0),
            start: t0,
            end: t0 + 1000,
            spans: vec![
                (0, 7, t0 + 10, t0 + 900),
                (1, 1, t0 + 20, t0 + 200),
                (1, 2, t0 + 200, t0 + 200),
                (2, 3, t0 + 300, t0 + 950), // crosses the outer span: overlap track
            ],
            instants: vec![(3, 9, t0 + 200), (3, 10, t0 + 960)],
            samples: vec![(0, t0 + 200, 42), (1, t0 + 950, 3)],
        },
        LaneSpec {
            block: 0,
            group: 1,
            sm: Some(10),
            warp: Some(4),
            start: t0 + 5,
            end: t0 + 800,
            spans: vec![(0, 0, t0 + 5, t0 + 700), (0, 1, t0 + 6, t0 + 700)],
            ..Default::default()
        },
        LaneSpec {
            block: 1,
            group: 0,
            sm: Some(2),
            warp: Some(0),
            start: t0 + 100,
            end: t0 + 400,
            spans: vec![(9, 1 << 19, t0 + 100, t0 + 400)], // region without a name
            ..Default::default()
        },
        LaneSpec {
            block: 1,
            group: 1,
            sm: Some(2),
            warp: Some(4),
            start: t0 + 100,
            end: t0 + 120,
            ..Default::default()
        },
    ];
    build(
        2,
        names(&["outer", "load", "mma", "marker"], &["kv_wait", "q_wait"]),
        lanes,
    )
}

// ---------------------------------------------------------------------------------------
// Reading Perfetto back, as trace processor would.

#[derive(Clone, Debug)]
struct TrackInfo {
    name: String,
    parent: Option<u64>,
    counter: bool,
    explicit_children: bool,
    rank: Option<i32>,
}

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Begin,
    End,
    Instant,
    Counter(i64),
}

#[derive(Clone, Debug)]
struct Event {
    track: u64,
    kind: Kind,
    ts: i64,
    name: Option<String>,
    category: Option<String>,
    args: BTreeMap<String, u64>,
    /// String-valued debug annotations (the critical-path track's).
    strings: BTreeMap<String, String>,
    /// `flow_ids`: flows this event's slice starts.
    flows: Vec<u64>,
    /// `terminating_flow_ids`: flows this event's slice ends.
    terminating: Vec<u64>,
}

#[derive(Clone, Debug, Default)]
struct SeqState {
    valid: bool,
    names: HashMap<u64, String>,
    categories: HashMap<u64, String>,
    annotation_names: HashMap<u64, String>,
    default_track: Option<u64>,
    default_clock: Option<u32>,
    /// Incremental clock 64: (current value, translation to the trace clock).
    clock: Option<(i64, i64)>,
}

#[derive(Clone, Debug, Default)]
struct Decoded {
    /// Host clock snapshots: `[boottime, realtime, monotonic]`, in file order.
    host_snapshots: Vec<[u64; 3]>,
    tracks: BTreeMap<u64, TrackInfo>,
    /// In file order.
    events: Vec<Event>,
    packets: usize,
}

/// A finished slice.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Slice {
    track: u64,
    ts: i64,
    end: i64,
    name: String,
    category: String,
    args: Vec<(String, u64)>,
    /// Flow ids of its begin and of its end (`flow_ids` or `terminating_flow_ids`), as
    /// trace processor binds them: to the slice.
    flows_out: Vec<u64>,
    flows_in: Vec<u64>,
}

const SEQ_CLEARED: u32 = 1;
const SEQ_NEEDS: u32 = 2;

/// Decodes `bytes` with the crate and resolves every reference, panicking on any
/// violation: undeclared track, unresolved interned id, use of incremental state without
/// a clearing packet, a packet on an incremental clock without a snapshot.
fn decode(bytes: &[u8]) -> Decoded {
    let trace = PTrace::parse_from_bytes(bytes).expect("valid perfetto.protos.Trace");
    // Expand compressed bundles in place, as trace processor does.
    let mut packets = Vec::new();
    for p in trace.packet {
        if p.has_compressed_packets() {
            let z = p.compressed_packets();
            assert!(z.len() < 512 << 10, "bundle of {} bytes", z.len());
            let mut raw = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(z), &mut raw)
                .expect("zlib stream");
            let inner = PTrace::parse_from_bytes(&raw).expect("bundle of packets");
            assert!(inner.packet.iter().all(|p| !p.has_compressed_packets()));
            packets.extend(inner.packet);
        } else {
            packets.push(p);
        }
    }
    let trace = PTrace {
        packet: packets,
        ..Default::default()
    };
    let mut d = Decoded {
        packets: trace.packet.len(),
        ..Default::default()
    };
    let mut seqs: HashMap<u32, SeqState> = HashMap::new();
    for (pi, p) in trace.packet.iter().enumerate() {
        let seq_id = p.trusted_packet_sequence_id();
        let flags = p.sequence_flags.unwrap_or(0);
        let st = seqs.entry(seq_id).or_default();
        if flags & SEQ_CLEARED != 0 {
            assert_ne!(seq_id, 0, "packet {pi}: cleared state without a sequence");
            *st = SeqState {
                valid: true,
                ..Default::default()
            };
        }
        if flags & SEQ_NEEDS != 0 {
            assert!(
                st.valid,
                "packet {pi}: needs incremental state, none on seq {seq_id}"
            );
        }
        if let Some(def) = p.trace_packet_defaults.as_ref() {
            assert!(st.valid, "packet {pi}: defaults outside a cleared sequence");
            st.default_clock = def.timestamp_clock_id;
            st.default_track = def.track_event_defaults.as_ref().and_then(|t| t.track_uuid);
        }
        if let Some(id) = p.interned_data.as_ref() {
            assert!(
                st.valid,
                "packet {pi}: interned data outside a cleared sequence"
            );
            for n in &id.event_names {
                let old = st.names.insert(n.iid(), n.name().to_string());
                assert!(
                    old.is_none(),
                    "packet {pi}: name iid {} interned twice",
                    n.iid()
                );
            }
            for c in &id.event_categories {
                st.categories.insert(c.iid(), c.name().to_string());
            }
            for a in &id.debug_annotation_names {
                st.annotation_names.insert(a.iid(), a.name().to_string());
            }
        }
        if p.has_clock_snapshot() {
            let cs = p.clock_snapshot();
            if cs.clocks.iter().all(|c| c.clock_id() != 64) {
                // A host clock snapshot: sequence 1, trace clock, realtime, monotonic.
                assert_eq!(seq_id, 1, "packet {pi}: host clock snapshot off sequence 1");
                let ids: Vec<u32> = cs.clocks.iter().map(|c| c.clock_id()).collect();
                assert_eq!(ids, [6, 1, 3], "packet {pi}: boottime, realtime, monotonic");
                assert!(cs.clocks.iter().all(|c| !c.is_incremental()));
                let t: Vec<u64> = cs.clocks.iter().map(|c| c.timestamp()).collect();
                d.host_snapshots.push([t[0], t[1], t[2]]);
                continue;
            }
            let inc = cs
                .clocks
                .iter()
                .find(|c| c.clock_id() == 64)
                .expect("clock 64");
            assert!(inc.is_incremental());
            let boot = cs
                .clocks
                .iter()
                .find(|c| c.clock_id() == 6)
                .expect("boottime");
            st.clock = Some((
                inc.timestamp() as i64,
                boot.timestamp() as i64 - inc.timestamp() as i64,
            ));
            continue; // trace processor reads nothing else from a snapshot packet
        }
        if p.has_track_descriptor() {
            let td = p.track_descriptor();
            let uuid = td.uuid();
            assert_ne!(uuid, 0);
            assert!(!d.tracks.contains_key(&uuid), "track {uuid} declared twice");
            if let Some(parent) = td.parent_uuid {
                assert!(
                    d.tracks.contains_key(&parent),
                    "track {uuid}: parent {parent} undeclared"
                );
                assert!(
                    d.tracks[&parent].explicit_children,
                    "parent without explicit order"
                );
            }
            d.tracks.insert(
                uuid,
                TrackInfo {
                    name: td.name().to_string(),
                    parent: td.parent_uuid,
                    counter: td.counter.is_some(),
                    explicit_children: td.child_ordering.is_some(),
                    rank: td.sibling_order_rank,
                },
            );
        }
        if p.has_track_event() {
            let te = p.track_event();
            assert!(
                p.timestamp.is_some(),
                "packet {pi}: event without a timestamp"
            );
            let clock = p.timestamp_clock_id.or(st.default_clock);
            let ts = match clock {
                Some(64) => {
                    let (last, tr) = st
                        .clock
                        .as_mut()
                        .expect("incremental clock without snapshot");
                    *last += p.timestamp() as i64;
                    *last + *tr
                }
                None => p.timestamp() as i64,
                Some(c) => panic!("unexpected clock {c}"),
            };
            let track = te
                .track_uuid
                .or(st.default_track)
                .expect("event without a track");
            assert!(
                d.tracks.contains_key(&track),
                "packet {pi}: track {track} undeclared"
            );
            let kind = match te.type_() {
                Type::TYPE_SLICE_BEGIN => Kind::Begin,
                Type::TYPE_SLICE_END => Kind::End,
                Type::TYPE_INSTANT => Kind::Instant,
                Type::TYPE_COUNTER => match te.counter_value_field {
                    Some(Counter_value_field::CounterValue(v)) => Kind::Counter(v),
                    ref other => panic!("counter value {other:?}"),
                },
                t => panic!("unexpected type {t:?}"),
            };
            let name = match &te.name_field {
                Some(Name_field::NameIid(iid)) => Some(
                    st.names
                        .get(iid)
                        .unwrap_or_else(|| panic!("packet {pi}: name iid {iid} unresolved"))
                        .clone(),
                ),
                Some(Name_field::Name(n)) => Some(n.clone()),
                None => None,
                Some(other) => panic!("unexpected name field {other:?}"),
            };
            let category = te
                .category_iids
                .first()
                .map(|iid| {
                    st.categories
                        .get(iid)
                        .unwrap_or_else(|| panic!("packet {pi}: category {iid} unresolved"))
                        .clone()
                })
                .or_else(|| te.categories.first().cloned());
            let mut args = BTreeMap::new();
            let mut strings = BTreeMap::new();
            for a in &te.debug_annotations {
                let n = if a.has_name() {
                    a.name().to_string()
                } else {
                    let iid = a.name_iid();
                    st.annotation_names
                        .get(&iid)
                        .unwrap_or_else(|| panic!("packet {pi}: annotation name {iid} unresolved"))
                        .clone()
                };
                if a.has_string_value() {
                    strings.insert(n, a.string_value().to_string());
                } else {
                    args.insert(n, a.uint_value());
                }
            }
            if matches!(kind, Kind::Counter(_)) {
                assert!(d.tracks[&track].counter, "counter value on a slice track");
            } else {
                assert!(!d.tracks[&track].counter, "slice on a counter track");
            }
            d.events.push(Event {
                track,
                kind,
                ts,
                name,
                category,
                args,
                strings,
                flows: te.flow_ids.clone(),
                terminating: te.terminating_flow_ids.clone(),
            });
        }
    }
    d
}

impl Decoded {
    /// Slices, built as trace processor does: events sorted by timestamp (stable), then a
    /// stack per track. Panics if a track's slices do not balance.
    fn slices(&self) -> Vec<Slice> {
        let mut ev: Vec<&Event> = self.events.iter().collect();
        ev.sort_by_key(|e| e.ts);
        let mut stacks: HashMap<u64, Vec<&Event>> = HashMap::new();
        let mut out = Vec::new();
        for e in ev {
            match e.kind {
                Kind::Begin => stacks.entry(e.track).or_default().push(e),
                Kind::End => {
                    let b = stacks
                        .get_mut(&e.track)
                        .and_then(|s| s.pop())
                        .unwrap_or_else(|| panic!("END without BEGIN on track {}", e.track));
                    assert!(e.ts >= b.ts);
                    let both = |a: &Vec<u64>, b: &Vec<u64>| [a.clone(), b.clone()].concat();
                    out.push(Slice {
                        track: b.track,
                        ts: b.ts,
                        end: e.ts,
                        name: b.name.clone().expect("slice name"),
                        category: b.category.clone().expect("slice category"),
                        args: b.args.clone().into_iter().collect(),
                        flows_out: both(&b.flows, &e.flows),
                        flows_in: both(&b.terminating, &e.terminating),
                    });
                }
                _ => {}
            }
        }
        for (t, s) in stacks {
            assert!(s.is_empty(), "track {t}: {} slices never end", s.len());
        }
        out.sort();
        out
    }

    fn path(&self, mut uuid: u64) -> Vec<String> {
        let mut v = Vec::new();
        loop {
            let t = &self.tracks[&uuid];
            v.push(t.name.clone());
            match t.parent {
                Some(p) => uuid = p,
                None => break,
            }
        }
        v.reverse();
        v
    }
}

// ---------------------------------------------------------------------------------------
// Expected output from the model.

fn lane_name(l: &Lane, block_group: bool) -> String {
    let mut s = if block_group {
        format!("group {}", l.group)
    } else {
        format!("block {} / group {}", l.block, l.group)
    };
    if let Some(w) = l.warp {
        s += &format!(" / warp {w}");
    }
    s
}

/// The group a lane's track is in: its SM's, or its block's, named after the SM of the
/// block's first lane that knows it.
fn group_name(t: &Trace, l: &Lane, by: GroupBy) -> (String, bool) {
    let block_sm = || {
        t.lanes
            .iter()
            .filter(|o| o.block == l.block)
            .find_map(|o| o.sm)
    };
    match (by, l.sm) {
        (GroupBy::Sm, Some(sm)) => (format!("SM {sm}"), false),
        // Grouping by SM, the lanes without one form block groups of their own.
        (GroupBy::Sm, None) => (format!("block {}", l.block), true),
        (GroupBy::Block, _) => match block_sm() {
            Some(sm) => (format!("block {} (SM {sm})", l.block), true),
            None => (format!("block {}", l.block), true),
        },
    }
}

/// The launches' time shifts as documented: each launch starts after the previous one
/// (sequential) or at 0 (aligned).
fn shifts(launches: &[Launch<'_>], opts: &PerfettoOptions) -> Vec<i64> {
    let layout = opts.launch_layout;
    let mut offset = 0i64;
    let mut v = Vec::new();
    for l in launches {
        let t = l.trace;
        let mut lo = t.source.time_base;
        let mut hi = 0;
        for ln in &t.lanes {
            lo = lo.min(ln.start);
            hi = hi.max(ln.end).max(ln.start);
        }
        for &b in &t.spans.begin {
            lo = lo.min(b);
        }
        for &e in &t.spans.end {
            hi = hi.max(e);
        }
        for &x in t.instants.ts.iter().chain(&t.samples.ts) {
            lo = lo.min(x);
            hi = hi.max(x);
        }
        if let Some(host) = opts.host_clock {
            // On a host clock: device time t is the host's t + (host at sync - device at sync).
            let c = t.source.clock_sync.expect("host clock needs a clock sync");
            let at_sync = match host {
                HostClock::Realtime => c.host_realtime_ns,
                HostClock::Monotonic => c.host_monotonic_ns,
            };
            v.push(at_sync as i64 - c.device_globaltimer_ns as i64);
            continue;
        }
        v.push(offset - lo as i64);
        if layout == LaunchLayout::Sequential {
            let len = hi.saturating_sub(lo) as i64;
            offset += len + (len / 20).max(1000);
        }
    }
    v
}

fn root_name(launches: &[Launch<'_>], k: usize) -> String {
    if launches.len() == 1 {
        launches[0].label.to_string()
    } else {
        format!("launch {k}: {}", launches[k].label)
    }
}

/// Writes `launches`, decodes the result and checks it in full against the models.
fn roundtrip(launches: &[Launch<'_>], opts: &PerfettoOptions) -> (Vec<u8>, PerfettoStats) {
    let mut bytes = Vec::new();
    let stats = write_perfetto(&mut bytes, launches, opts).expect("write");
    assert_eq!(stats.bytes, bytes.len() as u64);
    let d = decode(&bytes);
    assert_eq!(stats.packets, d.packets as u64);
    assert_eq!(stats.tracks, d.tracks.len() as u64);
    check(&d, launches, opts);
    (bytes, stats)
}

/// Asserts two sorted lists are equal, showing the first difference.
fn assert_same<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) {
    if let Some(i) = (0..got.len().min(want.len())).find(|&i| got[i] != want[i]) {
        panic!(
            "{what}: first difference at {i}:\n got  {:?}\n want {:?}",
            got[i], want[i]
        );
    }
    assert_eq!(got.len(), want.len(), "{what}: count");
}

fn check(d: &Decoded, launches: &[Launch<'_>], opts: &PerfettoOptions) {
    let shifts = shifts(launches, opts);

    // Expected slices / instants / wait samples, keyed by their track path.
    let mut want_slices = Vec::new();
    let mut want_lifetimes = Vec::new();
    let mut want_instants = Vec::new();
    let mut want_samples = Vec::new();
    let mut want_groups: BTreeMap<Vec<String>, Vec<&Lane>> = BTreeMap::new();
    for (k, l) in launches.iter().enumerate() {
        let t = l.trace;
        let root = root_name(launches, k);
        let map = |x: Timestamp| x as i64 + shifts[k];
        for lane in &t.lanes {
            let (g, block_group) = group_name(t, lane, opts.group_by);
            let ln = lane_name(lane, block_group);
            want_groups
                .entry(vec![root.clone(), g.clone()])
                .or_default()
                .push(lane);
            let mut args = vec![
                ("block".to_string(), lane.block as u64),
                ("group".to_string(), lane.group as u64),
            ];
            if let Some(sm) = lane.sm {
                args.push(("sm".into(), sm as u64));
            }
            if t.source.format.records_lane_lifetimes() {
                let mut a = args.clone();
                a.extend(lane.warp.map(|w| ("warp".to_string(), w as u64)));
                a.push(("finalized".into(), lane.finalized as u64));
                a.sort();
                want_lifetimes.push((
                    vec![root.clone(), g.clone()],
                    format!("{ln} · lifetime"),
                    map(lane.start),
                    map(lane.end.max(lane.start)),
                    a,
                ));
            }
            for i in lane.spans.clone() {
                let mut a = args.clone();
                a.push(("payload".into(), t.spans.payload[i] as u64));
                a.sort();
                want_slices.push((
                    vec![root.clone(), g.clone()],
                    ln.clone(),
                    map(t.spans.begin[i]),
                    map(t.spans.end[i]),
                    t.names.region(t.spans.region[i]).into_owned(),
                    a,
                ));
            }
            for i in lane.instants.clone() {
                let mut a = args.clone();
                a.push(("payload".into(), t.instants.payload[i] as u64));
                a.sort();
                want_instants.push((
                    vec![root.clone(), g.clone(), ln.clone()],
                    map(t.instants.ts[i]),
                    t.names.region(t.instants.region[i]).into_owned(),
                    a,
                ));
            }
            for i in lane.samples.clone() {
                let cn = format!("{ln} · {}", t.names.counter(t.samples.counter[i]));
                want_samples.push((
                    vec![root.clone(), g.clone(), cn],
                    map(t.samples.ts[i]),
                    t.samples.value[i] as i64,
                ));
            }
        }
    }

    // Slices: same multiset, each on its lane's track or one of its overlap tracks.
    let mut got_slices = Vec::new();
    let mut got_lifetimes = Vec::new();
    for s in d.slices() {
        let path = d.path(s.track);
        assert_eq!(path.len(), 3, "slice track depth: {path:?}");
        if s.category == "lane" {
            assert_eq!(s.name, "lifetime");
            got_lifetimes.push((path[..2].to_vec(), path[2].clone(), s.ts, s.end, s.args));
            continue;
        }
        let lane_track = path[2].split(" (overlap ").next().unwrap().to_string();
        assert_eq!(s.category, "span");
        got_slices.push((path[..2].to_vec(), lane_track, s.ts, s.end, s.name, s.args));
    }
    want_slices.sort();
    got_slices.sort();
    assert_same("slices", &got_slices, &want_slices);
    // Lifetimes: one slice per lane of a format that records them, on its own track.
    want_lifetimes.sort();
    got_lifetimes.sort();
    assert_same("lane lifetimes", &got_lifetimes, &want_lifetimes);

    // Overlap tracks only where needed: their slices cross a slice of the main track.
    // (Checked indirectly: every track balances, and no track is empty of a reason.)

    let mut got_instants = Vec::new();
    let mut got_samples = Vec::new();
    let mut active: BTreeMap<Vec<String>, Vec<(i64, i64)>> = BTreeMap::new();
    for e in &d.events {
        let path = d.path(e.track);
        match &e.kind {
            Kind::Instant => {
                assert_eq!(e.category.as_deref(), Some("instant"));
                got_instants.push((
                    path,
                    e.ts,
                    e.name.clone().unwrap(),
                    e.args.clone().into_iter().collect::<Vec<_>>(),
                ))
            }
            Kind::Counter(v) if path.last().unwrap().ends_with("active lanes") => {
                active.entry(path).or_default().push((e.ts, *v))
            }
            Kind::Counter(v) => got_samples.push((path, e.ts, *v)),
            _ => {}
        }
    }
    want_instants.sort();
    got_instants.sort();
    assert_same("instants", &got_instants, &want_instants);
    want_samples.sort();
    got_samples.sort();
    assert_same("wait-counter samples", &got_samples, &want_samples);

    // Groups: each has its lanes' tracks, in lane order by rank.
    for (gpath, lanes) in &want_groups {
        let group_uuid = *d
            .tracks
            .iter()
            .find(|(u, _)| &d.path(**u) == gpath)
            .unwrap_or_else(|| panic!("group {gpath:?} missing"))
            .0;
        let mut children: Vec<(i32, &str)> = d
            .tracks
            .values()
            .filter(|t| t.parent == Some(group_uuid) && !t.name.contains(" · "))
            .filter(|t| !t.name.contains("(overlap") && t.name != "active lanes")
            .map(|t| (t.rank.expect("rank"), t.name.as_str()))
            .collect();
        children.sort();
        let block_group = !gpath[1].starts_with("SM ");
        let want: Vec<String> = lanes.iter().map(|l| lane_name(l, block_group)).collect();
        let got: Vec<&str> = children.iter().map(|c| c.1).collect();
        assert_eq!(got, want, "lanes of {gpath:?}");
    }

    // Active lanes per SM: values track starts and ends, end at 0.
    for (k, l) in launches.iter().enumerate() {
        let root = root_name(launches, k);
        let mut by_sm: BTreeMap<u32, Vec<&Lane>> = BTreeMap::new();
        for lane in &l.trace.lanes {
            if let Some(sm) = lane.sm {
                by_sm.entry(sm).or_default().push(lane);
            }
        }
        for (sm, lanes) in by_sm {
            let path = match opts.group_by {
                GroupBy::Sm => vec![root.clone(), format!("SM {sm}"), "active lanes".into()],
                GroupBy::Block => vec![
                    root.clone(),
                    "SM occupancy".into(),
                    format!("SM {sm} active lanes"),
                ],
            };
            let series = active
                .get(&path)
                .unwrap_or_else(|| panic!("{path:?} missing"));
            for &(ts, v) in series {
                let want = lanes
                    .iter()
                    .filter(|ln| {
                        let s = ln.start as i64 + shifts[k];
                        let e = ln.end.max(ln.start) as i64 + shifts[k];
                        s <= ts && ts < e
                    })
                    .count() as i64;
                assert_eq!(v, want, "{path:?} at {ts}");
            }
            assert_eq!(series.last().unwrap().1, 0);
        }
    }

    // Root tracks: one per launch, in order.
    let mut roots: Vec<(i32, &str)> = d
        .tracks
        .values()
        .filter(|t| t.parent.is_none())
        .map(|t| (t.rank.unwrap(), t.name.as_str()))
        .collect();
    roots.sort();
    let want_roots: Vec<String> = (0..launches.len())
        .map(|k| root_name(launches, k))
        .collect();
    assert_eq!(roots.iter().map(|r| r.1).collect::<Vec<_>>(), want_roots);

    check_flows(d, launches, opts);
}

/// The track path of a lane's main track (an overlap track counts as its lane's).
fn lane_path(d: &Decoded, track: u64) -> Vec<String> {
    let mut p = d.path(track);
    let last = p.pop().unwrap();
    p.push(last.split(" (overlap ").next().unwrap().to_string());
    p
}

/// Flows: one per signal → wait link of each launch, id `spans of the launches before +
/// wait span + 1`, started once by the signal's instant or span (its begin) and
/// terminated once by the wait's end; no other flow ids anywhere.
fn check_flows(d: &Decoded, launches: &[Launch<'_>], opts: &PerfettoOptions) {
    let shifts = shifts(launches, opts);
    // What the file says: (lane path, ts, end, name) of each id's source and destination.
    type At = (Vec<String>, i64, i64, String);
    let mut out: BTreeMap<u64, At> = BTreeMap::new();
    let mut into: BTreeMap<u64, At> = BTreeMap::new();
    for e in &d.events {
        if !e.flows.is_empty() || !e.terminating.is_empty() {
            assert!(
                matches!(e.kind, Kind::Begin | Kind::End | Kind::Instant),
                "flow ids on {:?}",
                e.kind
            );
        }
        assert!(
            e.kind != Kind::End || e.flows.is_empty(),
            "flow started by an end"
        );
        assert!(
            e.kind == Kind::End || e.terminating.is_empty(),
            "flow terminated by a begin or instant"
        );
        if e.kind == Kind::Instant {
            for &id in &e.flows {
                let at = (lane_path(d, e.track), e.ts, e.ts, e.name.clone().unwrap());
                assert!(out.insert(id, at).is_none(), "flow {id} started twice");
            }
        }
    }
    for s in d.slices() {
        for &id in &s.flows_out {
            let at = (lane_path(d, s.track), s.ts, s.end, s.name.clone());
            assert!(out.insert(id, at).is_none(), "flow {id} started twice");
        }
        for &id in &s.flows_in {
            let at = (lane_path(d, s.track), s.ts, s.end, s.name.clone());
            assert!(into.insert(id, at).is_none(), "flow {id} terminated twice");
        }
    }
    // What the links say.
    let mut want_out: BTreeMap<u64, At> = BTreeMap::new();
    let mut want_into: BTreeMap<u64, At> = BTreeMap::new();
    let mut base = 0u64;
    for (k, l) in launches.iter().enumerate() {
        let t = l.trace;
        let root = root_name(launches, k);
        let map = |x: Timestamp| x as i64 + shifts[k];
        let path = |id: u32| {
            let lane = t.lanes.iter().find(|l| l.id == id).unwrap();
            let (g, block_group) = group_name(t, lane, opts.group_by);
            vec![root.clone(), g, lane_name(lane, block_group)]
        };
        let region = |r: u16| t.names.region(r).into_owned();
        for link in links(t) {
            let id = base + link.to_span as u64 + 1;
            let from = match link.from {
                SignalEvent::Instant(i) => {
                    let ts = map(t.instants.ts[i]);
                    (path(link.from_lane), ts, ts, region(t.instants.region[i]))
                }
                SignalEvent::Span(i) => (
                    path(link.from_lane),
                    map(t.spans.begin[i]),
                    map(t.spans.end[i]),
                    region(t.spans.region[i]),
                ),
                // Async ranges' flows start on their own tracks (tests/async_ranges.rs).
                SignalEvent::Async(_) => continue,
            };
            assert_eq!(
                from.2,
                map(link.from_ts),
                "the signal time is the event's end"
            );
            let w = link.to_span;
            let to = (
                path(link.to_lane),
                map(t.spans.begin[w]),
                map(link.to_ts),
                region(t.spans.region[w]),
            );
            assert!(want_out.insert(id, from).is_none(), "flow id {id} reused");
            want_into.insert(id, to);
        }
        base += t.spans.len() as u64;
    }
    let (o, w): (Vec<_>, Vec<_>) = (out.into_iter().collect(), want_out.into_iter().collect());
    assert_same("flow sources", &o, &w);
    let (i, w): (Vec<_>, Vec<_>) = (into.into_iter().collect(), want_into.into_iter().collect());
    assert_same("flow destinations", &i, &w);
}

// ---------------------------------------------------------------------------------------
// Tests.

#[test]
fn small_trace_roundtrips_exactly() {
    let t = small_trace(1_700_000_000_000_000_000);
    let launches = [Launch::new("small.ikp", &t)];
    let (bytes, stats) = roundtrip(&launches, &plain_opts());
    assert_eq!(stats.slices, t.spans.len() as u64);
    assert_eq!(stats.instants, t.instants.len() as u64);
    let d = decode(&bytes);
    // The crossing span went to an overlap track; the nested ones did not.
    let overlap: Vec<&str> = d
        .tracks
        .values()
        .filter(|t| t.name.contains("(overlap"))
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(overlap, ["block 0 / group 0 / warp 0 (overlap 1)"]);
    // Names resolve, including a region without a name.
    let names: std::collections::BTreeSet<String> =
        d.slices().into_iter().map(|s| s.name).collect();
    assert!(names.contains("region_9"), "{names:?}");
    // Lane sequences: the three lanes with events; the empty lane has a track only.
    assert_eq!(stats.sequences, 3);
    assert!(d
        .tracks
        .values()
        .any(|t| t.name == "block 1 / group 1 / warp 4"));
    // The first lane's timestamps start at 0 (the launch's own time base).
    assert_eq!(d.events.iter().map(|e| e.ts).min(), Some(0));
}

#[test]
fn group_by_block_and_several_launches() {
    let a = small_trace(5_000);
    let b = small_trace(90_000_000);
    let launches = [Launch::new("a.bin", &a), Launch::new("b.bin", &b)];
    for layout in [LaunchLayout::Sequential, LaunchLayout::Aligned] {
        for group_by in [GroupBy::Sm, GroupBy::Block] {
            let opts = PerfettoOptions {
                group_by,
                launch_layout: layout,
                ..plain_opts()
            };
            let (bytes, _) = roundtrip(&launches, &opts);
            let d = decode(&bytes);
            let starts: Vec<i64> = ["launch 0: a.bin", "launch 1: b.bin"]
                .iter()
                .map(|root| {
                    d.events
                        .iter()
                        .filter(|e| d.path(e.track)[0] == *root)
                        .map(|e| e.ts)
                        .min()
                        .unwrap()
                })
                .collect();
            match layout {
                // Launch 1 starts after launch 0's 1000 ns plus the minimum gap.
                LaunchLayout::Sequential => assert_eq!(starts, [0, 2000]),
                LaunchLayout::Aligned => assert_eq!(starts, [0, 0]),
            }
        }
    }
}

#[test]
fn lanes_without_sm_group_by_block() {
    let mut t = small_trace(0);
    for l in &mut t.lanes {
        l.sm = None;
        l.warp = None;
    }
    let launches = [Launch::new("tvm", &t)];
    let (bytes, _) = roundtrip(&launches, &plain_opts());
    let d = decode(&bytes);
    assert!(d.tracks.values().any(|t| t.name == "block 1"));
    assert!(!d.tracks.values().any(|t| t.name.contains("active lanes")));
}

#[test]
fn output_is_deterministic() {
    let t = small_trace(123_456);
    let launches = [Launch::new("x", &t), Launch::new("y", &t)];
    let mut a = Vec::new();
    let mut b = Vec::new();
    write_perfetto(&mut a, &launches, &plain_opts()).unwrap();
    write_perfetto(&mut b, &launches, &plain_opts()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn empty_inputs() {
    let t = build(1, Names::default(), Vec::new());
    let (bytes, stats) = roundtrip(&[Launch::new("empty", &t)], &plain_opts());
    assert_eq!(stats.tracks, 1);
    assert!(!bytes.is_empty());
    let mut out = Vec::new();
    let stats = write_perfetto(&mut out, &[], &plain_opts()).unwrap();
    assert_eq!((stats.bytes, out.len()), (0, 0));
}

/// Golden bytes of the small trace (two launches, both groupings exercised elsewhere).
/// Re-bless with `IKP_BLESS=1 cargo test -p ikp-host --test host perfetto::golden`.
#[test]
fn golden_small_trace() {
    let a = small_trace(1_000);
    let b = small_trace(7_000_000);
    let launches = [Launch::new("a.ikp", &a), Launch::new("b.ikp", &b)];
    let mut bytes = Vec::new();
    write_perfetto(&mut bytes, &launches, &plain_opts()).unwrap();
    golden("perfetto_small.pftrace", &bytes);
    let golden = bytes;
    check(&decode(&golden), &launches, &plain_opts());
}

/// A writer that fails after `left` bytes.
struct Failing {
    left: usize,
}

impl std::io::Write for Failing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() > self.left {
            return Err(std::io::Error::other("disk full"));
        }
        self.left -= buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn io_errors_are_reported() {
    let t = small_trace(0);
    let err =
        write_perfetto(Failing { left: 10 }, &[Launch::new("x", &t)], &plain_opts()).unwrap_err();
    assert!(matches!(err.kind, WriteErrorKind::Io(_)), "{err}");
    assert!(err.to_string().contains("disk full"));
}

/// Many lanes of nested spans: big enough to need several flushes.
fn big_trace(lanes: u32, spans_per_lane: u32) -> Trace {
    let specs = (0..lanes)
        .map(|l| {
            let t0 = 1_000_000 + l as u64 * 37;
            let mut spans = Vec::new();
            for i in 0..spans_per_lane as u64 / 2 {
                let b = t0 + i * 1000;
                spans.push((0, i as u32, b, b + 900));
                spans.push((1 + (i % 3) as u16, 5, b + 100, b + 500));
            }
            LaneSpec {
                block: l / 4,
                group: l % 4,
                sm: Some(l % 7),
                warp: Some(l % 4 * 2),
                start: t0,
                end: t0 + spans_per_lane as u64 * 500 + 10,
                spans,
                ..Default::default()
            }
        })
        .collect();
    build(4, names(&["tile", "load", "mma", "store"], &[]), specs)
}

/// Counts the writes the writer gets and their largest size.
#[derive(Default)]
struct Counting {
    writes: usize,
    largest: usize,
    bytes: Vec<u8>,
}

impl std::io::Write for Counting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writes += 1;
        self.largest = self.largest.max(buf.len());
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn packets_are_streamed_not_buffered_whole() {
    let t = big_trace(64, 2000);
    let mut w = Counting::default();
    let stats = write_perfetto(&mut w, &[Launch::new("big", &t)], &plain_opts()).unwrap();
    assert!(stats.bytes > 4 << 20, "trace too small to test streaming");
    assert!(w.writes >= 4, "{} writes", w.writes);
    assert!(w.largest < 2 << 20, "largest write {} bytes", w.largest);
    check(&decode(&w.bytes), &[Launch::new("big", &t)], &plain_opts());

    // Compressed: bundles of whole packets, each below Perfetto's 512 KiB.
    let launches = [Launch::new("big", &t)];
    let opts = PerfettoOptions {
        compression: Compression::Deflate,
        ..plain_opts()
    };
    let mut z = Counting::default();
    let zstats = write_perfetto(&mut z, &launches, &opts).unwrap();
    assert_eq!(zstats.bytes, z.bytes.len() as u64);
    assert_eq!(
        (zstats.packets, zstats.slices),
        (stats.packets, stats.slices)
    );
    assert!(
        zstats.bytes * 3 < stats.bytes,
        "{} vs {}",
        zstats.bytes,
        stats.bytes
    );
    let bundles = PTrace::parse_from_bytes(&z.bytes).unwrap().packet;
    assert!(bundles.len() >= 4 && bundles.iter().all(|p| p.has_compressed_packets()));
    check(&decode(&z.bytes), &launches, &opts);
}
// ---------------------------------------------------------------------------------------
// Property test: random traces, crossing spans, all options.

fn arb_lane() -> impl Strategy<Value = LaneSpec> {
    (
        0u32..4,
        0u32..2,
        prop::option::of(0u32..3),
        prop::collection::vec((0u16..5, 0u32..(1 << 20), 0u64..400, 0u64..120), 0..12),
        prop::collection::vec((0u16..5, 0u32..100, 0u64..500), 0..5),
        prop::collection::vec((0u16..3, 0u64..500, 0u32..1000), 0..5),
        0u64..50,
        0u64..600,
    )
        .prop_map(
            |(block, group, sm, spans, instants, samples, start, end)| LaneSpec {
                block,
                group,
                sm,
                warp: sm.map(|_| group * 4),
                start,
                end: start.max(end),
                // Regions 3 and 4 are `signal.x` and `wait.x`: few tokens, so they link.
                spans: spans
                    .into_iter()
                    .map(|(r, p, b, d)| (r, if r >= 3 { p % 3 } else { p }, b, b + d))
                    .collect(),
                instants: instants
                    .into_iter()
                    .map(|(r, p, t)| (r, if r >= 3 { p % 3 } else { p }, t))
                    .collect(),
                samples,
            },
        )
}

fn arb_trace() -> impl Strategy<Value = Trace> {
    (prop::collection::vec(arb_lane(), 0..6), 0u64..1_000_000).prop_map(|(lanes, t0)| {
        // One lane per (block, group).
        let mut seen = std::collections::HashSet::new();
        let lanes = lanes
            .into_iter()
            .filter(|l| seen.insert((l.block, l.group)))
            .map(|mut l| {
                let sh = |x: &mut Timestamp| *x += t0;
                sh(&mut l.start);
                sh(&mut l.end);
                l.spans.iter_mut().for_each(|s| {
                    s.2 += t0;
                    s.3 += t0
                });
                l.instants.iter_mut().for_each(|s| s.2 += t0);
                l.samples.iter_mut().for_each(|s| s.1 += t0);
                l
            })
            .collect();
        build(
            2,
            names(&["a", "b", "", "signal.x", "wait.x"], &["w0", "w1", "w2"]),
            lanes,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn random_traces_roundtrip(
        traces in prop::collection::vec(arb_trace(), 1..4),
        by_block in any::<bool>(),
        aligned in any::<bool>(),
        deflate in any::<bool>(),
    ) {
        let labels: Vec<String> = (0..traces.len()).map(|i| format!("t{i}.bin")).collect();
        let launches: Vec<Launch<'_>> =
            traces.iter().zip(&labels).map(|(t, l)| Launch::new(l, t)).collect();
        let opts = PerfettoOptions {
            group_by: if by_block { GroupBy::Block } else { GroupBy::Sm },
            launch_layout: if aligned { LaunchLayout::Aligned } else { LaunchLayout::Sequential },
            compression: if deflate { Compression::Deflate } else { Compression::None },
            ..Default::default()
        };
        let (_, stats) = roundtrip(&launches, &opts);
        let spans: usize = traces.iter().map(|t| t.spans.len()).sum();
        let instants: usize = traces.iter().map(|t| t.instants.len()).sum();
        let flows: usize = traces.iter().map(|t| links(t).len()).sum();
        prop_assert_eq!(stats.slices, spans as u64);
        prop_assert_eq!(stats.instants, instants as u64);
        prop_assert_eq!(stats.flows, flows as u64);
    }
}

// ---------------------------------------------------------------------------------------
// The checks themselves catch broken output.

fn small_packets() -> PTrace {
    let t = small_trace(0);
    let mut bytes = Vec::new();
    write_perfetto(&mut bytes, &[Launch::new("x", &t)], &plain_opts()).unwrap();
    PTrace::parse_from_bytes(&bytes).unwrap()
}

#[test]
#[should_panic(expected = "unresolved")]
fn check_catches_a_missing_interned_name() {
    let mut p = small_packets();
    let pkt = p
        .packet
        .iter_mut()
        .find(|p| {
            p.interned_data
                .as_ref()
                .is_some_and(|i| !i.event_names.is_empty())
        })
        .unwrap();
    pkt.interned_data.as_mut().unwrap().event_names.clear();
    decode(&p.write_to_bytes().unwrap()).slices();
}

#[test]
#[should_panic(expected = "never end")]
fn check_catches_an_unbalanced_slice() {
    let mut p = small_packets();
    let last_end = p
        .packet
        .iter()
        .rposition(|p| p.has_track_event() && p.track_event().type_() == Type::TYPE_SLICE_END)
        .unwrap();
    p.packet.remove(last_end);
    decode(&p.write_to_bytes().unwrap()).slices();
}

#[test]
#[should_panic(expected = "undeclared")]
fn check_catches_an_undeclared_track() {
    let mut p = small_packets();
    let first_desc = p
        .packet
        .iter()
        .position(|p| p.has_track_descriptor())
        .unwrap();
    // Moving the root's descriptor to the end leaves its children's parent undeclared.
    let d = p.packet.remove(first_desc);
    p.packet.push(d);
    decode(&p.write_to_bytes().unwrap());
}

#[test]
#[should_panic(expected = "first difference")]
fn check_catches_a_shifted_timestamp() {
    let t = small_trace(0);
    let launches = [Launch::new("x", &t)];
    let mut bytes = Vec::new();
    write_perfetto(&mut bytes, &launches, &plain_opts()).unwrap();
    let mut p = PTrace::parse_from_bytes(&bytes).unwrap();
    let pkt = p
        .packet
        .iter_mut()
        .find(|p| p.has_track_event() && p.track_event().type_() == Type::TYPE_INSTANT)
        .unwrap();
    pkt.set_timestamp(pkt.timestamp() + 1);
    check(
        &decode(&p.write_to_bytes().unwrap()),
        &launches,
        &plain_opts(),
    );
}

// ---------------------------------------------------------------------------------------
// Through the decoder: reference-encoder buffers and the shipped sample.

fn decoded(words: &[u64]) -> Trace {
    ikp_host::decode::decode(words, &Default::default()).expect("decode")
}

/// A buffer written by the reference encoder, as a kernel would: 3 blocks x 2 groups on
/// two SMs, nested and repeated regions, instants, wait-counter samples, one lane that
/// ran out of records and one that never ran.
fn encoded_buffer(t0: u64) -> Vec<u64> {
    use ikp_device::encoder::BufferWriter;
    use ikp_device::layout::Layout;
    let layout = Layout {
        grid: [3, 1, 1],
        groups_per_block: 2,
        records_per_lane: 24,
        timer: Default::default(),
        regions: ["tile", "load", "mma", "ready"].map(String::from).to_vec(),
        counters: vec!["kv_wait".into()],
        ..Layout::default()
    };
    let mut b = BufferWriter::new(layout).unwrap();
    for lane in 0..5u64 {
        let block = (lane / 2) as u32;
        let start = t0 + lane * 100;
        let mut w = b.lane(lane);
        w.init(block % 2, (lane % 2) as u32 * 4, 0, start, 0);
        let tiles = if lane == 3 { 10 } else { 2 }; // lane 3 overflows its 24 records
        let mut t = start + 10;
        for tile in 0..tiles {
            w.begin(0, tile, t);
            w.begin(1, tile, t + 5).end(1, tile, t + 50);
            w.counter_sample(0, 7 + tile);
            w.instant(3, tile, t + 50);
            w.begin(2, tile, t + 60).end(2, tile, t + 200);
            w.end(0, tile, t + 210);
            t += 300;
        }
        w.counter_add(0, 99);
        w.finalize(t + 5, 0);
    }
    b.into_words()
}

#[test]
fn reference_encoder_buffers_through_the_decoder() {
    let a = decoded(&encoded_buffer(1_000_000));
    let b = decoded(&encoded_buffer(5_000_000_000));
    assert!(a.spans.len() > 10 && !a.instants.is_empty() && !a.samples.is_empty());
    assert!(a.dropped() > 0, "lane 3 should drop records");
    for group_by in [GroupBy::Sm, GroupBy::Block] {
        let opts = PerfettoOptions {
            group_by,
            ..plain_opts()
        };
        roundtrip(&[Launch::new("a.bin", &a)], &opts);
        let (_, stats) = roundtrip(&[Launch::new("a.bin", &a), Launch::new("b.bin", &b)], &opts);
        assert_eq!(stats.slices, (a.spans.len() + b.spans.len()) as u64);
    }
}

/// One lane per program (`(begin?, region, time)`), in the native format and in the TVM
/// format, decoded.
fn overlapping_buffers(progs: &[&[(bool, u32, u32)]]) -> [Trace; 2] {
    use ikp_device::encoder::BufferWriter;
    use ikp_device::layout::Layout;
    let layout = Layout {
        grid: [1, 1, 1],
        groups_per_block: progs.len() as u32,
        records_per_lane: 32,
        timer: Default::default(),
        regions: ["a", "b", "c"].map(String::from).to_vec(),
        counters: vec![],
        ..Layout::default()
    };
    let mut b = BufferWriter::new(layout).unwrap();
    let stride = progs.len();
    let rows = progs.iter().map(|p| p.len() + 1).max().unwrap();
    let mut tvm = vec![0u64; 1 + stride * rows];
    tvm[0] = (stride as u64) << 32 | 1;
    for (l, prog) in progs.iter().enumerate() {
        let mut w = b.lane(l as u64);
        w.init(0, l as u32, 0, 1, 0);
        for (k, &(begin, region, t)) in prog.iter().enumerate() {
            if begin {
                w.begin(region, 0, t as u64);
            } else {
                w.end(region, 0, t as u64);
            }
            let kind = u32::from(!begin);
            tvm[1 + l + k * stride] = ikp_device::tvm::pack(t, l as u32, region, kind);
        }
        w.finalize(1000, 0);
        tvm[1 + l + prog.len() * stride] = ikp_device::tvm::pack(1000, l as u32, 0, 3);
    }
    [decoded(&b.into_words()), decoded(&tvm)]
}

#[test]
fn overlapping_regions_of_both_formats_go_to_overlap_tracks() {
    let (b, e) = (true, false);
    // Lane 0: begin a, begin b, end a, end b. Lane 1: a b c ended a c b (c nests in b).
    // Lane 2: a b c ended a b c (a staircase: two overlap tracks). Lane 3 nests.
    let progs: [&[(bool, u32, u32)]; 4] = [
        &[(b, 0, 10), (b, 1, 20), (e, 0, 30), (e, 1, 40)],
        &[
            (b, 0, 10),
            (b, 1, 20),
            (b, 2, 30),
            (e, 0, 40),
            (e, 2, 50),
            (e, 1, 60),
        ],
        &[
            (b, 0, 10),
            (b, 1, 20),
            (b, 2, 30),
            (e, 0, 40),
            (e, 1, 50),
            (e, 2, 60),
        ],
        &[(b, 0, 10), (b, 1, 20), (e, 1, 30), (e, 0, 40)],
    ];
    for t in overlapping_buffers(&progs) {
        assert_eq!(t.spans.len(), 10, "{:?}: every span pairs", t.source.format);
        let (bytes, stats) = roundtrip(&[Launch::new("overlap.ikp", &t)], &plain_opts());
        assert_eq!(stats.slices, 10);
        let d = decode(&bytes);
        // (lane, track suffix, slice) of every span's slice, each track's slices nesting
        // (the decoder of this test pairs them per track); lifetimes are checked by
        // `roundtrip`.
        let mut got: Vec<(String, String)> = d
            .slices()
            .into_iter()
            .filter(|s| s.category == "span")
            .map(|s| {
                let track = d.tracks[&s.track].name.clone();
                let lane = track.split(" (overlap ").next().unwrap().to_string();
                let row = track[lane.len()..].to_string();
                (format!("{lane}{row}"), format!("{}@{}", s.name, s.ts))
            })
            .collect();
        got.sort();
        let lane = |g: usize| {
            let l = &t.lanes[g];
            lane_name(l, group_name(&t, l, plain_opts().group_by).1)
        };
        let base = t.source.time_base as i64;
        let at = |r: u16, ts: i64| format!("{}@{}", t.names.region(r), ts - base);
        let over = |g: usize, n: u32| format!("{} (overlap {n})", lane(g));
        let mut want = vec![
            (lane(0), at(0, 10)),
            (over(0, 1), at(1, 20)),
            (lane(1), at(0, 10)),
            (over(1, 1), at(1, 20)),
            (over(1, 1), at(2, 30)),
            (lane(2), at(0, 10)),
            (over(2, 1), at(1, 20)),
            (over(2, 2), at(2, 30)),
            (lane(3), at(0, 10)),
            (lane(3), at(1, 20)),
        ];
        want.sort();
        assert_eq!(got, want, "{:?}", t.source.format);
    }
}

fn sample_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../samples/attention.ikp")
}

/// The shipped sample: exact round trip, and the size against the Chrome JSON of the same
/// trace: at least 2x smaller plain, at least 5x compressed (the figures are in
/// BENCHMARKS.md).
#[test]
fn shipped_sample_roundtrips_and_is_smaller_than_chrome_json() {
    let trace = ikp_host::decode::load(&sample_path(), &Default::default()).expect("sample");
    let launches = [Launch::new("attention.ikp", &trace)];
    let (plain, stats) = roundtrip(&launches, &plain_opts());
    assert_eq!(stats.slices, trace.spans.len() as u64);
    let zopts = PerfettoOptions {
        compression: Compression::Deflate,
        ..plain_opts()
    };
    let (deflated, _) = roundtrip(&launches, &zopts);
    let mut chrome = Vec::new();
    ikp_host::write_chrome(&mut chrome, &trace, &Default::default()).unwrap();
    let ratio = |n: usize| chrome.len() as f64 / n as f64;
    eprintln!(
        "sample: {} spans; Chrome JSON {} bytes; Perfetto {} bytes ({:.2}x smaller), \
         deflated {} bytes ({:.2}x smaller)",
        trace.spans.len(),
        chrome.len(),
        plain.len(),
        ratio(plain.len()),
        deflated.len(),
        ratio(deflated.len())
    );
    assert!(
        ratio(plain.len()) >= 2.0,
        "plain only {:.2}x",
        ratio(plain.len())
    );
    assert!(
        ratio(deflated.len()) >= 5.0,
        "deflated only {:.2}x",
        ratio(deflated.len())
    );
}

// ---------------------------------------------------------------------------------------
// Flows: signal → wait links drawn as arrows.

/// Region names of the link traces.
const LINK_REGIONS: [&str; 7] = [
    "loop",
    "load",
    "mma",
    "signal.kv",
    "wait.kv",
    "signal.free",
    "wait.free",
];

/// Two blocks x three lanes with every kind of link and non-link:
/// - block 0: the producer (group 0) signals `kv` tokens 0 and 1 with instants at +100 and
///   +200; consumer 1 waits for token 0 (released at +105), then token 1 twice (the second
///   wait crosses its loop: an overlap track), and signals `free` token 0 with a span
///   ending at +300 that the producer's `wait.free` (ends +320) waits for; consumer 2 waits
///   for token 0 and is released at exactly the signal's time (+100);
/// - block 1: a wait for token 1 that only block 0 signals (no link), a wait whose only
///   signal is on its own lane (no link).
///
/// Links: 5, the `kv` instant of token 1 starting two flows.
fn links_trace(t0: Timestamp) -> Trace {
    let lane = |block: u32,
                group: u32,
                spans: Vec<(u16, u32, Timestamp, Timestamp)>,
                instants: Vec<(u16, u32, Timestamp)>,
                end: Timestamp| LaneSpec {
        block,
        group,
        sm: Some(4 - 2 * block),
        warp: Some(group * 4),
        start: t0,
        end: t0 + end,
        spans: spans
            .into_iter()
            .map(|(r, p, b, e)| (r, p, t0 + b, t0 + e))
            .collect(),
        instants: instants
            .into_iter()
            .map(|(r, p, t)| (r, p, t0 + t))
            .collect(),
        samples: vec![],
    };
    let lanes = vec![
        lane(
            0,
            0,
            vec![(1, 0, 10, 100), (1, 1, 100, 200), (6, 0, 200, 320)],
            vec![(3, 0, 100), (3, 1, 200)],
            400,
        ),
        lane(
            0,
            1,
            vec![
                (0, 0, 5, 600),
                (4, 0, 20, 105),
                (2, 0, 105, 250),
                (5, 0, 250, 300),
                (4, 1, 300, 310),
                (4, 1, 550, 650),
            ],
            vec![],
            700,
        ),
        lane(0, 2, vec![(4, 0, 30, 100), (2, 0, 100, 180)], vec![], 200),
        lane(1, 0, vec![(4, 1, 10, 500)], vec![], 600),
        lane(1, 1, vec![(4, 5, 60, 90)], vec![(3, 5, 70)], 100),
    ];
    build(3, names(&LINK_REGIONS, &[]), lanes)
}

#[test]
fn links_become_flow_arrows() {
    let t = links_trace(1_000);
    let l = links(&t);
    assert_eq!(l.len(), 5, "{l:?}");
    // The crossing wait went to an overlap track and is still the flow's destination.
    let (bytes, stats) = roundtrip(&[Launch::new("links", &t)], &plain_opts());
    assert_eq!(stats.flows, 5);
    let d = decode(&bytes);
    assert!(d.tracks.values().any(|t| t.name.contains("(overlap 1)")));
    let ends = d
        .events
        .iter()
        .filter(|e| !e.terminating.is_empty())
        .count();
    assert_eq!(ends, 5);
    // Several launches: ids stay unique (check_flows), every option.
    let u = links_trace(50_000);
    for group_by in [GroupBy::Sm, GroupBy::Block] {
        for compression in [Compression::None, Compression::Deflate] {
            let opts = PerfettoOptions {
                group_by,
                compression,
                ..plain_opts()
            };
            let (_, stats) = roundtrip(
                &[
                    Launch::new("a", &t),
                    Launch::new("b", &u),
                    Launch::new("c", &small_trace(0)),
                ],
                &opts,
            );
            assert_eq!(stats.flows, 10);
        }
    }
}

#[test]
fn traces_without_signal_wait_regions_have_no_flow_ids() {
    let t = small_trace(0);
    let (bytes, stats) = roundtrip(&[Launch::new("x", &t)], &plain_opts());
    assert_eq!(stats.flows, 0);
    let d = decode(&bytes);
    assert!(d
        .events
        .iter()
        .all(|e| e.flows.is_empty() && e.terminating.is_empty()));
    // Signal and wait regions whose tokens never match: no flows either.
    let mut t = links_trace(0);
    for i in 0..t.spans.len() {
        if t.names.region(t.spans.region[i]).starts_with("wait.") {
            t.spans.payload[i] += 100;
        }
    }
    assert!(links(&t).is_empty());
    let (_, stats) = roundtrip(&[Launch::new("x", &t)], &plain_opts());
    assert_eq!(stats.flows, 0);
}

/// Golden bytes of the link trace, twice (flow ids of the second launch start after the
/// first's spans). Re-bless with `IKP_BLESS=1 cargo test -p ikp-host --test host perfetto::golden`.
#[test]
fn golden_links_trace() {
    let a = links_trace(1_000);
    let b = links_trace(9_000);
    let launches = [Launch::new("a.ikp", &a), Launch::new("b.ikp", &b)];
    let mut bytes = Vec::new();
    write_perfetto(&mut bytes, &launches, &plain_opts()).unwrap();
    golden("perfetto_links.pftrace", &bytes);
    let golden = bytes;
    let d = decode(&golden);
    check(&d, &launches, &plain_opts());
    // The ids: spans of the launch before + wait span + 1.
    let mut ids: Vec<u64> = d
        .events
        .iter()
        .flat_map(|e| e.terminating.clone())
        .collect();
    ids.sort_unstable();
    let n = a.spans.len() as u64;
    let first: Vec<u64> = links(&a).iter().map(|l| l.to_span as u64 + 1).collect();
    let want: Vec<u64> = first
        .iter()
        .copied()
        .chain(first.iter().map(|i| i + n))
        .collect();
    assert_eq!(ids, want);
}

/// The link trace as a native buffer: 2 blocks x 3 groups, slot 5 unused (the events of
/// each lane written in time order).
fn links_buffer() -> Vec<u64> {
    use ikp_device::encoder::BufferWriter;
    use ikp_device::layout::Layout;
    let t = links_trace(1_000_000);
    let mut b = BufferWriter::new(Layout {
        grid: [2, 1, 1],
        groups_per_block: 3,
        records_per_lane: 24,
        timer: Default::default(),
        regions: LINK_REGIONS.map(String::from).to_vec(),
        counters: vec![],
        ..Layout::default()
    })
    .unwrap();
    for l in &t.lanes {
        // Records in time order: at equal times ends, then begins, then instants.
        let mut recs: Vec<(Timestamp, u8, u32, u32)> = Vec::new();
        for i in l.spans.clone() {
            let (r, p) = (t.spans.region[i] as u32, t.spans.payload[i]);
            recs.push((t.spans.begin[i], 1, r, p));
            recs.push((t.spans.end[i], 0, r, p));
        }
        for i in l.instants.clone() {
            recs.push((t.instants.ts[i], 2, t.instants.region[i] as u32, 0));
            recs.last_mut().unwrap().3 = t.instants.payload[i];
        }
        recs.sort_by_key(|r| (r.0, r.1));
        let mut w = b.lane(l.id as u64);
        w.init(l.sm.unwrap(), l.warp.unwrap(), 0, l.start, 0);
        for (ts, kind, r, p) in recs {
            match kind {
                0 => w.end(r, p, ts),
                1 => w.begin(r, p, ts),
                _ => w.instant(r, p, ts),
            };
        }
        w.finalize(l.end, 0);
    }
    b.into_words()
}

/// The streamed path draws the same flows, byte for byte, decoding a block at a time.
#[test]
fn streamed_flows_are_byte_identical_to_in_memory() {
    use ikp_host::{write_perfetto_streamed, StreamedBuffer};
    let words = links_buffer();
    let whole = decoded(&words);
    // An end closes the innermost open begin of its region: the wait that crosses its
    // loop pairs too, so the buffer decodes to the spans of the trace it was written from,
    // with all 5 links.
    let t = links_trace(1_000_000);
    assert!(whole.diagnostics.unmatched_begin.is_empty());
    let spans = |t: &Trace| {
        (
            t.spans.region.clone(),
            t.spans.begin.clone(),
            t.spans.end.clone(),
        )
    };
    assert_eq!(spans(&whole), spans(&t));
    assert_eq!(links(&whole), links(&t));
    assert_eq!(links(&whole).len(), 5);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("links.ikp");
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&path, bytes).unwrap();
    for group_by in [GroupBy::Sm, GroupBy::Block] {
        let opts = PerfettoOptions {
            group_by,
            ..plain_opts()
        };
        let (mem, stats) = roundtrip(&[Launch::new("links.ikp", &whole)], &opts);
        assert_eq!(stats.flows, 5);
        let buf = StreamedBuffer::open(&path, &Default::default()).unwrap();
        let mut streamed = Vec::new();
        let sstats = write_perfetto_streamed(&mut streamed, "links.ikp", &buf, &opts).unwrap();
        assert!(mem == streamed, "{group_by:?}: streamed output differs");
        assert_eq!(sstats, stats);
        // Opening: each of the 5 slots whose lane ran (of 6) once; writing: each block's
        // lanes once more.
        assert_eq!(buf.slot_decodes(), 5 + 5);
    }
}

/// With a block filter, the streamed path writes the bytes of the filtered trace decoded
/// at once (on the whole launch's time axis) and counts its diagnostics; so it does for a
/// filter that keeps no lane, and a buffer whose lanes never ran.
#[test]
fn streamed_block_filter_is_byte_identical_to_in_memory() {
    use ikp_host::{write_perfetto_streamed, BlockFilter, DecodeOptions, StreamedBuffer};
    let empty = {
        let layout = ikp_device::layout::Layout {
            grid: [2, 1, 1],
            groups_per_block: 2,
            records_per_lane: 4,
            timer: Default::default(),
            regions: vec!["r".into()],
            counters: vec![],
            ..ikp_device::Layout::default()
        };
        ikp_device::encoder::BufferWriter::new(layout)
            .unwrap()
            .into_words()
    };
    // Rings: wrapped lanes with ends whose begins were overwritten, one that did not
    // wrap, and a full one that never finalized (set aside).
    let ring = {
        use ikp_device::wire::lane_flags::RING;
        let layout = ikp_device::Layout {
            grid: [2, 1, 1],
            groups_per_block: 2,
            records_per_lane: 4,
            regions: vec!["r".into(), "s".into()],
            overflow: ikp_device::Overflow::Ring,
            ..ikp_device::Layout::default()
        };
        let mut b = ikp_device::encoder::BufferWriter::new(layout).unwrap();
        for l in 0..3u64 {
            let t0 = 10_000 * (l + 1);
            let mut w = b.lane(l);
            w.init(l as u32, 0, RING, t0, 0).begin(0, 0, t0 + 5);
            for k in 0..l * 2 {
                w.begin(1, k as u32, t0 + 10 + 20 * k)
                    .end(1, 0, t0 + 20 + 20 * k);
            }
            w.end(0, 0, t0 + 900);
            if l < 2 {
                w.finalize(t0 + 1_000, 0);
            }
        }
        b.into_words()
    };
    let cases = [
        (
            "encoded",
            encoded_buffer(1_000_000),
            &["1,2", "2", "0", "7"][..],
        ),
        ("links", links_buffer(), &["0", "1"][..]),
        ("empty", empty, &["", "1"][..]),
        ("ring", ring, &["", "0", "1"][..]),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut flows = 0;
    for (name, words, filters) in cases {
        let path = dir.path().join(name);
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(&path, bytes).unwrap();
        for &f in filters {
            let opts = DecodeOptions {
                blocks: BlockFilter::parse(f).unwrap(),
                ..Default::default()
            };
            let whole = ikp_host::decode(&words, &opts).unwrap();
            if (name, f) == ("encoded", "1,2") {
                // The launch's first lane was left out: its start is still the time base.
                assert!(whole.lanes.iter().all(|l| l.start > whole.source.time_base));
            }
            for group_by in [GroupBy::Sm, GroupBy::Block] {
                let popts = PerfettoOptions {
                    group_by,
                    ..plain_opts()
                };
                let mut mem = Vec::new();
                let stats = write_perfetto(&mut mem, &[Launch::new(name, &whole)], &popts).unwrap();
                let buf = StreamedBuffer::open(&path, &opts).unwrap();
                let mut streamed = Vec::new();
                let sstats = write_perfetto_streamed(&mut streamed, name, &buf, &popts).unwrap();
                assert!(
                    mem == streamed,
                    "{name}, blocks {f:?}, {group_by:?}: output differs"
                );
                assert_eq!(sstats, stats);
                assert!(stats.tracks > 0);
                assert_eq!(buf.diagnostic_counts(), whole.diagnostic_counts());
                assert_eq!(buf.time_base(), whole.source.time_base);
                flows += stats.flows;
            }
        }
    }
    assert!(flows > 0, "no case drew flows");
}

/// `critical_path: true` adds one track, first under the launch, whose slices tile the
/// slowest block's critical path in order; everything else is written as without it.
#[test]
fn critical_path_track_tiles_the_slowest_blocks_path() {
    let t = links_trace(1_000);
    let launches = [Launch::new("links", &t)];
    let opts = PerfettoOptions {
        critical_path: true,
        ..plain_opts()
    };
    let mut bytes = Vec::new();
    let stats = write_perfetto(&mut bytes, &launches, &opts).unwrap();
    let mut d = decode(&bytes);
    let block = slowest_block(&t).unwrap();
    let (&uuid, info) = d
        .tracks
        .iter()
        .find(|(_, i)| i.name.starts_with("critical path"))
        .expect("a critical-path track");
    assert_eq!(
        info.name,
        format!("critical path · block {} (slowest)", block.id)
    );
    assert_eq!((info.rank, info.counter), (Some(-1), false));
    assert_eq!(d.path(uuid), vec!["links".to_string(), info.name.clone()]);
    let all = links(&t);
    let path = critical_path_links(&t, block.id, &all);
    assert!(path.len() > 2 && path.iter().any(|p| p.1.is_some()));
    assert_eq!(stats.critical_path_steps, path.len() as u64);
    // Begins and ends alternate on the track, in file order.
    let ev: Vec<&Event> = d.events.iter().filter(|e| e.track == uuid).collect();
    assert_eq!(ev.len(), 2 * path.len());
    let shift = shifts(&launches, &plain_opts())[0];
    let s = &t.spans;
    let mut prev_end = i64::MIN;
    for (k, (&(i, link), pair)) in path.iter().zip(ev.chunks(2)).enumerate() {
        let (b, e) = (pair[0], pair[1]);
        assert_eq!((&b.kind, &e.kind), (&Kind::Begin, &Kind::End));
        assert_eq!(b.name.as_deref(), Some(&*t.names.region(s.region[i])));
        assert_eq!(b.category.as_deref(), Some("critical_path"));
        // The slice covers the step from the later of its begin and the previous step's
        // end: consecutive slices touch or leave a gap, never overlap.
        assert_eq!(b.ts, (s.begin[i] as i64 + shift).max(prev_end));
        assert_eq!(e.ts, s.end[i] as i64 + shift);
        assert!(b.ts <= e.ts && b.ts >= prev_end);
        prev_end = e.ts;
        assert_eq!(b.args["step"], k as u64 + 1);
        assert_eq!(b.args["dur_ns"], s.dur(i));
        let lane = t.lanes.iter().find(|l| l.id == s.lane[i]).unwrap();
        assert_eq!(b.strings["track"], lane.track().name());
        assert!(!b.strings["track"].contains("lane"));
        assert_eq!(b.strings.contains_key("waited_on"), link.is_some());
        if let Some(l) = link {
            assert!(
                b.strings["waited_on"].starts_with("signal."),
                "{:?}",
                b.strings
            );
            let from = t.lanes.iter().find(|x| x.id == l.from_lane).unwrap();
            assert!(b.strings["waited_on"].ends_with(&from.track().name()));
        }
    }
    d.slices(); // balanced on every track
                // Without the track, the file is what the default options write.
    d.events.retain(|e| e.track != uuid);
    d.tracks.remove(&uuid);
    check(&d, &launches, &opts);
    let mut plain = Vec::new();
    write_perfetto(&mut plain, &launches, &plain_opts()).unwrap();
    assert!(!decode(&plain)
        .tracks
        .values()
        .any(|i| i.name.starts_with("critical path")));
}

// ---------------------------------------------------------------------------------------
// Host clocks.

/// A clock sync: device `g` is realtime `g + 1_700_000_000_000_000_000 - 1_000_000`
/// (2023-11-14 in Unix ns) and monotonic `g + 5_000_000_000 - 1_000_000`.
fn sync_at(device: u64) -> ClockSync {
    ClockSync {
        host_realtime_ns: 1_700_000_000_000_000_000,
        host_monotonic_ns: 5_000_000_000,
        device_globaltimer_ns: device,
        round_trip_ns: 4_000,
        samples: 16,
    }
}

fn synced(mut t: Trace, sync: ClockSync) -> Trace {
    t.source.clock_sync = Some(sync);
    t
}

/// On a host clock every event sits at its device time mapped by its launch's sync,
/// exactly (the shared check recomputes every timestamp); one snapshot ties the trace
/// clock to realtime and monotonic at the first launch's time base.
#[test]
fn host_clock_places_launches_at_their_host_times() {
    let a = synced(small_trace(1_000_000), sync_at(1_000_000));
    // The second launch ran 3 ms of host time later, on a device clock 2 s ahead.
    let b = synced(small_trace(2_003_000_000), sync_at(2_000_000_000));
    let launches = [Launch::new("a.ikp", &a), Launch::new("b.ikp", &b)];
    for (host, at) in [
        (HostClock::Realtime, 1_700_000_000_000_000_000u64),
        (HostClock::Monotonic, 5_000_000_000),
    ] {
        let opts = PerfettoOptions {
            host_clock: Some(host),
            ..plain_opts()
        };
        let (bytes, _) = roundtrip(&launches, &opts);
        let d = decode(&bytes);
        // a's time base (its first lane start, device 1_000_000) is the sync point itself.
        assert_eq!(
            d.host_snapshots,
            [[at, 1_700_000_000_000_000_000, 5_000_000_000]]
        );
        // b's first lane starts 3 ms after its sync: host time at + 3 ms.
        let first_b = d.events.iter().filter(|e| e.ts >= (at + 1_000_000) as i64);
        assert_eq!(first_b.map(|e| e.ts).min(), Some((at + 3_000_000) as i64));
    }
}

/// Launch-relative layouts keep their times and add a snapshot per synced launch
/// (sequential) or for the first one (aligned); a trace without a sync is unchanged.
#[test]
fn relative_layouts_get_host_clock_snapshots() {
    let a = synced(small_trace(1_000_000), sync_at(1_000_000));
    let b = synced(small_trace(2_003_000_000), sync_at(2_000_000_000));
    let plain_b = small_trace(2_003_000_000);
    let seq = plain_opts();
    let (bytes, _) = roundtrip(&[Launch::new("a", &a), Launch::new("b", &b)], &seq);
    let d = decode(&bytes);
    let sh = shifts(&[Launch::new("a", &a), Launch::new("b", &b)], &seq);
    // Trace time of b's time base, and its host times (3 ms after b's sync).
    let tb = (2_003_000_000i64 + sh[1]) as u64;
    assert_eq!(
        d.host_snapshots,
        [
            [0, 1_700_000_000_000_000_000, 5_000_000_000],
            [tb, 1_700_000_000_003_000_000, 5_003_000_000]
        ]
    );
    let aligned = PerfettoOptions {
        launch_layout: LaunchLayout::Aligned,
        ..plain_opts()
    };
    let (bytes, _) = roundtrip(&[Launch::new("a", &a), Launch::new("b", &b)], &aligned);
    assert_eq!(decode(&bytes).host_snapshots.len(), 1);
    // Without syncs: byte for byte what it was.
    let plain_a = small_trace(1_000_000);
    let mut with = Vec::new();
    let mut without = Vec::new();
    write_perfetto(
        &mut with,
        &[Launch::new("a", &plain_a), Launch::new("b", &plain_b)],
        &seq,
    )
    .unwrap();
    let mut a2 = a.clone();
    a2.source.clock_sync = None;
    write_perfetto(
        &mut without,
        &[Launch::new("a", &a2), Launch::new("b", &plain_b)],
        &seq,
    )
    .unwrap();
    assert!(with == without);
    assert!(decode(&with).host_snapshots.is_empty());
}

#[test]
fn host_clock_without_a_sync_names_the_launch() {
    let a = synced(small_trace(1_000_000), sync_at(1_000_000));
    let b = small_trace(5_000_000);
    let opts = PerfettoOptions {
        host_clock: Some(HostClock::Realtime),
        ..plain_opts()
    };
    let mut out = Vec::new();
    let e = write_perfetto(
        &mut out,
        &[Launch::new("a.ikp", &a), Launch::new("b.ikp", &b)],
        &opts,
    )
    .unwrap_err();
    assert!(
        matches!(&e.kind, WriteErrorKind::NoClockSync { launch: 1, label } if label == "b.ikp"),
        "{e}"
    );
    assert!(e.to_string().contains("without a host clock sync"), "{e}");
    assert!(out.is_empty(), "nothing written before the error");
}

/// A buffer recorded with a clock sync: the decoder fills `Source::clock_sync` from the
/// header, and the streamed path writes the bytes of the in-memory one on a host clock.
#[test]
fn synced_buffer_streams_on_the_host_clock() {
    use ikp_device::encoder::BufferWriter;
    use ikp_device::layout::Layout;
    use ikp_host::{write_perfetto_streamed, StreamedBuffer};
    let sync = sync_at(999_000);
    let layout = Layout {
        grid: [2, 1, 1],
        regions: vec!["work".into()],
        clock_sync: Some(sync),
        ..Layout::default()
    };
    let mut w = BufferWriter::new(layout).unwrap();
    for lane in 0..2u64 {
        let t = 1_000_000 + 500 * lane;
        w.lane(lane)
            .init(lane as u32, 0, 0, t, 0)
            .begin(0, 0, t + 10)
            .end(0, 0, t + 110)
            .finalize(t + 200, 0);
    }
    let words = w.into_words();
    let t = decoded(&words);
    assert_eq!(t.source.clock_sync, Some(sync));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ikp");
    std::fs::write(
        &path,
        words
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    for host_clock in [None, Some(HostClock::Realtime)] {
        let opts = PerfettoOptions {
            host_clock,
            ..plain_opts()
        };
        let (mem, _) = roundtrip(&[Launch::new("s.ikp", &t)], &opts);
        let buf = StreamedBuffer::open(&path, &Default::default()).unwrap();
        let mut streamed = Vec::new();
        write_perfetto_streamed(&mut streamed, "s.ikp", &buf, &opts).unwrap();
        assert!(mem == streamed, "{host_clock:?}: streamed output differs");
        let d = decode(&mem);
        // Time base 1_000_000 is 1 µs after the sync's device time.
        let real = 1_700_000_000_000_001_000;
        let boot = if host_clock.is_some() { real } else { 0 };
        assert_eq!(d.host_snapshots, [[boot, real, 5_000_001_000]]);
    }
}

/// Golden bytes of two synced launches on the host's realtime clock. Re-bless with
/// `IKP_BLESS=1 cargo test -p ikp-host --test host perfetto::golden`.
#[test]
fn golden_host_clock_trace() {
    let a = synced(small_trace(1_000_000), sync_at(1_000_000));
    let b = synced(small_trace(2_003_000_000), sync_at(2_000_000_000));
    let launches = [Launch::new("a.ikp", &a), Launch::new("b.ikp", &b)];
    let opts = PerfettoOptions {
        host_clock: Some(HostClock::Realtime),
        ..plain_opts()
    };
    let mut bytes = Vec::new();
    write_perfetto(&mut bytes, &launches, &opts).unwrap();
    golden("perfetto_host_clock.pftrace", &bytes);
    let golden = bytes;
    check(&decode(&golden), &launches, &opts);
}

/// A kernel without loops (what `ikp instrument` gives a pointwise kernel): each lane
/// records its init and finalize and nothing else. Its warps come in two waves on one SM,
/// and every output shows them: a lifetime slice per lane (Perfetto, Chrome) and the waves
/// and tail in the summary.
#[test]
fn a_loopless_kernel_shows_its_warps_waves() {
    use ikp_device::encoder::BufferWriter;
    use ikp_device::layout::Layout;
    let layout = Layout {
        grid: [4, 1, 1],
        groups_per_block: 1,
        records_per_lane: 4,
        ..Layout::default()
    };
    let mut b = BufferWriter::new(layout).unwrap();
    // Blocks 0 and 1 run first; 2 and 3 start as they end; block 3 ends last.
    for (lane, start, end) in [
        (0u64, 1_000, 2_000),
        (1, 1_010, 2_010),
        (2, 2_000, 3_000),
        (3, 2_010, 3_500),
    ] {
        let mut w = b.lane(lane);
        w.init(0, 0, 0, start, 0);
        w.finalize(end, 0);
    }
    let t = decoded(&b.into_words());
    assert!(t.spans.is_empty() && t.instants.is_empty() && t.lanes.len() == 4);

    // Perfetto: one lifetime slice per lane on its own track (checked by `roundtrip`), no
    // lane sequence (no events).
    let (_, stats) = roundtrip(&[Launch::new("pointwise", &t)], &plain_opts());
    assert_eq!((stats.lifetimes, stats.slices, stats.sequences), (4, 0, 0));

    // Chrome: four lifetime events on their lifetime rows.
    let mut doc = Vec::new();
    ikp_host::write::chrome::write_chrome(&mut doc, &t, &Default::default()).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&doc).unwrap();
    let life: Vec<(u64, f64, f64)> = (v["traceEvents"].as_array().unwrap().iter())
        .filter(|e| e["name"] == "lifetime")
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["ts"].as_f64().unwrap(),
                e["dur"].as_f64().unwrap(),
            )
        })
        .collect();
    let step = 9007 * 1_000_000_000_000u64;
    assert_eq!(
        life,
        [
            (step, 0.0, 1.0),
            (step + 64, 0.01, 1.0),
            (step + 128, 1.0, 1.0),
            (step + 192, 1.01, 1.49)
        ]
    );

    // Summary: two waves of two, at most two running, and a tail from 2 us after the start
    // (block 2's end left block 3 alone) to 2.5 us.
    let stats = ikp_host::TraceStats::of(&t);
    let s = ikp_host::summarize(&stats, &Default::default(), "pointwise");
    let l = s.lanes_over_time.expect("lanes over time");
    assert_eq!(
        (l.bounds, l.peak_lanes, l.waves.len()),
        ("init_finalize", 2, 2)
    );
    assert_eq!((l.tail_start, l.tail_dur), (2000.0, 500.0));
    let waves: Vec<(u64, f64, f64)> = l.waves.iter().map(|w| (w.lanes, w.start, w.end)).collect();
    assert_eq!(waves, [(2, 0.0, 1010.0), (2, 1000.0, 2500.0)]);
}

// ---------------------------------------------------------------------------------------
// Byte goldens of the packets outside the lane event loop, and of the shipped sample.

/// Writes `launches` with `opts` (plain packets) and compares the bytes with the golden
/// file `name`; compressed, the same options must give bundles that inflate to exactly
/// these bytes (the compressed bytes themselves depend on flate2's backend). Returns the
/// plain bytes and their stats.
fn golden_plain_and_deflated(
    name: &str,
    launches: &[Launch<'_>],
    opts: &PerfettoOptions,
) -> (Vec<u8>, PerfettoStats) {
    let mut bytes = Vec::new();
    let stats = write_perfetto(&mut bytes, launches, opts).unwrap();
    golden(name, &bytes);
    let zopts = PerfettoOptions {
        compression: Compression::Deflate,
        ..*opts
    };
    let mut z = Vec::new();
    write_perfetto(&mut z, launches, &zopts).unwrap();
    // Every bundle inflated in place: it holds `Trace.packet` fields, as written plain.
    let mut raw = Vec::new();
    for p in PTrace::parse_from_bytes(&z).unwrap().packet {
        assert!(
            p.has_compressed_packets(),
            "{name}: a packet outside a bundle"
        );
        let mut zlib = flate2::read::ZlibDecoder::new(p.compressed_packets());
        std::io::Read::read_to_end(&mut zlib, &mut raw).unwrap();
    }
    assert!(
        raw == bytes,
        "{name}: compressed packets differ from the plain ones"
    );
    (bytes, stats)
}

/// Golden bytes of every kind of packet the writer builds outside the lane event loop:
/// a host clock snapshot, block groups with their SM occupancy counters, lifetimes, the
/// critical-path track, two aligned launches (the snapshot of the first only); plain and
/// compressed ([`golden_plain_and_deflated`]). Re-bless with `IKP_BLESS=1 cargo test -p
/// ikp-host --test host perfetto::golden`.
#[test]
fn golden_cold_packets_trace() {
    let a = synced(links_trace(1_000), sync_at(1_000));
    let b = small_trace(5_000);
    let launches = [Launch::new("a.ikp", &a), Launch::new("b.ikp", &b)];
    let opts = PerfettoOptions {
        group_by: GroupBy::Block,
        launch_layout: LaunchLayout::Aligned,
        critical_path: true,
        ..plain_opts()
    };
    let (bytes, stats) = golden_plain_and_deflated("perfetto_cold.pftrace", &launches, &opts);
    assert!(stats.critical_path_steps > 0 && stats.lifetimes > 0 && stats.flows > 0);
    let d = decode(&bytes);
    assert_eq!(d.host_snapshots.len(), 1);
    assert!(d.tracks.values().any(|t| t.name == "SM occupancy"));
}

/// Golden bytes of two blocks of the shipped sample (the whole would pin 570 KiB) with
/// their critical path, plain and compressed ([`golden_plain_and_deflated`]). Re-bless
/// with `IKP_BLESS=1 cargo test -p ikp-host --test host perfetto::golden`.
#[test]
fn golden_shipped_sample() {
    let dopts = ikp_host::DecodeOptions {
        blocks: ikp_host::BlockFilter::parse("0,1").unwrap(),
        ..Default::default()
    };
    let trace = ikp_host::decode::load(&sample_path(), &dopts).expect("sample");
    assert!(trace.lanes.len() > 4, "{} lanes", trace.lanes.len());
    let launches = [Launch::new("attention.ikp", &trace)];
    let opts = PerfettoOptions {
        critical_path: true,
        ..plain_opts()
    };
    let name = "perfetto_attention.pftrace";
    let (_, stats) = golden_plain_and_deflated(name, &launches, &opts);
    assert!(stats.critical_path_steps > 0 && stats.lifetimes > 0);
}
