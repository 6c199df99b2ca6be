//! `ikp decode` / `ikp summary` / `ikp sample` end to end: the README's main command on the
//! shipped sample, the TVM format with a names file, and bad input (clear error naming the
//! file, non-zero exit, no output file left behind).
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ikp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ikp"))
        .args(args)
        .output()
        .expect("run ikp")
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

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
        "samples/attention.ikp is stale: IKP_BLESS=1 cargo test -p ikp-cli"
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
    // 64 blocks on 32 SMs, 3 lanes each.
    let procs = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .count();
    let threads = events.iter().filter(|e| e["name"] == "thread_name").count();
    assert_eq!((procs, threads), (32, 192));
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
        "mainloop", "load_kv", "wait_kv", "qk_gemm", "pv_gemm", "softmax", "rowmax", "exp2",
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
    // Complete events by default (reference 001): one "X" per span, no B/E pairs.
    let ph = |p: &str| events.iter().filter(|e| e["ph"] == p).count() as u64;
    assert_eq!((ph("X"), ph("B"), ph("E")), (spans, 0, 0));

    let o = ikp(&["summary", s(&sample)]);
    assert!(o.status.success());
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(
        table.lines().nth(1).unwrap().starts_with("mainloop"),
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
