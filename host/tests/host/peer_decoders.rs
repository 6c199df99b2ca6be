//! ikp's decode against the peers' own decoders on the same buffers: warpscope's Python
//! decoder (PyPI `warpscope`) on TVM-format buffers, and FlashInfer's Perfetto exporter
//! (`flashinfer/profiler/__init__.py`, run with stand-ins for `torch` and `tg4perfetto`:
//! see `peers/flashinfer_export.py`) on FlashInfer-format buffers.
//!
//! Both peers pair an end with the open begin of the same event on its lane, where ikp
//! keeps a stack per lane; the buffers here never overlap two regions of the same event on
//! a lane, and every region closes, so both rules pair them alike (checked first, so the
//! comparison does not depend on ikp's pairing of overlapping regions).
//!
//! Needs what `scripts/provision.sh` installs: warpscope (and numpy) in `.venv`, and
//! FlashInfer's exporter file in `.deps/`. `IKP_PYTHON` and `IKP_FLASHINFER_PROFILER`
//! name others.
use ikp_device::{flashinfer as fi, sample, tvm};
use ikp_host::decode::{decode, DecodeOptions, FormatChoice};
use ikp_host::Trace;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A file the test needs: from the environment variable `var`, else `default`.
fn needed(var: &str, default: PathBuf, what: &str) -> PathBuf {
    let p = std::env::var_os(var).map_or(default, PathBuf::from);
    assert!(
        p.is_file(),
        "{} ({what}) is missing: run scripts/provision.sh, or set {var}",
        p.display()
    );
    p
}

fn python() -> PathBuf {
    needed(
        "IKP_PYTHON",
        repo().join(".venv/bin/python"),
        "the project's Python, with warpscope",
    )
}

