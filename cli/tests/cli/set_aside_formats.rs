//! Issue #26, item 8, through the command line: a yao-jz dump with a flipped stamp bit once
//! gave `ikp analyze` a GPU wall time of 9.2e18 ns and `ikp summary` a region of 9.2e9 s
//! while `ikp decode --perfetto` refused it; a Proton trace with one `ts` of 10^15 us gave
//! a kernel of 31 years. Their damaged lanes are now set aside as a native buffer's are:
//! every command warns in the same words, and prints the figures of the capture without
//! that lane. So does `ikp merge`, for a buffer's lane and for a host trace's thread.
use crate::util::{ikp, s};
use ikp_device::encoder::BufferWriter;
use ikp_device::{ClockSync, Layout};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(rel)
}

/// Writes `corrupt` and `removed` to `d/corrupt/<name>` and `d/removed/<name>` (one file
/// name, so that outputs naming their buffer agree).
fn pair(d: &Path, name: &str, corrupt: &[u8], removed: &[u8]) -> (PathBuf, PathBuf) {
    let (a, b) = (d.join("corrupt"), d.join("removed"));
    for (dir, bytes) in [(&a, corrupt), (&b, removed)] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    (a.join(name), b.join(name))
}

/// The shipped yao-jz dump with warp slot 5's fourth record's stamp bit 63 flipped, and
/// the dump with that warp never flushed.
fn yaojz(d: &Path) -> (PathBuf, PathBuf) {
    let clean = std::fs::read(repo("samples/yaojz_attention.yjz")).unwrap();
    let word = |at: usize| u64::from_le_bytes(clean[at..at + 8].try_into().unwrap());
    let (cap, blocks, wpb) = (word(8) >> 32, word(16) as u32 as u64, word(16) >> 32);
    let events = (24 + 4 * blocks * wpb).next_multiple_of(16) as usize;
    let (slot, rec) = (5usize, 3usize);
    let at = events + 16 * (slot * cap as usize + rec);
    let mut corrupt = clean.clone();
    corrupt[at + 7] ^= 0x80;
    let mut removed = clean;
    removed[24 + 4 * slot..28 + 4 * slot].fill(0);
    pair(d, "attention.yjz", &corrupt, &removed)
}

/// The shipped Proton trace with event 5's `ts` set to 10^15 us (CTA 0, warp 1), and
/// the trace without that warp's events.
fn proton(d: &Path) -> (PathBuf, PathBuf) {
    let text = std::fs::read(repo("samples/proton_attn_fwd.chrome_trace")).unwrap();
    let clean: Value = serde_json::from_slice(&text).unwrap();
    let mut corrupt = clean.clone();
    corrupt["traceEvents"][5]["ts"] = 1e15.into();
    let mut removed = clean;
    removed["traceEvents"].as_array_mut().unwrap().retain(|e| {
        !(e["pid"].as_str().unwrap().ends_with(" CTA0")
            && e["tid"].as_str().unwrap().starts_with("warp 1 "))
    });
    let (a, b) = (corrupt.to_string(), removed.to_string());
    pair(d, "attn.chrome_trace", a.as_bytes(), b.as_bytes())
}

/// The warning every command prints for one lane set aside, named as the user knows it.
fn warning(track: &str) -> String {
    format!(", 1 lane set aside, its stamps not of this launch: {track} (see the summary")
}

fn run_ok(args: &[&str]) -> (String, String) {
    let o = ikp(args);
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(o.status.success(), "{args:?}: {err}");
    (String::from_utf8(o.stdout).unwrap(), err)
}

