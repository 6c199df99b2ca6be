//! `ikp decode` of a buffer with async ranges: the Chrome trace, the summary and the
//! Perfetto trace (in memory and streamed) show them, and the warning line counts the
//! token that never ends and the end without a begin.
use crate::util::{ikp, packets, s};
use perfetto_protos::track_event::track_event::Type;
use serde_json::Value;
use std::path::Path;

/// A producer lane begins tokens 1, 2 and 3 of the async region `tma`; a consumer lane of
/// the same block ends 1 and 2, and a token 4 that never began.
fn buffer(path: &Path) {
    let layout = ikp_device::Layout {
        groups_per_block: 2,
        records_per_lane: 8,
        regions: vec!["tma".into(), "compute".into()],
        async_regions: vec![0],
        ..ikp_device::Layout::default()
    };
    let mut b = ikp_device::encoder::BufferWriter::new(layout).unwrap();
    let t0 = 5_000u64;
    b.lane(0)
        .init(1, 0, 0, t0, 0)
        .range_begin(0, 1, t0 + 10)
        .range_begin(0, 2, t0 + 20)
        .range_begin(0, 3, t0 + 30)
        .finalize(t0 + 100, 0);
    b.lane(1)
        .init(1, 4, 0, t0, 0)
        .begin(1, 0, t0 + 5)
        .range_end(0, 1, t0 + 40)
        .range_end(0, 2, t0 + 60)
        .range_end(0, 4, t0 + 70)
        .end(1, 0, t0 + 80)
        .finalize(t0 + 100, 0);
    std::fs::write(path, b.to_bytes()).unwrap();
}

#[test]
fn decode_shows_async_ranges_in_every_output_and_warns_of_the_unmatched() {
    let d = tempfile::tempdir().unwrap();
    let buf = d.path().join("async.ikp");
    buffer(&buf);
    let (chrome, summary) = (d.path().join("a.json"), d.path().join("a_summary.json"));
    let o = ikp(&[
        "decode",
        s(&buf),
        "--chrome",
        s(&chrome),
        "--summary",
        s(&summary),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("1 async begins never ended, 1 async ends without a begin"),
        "{err}"
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&chrome).unwrap()).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    let phases: Vec<(&str, u64, f64)> = (ev.iter())
        .filter(|e| e["cat"] == "async")
        .map(|e| {
            (
                e["ph"].as_str().unwrap(),
                e["id"].as_u64().unwrap(),
                e["ts"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        phases,
        [
            ("b", 0, 0.010),
            ("e", 0, 0.040),
            ("b", 1, 0.020),
            ("e", 1, 0.060)
        ]
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    let a = &v["async_ranges"];
    assert_eq!(a["count"], 2);
    assert_eq!(
        (&a["unmatched_begin"], &a["unmatched_end"]),
        (&1.into(), &1.into())
    );
    assert_eq!(a["regions"][0]["name"], "tma");
    assert_eq!(a["regions"][0]["max_dur"], 40.0);

    // Perfetto, in memory and streamed: the same async slices on the track of `tma`.
    for stream in [false, true] {
        let p = d.path().join(format!("a{stream}.pftrace"));
        let mut args = vec!["decode", s(&buf), "--perfetto", s(&p)];
        if stream {
            args.push("--stream");
        }
        let o = ikp(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        assert!(err.contains("1 async begins never ended"), "{err}");
        let t = packets(&std::fs::read(&p).unwrap());
        let begins_on = |name: &str| {
            let track = (t.iter())
                .filter(|p| p.has_track_descriptor())
                .find(|p| p.track_descriptor().name() == name)
                .map(|p| p.track_descriptor().uuid())
                .unwrap_or_else(|| panic!("no track {name:?} (stream {stream})"));
            (t.iter())
                .filter(|p| p.has_track_event() && p.track_event().track_uuid() == track)
                .filter(|p| p.track_event().type_() == Type::TYPE_SLICE_BEGIN)
                .map(|p| p.timestamp())
                .collect::<Vec<u64>>()
        };
        // Ranges 1 (10..40) and 2 (20..60) overlap: one on the track, one on its overlap.
        assert_eq!(begins_on("async · tma"), [10], "stream {stream}");
        assert_eq!(
            begins_on("async · tma (overlap 1)"),
            [20],
            "stream {stream}"
        );
    }
}
