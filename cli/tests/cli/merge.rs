//! Host clocks on the command line: `ikp merge` writes the library's merged trace, atomic
//! and refusing buffers without a clock sync by name; `ikp decode --summary` shows the
//! sync; `ikp decode --host-clock` places a buffer on the host clock.
use crate::util::{ikp, s};
use ikp_device::encoder::BufferWriter;
use ikp_device::{ClockSync, Layout};
use ikp_host::{read_chrome_trace, write_merged};
use ikp_host::{Compression, HostClock, Launch, PerfettoOptions};
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../host/tests/fixtures/merge/kineto_small.json")
}

const SYNC: ClockSync = ClockSync {
    host_realtime_ns: 1_700_000_000_000_007_000,
    host_monotonic_ns: 9_000_007_000,
    device_globaltimer_ns: 1_000_000,
    round_trip_ns: 3_001,
    samples: 16,
};

/// A one-lane buffer (`work` from device 1_001_000 to 1_001_500) written to `dir/name`.
fn buffer(dir: &Path, name: &str, sync: Option<ClockSync>) -> PathBuf {
    let layout = Layout {
        regions: vec!["work".into()],
        clock_sync: sync,
        ..Layout::default()
    };
    let mut w = BufferWriter::new(layout).unwrap();
    w.lane(0)
        .init(2, 0, 0, 1_000_900, 0)
        .begin(0, 0, 1_001_000)
        .end(0, 0, 1_001_500)
        .finalize(1_002_000, 0);
    let p = dir.join(name);
    let bytes: Vec<u8> = w
        .into_words()
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn merge_writes_the_librarys_trace() {
    let d = tempfile::tempdir().unwrap();
    let buf = buffer(d.path(), "attn.ikp", Some(SYNC));
    let out = d.path().join("merged.pftrace");
    let o = ikp(&[
        "merge",
        s(&buf),
        "--host",
        s(&fixture()),
        "-o",
        s(&out),
        "--perfetto-compression",
        "none",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("6 host slices, 1 host instants (1 clipped"),
        "{err}"
    );
    assert!(err.contains("realtime clock"), "{err}");
    assert!(
        err.contains("skipped host events: 1 \"f\", 1 \"s\""),
        "{err}"
    );
    let trace = ikp_host::load(&buf, &Default::default()).unwrap();
    let host = read_chrome_trace(&fixture(), &Default::default()).unwrap();
    let mut want = Vec::new();
    let opts = PerfettoOptions {
        compression: Compression::None,
        ..PerfettoOptions::default()
    };
    write_merged(
        &mut want,
        &[Launch::new("attn.ikp", &trace)],
        &host,
        "kineto_small.json",
        &opts,
    )
    .unwrap();
    assert!(std::fs::read(&out).unwrap() == want, "CLI output differs");
}

#[test]
fn merge_refuses_a_buffer_without_a_sync_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let good = buffer(d.path(), "good.ikp", Some(SYNC));
    let old = buffer(d.path(), "old.ikp", None);
    let out = d.path().join("m.pftrace");
    let o = ikp(&[
        "merge",
        s(&good),
        s(&old),
        "--host",
        s(&fixture()),
        "-o",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "(old.ikp) was recorded without a host clock sync: record it with HostSession"
        ) && err.contains("--assume-offset-ns places it"),
        "{err}"
    );
    assert!(!out.exists());
    // With an assumed offset the unsynced buffer is placed by it: its `work` span (device
    // 1_001_000) lands at host BASE + 2 µs.
    let o = ikp(&[
        "merge",
        s(&old),
        "--host",
        s(&fixture()),
        "-o",
        s(&out),
        "--perfetto-compression",
        "none",
        "--assume-offset-ns",
        "1699999999999001000",
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut trace = ikp_host::load(&old, &Default::default()).unwrap();
    trace.source.clock_sync = Some(ClockSync {
        host_realtime_ns: 1_700_000_000_000_001_000,
        host_monotonic_ns: 1_700_000_000_000_001_000,
        device_globaltimer_ns: 1_000_000,
        round_trip_ns: 0,
        samples: 0,
    });
    let host = read_chrome_trace(&fixture(), &Default::default()).unwrap();
    let mut want = Vec::new();
    let opts = PerfettoOptions {
        compression: Compression::None,
        ..PerfettoOptions::default()
    };
    let launches = [Launch::new("old.ikp", &trace)];
    write_merged(&mut want, &launches, &host, "kineto_small.json", &opts).unwrap();
    let got = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    assert!(
        got == want,
        "placed by the offset as by a sync of that offset"
    );
    // The lane's active-lanes counter starts at its init, device 1_000_900: host + 1.9 µs.
    let t = |b: &[u8]| {
        let p = <perfetto_protos::trace::Trace as protobuf::Message>::parse_from_bytes(b).unwrap();
        (p.packet.iter())
            .filter(|p| p.has_track_event() && p.trusted_packet_sequence_id() == 1)
            .map(|p| p.timestamp())
            .collect::<Vec<u64>>()
    };
    assert!(t(&got).contains(&1_700_000_000_000_001_900));
    // A host trace that is not JSON is named too.
    let bad = d.path().join("bad.json");
    std::fs::write(&bad, "{").unwrap();
    let o = ikp(&["merge", s(&good), "--host", s(&bad), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.json is not a Chrome trace JSON file"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn decode_summary_shows_the_sync_and_host_clock_places_the_launch() {
    let d = tempfile::tempdir().unwrap();
    let buf = buffer(d.path(), "a.ikp", Some(SYNC));
    let sum = d.path().join("s.json");
    let o = ikp(&["decode", s(&buf), "--summary", s(&sum), "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&sum).unwrap()).unwrap();
    let c = &v["clock_sync"];
    assert_eq!(c["round_trip_ns"], 3_001);
    assert_eq!(c["error_bound_ns"], 1_500);
    assert_eq!(c["samples"], 16);
    assert_eq!(
        c["realtime_minus_device_ns"],
        1_700_000_000_000_007_000i64 - 1_000_000
    );
    assert_eq!(c["monotonic_minus_device_ns"], 9_000_007_000i64 - 1_000_000);
    // Time base: the lane's start, device 1_000_900.
    assert_eq!(c["time_base_realtime_ns"], 1_700_000_000_000_007_900u64);
    assert_eq!(c["time_base_monotonic_ns"], 9_000_007_900u64);
    // The table says where the launch started on the host's clocks, within what.
    let o = ikp(&["summary", s(&buf)]);
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains(
            "host clock sync: started at host realtime 1700000000000007900 ns, monotonic \
             9000007900 ns, within 1500 ns (16 samples)"
        ),
        "{table}"
    );
    // --host-clock: the library's bytes; without a sync, an error naming the buffer.
    let out = d.path().join("a.pftrace");
    let o = ikp(&[
        "decode",
        s(&buf),
        "--perfetto",
        s(&out),
        "--host-clock",
        "monotonic",
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let trace = ikp_host::load(&buf, &Default::default()).unwrap();
    let mut want = Vec::new();
    let opts = PerfettoOptions {
        host_clock: Some(HostClock::Monotonic),
        ..PerfettoOptions::default()
    };
    ikp_host::write_perfetto(&mut want, &[Launch::new("a.ikp", &trace)], &opts).unwrap();
    assert!(std::fs::read(&out).unwrap() == want);
    let plain = buffer(d.path(), "plain.ikp", None);
    let o = ikp(&[
        "decode",
        s(&plain),
        "--perfetto",
        s(&d.path().join("p.pftrace")),
        "--host-clock",
        "realtime",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("(plain.ikp) was recorded without a host clock sync"),
        "{err}"
    );
    // The summary of a buffer without a sync has no clock_sync key.
    let sum2 = d.path().join("s2.json");
    assert!(ikp(&["decode", s(&plain), "--summary", s(&sum2), "-q"])
        .status
        .success());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&sum2).unwrap()).unwrap();
    assert!(v.get("clock_sync").is_none());
}