/// Runs a script of `peers/` and parses what it prints.
fn run_peer(script: &str, args: &[&Path]) -> Value {
    let o = Command::new(python())
        .arg(repo().join("host/tests/host/peers").join(script))
        .args(args)
        .output()
        .expect("run python");
    assert!(
        o.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn write(dir: &Path, name: &str, words: &[u64]) -> PathBuf {
    let p = dir.join(name);
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&p, bytes).unwrap();
    p
}

fn decoded(words: &[u64], format: FormatChoice) -> Trace {
    let opts = DecodeOptions {
        format,
        ..Default::default()
    };
    decode(words, &opts).unwrap()
}

/// Checks the precondition of the comparison: every region closes, and no two regions of
/// one event overlap on a lane.
fn no_overlap_of_one_event(t: &Trace) {
    assert_eq!(
        (
            t.diagnostics.unmatched_begin.len(),
            t.diagnostics.unmatched_end.len()
        ),
        (0, 0)
    );
    for l in &t.lanes {
        let mut by_event: BTreeMap<u16, Vec<(u64, u64)>> = BTreeMap::new();
        for k in l.spans.clone() {
            let s = &t.spans;
            by_event
                .entry(s.region[k])
                .or_default()
                .push((s.begin[k], s.end[k]));
        }
        for (ev, mut v) in by_event {
            v.sort_unstable();
            assert!(
                v.windows(2).all(|p| p[0].1 <= p[1].0),
                "lane {} event {ev} overlaps itself",
                l.id
            );
        }
    }
}

fn sorted(mut v: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    v.sort_by_key(|r| r.iter().map(|x| x.to_string()).collect::<Vec<_>>());
    v
}

fn rows(v: &Value) -> Vec<Vec<Value>> {
    let rows = v.as_array().unwrap().iter();
    sorted(rows.map(|r| r.as_array().unwrap().clone()).collect())
}

#[test]
fn warpscope_decodes_tvm_buffers_into_the_same_spans_and_instants() {
    let dir = tempfile::tempdir().unwrap();
    // The attention sample (three groups per block, nested regions, instants, a launch
    // across the 32-bit wrap), at two sizes and runs.
    for (n, words) in [
        sample::attention_tvm(16, 4),
        sample::attention_tvm_seeded(5, 10, 3),
    ]
    .into_iter()
    .enumerate()
    {
        let t = decoded(&words, FormatChoice::Tvm);
        no_overlap_of_one_event(&t);
        let buf = write(dir.path(), &format!("tvm{n}.bin"), &words);
        let ws = run_peer("warpscope_spans.py", &[&buf]);
        // (block, group, event, begin's 32-bit stamp, duration) and (block, group,
        // event, stamp): warpscope keeps the raw stamps.
        let mut spans = Vec::new();
        let mut instants = Vec::new();
        for l in &t.lanes {
            let (b, g) = (l.block, l.group);
            for k in l.spans.clone() {
                let s = &t.spans;
                let lo = s.begin[k] as u32;
                spans.push(serde_json::json!([b, g, s.region[k], lo, s.dur(k)]));
            }
            for k in l.instants.clone() {
                let i = &t.instants;
                instants.push(serde_json::json!([b, g, i.region[k], i.ts[k] as u32]));
            }
        }
        let arr = |v: Vec<Value>| v.into_iter().map(|x| x.as_array().unwrap().clone());
        let (spans, instants) = (
            sorted(arr(spans).collect()),
            sorted(arr(instants).collect()),
        );
        assert!(!spans.is_empty() && !instants.is_empty());
        assert_eq!(rows(&ws["spans"]), spans, "buffer {n}");
        assert_eq!(rows(&ws["instants"]), instants, "buffer {n}");
    }
}

/// The attention sample's MMA lanes as FlashInfer writes them with one group per block:
/// the grouping under which FlashInfer's exporter and device code agree (see
/// `ikp_device::flashinfer`, `# Format`).
fn flashinfer_one_group(blocks: u32, tiles: u32) -> Vec<u64> {
    let mut out = tvm::Slots::new(1, blocks);
    for b in 0..blocks {
        let (_, _, evs) = &sample::block_schedule(b, tiles)[1];
        let rec = |t: u64, r: u32, k: u32| fi::pack(t as u32, sample::sm_of(b), b, r, k);
        for e in evs {
            match *e {
                sample::Ev::B(r, _, t) => out.push(b, rec(t, r, fi::BEGIN)),
                sample::Ev::E(r, _, t) => out.push(b, rec(t, r, fi::END)),
                sample::Ev::I(r, _, t) => out.store(b, rec(t, r, fi::INSTANT)),
                sample::Ev::S(..) => {}
            }
        }
    }
    out.into_words()
}

#[test]
fn flashinfers_exporter_reads_its_buffers_as_ikp_does() {
    let profiler = needed(
        "IKP_FLASHINFER_PROFILER",
        repo().join(".deps/flashinfer-python-0.7.2.post1/flashinfer/profiler/__init__.py"),
        "FlashInfer's exporter",
    );
    let dir = tempfile::tempdir().unwrap();
    let names = dir.path().join("names.txt");
    std::fs::write(&names, sample::REGIONS.join("\n") + "\n").unwrap();
    let words = flashinfer_one_group(12, 4);
    let t = decoded(&words, FormatChoice::FlashInfer);
    no_overlap_of_one_event(&t);
    let buf = write(dir.path(), "fi.bin", &words);
    let ex = run_peer("flashinfer_export.py", &[&profiler, &buf, &names]);
    // The exporter's tracks: `blk{block}_g{group}` under `SM_{sm:03}`, raw 32-bit stamps.
    let mut spans = Vec::new();
    let mut instants = Vec::new();
    for l in &t.lanes {
        let sm = format!("SM_{:03}", l.sm.unwrap());
        let track = format!("blk{}_g{}", l.block, l.group);
        for k in l.spans.clone() {
            let s = &t.spans;
            let name = sample::REGIONS[s.region[k] as usize];
            let (b, e) = (s.begin[k] as u32, s.end[k] as u32);
            spans.push(vec![
                sm.clone().into(),
                track.clone().into(),
                name.into(),
                b.into(),
                e.into(),
            ]);
        }
        for k in l.instants.clone() {
            let i = &t.instants;
            let name = sample::REGIONS[i.region[k] as usize];
            let ts = i.ts[k] as u32;
            instants.push(vec![
                sm.clone().into(),
                track.clone().into(),
                name.into(),
                ts.into(),
            ]);
        }
    }
    assert!(!spans.is_empty());
    assert_eq!(rows(&ex["spans"]), sorted(spans));
    assert_eq!(rows(&ex["instants"]), sorted(instants));

    // With three groups the exporter reads the block field as `block * 3 + group`: the
    // records of block b land on track blk{b / 3}_g{b % 3}, mixing the lanes of a block,
    // where ikp places each record by its slot.
    let words = sample::attention_flashinfer(6, 3);
    let buf = write(dir.path(), "fi3.bin", &words);
    let ex = run_peer("flashinfer_export.py", &[&profiler, &buf, &names]);
    let mut tracks: Vec<String> = (ex["spans"].as_array().unwrap().iter())
        .map(|s| s[1].as_str().unwrap().to_string())
        .collect();
    tracks.sort();
    tracks.dedup();
    assert_eq!(
        tracks,
        ["blk0_g0", "blk0_g1", "blk0_g2", "blk1_g0", "blk1_g1", "blk1_g2"]
    );
    let t = decoded(&words, FormatChoice::FlashInfer);
    assert_eq!(t.lanes.len(), 18);
}
