//! What every command shares: `--block-filter` restricts every output and figure to the
//! blocks given, a reader that closes the pipe ends a command quietly with status 0, and
//! the outputs of one command are written all together or not at all.
use crate::util::{ikp, ikp_command, s};
use ikp_host::analysis::kernel::{analyze, KernelOptions};
use ikp_host::report::{plots, prepare, write_html, ReportOptions};
use ikp_host::{
    write_analysis, write_diff, write_table, AnalysisTextOptions, BlockFilter, ChromeOptions,
    DecodeOptions, Launch, Trace, TraceStats,
};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

fn ok(o: Output) -> Vec<u8> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

fn sample() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../samples/attention.ikp")
}

/// The sample decoded as the CLI decodes it with `--block-filter LIST` (or without).
fn load(buf: &Path, list: Option<&str>) -> Trace {
    let opts = DecodeOptions {
        blocks: list.map_or_else(BlockFilter::default, |l| BlockFilter::parse(l).unwrap()),
        ..Default::default()
    };
    ikp_host::load(buf, &opts).unwrap()
}

fn bytes(f: impl FnOnce(&mut Vec<u8>) -> Result<(), ikp_host::WriteError>) -> Vec<u8> {
    let mut v = Vec::new();
    f(&mut v).unwrap();
    v
}

const LIST: &str = "3,7-8";

/// The filter is real: it keeps some lanes of the sample, not all of them.
#[test]
fn the_filter_used_here_keeps_some_lanes() {
    let (all, some) = (load(&sample(), None), load(&sample(), Some(LIST)));
    assert!(!some.lanes.is_empty() && some.lanes.len() < all.lanes.len());
    assert!(some.lanes.iter().all(|l| [3, 7, 8].contains(&l.block)));
}

#[test]
fn summary_honours_the_block_filter() {
    let buf = sample();
    let got = ok(ikp(&["summary", s(&buf), "--block-filter", LIST]));
    let t = load(&buf, Some(LIST));
    let want = bytes(|w| write_table(w, &TraceStats::of(&t), &Default::default()));
    assert_eq!(
        String::from_utf8(got).unwrap(),
        String::from_utf8(want).unwrap()
    );
    let all = ok(ikp(&["summary", s(&buf)]));
    let some = ok(ikp(&["summary", s(&buf), "--block-filter", LIST]));
    assert_ne!(all, some);
}

#[test]
fn analyze_honours_the_block_filter() {
    let buf = sample();
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("a.json");
    let text = ok(ikp(&[
        "analyze",
        s(&buf),
        "--block-filter",
        LIST,
        "--json",
        s(&json),
    ]));
    let t = load(&buf, Some(LIST));
    // The library's defaults are the command's.
    let opts = KernelOptions::default();
    let gpu = opts.gpu.unwrap();
    let a = analyze(&t, &opts);
    assert_eq!(a.blocks, 3);
    let want = bytes(|w| write_analysis(w, &t, &a, gpu, &AnalysisTextOptions::default()));
    assert_eq!(
        String::from_utf8(text).unwrap(),
        String::from_utf8(want).unwrap()
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v, serde_json::to_value(&a).unwrap());
}

#[test]
fn diff_honours_the_block_filter() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a.ikp"), d.path().join("b.ikp"));
    ok(ikp(&["sample", s(&a)]));
    ok(ikp(&["sample", s(&b), "--seed", "3"]));
    let got = ok(ikp(&["diff", s(&a), s(&b), "--block-filter", LIST]));
    let (ta, tb) = (load(&a, Some(LIST)), load(&b, Some(LIST)));
    let run = ikp_host::analysis::diff::diff(&TraceStats::of(&ta), &TraceStats::of(&tb), 5.0);
    let want = bytes(|w| write_diff(w, &run));
    assert_ne!(ok(ikp(&["diff", s(&a), s(&b)])), want);
    assert_eq!(
        String::from_utf8(got).unwrap(),
        String::from_utf8(want).unwrap()
    );
}

