//! A stream file (`.ikps`, what a stream launch's drain writes) read by every command as a
//! buffer is: the shipped sample (the tests' CPU emulation of stream lanes, drop mode,
//! with drops and drop marks), and a cut-short copy refused with the file named.
use crate::util::{ikp, ikp_ok, repo, s, text};
use serde_json::Value;

fn sample() -> std::path::PathBuf {
    repo().join("samples/stream_emulated.ikps")
}

#[test]
fn every_command_reads_the_stream_sample() {
    let d = tempfile::tempdir().unwrap();
    let (perfetto, summary) = (d.path().join("s.trace"), d.path().join("s.json"));
    let o = ikp(&[
        "decode",
        s(&sample()),
        "--perfetto",
        s(&perfetto),
        "--summary",
        s(&summary),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(std::fs::metadata(&perfetto).unwrap().len() > 0);
    let v: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(v["format"], "ikp");
    // The drops are counted per lane.
    let dropped = v["dropped"].as_u64().unwrap();
    let by_lane: u64 = (v["dropped_by_lane"].as_array().unwrap().iter())
        .map(|l| l["dropped"].as_u64().unwrap())
        .sum();
    assert!(dropped > 0 && by_lane == dropped, "{dropped} vs {by_lane}");
    assert!(
        text(&o.stderr).contains("dropped"),
        "the warning line names the drops: {}",
        text(&o.stderr)
    );
    let table = ikp_ok(&["summary", s(&sample())]);
    assert!(
        table.contains("work") && table.contains("dropped"),
        "{table}"
    );
    let analysis = d.path().join("a.json");
    ikp_ok(&["analyze", s(&sample()), "--json", s(&analysis)]);
    let a: Value = serde_json::from_slice(&std::fs::read(&analysis).unwrap()).unwrap();
    assert!(a.is_object());
    assert_eq!(v["stream"]["wait"], false);
    assert_eq!(v["stream"]["ring_records"], 64);
    let report = d.path().join("report");
    ikp_ok(&["report", s(&sample()), "--out-dir", s(&report)]);
    let html = std::fs::read_to_string(report.join("report.html")).unwrap();
    assert!(
        html.contains("stream file · rings of 64 records, dropping when full"),
        "the report does not say it is a stream launch"
    );
}

#[test]
fn a_cut_short_stream_file_is_refused_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(sample()).unwrap();
    let cut = d.path().join("cut.ikps");
    std::fs::write(&cut, &bytes[..bytes.len() - 80]).unwrap();
    let out = d.path().join("cut.trace");
    let o = ikp(&["decode", s(&cut), "--perfetto", s(&out)]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("cut.ikps") && err.contains("did not finish"),
        "{err}"
    );
    assert!(!out.exists(), "a half-written output was left");
}

/// `--stream` decodes a stream file lane by lane (as a native buffer of 1 GiB or more would
/// be without it): the Perfetto trace is the in-memory decode's, byte for byte.
#[test]
fn a_stream_file_decoded_lane_by_lane_writes_the_same_trace() {
    let d = tempfile::tempdir().unwrap();
    let (whole, lanes) = (d.path().join("whole.trace"), d.path().join("lanes.trace"));
    ikp_ok(&["decode", s(&sample()), "--perfetto", s(&whole)]);
    ikp_ok(&["decode", s(&sample()), "--perfetto", s(&lanes), "--stream"]);
    let (a, b) = (
        std::fs::read(&whole).unwrap(),
        std::fs::read(&lanes).unwrap(),
    );
    assert!(!a.is_empty());
    assert!(
        a == b,
        "the lane-by-lane trace differs from the in-memory one"
    );
}
