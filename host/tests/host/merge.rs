//! `ikp merge`'s library side: an ikp buffer with a host clock sync (reference encoder)
//! and a Kineto-like Chrome trace become one Perfetto trace whose host and device events
//! sit at the host-clock ns the formats say (exact arithmetic), pinned by a golden file.
use crate::golden_check::golden;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ikp_device::encoder::BufferWriter;
use ikp_device::{ClockSync, Layout};
use ikp_host::Trace;
use ikp_host::{
    parse_chrome_trace, read_chrome_trace, write_merged, ChromeReadOptions, WriteErrorKind,
};
use ikp_host::{Compression, HostClock, Launch, PerfettoOptions};
use perfetto_protos::trace::Trace as PTrace;
use perfetto_protos::track_event::track_event::{Name_field, Type};
use protobuf::Message;

const BASE: u64 = 1_700_000_000_000_000_000;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/merge/kineto_small.json")
}

/// Device time 1_000_000 was host realtime BASE + 7 µs (monotonic 9 s + 7 µs).
fn sync() -> ClockSync {
    ClockSync {
        host_realtime_ns: BASE + 7_000,
        host_monotonic_ns: 9_000_007_000,
        device_globaltimer_ns: 1_000_000,
        round_trip_ns: 3_000,
        samples: 16,
    }
}