#[test]
fn report_honours_the_block_filter() {
    let buf = sample();
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("r");
    ok(ikp(&[
        "report",
        s(&buf),
        "-o",
        s(&out),
        "--block-filter",
        LIST,
    ]));
    let got = std::fs::read(out.join("report.html")).unwrap();
    let t = load(&buf, Some(LIST));
    let label = buf.display().to_string();
    let opts = ReportOptions::default();
    let want = bytes(|w| write_html(w, &prepare(&[Launch::new(&label, &t)], &opts), &opts));
    assert!(got == want, "the report is not that of the filtered trace");
    let html = String::from_utf8(got).unwrap();
    assert!(
        html.contains("the sum over 3 blocks"),
        "block-time of 3 blocks"
    );
}

#[test]
fn plot_honours_the_block_filter() {
    let buf = sample();
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("p");
    ok(ikp(&[
        "plot",
        s(&buf),
        "-o",
        s(&out),
        "--block-filter",
        LIST,
    ]));
    let (some, all) = (load(&buf, Some(LIST)), load(&buf, None));
    let want = plots(&TraceStats::of(&some), 64, 8);
    assert!(!want.is_empty());
    for p in &want {
        let got = std::fs::read_to_string(out.join(&p.file)).unwrap();
        assert_eq!(got, p.svg, "{}", p.file);
    }
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), want.len());
    let all = plots(&TraceStats::of(&all), 64, 8);
    assert!(all.iter().zip(&want).any(|(a, b)| a.svg != b.svg));
}

/// `ikp decode` writes every output of the filtered trace (its summary names the filter).
#[test]
fn decode_honours_the_block_filter_in_every_output() {
    let buf = sample();
    let d = tempfile::tempdir().unwrap();
    let (c, sm, v) = (
        d.path().join("c.json"),
        d.path().join("s.json"),
        d.path().join("v.csv"),
    );
    ok(ikp(&[
        "decode",
        s(&buf),
        "--block-filter",
        LIST,
        "--chrome",
        s(&c),
        "--summary",
        s(&sm),
        "--csv",
        s(&v),
    ]));
    let t = load(&buf, Some(LIST));
    let chrome = bytes(|w| ikp_host::write_chrome(w, &t, &ChromeOptions::default()));
    assert!(std::fs::read(&c).unwrap() == chrome, "chrome");
    let csv = bytes(|w| ikp_host::write_csv(w, &t));
    assert!(std::fs::read(&v).unwrap() == csv, "csv");
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(&sm).unwrap()).unwrap();
    assert_eq!(summary["block_filter"], serde_json::json!([3, 7, 8]));
    let n: u64 = t.lanes.iter().map(|l| l.spans.len() as u64).sum();
    let counted: u64 = summary["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, n);
}

/// `ikp merge` places the filtered launch: its output is the library's merge of the
/// filtered trace (placed by the same assumed offset), and differs from the unfiltered one.
#[test]
fn merge_honours_the_block_filter() {
    let buf = sample();
    let d = tempfile::tempdir().unwrap();
    let host = d.path().join("host.json");
    std::fs::write(
        &host,
        r#"[{"ph":"X","name":"step","pid":1,"tid":1,"ts":1000,"dur":5}]"#,
    )
    .unwrap();
    let merge = |out: &Path, filter: Option<&str>| {
        let mut args = vec![
            "merge",
            s(&buf),
            "--host",
            s(&host),
            "-o",
            s(out),
            "--assume-offset-ns",
            "0",
            "--perfetto-compression",
            "none",
            "-q",
        ];
        args.extend(filter.map(|f| ["--block-filter", f]).into_iter().flatten());
        ok(ikp(&args));
        std::fs::read(out).unwrap()
    };
    let got = merge(&d.path().join("some.pftrace"), Some(LIST));
    assert_ne!(got, merge(&d.path().join("all.pftrace"), None));
    let mut t = load(&buf, Some(LIST));
    t.source.clock_sync = Some(ikp_host::ClockSync {
        host_realtime_ns: 1,
        host_monotonic_ns: 1,
        device_globaltimer_ns: 1,
        round_trip_ns: 0,
        samples: 0,
    });
    let h = ikp_host::read_chrome_trace(&host, &Default::default()).unwrap();
    let opts = ikp_host::PerfettoOptions {
        compression: ikp_host::Compression::None,
        ..Default::default()
    };
    let want = bytes(|w| {
        let l = [Launch::new("attention.ikp", &t)];
        ikp_host::write_merged(w, &l, &h, "host.json", &opts).map(|_| ())
    });
    assert!(got == want, "the merge of the filtered trace");
}