/// `ikp analyze` and `ikp summary` on `corrupt` warn naming `track`, and print the
/// figures of `removed` (the summary adds the lines naming the lane); `ikp decode
/// --perfetto` writes the trace of `removed`; `ikp report` names the lane.
fn check(corrupt: &Path, removed: &Path, names: &[&str], track: &str) {
    let args = |cmd: &str, buf: &Path| -> Vec<String> {
        let mut v = vec![cmd.to_string(), s(buf).to_string()];
        v.extend(names.iter().map(|n| n.to_string()));
        v
    };
    let run = |cmd: &str, buf: &Path| {
        let a = args(cmd, buf);
        run_ok(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let (a, err) = run("analyze", corrupt);
    assert!(err.contains(&warning(track)), "{err}");
    let (b, _) = run("analyze", removed);
    assert_eq!(a, b);
    let wall = a.lines().find(|l| l.starts_with("GPU wall time ")).unwrap();
    let ns: u64 = wall.split(' ').nth(3).unwrap().parse().unwrap();
    assert!(ns < 100_000, "{wall}");
    let (a, err) = run("summary", corrupt);
    assert!(err.contains(&warning(track)), "{err}");
    let (b, _) = run("summary", removed);
    let note = format!(
        "1 lane set aside, not decoded: its stamps cannot belong to this launch\n  {track}: \
         its end stamp is implausibly far from its start\n"
    );
    assert_eq!(a, format!("{b}{note}"));
    for (buf, out) in [(corrupt, "c.trace"), (removed, "r.trace")] {
        let out = buf.parent().unwrap().join(out);
        let mut a = args("decode", buf);
        a.extend(["--perfetto".into(), s(&out).into(), "-q".into()]);
        let (_, err) = run_ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(err.contains("set aside"), buf == corrupt, "{err}");
    }
    let read = |buf: &Path, n: &str| std::fs::read(buf.parent().unwrap().join(n)).unwrap();
    assert!(read(corrupt, "c.trace") == read(removed, "r.trace"));
    // The report names the lane above the figures, as for a native buffer.
    let dir = corrupt.parent().unwrap().join("report");
    let mut a = args("report", corrupt);
    a.extend(["-o".into(), s(&dir).into()]);
    run_ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let note = format!("<strong>1 lane set aside, its stamps not of this launch: {track}</strong>");
    assert!(html.contains(&note), "no set-aside note");
}

#[test]
fn a_yaojz_dump_with_a_flipped_stamp_bit_warns_and_keeps_sane_figures() {
    let d = tempfile::tempdir().unwrap();
    let (corrupt, removed) = yaojz(d.path());
    let names = repo("samples/yaojz_attention.names");
    check(
        &corrupt,
        &removed,
        &["--names", s(&names)],
        "block 1 · group 1 (warp 1, SM 3)",
    );
}

#[test]
fn a_proton_trace_with_a_ts_of_1e15_warns_and_keeps_sane_figures() {
    let d = tempfile::tempdir().unwrap();
    let (corrupt, removed) = proton(d.path());
    check(&corrupt, &removed, &[], "block 0 · group 1 (warp 1, SM 1)");
}

#[test]
fn the_summary_json_lists_a_peer_s_lane_set_aside() {
    let d = tempfile::tempdir().unwrap();
    let (corrupt, _) = proton(d.path());
    let out = d.path().join("s.json");
    run_ok(&["decode", s(&corrupt), "--summary", s(&out), "-q"]);
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let l = &v["set_aside_lanes"][0];
    assert_eq!(
        (&l["block"], &l["group"], &l["warp"]),
        (&0.into(), &1.into(), &1.into())
    );
    assert_eq!(l["reason"], "span");
    assert!(
        l["start_clock"].is_null() && l["end_clock"].is_null(),
        "{l}"
    );
    let (start, end) = (l["start"].as_u64().unwrap(), l["end"].as_u64().unwrap());
    assert!(end - start > 1 << 44, "{l}");
}

const SYNC: ClockSync = ClockSync {
    host_realtime_ns: 1_700_000_000_000_007_000,
    host_monotonic_ns: 9_000_007_000,
    device_globaltimer_ns: 1_000_000,
    round_trip_ns: 3_001,
    samples: 16,
};

/// A buffer of three one-lane blocks with a clock sync; lane 1 (`far`: its start stamp
/// 2^62 ns late) or never run.
fn synced(far: bool) -> Vec<u8> {
    let layout = Layout {
        grid: [3, 1, 1],
        regions: vec!["work".into()],
        clock_sync: Some(SYNC),
        ..Layout::default()
    };
    let mut w = BufferWriter::new(layout).unwrap();
    for l in 0..3u64 {
        if l == 1 && !far {
            continue;
        }
        let t = 1_000_900 + 100 * l;
        let start = if l == 1 { t + (1 << 62) } else { t };
        w.lane(l)
            .init(l as u32, 0, 0, start, 0)
            .begin(0, 0, t + 100)
            .end(0, 0, t + 600)
            .finalize(t + 1_100, 0);
    }
    w.into_words()
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect()
}

/// The merge fixture with its GPU stream's kernel (`pid 0`, `tid 7`) at `ts` 10^15 us
/// (31 years after the rest), or without that thread.
fn host(far: bool) -> Vec<u8> {
    let text = std::fs::read(repo("host/tests/fixtures/merge/kineto_small.json")).unwrap();
    let mut v: Value = serde_json::from_slice(&text).unwrap();
    let events = v["traceEvents"].as_array_mut().unwrap();
    let stream = |e: &Value| e["pid"] == 0 && e["tid"] == 7 && e["ph"] != "f";
    if far {
        let k = events
            .iter()
            .position(|e| stream(e) && e["ph"] == "X")
            .unwrap();
        events[k]["ts"] = 1e15.into();
    } else {
        events.retain(|e| !stream(e));
    }
    v.to_string().into_bytes()
}

#[test]
fn merge_sets_aside_a_buffer_s_lane_and_a_host_thread_and_says_so() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = pair(d.path(), "attn.ikp", &synced(true), &synced(false));
    let (ha, hb) = pair(d.path(), "kineto.json", &host(true), &host(false));
    let merge = |buf: &Path, h: &Path| {
        let out = buf.parent().unwrap().join("m.pftrace");
        let args = ["merge", s(buf), "--host", s(h), "-o", s(&out)];
        let (_, err) = run_ok(&args);
        (std::fs::read(out).unwrap(), err)
    };
    let (x, err) = merge(&a, &ha);
    assert!(
        err.contains(&warning("block 1 · group 0 (warp 0, SM 1)")),
        "{err}"
    );
    assert!(
        err.contains(
            "ikp: warning: kineto.json: 1 thread set aside, its stamps not of this trace: \
             pid 0 · tid 7 (its stamps are far from every other lane's)"
        ),
        "{err}"
    );
    let (y, err) = merge(&b, &hb);
    assert!(!err.contains("warning"), "{err}");
    assert!(
        x == y,
        "the merged trace is the one without the lane and the thread"
    );
}
