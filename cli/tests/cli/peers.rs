//! Other profilers' outputs through every command: the shipped yao-jz ring dump (with its
//! names file) and Proton trace decode to Perfetto, Chrome, summary, CSV and block
//! distributions, and go
//! through `summary`, `analyze` and `report`, detected or named with `--format`; Proton's
//! clock is stated and can be given; a wrong `--format` fails naming the file.
use crate::util::{ikp, repo, s};
use perfetto_protos::trace::Trace as PTrace;
use perfetto_protos::track_event::track_event::Type;
use protobuf::Message;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

fn ok(o: Output) -> Vec<u8> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

/// The shipped samples and what they hold: format, file, extra arguments, lanes, spans.
fn samples() -> [(&'static str, PathBuf, Vec<String>, usize, usize); 2] {
    let names = repo().join("samples/yaojz_attention.names");
    [
        (
            "yao-jz",
            repo().join("samples/yaojz_attention.yjz"),
            vec!["--names".into(), s(&names).into()],
            15,
            69,
        ),
        (
            "proton",
            repo().join("samples/proton_attn_fwd.chrome_trace"),
            vec![],
            16,
            56,
        ),
    ]
}

/// Slices begun in an uncompressed Perfetto trace.
fn perfetto_slices(bytes: &[u8]) -> usize {
    let t = PTrace::parse_from_bytes(bytes).expect("a perfetto.protos.Trace");
    (t.packet.iter())
        .filter(|p| p.has_track_event() && p.track_event().type_() == Type::TYPE_SLICE_BEGIN)
        .count()
}

#[test]
fn decode_writes_every_output_detected_or_named() {
    for (format, buf, extra, lanes, spans) in samples() {
        for named in [false, true] {
            let d = tempfile::tempdir().unwrap();
            let (perfetto, chrome) = (d.path().join("k.trace"), d.path().join("k.json"));
            let (summary, csv) = (d.path().join("k_summary.json"), d.path().join("k.csv"));
            let dists = d.path().join("k_dists");
            let mut args: Vec<String> = vec!["decode".into(), s(&buf).into()];
            if named {
                args.extend(["--format".into(), format.into()]);
            }
            args.extend(extra.iter().cloned());
            for (flag, p) in [
                ("--perfetto", &perfetto),
                ("--chrome", &chrome),
                ("--summary", &summary),
                ("--csv", &csv),
                ("--block-dists", &dists),
            ] {
                args.extend([flag.into(), s(p).into()]);
            }
            args.extend(["--perfetto-compression".into(), "none".into()]);
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            ok(ikp(&a));
            assert_eq!(
                perfetto_slices(&std::fs::read(&perfetto).unwrap()),
                spans,
                "{format}"
            );
            let c: Value = serde_json::from_slice(&std::fs::read(&chrome).unwrap()).unwrap();
            let ev = c["traceEvents"].as_array().unwrap();
            assert_eq!(ev.iter().filter(|e| e["ph"] == "X").count(), spans);
            // A row per lane, and rows of their own for regions that overlap others of
            // their lane (Proton's scopes of one warp may: its `line`s).
            let overlap = |e: &Value| e["args"]["name"].as_str().unwrap().contains("(overlap ");
            let threads: Vec<&Value> = ev.iter().filter(|e| e["name"] == "thread_name").collect();
            assert_eq!(
                threads.iter().filter(|e| !overlap(e)).count(),
                lanes,
                "{format}"
            );
            let v: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
            assert_eq!(v["format"], format);
            let count: u64 = (v["regions"].as_array().unwrap().iter())
                .map(|r| r["count"].as_u64().unwrap())
                .sum();
            assert_eq!(count as usize, spans);
            let rows = std::fs::read_to_string(&csv).unwrap().lines().count();
            assert_eq!(rows, spans + 1);
            let idx: Value =
                serde_json::from_slice(&std::fs::read(dists.join("index.json")).unwrap()).unwrap();
            assert_eq!(idx["blocks"], serde_json::json!([0, 1, 2, 3]), "{format}");
            // The names file names yao-jz's regions; Proton's come from the trace.
            let names: Vec<&str> = (v["regions"].as_array().unwrap().iter())
                .map(|r| r["name"].as_str().unwrap())
                .collect();
            assert!(names.contains(&"softmax"), "{names:?}");
        }
    }
}

#[test]
fn summary_analyze_and_report_take_both() {
    for (format, buf, extra, lanes, _) in samples() {
        let d = tempfile::tempdir().unwrap();
        let with = |cmd: &str, more: &[&str]| -> Vec<String> {
            let mut a: Vec<String> = vec![cmd.into(), s(&buf).into()];
            a.extend(extra.iter().cloned());
            a.extend(more.iter().map(|m| m.to_string()));
            a
        };
        let run = |a: Vec<String>| ok(ikp(&a.iter().map(String::as_str).collect::<Vec<_>>()));
        let table = String::from_utf8(run(with("summary", &[]))).unwrap();
        assert!(table.contains(&format!("{lanes} lanes")), "{table}");
        assert!(table.contains("softmax"), "{table}");
        let json = d.path().join("a.json");
        let text = String::from_utf8(run(with("analyze", &["--json", s(&json)]))).unwrap();
        assert!(text.contains("GPU wall time"), "{text}");
        assert_eq!(text.contains("not measured"), format == "proton", "{text}");
        let a: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(a["blocks"], 4, "{format}");
        let out = d.path().join("r");
        run(with("report", &["-o", s(&out)]));
        let html = std::fs::read_to_string(out.join("report.html")).unwrap();
        assert!(html.contains("softmax"));
        // Proton's times rest on a clock nobody measured: the report says so.
        assert_eq!(
            html.contains("not measured"),
            format == "proton",
            "{format}"
        );
    }
}

/// Spans' durations from `ikp decode --csv`, summed.
fn csv_total(buf: &Path, extra: &[&str]) -> u64 {
    let d = tempfile::tempdir().unwrap();
    let csv = d.path().join("k.csv");
    let mut a = vec!["decode", s(buf), "--csv", s(&csv)];
    a.extend_from_slice(extra);
    ok(ikp(&a));
    let text = std::fs::read_to_string(&csv).unwrap();
    (text.lines().skip(1))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            f[f.len() - 3].parse::<u64>().unwrap()
        })
        .sum()
}

