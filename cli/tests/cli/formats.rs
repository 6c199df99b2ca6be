//! Every command on the shipped samples of the TVM family (TVM / warpscope, FlashInfer with
//! SM ids, Mirage MPK), chosen with `--format` and auto-detected, and the command-line
//! hint when a buffer fits several formats.
use crate::util::{ikp, repo, s};
use perfetto_protos::trace::Trace as PTrace;
use protobuf::Message;
use serde_json::Value;
use std::io::Read;
use std::path::Path;
use std::process::Output;

fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The shipped samples and their names files, as the generators write them.
fn shipped() -> Vec<(&'static str, Vec<u8>)> {
    use ikp_device::sample;
    let names = sample::REGIONS.join("\n") + "\n";
    let tasks: serde_json::Map<String, Value> = (sample::MPK_TASKS.iter())
        .map(|&(id, name)| (id.to_string(), Value::from(name)))
        .collect();
    let tasks = serde_json::to_string_pretty(&tasks).unwrap() + "\n";
    vec![
        (
            "samples/attention_tvm.bin",
            bytes(&sample::attention_tvm(8, 3)),
        ),
        (
            "samples/attention_flashinfer.bin",
            bytes(&sample::attention_flashinfer(8, 3)),
        ),
        ("samples/attention_names.txt", names.into_bytes()),
        ("samples/mpk_mirage.bin", bytes(&sample::mpk(8, 2))),
        ("samples/mpk_names.json", tasks.into_bytes()),
    ]
}

/// The shipped samples are exactly what the generators write (`IKP_BLESS=1` rewrites
/// them).
#[test]
fn shipped_samples_equal_the_generator_output() {
    for (file, want) in shipped() {
        let p = repo().join(file);
        if std::env::var_os("IKP_BLESS").is_some() {
            std::fs::write(&p, &want).unwrap();
        }
        assert!(
            std::fs::read(&p).is_ok_and(|got| got == want),
            "{file} is stale: IKP_BLESS=1 cargo test -p ikp-cli --test cli shipped_sample"
        );
    }
}

/// A sample of each format: its file, its names file, `--format`, whether its lanes
/// carry SM ids, and its blocks.
const SAMPLES: [(&str, &str, &str, bool, u32); 3] = [
    (
        "samples/attention_tvm.bin",
        "samples/attention_names.txt",
        "tvm",
        false,
        8,
    ),
    (
        "samples/attention_flashinfer.bin",
        "samples/attention_names.txt",
        "flashinfer",
        true,
        8,
    ),
    (
        "samples/mpk_mirage.bin",
        "samples/mpk_names.json",
        "mirage",
        false,
        8 + ikp_device::sample::MPK_SCHEDULERS,
    ),
];

/// Tracks named in a Perfetto trace (deflate-compressed packets included).
fn perfetto_track_names(p: &Path) -> Vec<String> {
    let t = PTrace::parse_from_bytes(&std::fs::read(p).unwrap()).unwrap();
    let mut names = Vec::new();
    for pk in &t.packet {
        let packets = if pk.has_compressed_packets() {
            let mut raw = Vec::new();
            flate2::read::ZlibDecoder::new(pk.compressed_packets())
                .read_to_end(&mut raw)
                .unwrap();
            PTrace::parse_from_bytes(&raw).unwrap().packet
        } else {
            vec![pk.clone()]
        };
        for q in packets {
            if q.has_track_descriptor() {
                names.push(q.track_descriptor().name().to_string());
            }
        }
    }
    names
}

