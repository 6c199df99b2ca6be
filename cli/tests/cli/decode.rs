//! `ikp decode` / `ikp summary` / `ikp sample` end to end: the README's main command on the
//! shipped sample, the TVM format with a names file, bad input (clear error naming the
//! file, non-zero exit, no output file left behind), several buffers into one Perfetto
//! trace, Perfetto compression, and overlapping regions in the Chrome trace.
use crate::util::{ikp, ikp_command, launches, repo, s};
use perfetto_protos::trace::Trace as PTrace;
use perfetto_protos::trace_packet::TracePacket;
use protobuf::Message;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// The shipped sample is exactly what the generator writes (`IKP_BLESS=1` rewrites it).
#[test]
fn shipped_sample_equals_the_generator_output() {
    let want = ikp_device::sample::attention().unwrap().to_bytes();
    let p = repo().join("samples/attention.ikp");
    if std::env::var_os("IKP_BLESS").is_some() {
        std::fs::write(&p, &want).unwrap();
    }
    assert!(
        std::fs::read(&p).unwrap() == want,
        "samples/attention.ikp is stale: IKP_BLESS=1 cargo test -p ikp-cli --test cli shipped_sample"
    );
}

#[test]
fn readme_command_on_the_sample() {
    let d = tempfile::tempdir().unwrap();
    let chrome = d.path().join("attention.json");
    let summary = d.path().join("attention_summary.json");
    let csv = d.path().join("attention.csv");
    let sample = repo().join("samples/attention.ikp");
    let o = ikp(&[
        "decode",
        s(&sample),
        "--chrome",
        s(&chrome),
        "--summary",
        s(&summary),
        "--csv",
        s(&csv),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c: Value = serde_json::from_slice(&std::fs::read(&chrome).unwrap()).unwrap();
    let events = c["traceEvents"].as_array().unwrap();
    // 64 blocks on 32 SMs, 3 lanes each, each lane with its lifetime row.
    let procs = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .count();
    let threads = events.iter().filter(|e| e["name"] == "thread_name").count();
    assert_eq!((procs, threads), (32, 2 * 192));
    let lifetimes = events.iter().filter(|e| e["name"] == "lifetime").count();
    assert_eq!(lifetimes, 192);
    let v: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(v["trace"], "attention.json");
    assert_eq!(
        (v["blocks"].as_u64(), v["warps_per_block"].as_u64()),
        (Some(64), Some(3))
    );
    assert_eq!(
        (v["unmatched_begin"].as_u64(), v["unmatched_end"].as_u64()),
        (Some(0), Some(0))
    );
    let names: Vec<&str> = v["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    for want in [
        "mainloop", "load_kv", "wait.kv", "qk_gemm", "pv_gemm", "softmax", "rowmax", "exp2",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    // One mainloop per lane; the launch crosses a globaltimer_lo wrap, yet no span is
    // longer than the whole launch (about 20 us).
    let ml = v["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "mainloop")
        .unwrap();
    assert_eq!(ml["count"], 192);
    assert!(ml["max_dur"].as_f64().unwrap() < 50_000.0);
    let rows = std::fs::read_to_string(&csv).unwrap().lines().count() - 1;
    let spans: u64 = v["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    assert_eq!(rows as u64, spans);
    // Complete events by default (as in the yao-jz/intra-kernel-profiler trace format,
    // docs/references.md): one "X" per span and one per lane's lifetime, no B/E pairs.
    let ph = |p: &str| events.iter().filter(|e| e["ph"] == p).count() as u64;
    assert_eq!((ph("X"), ph("B"), ph("E")), (spans + 192, 0, 0));

    let o = ikp(&["summary", s(&sample)]);
    assert!(o.status.success());
    let table = String::from_utf8(o.stdout).unwrap();
    // By self time: first the region the summary gives the most, last the time outside
    // any region (the sample's mainloop holds the other regions, so it is not first).
    let top = v["regions"]
        .as_array()
        .unwrap()
        .iter()
        .max_by(|a, b| {
            a["self_dur"]
                .as_f64()
                .unwrap()
                .total_cmp(&b["self_dur"].as_f64().unwrap())
        })
        .unwrap();
    assert_ne!(top["name"], "mainloop");
    let rows: Vec<&str> = table.lines().take_while(|l| !l.is_empty()).collect();
    assert!(
        rows[1].starts_with(&format!("{} ", top["name"].as_str().unwrap())),
        "{table}"
    );
    assert!(
        rows.iter().any(|l| l.starts_with("(outside any region)")),
        "{table}"
    );
    assert!(table.contains("unmatched begin 0, unmatched end 0"));
}

#[test]
fn tvm_format_with_names_file_and_options() {
    let d = tempfile::tempdir().unwrap();
    let buf = d.path().join("fa.bin");
    let o = ikp(&["sample", s(&buf), "--tvm-blocks", "4", "--tiles", "3"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let names = d.path().join("names.txt");
    std::fs::write(&names, ikp_device::sample::REGIONS.join("\n")).unwrap();
    let chrome = d.path().join("fa.json");
    let dists = d.path().join("fa_dists");
    let summary = d.path().join("fa_summary.json");
    let o = ikp(&[
        "decode",
        s(&buf),
        "--names",
        s(&names),
        "--format",
        "tvm",
        "--chrome",
        s(&chrome),
        "--summary",
        s(&summary),
        "--block-dists",
        s(&dists),
        "--group-by",
        "block",
        "--begin-end",
        "--block-filter",
        "1-2",
        "--hist-bins",
        "8",
        "--topk",
        "1",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c: Value = serde_json::from_slice(&std::fs::read(&chrome).unwrap()).unwrap();
    let ev = c["traceEvents"].as_array().unwrap();
    let ph = |p: &str| ev.iter().filter(|e| e["ph"] == p).count();
    assert_eq!(ph("X"), 0, "--begin-end writes no complete events");
    assert!(ph("B") > 0 && ph("B") == ph("E"));
    let x: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "B").collect();
    assert!(x.iter().all(|e| e["pid"] == 1 || e["pid"] == 2));
    assert!(x.iter().any(|e| e["name"] == "softmax"));
    let v: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(v["block_filter"], serde_json::json!([1, 2]));
    assert_eq!(v["regions"][0]["hist"]["bins"], 8);
    let idx: Value =
        serde_json::from_slice(&std::fs::read(dists.join("index.json")).unwrap()).unwrap();
    assert_eq!(idx["blocks"], serde_json::json!([1, 2]));
}

#[test]
fn bad_input_fails_cleanly_without_partial_output() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out.json");
    let cases: [(&str, &[u8], &str); 4] = [
        ("empty.bin", b"", "empty"),
        ("odd.bin", b"12345", "not a multiple of 8"),
        ("junk.bin", b"NOT A TRACE AT ALL!!!!!!", "unrecognized"),
        (
            "tvm.bin",
            &[
                2, 0, 0, 0, 1, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            ],
            "puts lane 0 there",
        ),
    ];
    for (name, bytes, want) in cases {
        let p = d.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let o = ikp(&["decode", s(&p), "--chrome", s(&out)]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(name) && err.contains(want), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert!(!out.exists(), "{name}: output written for bad input");
    }
    let o = ikp(&["summary", s(&d.path().join("missing.bin"))]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.bin"));
    // Output below a regular file: error naming the output.
    let sample = repo().join("samples/attention.ikp");
    let bad_out = d.path().join("empty.bin/out.json");
    let o = ikp(&["decode", s(&sample), "--chrome", s(&bad_out)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("out.json"));
    // Missing directories above an output are created.
    let nested = d.path().join("new/dir/out.json");
    let o = ikp(&["decode", s(&sample), "--chrome", s(&nested)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::remove_dir_all(d.path().join("new")).unwrap();
    // Only the inputs are left in the directory: no temporary files.
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 4);
}

/// The packets of a Perfetto trace with `compressed_packets` bundles expanded (as trace
/// processor does), and whether there were bundles.
fn perfetto_packets(bytes: &[u8]) -> (Vec<TracePacket>, bool) {
    let trace = PTrace::parse_from_bytes(bytes).expect("a perfetto.protos.Trace");
    let mut out = Vec::new();
    let mut bundles = false;
    for p in trace.packet {
        if p.has_compressed_packets() {
            bundles = true;
            let mut raw = Vec::new();
            flate2::read::ZlibDecoder::new(p.compressed_packets())
                .read_to_end(&mut raw)
                .expect("a zlib stream");
            let inner = PTrace::parse_from_bytes(&raw).expect("a bundle of packets");
            out.extend(inner.packet);
        } else {
            out.push(p);
        }
    }
    (out, bundles)
}

/// Spans of a buffer decoded by the library (what `ikp decode` writes as slices).
fn spans(buf: &Path, names: Option<&Path>) -> u64 {
    let opts = ikp_host::decode::DecodeOptions {
        names: names.map(|n| ikp_host::decode::names::read(n).unwrap()),
        ..Default::default()
    };
    ikp_host::decode::load(buf, &opts).unwrap().spans.len() as u64
}

#[test]
fn several_buffers_into_one_perfetto_trace() {
    let d = tempfile::tempdir().unwrap();
    let sample = repo().join("samples/attention.ikp");
    let tvm = d.path().join("fa.bin");
    let o = ikp(&["sample", s(&tvm), "--tvm-blocks", "4", "--tiles", "3"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let names = d.path().join("names.txt");
    std::fs::write(&names, ikp_device::sample::REGIONS.join("\n")).unwrap();
    let want = [
        (
            "launch 0: attention.ikp".to_string(),
            spans(&sample, Some(&names)),
        ),
        ("launch 1: fa.bin".to_string(), spans(&tvm, Some(&names))),
    ];
    assert!(want.iter().all(|(_, n)| *n > 0));
    let mut outs = Vec::new();
    for layout in ["sequential", "aligned"] {
        let out = d.path().join(format!("two.{layout}.trace"));
        let o = ikp(&[
            "decode",
            s(&sample),
            s(&tvm),
            "--names",
            s(&names),
            "--perfetto",
            s(&out),
            "--launch-layout",
            layout,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let (packets, bundles) = perfetto_packets(&std::fs::read(&out).unwrap());
        assert!(bundles, "compressed by default");
        assert_eq!(launches(&packets), want, "--launch-layout {layout}");
        outs.push(std::fs::read(&out).unwrap());
    }
    assert!(outs[0] != outs[1], "the layouts place launches differently");

    // The same file name twice: labelled with the paths as given; the same path twice
    // gets a suffix.
    std::fs::create_dir(d.path().join("again")).unwrap();
    let copy = d.path().join("again/attention.ikp");
    std::fs::copy(&sample, &copy).unwrap();
    let out = d.path().join("three.trace");
    let o = ikp(&[
        "decode",
        s(&sample),
        s(&copy),
        s(&copy),
        "--perfetto",
        s(&out),
        "--perfetto-compression",
        "none",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (packets, bundles) = perfetto_packets(&std::fs::read(&out).unwrap());
    assert!(!bundles, "--perfetto-compression none writes plain packets");
    let n = spans(&sample, None);
    assert_eq!(
        launches(&packets),
        [
            (format!("launch 0: {}", s(&sample)), n),
            (format!("launch 1: {}", s(&copy)), n),
            (format!("launch 2: {} (2)", s(&copy)), n),
        ]
    );
}

#[test]
fn perfetto_is_compressed_by_default_and_much_smaller_than_chrome() {
    let d = tempfile::tempdir().unwrap();
    let sample = repo().join("samples/attention.ikp");
    let (z, plain, chrome) = (
        d.path().join("z.trace"),
        d.path().join("plain.trace"),
        d.path().join("attention.json"),
    );
    for args in [
        vec!["--perfetto", s(&z)],
        vec!["--perfetto", s(&plain), "--perfetto-compression", "none"],
        vec!["--chrome", s(&chrome)],
    ] {
        let o = ikp(&[&["decode", s(&sample)][..], &args].concat());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let (zb, pb) = (std::fs::read(&z).unwrap(), std::fs::read(&plain).unwrap());
    let (zp, bundles) = perfetto_packets(&zb);
    assert!(bundles, "the default output has compressed_packets bundles");
    let (pp, plain_bundles) = perfetto_packets(&pb);
    assert!(!plain_bundles);
    assert!(zp == pp, "the bundles hold exactly the plain packets");
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    let (zs, ps, cs) = (size(&z), size(&plain), size(&chrome));
    println!("shipped sample: Chrome JSON {cs} bytes, Perfetto plain {ps} bytes, Perfetto deflate {zs} bytes");
    assert!(
        zs * 5 <= cs,
        "deflate {zs} bytes is not 5x below Chrome {cs} bytes"
    );
    assert!(zs < ps);
}

#[test]
fn several_buffers_with_a_one_buffer_output_is_a_usage_error() {
    let d = tempfile::tempdir().unwrap();
    let sample = repo().join("samples/attention.ikp");
    let (chrome, trace) = (d.path().join("a.json"), d.path().join("a.trace"));
    let o = ikp(&["decode", s(&sample), s(&sample), "--chrome", s(&chrome)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "--chrome takes one buffer; 2 were given (several buffers go to --perfetto and --parquet)"
        ),
        "{err}"
    );
    // Nothing is written, not even the output that takes several.
    let o = ikp(&[
        "decode",
        s(&sample),
        s(&sample),
        s(&sample),
        "--perfetto",
        s(&trace),
        "--csv",
        s(&chrome),
        "--summary",
        s(&chrome),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--summary, --csv take one buffer; 3 were given"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    // One buffer is still what `ikp summary` takes.
    let o = ikp(&["summary", s(&sample), s(&sample)]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn no_output_with_several_buffers_prints_each_table() {
    let sample = repo().join("samples/attention.ikp");
    let o = ikp(&["decode", s(&sample), s(&sample)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let heads: Vec<&str> = out.lines().filter(|l| l.starts_with("==> ")).collect();
    assert_eq!(
        heads,
        [
            format!("==> {} <==", s(&sample)),
            format!("==> {} (2) <==", s(&sample)),
        ]
    );
    assert_eq!(out.matches("\nmainloop ").count(), 2, "{out}");
}

#[test]
fn no_input_of_several_is_overwritten() {
    let d = tempfile::tempdir().unwrap();
    let sample = repo().join("samples/attention.ikp");
    let (a, b) = (d.path().join("a.ikp"), d.path().join("b.ikp"));
    std::fs::copy(&sample, &a).unwrap();
    std::fs::copy(&sample, &b).unwrap();
    let bytes = std::fs::read(&sample).unwrap();
    // The second input, spelled through an existing directory and through one that does
    // not exist yet (created for the output).
    std::fs::create_dir(d.path().join("sub")).unwrap();
    for alias in ["sub/../b.ikp", "new/../b.ikp"] {
        let alias = d.path().join(alias);
        let o = ikp(&["decode", s(&a), s(&b), "--perfetto", s(&alias)]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{alias:?}: {err}");
        assert!(
            err.contains("refusing to overwrite") && err.contains("b.ikp"),
            "{err}"
        );
        assert_eq!(
            std::fs::read(&b).unwrap(),
            bytes,
            "{alias:?}: the input was touched"
        );
    }
    // One buffer, an output through a directory that does not exist yet.
    let alias = d.path().join("newer/../a.ikp");
    for flag in ["--chrome", "--perfetto"] {
        let o = ikp(&["decode", s(&a), flag, s(&alias)]);
        assert_eq!(o.status.code(), Some(1), "{flag}: {o:?}");
        assert_eq!(
            std::fs::read(&a).unwrap(),
            bytes,
            "{flag}: the input was touched"
        );
    }
}

/// `--block-filter` reaches the Perfetto trace too: only the kept blocks' spans are slices.
#[test]
fn block_filter_applies_to_perfetto() {
    let d = tempfile::tempdir().unwrap();
    let sample = repo().join("samples/attention.ikp");
    let out = d.path().join("f.pftrace");
    let o = ikp(&[
        "decode",
        s(&sample),
        "--block-filter",
        "3,7-8",
        "--perfetto",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (packets, _) = perfetto_packets(&std::fs::read(&out).unwrap());
    let t = ikp_host::decode::load(&sample, &Default::default()).unwrap();
    let want = (t.lanes.iter())
        .filter(|l| [3, 7, 8].contains(&l.block))
        .map(|l| l.spans.len() as u64)
        .sum::<u64>();
    assert!(want > 0 && want < t.spans.len() as u64);
    let got: u64 = launches(&packets).iter().map(|(_, n)| n).sum();
    assert_eq!(got, want);
}

#[test]
fn each_file_written_is_named_with_its_size_unless_quiet() {
    let d = tempfile::tempdir().unwrap();
    let sample = repo().join("samples/attention.ikp");
    let (json, csv) = (d.path().join("a.json"), d.path().join("a.csv"));
    let o = ikp(&["decode", s(&sample), "--chrome", s(&json), "--csv", s(&csv)]);
    assert!(o.status.success(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    for p in [&json, &csv] {
        let size = std::fs::metadata(p).unwrap().len();
        let line = err
            .lines()
            .find(|l| l.starts_with(&format!("wrote {} (", p.display())))
            .unwrap_or_else(|| panic!("no line for {}: {err}", p.display()));
        // The size in the line is the file's, to the precision shown.
        let shown: f64 = line
            .rsplit('(')
            .next()
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let unit = if line.ends_with("MiB)") {
            1024.0 * 1024.0
        } else {
            1024.0
        };
        assert!(
            (shown * unit - size as f64).abs() <= 0.05 * unit,
            "{line} for {size} bytes"
        );
    }
    let o = ikp(&["decode", s(&sample), "--quiet", "--csv", s(&csv)]);
    assert!(o.status.success() && o.stderr.is_empty(), "{o:?}");
}

#[test]
fn a_dash_is_standard_output_for_one_output_at_a_time() {
    let d = tempfile::tempdir().unwrap();
    let sample = repo().join("samples/attention.ikp");
    let o = ikp(&["decode", s(&sample), "--summary", "-"]);
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("the summary JSON on stdout");
    assert_eq!(v["trace"], "attention.ikp");
    assert_eq!(v["buffer"], "attention.ikp");
    assert!(!Path::new("-").exists(), "a file named - was written");
    // Beside a file output, which still gets its line.
    let csv = d.path().join("a.csv");
    let o = ikp(&["decode", s(&sample), "--chrome", "-", "--csv", s(&csv)]);
    assert!(o.status.success() && csv.is_file(), "{o:?}");
    // The trace a file would hold, byte for byte, with a span per CSV row.
    let file = d.path().join("c.json");
    assert!(ikp(&["decode", s(&sample), "--chrome", s(&file)])
        .status
        .success());
    assert!(
        o.stdout == std::fs::read(&file).unwrap(),
        "--chrome - and --chrome FILE differ"
    );
    let c: Value = serde_json::from_slice(&o.stdout).expect("a Chrome trace on stdout");
    let spans = (c["traceEvents"].as_array().unwrap().iter())
        .filter(|e| e["ph"] == "X" && e["name"] != "lifetime")
        .count();
    let rows = std::fs::read_to_string(&csv).unwrap().lines().count() - 1;
    assert_eq!((spans, rows > 0), (rows, true));
    // With a Chrome trace file, `trace` names it and `buffer` still names the buffer.
    let (chrome, summary) = (d.path().join("t.json"), d.path().join("s.json"));
    let o = ikp(&[
        "decode",
        s(&sample),
        "--chrome",
        s(&chrome),
        "--summary",
        s(&summary),
    ]);
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(
        (v["trace"].as_str(), v["buffer"].as_str()),
        (Some("t.json"), Some("attention.ikp"))
    );
    // Two outputs cannot share it; a directory cannot go there.
    for args in [
        ["--chrome", "-", "--csv", "-"],
        ["--block-dists", "-", "--csv", s(&csv)],
    ] {
        let mut a = vec!["decode", s(&sample)];
        a.extend(args);
        let o = ikp(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("standard output"));
    }
}

#[test]
fn a_reader_that_closes_the_pipe_ends_the_command_with_status_0() {
    let sample = repo().join("samples/attention.ikp");
    let mut child = ikp_command(&["decode", s(&sample), "--chrome", "-"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The pipe is closed here, with about 1 MiB of JSON still to come.
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn sample_with_a_seed_is_another_run_of_the_same_kernel() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a.ikp"), d.path().join("b.ikp"));
    assert!(ikp(&["sample", s(&a)]).status.success());
    assert!(ikp(&["sample", s(&b), "--seed", "7"]).status.success());
    assert_eq!(
        std::fs::read(&a).unwrap(),
        std::fs::read(repo().join("samples/attention.ikp")).unwrap()
    );
    assert_ne!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let o = ikp(&["diff", s(&a), s(&b)]);
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("mainloop") && text.contains("kernel:"),
        "{text}"
    );
}

/// Whether the Chrome trace `v` keeps every (pid, tid)'s spans nested: X events in file
/// order each within every earlier one of its row not ended by its begin; B/E pairs in
/// time order per row. Returns the spans (X events, or B/E pairs) found.
fn nested_per_row(v: &Value) -> usize {
    let key = |e: &Value| (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
    let ts = |e: &Value| e["ts"].as_f64().unwrap();
    let mut open: HashMap<(u64, u64), Vec<(f64, f64)>> = HashMap::new();
    let mut begun: HashMap<(u64, u64), usize> = HashMap::new();
    let mut last: HashMap<(u64, u64), f64> = HashMap::new();
    let mut spans = 0;
    // Lanes' lifetime rows (tid step 9007 * 10^12) hold no span.
    let lifetime = |e: &Value| {
        e["tid"]
            .as_u64()
            .is_some_and(|t| t >= 9_007_000_000_000_000)
    };
    for e in v["traceEvents"].as_array().unwrap() {
        if lifetime(e) {
            continue;
        }
        match e["ph"].as_str().unwrap() {
            "X" => {
                let (b, end) = (ts(e), ts(e) + e["dur"].as_f64().unwrap());
                let stack = open.entry(key(e)).or_default();
                while stack.last().is_some_and(|&(_, pe)| pe <= b) {
                    stack.pop();
                }
                if let Some(&(pb, pe)) = stack.last() {
                    assert!(pb <= b && end <= pe, "{e} crosses [{pb}, {pe}]");
                }
                stack.push((b, end));
                spans += 1;
            }
            "B" | "E" => {
                let t = last.entry(key(e)).or_insert(f64::MIN);
                assert!(ts(e) >= *t, "{e}: time goes backwards on its row");
                *t = ts(e);
                let n = begun.entry(key(e)).or_default();
                if e["ph"] == "B" {
                    *n += 1;
                } else {
                    *n = n.checked_sub(1).expect("E without B");
                    spans += 1;
                }
            }
            _ => {}
        }
    }
    assert!(begun.values().all(|&n| n == 0), "B without E");
    spans
}

#[test]
fn decode_chrome_keeps_overlapping_regions_nested_per_thread() {
    use ikp_device::encoder::BufferWriter;
    use ikp_device::tvm::pack;
    use ikp_device::{Layout, TimerMode};
    // Begin A, begin B, end A, end B (one lane); A B C ended A C B then A B C ended A B C
    // (the other).
    let (b, e) = (true, false);
    let progs: [&[(bool, u32, u32)]; 2] = [
        &[(b, 0, 10), (b, 1, 20), (e, 0, 30), (e, 1, 40)],
        &[
            (b, 0, 10),
            (b, 1, 20),
            (b, 2, 30),
            (e, 0, 40),
            (e, 2, 50),
            (e, 1, 60),
            (b, 0, 110),
            (b, 1, 120),
            (b, 2, 130),
            (e, 0, 140),
            (e, 1, 150),
            (e, 2, 160),
        ],
    ];
    let layout = Layout {
        grid: [1, 1, 1],
        groups_per_block: 2,
        records_per_lane: 16,
        timer: TimerMode::Globaltimer,
        regions: ["a", "b", "c"].map(String::from).to_vec(),
        counters: vec![],
        ..Layout::default()
    };
    let mut w = BufferWriter::new(layout).unwrap();
    let mut tvm = vec![0u64; 1 + 2 * 13];
    tvm[0] = 2 << 32 | 1;
    for (l, prog) in progs.iter().enumerate() {
        let mut lane = w.lane(l as u64);
        lane.init(0, l as u32 * 4, 0, 5, 0);
        for (k, &(begin, region, t)) in prog.iter().enumerate() {
            if begin {
                lane.begin(region, 0, t as u64);
            } else {
                lane.end(region, 0, t as u64);
            }
            tvm[1 + l + 2 * k] = pack(t, l as u32, region, u32::from(!begin));
        }
        lane.finalize(200, 0);
    }
    let d = tempfile::tempdir().unwrap();
    let bytes = |w: &[u64]| -> Vec<u8> { w.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let bufs = [
        ("native.ikp", bytes(&w.into_words())),
        ("tvm.bin", bytes(&tvm)),
    ];
    for (name, data) in bufs {
        let buf = d.path().join(name);
        std::fs::write(&buf, data).unwrap();
        for begin_end in [false, true] {
            let out = d.path().join(format!("{name}.{begin_end}.json"));
            let mut args = vec!["decode", s(&buf), "--chrome", s(&out)];
            if begin_end {
                args.push("--begin-end");
            }
            let o = ikp(&args);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert!(!stderr.contains("unmatched"), "{name}: {stderr}");
            let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
            assert_eq!(nested_per_row(&v), 8, "{name}, B/E {begin_end}: every span");
            // The second lane's staircase needs two overlap rows, the first lane one.
            let overlap_rows = (v["traceEvents"].as_array().unwrap().iter())
                .filter(|e| e["name"] == "thread_name")
                .filter(|e| e["args"]["name"].as_str().unwrap().contains("(overlap "))
                .count();
            assert_eq!(overlap_rows, 3, "{name}");
        }
    }
}