#[test]
fn proton_clock_is_stated_and_can_be_given() {
    let buf = repo().join("samples/proton_attn_fwd.chrome_trace");
    let table = String::from_utf8(ok(ikp(&["summary", s(&buf)]))).unwrap();
    assert!(
        table.contains("1000 MHz (assumed by the tool, not measured)"),
        "{table}"
    );
    let at_1g = csv_total(&buf, &[]);
    let at_2g = csv_total(&buf, &["--proton-clock-mhz", "2000"]);
    // Each duration halves, rounded to the ns.
    let spans = 56;
    assert!(
        at_2g * 2 >= at_1g - spans && at_2g * 2 <= at_1g + spans,
        "{at_1g} {at_2g}"
    );
    let table =
        String::from_utf8(ok(ikp(&["summary", s(&buf), "--proton-clock-mhz", "2000"]))).unwrap();
    assert!(table.contains("2000 MHz (given, not measured)"), "{table}");
    let o = ikp(&["summary", s(&buf), "--proton-clock-mhz", "0"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(s(&buf)) && err.contains("0 MHz"), "{err}");
}

#[test]
fn a_wrong_format_fails_naming_the_file_and_leaves_no_output() {
    let yjz = repo().join("samples/yaojz_attention.yjz");
    let proton = repo().join("samples/proton_attn_fwd.chrome_trace");
    let native = repo().join("samples/attention.ikp");
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out.json");
    // JSON text read as words fails on its length, or else on its first word.
    let json_as_words = if std::fs::metadata(&proton).unwrap().len().is_multiple_of(8) {
        ("not the dump magic", "TVM-format header")
    } else {
        ("not a multiple of 8", "not a multiple of 8")
    };
    for (buf, format, want) in [
        (&yjz, "proton", "not a Chrome trace"),
        (&native, "proton", "not a Chrome trace"),
        (&proton, "yao-jz", json_as_words.0),
        (&native, "yao-jz", "not the dump magic"),
        (&proton, "tvm", json_as_words.1),
        (&yjz, "ikp", "ikp header"),
        (&yjz, "tvm", "TVM-format header"),
    ] {
        let o = ikp(&["decode", s(buf), "--format", format, "--chrome", s(&out)]);
        assert_eq!(o.status.code(), Some(1), "{format} on {}", buf.display());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(s(buf)) && err.contains(want),
            "{format} on {}: {err}",
            buf.display()
        );
        assert!(!out.exists());
    }
}