#[test]
fn decode_writes_every_output_for_each_format_chosen_or_detected() {
    let d = tempfile::tempdir().unwrap();
    for (buf, names, format, has_sm, _) in SAMPLES {
        let (buf, names) = (repo().join(buf), repo().join(names));
        for forced in [true, false] {
            let dir = d.path().join(format!("{format}-{forced}"));
            std::fs::create_dir_all(&dir).unwrap();
            let out = |f: &str| dir.join(f);
            let mut args = vec![
                "decode".to_string(),
                s(&buf).into(),
                "--names".into(),
                s(&names).into(),
            ];
            if forced {
                args.extend(["--format".into(), format.into()]);
            }
            for (flag, file) in [
                ("--perfetto", "out.trace"),
                ("--chrome", "out.json"),
                ("--summary", "summary.json"),
                ("--csv", "spans.csv"),
                ("--block-dists", "dists"),
            ] {
                args.extend([flag.into(), s(&out(file)).into()]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = ok(ikp(&args));
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!err.contains("warning"), "{format}: {err}");
            let v: Value =
                serde_json::from_slice(&std::fs::read(out("summary.json")).unwrap()).unwrap();
            assert_eq!(v["format"], format);
            // Names from the names file, no unmatched records.
            let regions = v["regions"].as_array().unwrap();
            assert!(regions
                .iter()
                .all(|r| !r["name"].as_str().unwrap().starts_with("region_")));
            assert_eq!(
                (v["unmatched_begin"].as_u64(), v["unmatched_end"].as_u64()),
                (Some(0), Some(0))
            );
            // Chrome: grouped by SM where the lanes have SM ids, by block otherwise.
            let c: Value =
                serde_json::from_slice(&std::fs::read(out("out.json")).unwrap()).unwrap();
            let procs: Vec<&str> = (c["traceEvents"].as_array().unwrap().iter())
                .filter(|e| e["name"] == "process_name")
                .map(|e| e["args"]["name"].as_str().unwrap())
                .collect();
            // Span args: the lane's SM where it has one, the payload (Mirage's event
            // number) where the format has one (TVM has neither).
            let x = (c["traceEvents"].as_array().unwrap().iter())
                .find(|e| e["ph"] == "X")
                .unwrap();
            let mut keys: Vec<&str> = x["args"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            keys.sort_unstable();
            match format {
                "flashinfer" => assert_eq!(keys, ["block", "group", "sm"]),
                "mirage" => assert_eq!(keys, ["block", "group", "payload"]),
                _ => assert_eq!(keys, ["block", "group"]),
            }
            if has_sm {
                // 8 blocks, two per SM.
                assert_eq!(procs, ["sm 0", "sm 3", "sm 6", "sm 9"]);
            } else {
                assert_eq!(procs.len(), 8);
                assert!(procs.iter().all(|p| p.starts_with("block ")), "{procs:?}");
            }
            let rows = std::fs::read_to_string(out("spans.csv"))
                .unwrap()
                .lines()
                .count()
                - 1;
            let spans: u64 = regions.iter().map(|r| r["count"].as_u64().unwrap()).sum();
            assert_eq!(rows as u64, spans);
            assert!(out("dists").join("index.json").is_file());
            let tracks = perfetto_track_names(&out("out.trace"));
            assert!(tracks.iter().any(|n| n.contains("block 7")), "{tracks:?}");
        }
    }
}

#[test]
fn every_command_reads_each_format() {
    let d = tempfile::tempdir().unwrap();
    for (buf, names, format, has_sm, blocks) in SAMPLES {
        let (buf, names) = (repo().join(buf), repo().join(names));
        let input = [s(&buf), "--names", s(&names), "--format", format];
        let with = |cmd: &str, extra: &[&str]| {
            let mut a = vec![cmd];
            a.extend(input);
            a.extend(extra);
            ok(ikp(&a))
        };
        let table = String::from_utf8(with("summary", &[]).stdout).unwrap();
        assert!(
            table.contains(&format!("({format} format, {blocks} blocks x ")),
            "{table}"
        );
        let json = d.path().join(format!("{format}-analysis.json"));
        let text = String::from_utf8(with("analyze", &["--json", s(&json)]).stdout).unwrap();
        let a: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(a["format"], format);
        // SM figures only where the format records SM ids.
        let na = "SM busy time, slowest / median: n/a";
        assert_eq!(text.contains(na), !has_sm, "{text}");
        let rep = d.path().join(format!("{format}-report"));
        with("report", &["-o", s(&rep)]);
        let html = std::fs::read_dir(&rep)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "html"))
            .expect("an HTML report");
        let html = std::fs::read_to_string(html).unwrap();
        let per = if has_sm { "per SM" } else { "per block" };
        assert!(
            html.contains(&format!("Busy lanes over time {per}")),
            "{format}"
        );
        let display = match format {
            "tvm" => "TVM",
            "flashinfer" => "FlashInfer",
            _ => "Mirage MPK",
        };
        assert!(html.contains(&format!("{display} format")), "{format}");
        let plots = d.path().join(format!("{format}-plots"));
        with("plot", &["-o", s(&plots)]);
        assert!(std::fs::read_dir(&plots).unwrap().count() > 0);
        // A run against itself: no regression.
        let mut a = vec!["diff", s(&buf), s(&buf)];
        a.extend(&input[1..]);
        a.push("--fail-on-regression");
        ok(ikp(&a));
    }
}

/// A buffer that fits several formats: the error lists them and says how to choose; a
/// choice decodes it.
#[test]
fn an_ambiguous_buffer_names_its_candidates_and_the_flag() {
    use ikp_device::tvm::{pack, Slots};
    let d = tempfile::tempdir().unwrap();
    let mut w = Slots::new(1, 2);
    for l in 0..2 {
        w.push(l, pack(10 + l, l, 1, 0));
        w.push(l, pack(20 + l, l, 1, 1));
    }
    let buf = d.path().join("two.bin");
    std::fs::write(&buf, bytes(&w.into_words())).unwrap();
    let o = ikp(&["summary", s(&buf)]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "{}: the buffer fits 2 formats: TVM and FlashInfer; choose one explicitly (--format tvm or --format flashinfer chooses one)",
            buf.display()
        )),
        "{err}"
    );
    for f in ["tvm", "flashinfer"] {
        ok(ikp(&["summary", s(&buf), "--format", f]));
    }
    // A wrong choice fails on the word that disagrees.
    let o = ikp(&["summary", s(&buf), "--format", "mirage"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Mirage MPK format: slot 2: record 0x0000000b00001004 names lane 2, but the layout (stride 2 = blocks x groups) puts lane 1 there (lane id out of range)"),
        "{err}"
    );
    // TVM's errors name their format too: the FlashInfer sample's lane 1 (block 0, group
    // 1) carries block 0 in the bits TVM reads as its lane.
    let fi = repo().join("samples/attention_flashinfer.bin");
    let o = ikp(&["summary", s(&fi), "--format", "tvm"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(": TVM format: slot 2: record 0x")
            && err.contains(
                " names lane 0, but the layout (stride 24 = blocks x groups) puts lane 1 there"
            ),
        "{err}"
    );
}
