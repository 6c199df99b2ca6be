//! `ikp analyze` on what the sample alone does not show: a TVM-format buffer (no SM ids),
//! an annotation that claims more than the GPU can do, the critical path in Perfetto, and
//! the HTML report showing the analysis' own figures.
use crate::util::{ikp, s};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn sample() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../samples/attention.ikp");
    p.to_str().unwrap().to_owned()
}

/// A 64-block TVM-format sample and its region names, in `d`.
fn tvm(d: &Path) -> (PathBuf, PathBuf) {
    let (buf, names) = (d.join("tvm.bin"), d.join("names.txt"));
    ok(ikp(&["sample", s(&buf), "--tvm-blocks", "64"]));
    std::fs::write(&names, ikp_device::sample::REGIONS.join("\n")).unwrap();
    (buf, names)
}

#[test]
fn tvm_buffer_per_block_equations_hold_and_sm_figures_are_not_available() {
    let d = tempfile::tempdir().unwrap();
    let (buf, names) = tvm(d.path());
    let json = d.path().join("an.json");
    let text = ok(ikp(&[
        "analyze",
        s(&buf),
        "--names",
        s(&names),
        "--json",
        s(&json),
    ]));
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let u = |x: &Value| x.as_u64().unwrap();
    assert_eq!(v["format"], "tvm");
    let bbs = v["block_breakdowns"].as_array().unwrap();
    let per = v["compute_isolation"]["per_block"].as_array().unwrap();
    assert_eq!((bbs.len(), per.len()), (64, 64));
    for (b, p) in bbs.iter().zip(per) {
        let parts: u64 = [
            "compute",
            "exposed_wait",
            "exposed_load",
            "exposed_store",
            "exposed_comm",
            "exposed_other",
            "idle",
        ]
        .iter()
        .map(|k| u(&b[k]))
        .sum();
        assert_eq!(parts, u(&b["total"]));
        assert_eq!(u(&p["length_ns"]), u(&b["total"]));
        assert_eq!(
            u(&p["compute_ns"]) + u(&p["blocked_ns"]),
            u(&p["length_ns"])
        );
        assert!(u(&p["blocked_ns"]) > 0, "the sample's groups wait");
    }
    // No SM ids in the format: no SM figure, in JSON or text.
    assert!(v["imbalance"]["sms"].is_null(), "{}", v["imbalance"]);
    assert!(v["imbalance"]["tail"].is_null());
    assert!(v["imbalance"]["sm_occupancy"]
        .as_array()
        .unwrap()
        .is_empty());
    let na = "n/a (the TVM format records no SM ids)";
    assert!(
        text.contains(&format!("SM busy time, slowest / median: {na}")),
        "{text}"
    );
    assert!(text.contains(&format!("last-wave tail: {na}")), "{text}");
    assert!(!text.contains("0.00"), "{text}");
    // Tracks are named without warp / SM, which the format does not record.
    let steps = v["critical_path"]["steps"].as_array().unwrap();
    assert!(!steps.is_empty());
    for st in steps {
        assert!(st["warp"].is_null() && st["sm"].is_null());
        let want = format!("block {} · group {}", st["block"], st["group"]);
        assert_eq!(st["track"], want.as_str());
    }

    // The report says the same.
    let out = d.path().join("report");
    ok(ikp(&[
        "report",
        s(&buf),
        "--names",
        s(&names),
        "-o",
        s(&out),
    ]));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains(&format!("SMs: slowest / median busy = {na}")),
        "SM figure in the report"
    );
    assert!(!html.contains("busy = 0.00"));
}

#[test]
fn report_shows_the_analysis_figures() {
    use ikp_host::format_duration as fmt_ns;
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("an.json");
    ok(ikp(&["analyze", &sample(), "--json", s(&json)]));
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let out = d.path().join("report");
    ok(ikp(&["report", &sample(), "-o", s(&out)]));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    // Block-time and the compute isolation share, as the report formats them.
    let bt = v["block_time_ns"].as_u64().unwrap() as f64;
    let iso = &v["compute_isolation"];
    let share = 100.0 * iso["compute_ns"].as_u64().unwrap() as f64 / bt;
    assert!(
        html.contains(&format!(
            "Block-time {}: the sum over 64 blocks",
            fmt_ns(bt)
        )),
        "block-time"
    );
    assert!(
        html.contains(&format!("({share:.1}% of block-time)")),
        "isolation share {share:.1}"
    );
    // The breakdown table's compute share is the analysis' compute over block-time.
    let compute = v["breakdown"]["compute"].as_u64().unwrap() as f64;
    let row = format!(
        "<tr><td>compute</td><td>{}</td><td>{:.1}%</td>",
        fmt_ns(compute),
        100.0 * compute / bt
    );
    assert!(html.contains(&row), "{row}");
}

#[test]
fn a_rate_above_the_roof_is_flagged_not_reported() {
    let d = tempfile::tempdir().unwrap();
    let ann = d.path().join("work.json");
    // 1 PFLOP per qk_gemm: far beyond any GPU.
    std::fs::write(
        &ann,
        r#"{"qk_gemm": {"flops": 1e15}, "pv_gemm": {"flops": 1e3, "bytes": 1e3}}"#,
    )
    .unwrap();
    let json = d.path().join("an.json");
    let text = ok(ikp(&[
        "analyze",
        &sample(),
        "--annotations",
        s(&ann),
        "--json",
        s(&json),
    ]));
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let roof = v["roofline"].as_array().unwrap();
    let by = |n: &str| roof.iter().find(|r| r["name"] == n).unwrap();
    assert_eq!(by("qk_gemm")["impossible"], true);
    assert_eq!(by("pv_gemm")["impossible"], false);
    let line = text
        .lines()
        .find(|l| l.contains("roofline qk_gemm"))
        .expect("a qk_gemm roofline line");
    assert!(
        line.starts_with("warning: ")
            && line.contains("check the annotation or the GPU preset")
            && !line.contains("TFLOP/s"),
        "{line}"
    );
    assert!(text.contains("roofline pv_gemm: "), "{text}");
}

#[test]
fn decode_perfetto_marks_the_critical_path_on_request() {
    use perfetto_protos::trace::Trace;
    use protobuf::Message;
    let d = tempfile::tempdir().unwrap();
    let tracks = |extra: &[&str]| -> Vec<String> {
        let out = d.path().join("a.trace");
        let mut args = vec![
            "decode",
            &sample(),
            "--perfetto",
            s(&out),
            "--perfetto-compression",
            "none",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
        args.extend(extra.iter().map(|x| x.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(ikp(&args));
        let t = Trace::parse_from_bytes(&std::fs::read(&out).unwrap()).unwrap();
        t.packet
            .iter()
            .filter(|p| p.has_track_descriptor())
            .map(|p| p.track_descriptor().name().to_string())
            .collect()
    };
    let json = d.path().join("an.json");
    ok(ikp(&["analyze", &sample(), "--json", s(&json)]));
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let want = format!(
        "critical path · block {} (slowest)",
        v["critical_path"]["block"]
    );
    assert!(tracks(&["--perfetto-critical-path"]).contains(&want));
    assert!(!tracks(&[]).iter().any(|n| n.starts_with("critical path")));
}
