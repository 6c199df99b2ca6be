//! A buffer of several launches (epochs) end to end: `ikp decode --perfetto` writes a
//! launch per epoch (also when asked to stream), `ikp summary`, `analyze` and `report`
//! show each, launches past the buffer's room are named in a warning, one-launch outputs
//! are a usage error; `--correct-overhead` reports the correction it applied.

use crate::util::{ikp, launches, packets, s, text, write_epochs};
use ikp_device::encoder::BufferWriter;
use ikp_device::Layout;

#[test]
fn decode_writes_a_launch_per_epoch_and_names_the_launches_not_recorded() {
    let d = tempfile::tempdir().unwrap();
    let buf = d.path().join("loop.ikp");
    write_epochs(&buf);
    let want: Vec<(String, u64)> = (0..3u64)
        .map(|k| (format!("launch {k}: loop.ikp · launch {k}"), 2 * (k + 1)))
        .collect();
    for stream in [false, true] {
        let out = d.path().join(format!("loop.{stream}.trace"));
        let mut args = vec!["decode", s(&buf), "--perfetto", s(&out), "-q"];
        if stream {
            args.push("--stream");
        }
        let o = ikp(&args);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(
                "loop.ikp: 4 launches ran, the buffer holds 3: the last 1 were not recorded"
            ),
            "{}",
            text(&o.stderr)
        );
        let got = launches(&packets(&std::fs::read(&out).unwrap()));
        assert_eq!(got, want, "--stream {stream}");
    }
    // No output: each launch's table.
    let o = ikp(&["decode", s(&buf)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    for k in 0..3 {
        assert!(
            out.contains(&format!("==> loop.ikp · launch {k} <==")),
            "{out}"
        );
    }
    // A one-launch output is a usage error, and nothing is written.
    let summary = d.path().join("s.json");
    let o = ikp(&["decode", s(&buf), "--summary", s(&summary)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("holds 3 launches"),
        "{}",
        text(&o.stderr)
    );
    assert!(!summary.exists());
}

#[test]
fn summary_analyze_and_report_show_every_launch() {
    let d = tempfile::tempdir().unwrap();
    let buf = d.path().join("loop.ikp");
    write_epochs(&buf);
    for cmd in ["summary", "analyze"] {
        let o = ikp(&[cmd, s(&buf)]);
        assert!(o.status.success(), "{cmd}: {}", text(&o.stderr));
        let out = text(&o.stdout);
        let heads: Vec<&str> = out.lines().filter(|l| l.starts_with("==> ")).collect();
        assert_eq!(
            heads,
            [
                "==> loop.ikp · launch 0 <==",
                "==> loop.ikp · launch 1 <==",
                "==> loop.ikp · launch 2 <=="
            ],
            "{cmd}"
        );
    }
    let summary = ikp(&["summary", s(&buf)]);
    assert!(text(&summary.stdout).contains("4 launches ran, the buffer holds 3"));
    let o = ikp(&["analyze", s(&buf), "--json", s(&d.path().join("a.json"))]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let dir = d.path().join("report");
    let o = ikp(&["report", s(&buf), "-o", s(&dir)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for k in 0..3 {
        assert!(
            html.contains(&format!("launch {k}")),
            "launch {k} in the report"
        );
    }
    assert!(html.contains("4 launches ran, the buffer holds 3: the last 1 were not recorded"));
    assert!(!html.contains("Overhead correction"));
    let o = ikp(&["report", s(&buf), "-o", s(&dir), "--correct-overhead"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("Overhead correction: 4.000 ns per record"));
    // A command that takes one launch says how to see them.
    let o = ikp(&["plot", s(&buf), "-o", s(&d.path().join("plots"))]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("holds 3 launches"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn correct_overhead_reports_the_correction_in_the_summary_and_the_table() {
    let d = tempfile::tempdir().unwrap();
    let buf = d.path().join("loop.ikp");
    write_epochs(&buf);
    let o = ikp(&["summary", s(&buf)]);
    assert!(!text(&o.stdout).contains("overhead correction"));
    let o = ikp(&["summary", s(&buf), "--correct-overhead"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    // Launch 2: lane 0's step holds 4 records (two inner spans), 4 ns each.
    assert!(
        out.contains("overhead correction: 4.000 ns per record (median), 1 lanes corrected, 1 not measured; 1 span ends moved, 16 ns removed"),
        "{out}"
    );
    // The same figures in the summary JSON, with the streaming path declined.
    let s_json = d.path().join("s.json");
    let out = d.path().join("x.trace");
    let o = ikp(&[
        "decode",
        s(&buf),
        "--perfetto",
        s(&out),
        "--stream",
        "--correct-overhead",
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let one = d.path().join("one.ikp");
    let mut b = BufferWriter::new(Layout {
        records_per_lane: 8,
        regions: vec!["a".into()],
        ..Layout::default()
    })
    .unwrap();
    let mut w = b.lane(0);
    w.init(0, 0, 0, 1_000, 0).calibrate(8);
    w.begin(0, 0, 1_100)
        .instant(0, 0, 1_150)
        .end(0, 0, 1_200)
        .finalize(11_000, 20_000);
    std::fs::write(&one, b.to_bytes()).unwrap();
    let o = ikp(&[
        "decode",
        s(&one),
        "--summary",
        s(&s_json),
        "--correct-overhead",
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&s_json).unwrap()).unwrap();
    let c = &v["overhead_correction"];
    assert_eq!(
        (
            c["lanes_corrected"].as_u64(),
            c["total_ns_removed"].as_u64()
        ),
        (Some(1), Some(4))
    );
    assert_eq!(v["regions"][0]["total_dur"].as_f64(), Some(96.0));
}