/// Runs `args` with a standard output whose reader is already gone.
fn with_closed_stdout(args: &[&str]) -> Output {
    let mut child = ikp_command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

/// `ikp analyze BUF | head -3` and the like: a closed pipe is not an error (ripgrep's
/// rule), whatever the command writes to standard output.
#[test]
fn every_command_ends_quietly_with_status_0_on_a_closed_pipe() {
    let buf = sample();
    let d = tempfile::tempdir().unwrap();
    let (r, p, h) = (d.path().join("r"), d.path().join("p"), d.path().join("h"));
    let j = d.path().join("host.json");
    std::fs::write(&j, r#"[{"ph":"i","name":"mark","pid":1,"tid":1,"ts":1}]"#).unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["summary", s(&buf)],
        vec!["analyze", s(&buf)],
        vec!["decode", s(&buf)],
        vec!["decode", s(&buf), s(&buf)],
        vec!["decode", s(&buf), "--summary", "-"],
        vec!["decode", s(&buf), "--chrome", "-"],
        vec!["diff", s(&buf), s(&buf)],
        vec!["report", s(&buf), "-o", s(&r)],
        vec!["plot", s(&buf), "-o", s(&p)],
        vec!["header", "-o", s(&h)],
        vec![
            "merge",
            s(&buf),
            "--host",
            s(&j),
            "-o",
            "-",
            "--assume-offset-ns",
            "0",
        ],
    ];
    for args in cases {
        let o = with_closed_stdout(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            !err.contains("error") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

/// The issue's case: a late failure (here the Perfetto path is a directory) after the
/// Chrome trace, the summary and the CSV were written leaves none of them behind.
#[test]
fn outputs_of_one_command_are_written_together_or_not_at_all() {
    let buf = sample();
    let d = tempfile::tempdir().unwrap();
    let (c, sm, v, p) = (
        d.path().join("c.json"),
        d.path().join("s.json"),
        d.path().join("v.csv"),
        d.path().join("p"),
    );
    std::fs::create_dir(&p).unwrap();
    let o = ikp(&[
        "decode",
        s(&buf),
        "--chrome",
        s(&c),
        "--summary",
        s(&sm),
        "--csv",
        s(&v),
        "--perfetto",
        s(&p),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(s(&p)) && err.contains("directory"), "{err}");
    let left: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("p")], "{left:?}");
    assert_eq!(std::fs::read_dir(&p).unwrap().count(), 0);
}

/// `ikp header -o DIR` creates DIR and writes the generator's two headers, naming them.
#[test]
fn header_writes_the_generated_headers_into_a_new_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a/b");
    let out = String::from_utf8(ok(ikp(&["header", "-o", s(&dir)]))).unwrap();
    let (cuh, hpp) = (dir.join("ikp.cuh"), dir.join("ikp_host.hpp"));
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [s(&cuh), s(&hpp)],
        "one written path a line"
    );
    assert_eq!(
        std::fs::read_to_string(&cuh).unwrap(),
        ikp_device::cuh::source()
    );
    assert_eq!(
        std::fs::read_to_string(&hpp).unwrap(),
        ikp_device::cuh::host_source()
    );
}

/// A path that cannot be a directory fails with status 1 and a message naming it.
#[test]
fn header_failure_names_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let o = ikp(&["header", "-o", s(&file)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(s(&file)), "{err}");
    assert!(o.stdout.is_empty());
}