/// Two lanes of an `attn` kernel: lane 0 runs `load` then `mma` from device 1_001_000
/// (host BASE + 8 µs, when the fixture's `attn_kernel` starts).
fn buffer(sync: Option<ClockSync>) -> Trace {
    let layout = Layout {
        grid: [2, 1, 1],
        regions: vec!["load".into(), "mma".into()],
        clock_sync: sync,
        ..Layout::default()
    };
    let mut w = BufferWriter::new(layout).unwrap();
    w.lane(0)
        .init(3, 0, 0, 1_000_900, 0)
        .begin(0, 0, 1_001_000)
        .end(0, 0, 1_001_400)
        .begin(1, 0, 1_001_400)
        .end(1, 0, 1_002_900)
        .finalize(1_003_000, 0);
    w.lane(1)
        .init(5, 0, 0, 1_000_950, 0)
        .begin(1, 0, 1_001_100)
        .end(1, 0, 1_002_500)
        .finalize(1_002_600, 0);
    ikp_host::decode::decode(&w.into_words(), &Default::default()).unwrap()
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Ev {
    path: Vec<String>,
    kind: &'static str,
    ts: u64,
    name: String,
}

#[derive(Default)]
struct Seq {
    names: HashMap<u64, String>,
    track: Option<u64>,
    clock: Option<(u64, u64)>,
}

/// Every track event of a plain trace with its track path and trace-clock time, and the
/// host clock snapshots.
fn events(bytes: &[u8]) -> (Vec<Ev>, Vec<Vec<(u32, u64)>>) {
    let t = PTrace::parse_from_bytes(bytes).expect("a perfetto.protos.Trace");
    let mut tracks: HashMap<u64, (String, Option<u64>)> = HashMap::new();
    let mut seqs: HashMap<u32, Seq> = HashMap::new();
    let mut out = Vec::new();
    let mut snaps = Vec::new();
    for p in &t.packet {
        let s = seqs.entry(p.trusted_packet_sequence_id()).or_default();
        if let Some(d) = p.trace_packet_defaults.as_ref() {
            s.track = d.track_event_defaults.as_ref().and_then(|t| t.track_uuid);
        }
        if let Some(i) = p.interned_data.as_ref() {
            for n in &i.event_names {
                s.names.insert(n.iid(), n.name().to_string());
            }
        }
        if p.has_clock_snapshot() {
            let c: Vec<(u32, u64)> = (p.clock_snapshot().clocks.iter())
                .map(|c| (c.clock_id(), c.timestamp()))
                .collect();
            match c.iter().find(|c| c.0 == 64) {
                Some(&(_, inc)) => s.clock = Some((inc, c.iter().find(|c| c.0 == 6).unwrap().1)),
                None => snaps.push(c),
            }
            continue;
        }
        if p.has_track_descriptor() {
            let d = p.track_descriptor();
            tracks.insert(d.uuid(), (d.name().to_string(), d.parent_uuid));
        }
        if p.has_track_event() {
            let te = p.track_event();
            let ts = match p.timestamp_clock_id.or(s.track.map(|_| 64)) {
                Some(64) => {
                    let (last, boot) = s.clock.as_mut().expect("snapshot first");
                    *last += p.timestamp();
                    *boot += p.timestamp();
                    *boot
                }
                _ => p.timestamp(),
            };
            let track = te.track_uuid.or(s.track).expect("a track");
            let mut path = Vec::new();
            let mut u = Some(track);
            while let Some(x) = u {
                let (n, parent) = &tracks[&x];
                path.insert(0, n.clone());
                u = *parent;
            }
            let name = match &te.name_field {
                Some(Name_field::NameIid(i)) => s.names[i].clone(),
                Some(Name_field::Name(n)) => n.clone(),
                _ => String::new(),
            };
            let kind = match te.type_() {
                Type::TYPE_SLICE_BEGIN => "B",
                Type::TYPE_SLICE_END => "E",
                Type::TYPE_INSTANT => "i",
                _ => "C",
            };
            out.push(Ev {
                path,
                kind,
                ts,
                name,
            });
        }
    }
    (out, snaps)
}

fn plain() -> PerfettoOptions {
    PerfettoOptions {
        compression: Compression::None,
        ..PerfettoOptions::default()
    }
}

fn merged(trace: &Trace) -> (Vec<u8>, ikp_host::MergeStats) {
    let host = read_chrome_trace(&fixture(), &ChromeReadOptions::default()).unwrap();
    let mut bytes = Vec::new();
    let stats = write_merged(
        &mut bytes,
        &[Launch::new("attn.ikp", trace)],
        &host,
        "kineto_small.json",
        &plain(),
    )
    .unwrap();
    (bytes, stats)
}

fn ev(path: &[&str], kind: &'static str, ts: u64, name: &str) -> Ev {
    Ev {
        path: path.iter().map(|s| s.to_string()).collect(),
        kind,
        ts,
        name: name.into(),
    }
}

#[test]
fn host_and_device_events_sit_at_their_host_times() {
    let t = buffer(Some(sync()));
    let (bytes, stats) = merged(&t);
    let (evs, snaps) = events(&bytes);
    let py = [
        "host: kineto_small.json",
        "python3 (pid 4242)",
        "thread 4242 (python3) (tid 4242)",
    ];
    let gpu = [
        "host: kineto_small.json",
        "GPU 0 (pid 0)",
        "stream 7 (tid 7)",
    ];
    // Host: BASE + ts µs * 1000; "overhang" (11 + 3 µs) is clipped to aten::mm's end.
    let want_host = vec![
        ev(&py, "i", BASE + 1_500, "step 0"),
        ev(&py, "B", BASE + 2_000, "aten::matmul"),
        ev(&py, "B", BASE + 2_250, "aten::mm"),
        ev(&py, "B", BASE + 3_000, "cudaLaunchKernel"),
        ev(&py, "E", BASE + 7_125, ""),
        ev(&py, "B", BASE + 11_000, "overhang"),
        ev(&py, "E", BASE + 11_250, ""),
        ev(&py, "E", BASE + 11_250, ""),
        ev(&py, "E", BASE + 12_500, ""),
        ev(&py, "B", BASE + 20_000, "user_range"),
        ev(&py, "E", BASE + 25_000, ""),
        ev(&gpu, "B", BASE + 8_000, "attn_kernel"),
        ev(&gpu, "E", BASE + 11_000, ""),
    ];
    let host: Vec<Ev> = (evs.iter())
        .filter(|e| e.path[0].starts_with("host"))
        .cloned()
        .collect();
    assert_eq!(host, want_host);
    assert_eq!(
        (stats.host_slices, stats.host_instants, stats.clipped),
        (6, 1, 1)
    );
    // Device: realtime = device ns - 1_000_000 + BASE + 7_000.
    let lane0 = ["attn.ikp", "SM 3", "block 0 / group 0 / warp 0"];
    let lane1 = ["attn.ikp", "SM 5", "block 1 / group 0 / warp 0"];
    let life0 = ["attn.ikp", "SM 3", "block 0 / group 0 / warp 0 · lifetime"];
    let life1 = ["attn.ikp", "SM 5", "block 1 / group 0 / warp 0 · lifetime"];
    let mut dev: Vec<Ev> = (evs.iter())
        .filter(|e| e.path[0] == "attn.ikp" && e.kind != "C")
        .cloned()
        .collect();
    dev.sort();
    let mut want_dev = vec![
        ev(&lane0, "B", BASE + 8_000, "load"),
        ev(&lane0, "E", BASE + 8_400, ""),
        ev(&lane0, "B", BASE + 8_400, "mma"),
        ev(&lane0, "E", BASE + 9_900, ""),
        ev(&lane1, "B", BASE + 8_100, "mma"),
        ev(&lane1, "E", BASE + 9_500, ""),
        // The lanes' lifetimes, init to finalize, on their own tracks.
        ev(&life0, "B", BASE + 7_900, "lifetime"),
        ev(&life0, "E", BASE + 10_000, ""),
        ev(&life1, "B", BASE + 7_950, "lifetime"),
        ev(&life1, "E", BASE + 9_600, ""),
    ];
    want_dev.sort();
    assert_eq!(dev, want_dev);
    // The device's kernel starts with the host trace's attn_kernel, as recorded.
    assert_eq!(t.spans.begin.iter().min(), Some(&1_001_000));
    // One snapshot: trace clock = realtime at the launch's time base (device 1_000_900).
    assert_eq!(
        snaps,
        [vec![
            (6, BASE + 7_900),
            (1, BASE + 7_900),
            (3, 9_000_007_900)
        ]]
    );
    assert_eq!(stats.perfetto.slices, 6 + 3);
}

/// With `--json-clock monotonic` the axis is the monotonic clock: device events move to
/// the sync's monotonic mapping, host events keep their numbers.
#[test]
fn monotonic_json_clock_maps_the_device_by_monotonic() {
    let host = read_chrome_trace(
        &fixture(),
        &ChromeReadOptions {
            clock: HostClock::Monotonic,
        },
    )
    .unwrap();
    let t = buffer(Some(sync()));
    let mut bytes = Vec::new();
    write_merged(&mut bytes, &[Launch::new("a", &t)], &host, "h", &plain()).unwrap();
    let (evs, _) = events(&bytes);
    let load = evs.iter().find(|e| e.name == "load").unwrap();
    assert_eq!(load.ts, 9_000_008_000);
    let mm = evs.iter().find(|e| e.name == "aten::mm").unwrap();
    assert_eq!(mm.ts, BASE + 2_250);
}

#[test]
fn a_buffer_without_a_sync_is_named() {
    let host = read_chrome_trace(&fixture(), &Default::default()).unwrap();
    let good = buffer(Some(sync()));
    let bad = buffer(None);
    let mut bytes = Vec::new();
    let e = write_merged(
        &mut bytes,
        &[Launch::new("good.ikp", &good), Launch::new("old.ikp", &bad)],
        &host,
        "h",
        &plain(),
    )
    .unwrap_err();
    assert!(
        matches!(&e.kind, WriteErrorKind::NoClockSync { launch: 1, label } if label == "old.ikp")
    );
    let msg = e.to_string();
    assert!(
        msg.contains(
            "(old.ikp) was recorded without a host clock sync: record it with HostSession"
        ),
        "{msg}"
    );
    assert!(bytes.is_empty());
}

#[test]
fn bad_host_traces_name_the_file() {
    let p = Path::new("dir/trace.json");
    let e = read_chrome_trace(Path::new("/nonexistent/t.json"), &Default::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot read /nonexistent/t.json"), "{e}");
    for (json, want) in [
        (
            "{\"traceEvents\": 5}",
            "dir/trace.json is not a Chrome trace JSON file",
        ),
        (
            "[{\"ph\":\"B\",\"pid\":1,\"tid\":1}]",
            "dir/trace.json: traceEvents[0]",
        ),
        (
            "[{\"ph\":\"i\",\"ts\":\"soon\"}]",
            "dir/trace.json is not a Chrome trace",
        ),
    ] {
        let e = parse_chrome_trace(json.as_bytes(), p, &Default::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{json}: {e}");
    }
}

/// Golden bytes of the merged trace. Re-bless with `IKP_BLESS=1 cargo test -p ikp-host
/// --test host merge::golden`.
#[test]
fn golden_merged_trace() {
    let (bytes, _) = merged(&buffer(Some(sync())));
    golden("merge_small.pftrace", &bytes);
}

/// The summary JSON's `clock_sync` object of the synced buffer, pinned (the rest of the
/// summary is pinned by the golden tests of `golden.rs`); its figures recomputed here.
#[test]
fn golden_clock_sync_summary() {
    let t = buffer(Some(sync()));
    let doc = ikp_host::summarize(
        &ikp_host::TraceStats::of(&t),
        &Default::default(),
        "attn.json",
    );
    let c = doc.clock_sync.as_ref().expect("clock_sync");
    assert_eq!(c.error_bound_ns, 1_500);
    assert_eq!(
        c.realtime_minus_device_ns,
        (BASE + 7_000) as i128 - 1_000_000
    );
    assert_eq!(c.time_base_realtime_ns, BASE + 7_900);
    let mut out = Vec::new();
    ikp_host::write_summary(&mut out, &doc).unwrap();
    // The object as written (field order included): from its key to its closing brace.
    let all = String::from_utf8(out).unwrap();
    let at = all.find("  \"clock_sync\": {").expect("clock_sync key");
    let end = at + all[at..].find("\n  }").expect("end of clock_sync") + 4;
    let text = format!("{}\n", &all[at..end]);
    let v: serde_json::Value = serde_json::from_str(&all).unwrap();
    assert_eq!(v["clock_sync"]["samples"], 16);
    golden("clock_sync_summary.json", text.as_bytes());
    // Absent without a sync.
    let plain = ikp_host::summarize(
        &ikp_host::TraceStats::of(&buffer(None)),
        &Default::default(),
        "p.json",
    );
    assert!(plain.clock_sync.is_none());
    let mut out = Vec::new();
    ikp_host::write_summary(&mut out, &plain).unwrap();
    assert!(!String::from_utf8(out).unwrap().contains("clock_sync"));
}

/// Golden bytes of a merged trace whose host events carry every kind of argument (string,
/// bool, negative and positive integers, an integer above `i64::MAX`, a double, null, an
/// array, an object), an event without a category, a process without a name, an instant
/// and a clipped slice. Re-bless with `IKP_BLESS=1 cargo test -p ikp-host --test host
/// merge::golden`.
#[test]
fn golden_merged_trace_host_arguments() {
    let json = r#"{"baseTimeNanoseconds": 1700000000000000000, "traceEvents": [
      {"ph": "X", "name": "step", "pid": 1, "tid": 2, "ts": 1.0, "dur": 20.0,
       "args": {"s": "text", "t": true, "f": false, "neg": -5, "pos": 7,
                "big": 18446744073709551615, "d": 2.5, "nil": null,
                "arr": [1, "a"], "obj": {"k": 1}}},
      {"ph": "X", "cat": "op", "name": "inner", "pid": 1, "tid": 2, "ts": 5.0, "dur": 30.0},
      {"ph": "i", "cat": "user", "name": "mark", "pid": 1, "tid": 3, "ts": 6.0, "s": "t",
       "args": {"n": 1}},
      {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "ts": 0.0, "args": {"name": "main"}}
    ]}"#;
    let p = Path::new("args.json");
    let host = parse_chrome_trace(json.as_bytes(), p, &ChromeReadOptions::default()).unwrap();
    let trace = buffer(Some(sync()));
    let mut bytes = Vec::new();
    let stats = write_merged(
        &mut bytes,
        &[Launch::new("attn.ikp", &trace)],
        &host,
        "args.json",
        &plain(),
    )
    .unwrap();
    assert_eq!(
        (stats.host_slices, stats.host_instants, stats.clipped),
        (2, 1, 1)
    );
    golden("merge_host_args.pftrace", &bytes);
    let t = PTrace::parse_from_bytes(&bytes).unwrap();
    let te = (t.packet.iter())
        .find(|p| p.has_track_event() && p.track_event().name() == "step")
        .unwrap()
        .track_event();
    assert_eq!(te.debug_annotations.len(), 10);
}
