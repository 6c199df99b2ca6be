//! `ikp analyze` and `ikp report` end to end on the shipped sample; the report is rendered
//! in headless Chromium (Debian's package, installed by scripts/provision.sh) and must not be
//! blank nor log anything to the console.
use crate::chromium;
use crate::util::{ikp, s};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn sample() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../samples/attention.ikp");
    p.to_str().unwrap().to_owned()
}

/// `ikp analyze` of the shipped sample: its stdout and its `--json` output.
fn analyze_sample() -> (String, Value) {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("an.json");
    let o = ikp(&["analyze", &sample(), "--json", s(&out)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    (String::from_utf8(o.stdout).unwrap(), v)
}

const PARTS: [&str; 7] = [
    "compute",
    "exposed_wait",
    "exposed_load",
    "exposed_store",
    "exposed_comm",
    "exposed_other",
    "idle",
];

/// The `--json` contract on the sample: per block, the breakdown's parts add up to the
/// block's length and isolation's `compute = length - blocked`; the kernel's figures are
/// the sums of the blocks'.
#[test]
fn analyze_json_is_per_block_and_summed() {
    let (text, v) = analyze_sample();
    let u = |x: &Value| x.as_u64().unwrap();
    let blocks = v["block_breakdowns"].as_array().unwrap();
    assert_eq!(blocks.len(), 64);
    assert_eq!(v["blocks"], 64);
    let mut sums = [0u64; 7];
    let mut total = 0;
    for b in blocks {
        let parts: Vec<u64> = PARTS.iter().map(|k| u(&b[k])).collect();
        assert_eq!(parts.iter().sum::<u64>(), u(&b["total"]));
        for (s, p) in sums.iter_mut().zip(&parts) {
            *s += p;
        }
        total += u(&b["total"]);
    }
    let k = &v["breakdown"];
    for (name, s) in PARTS.iter().zip(sums) {
        assert_eq!(u(&k[name]), s, "{name}");
    }
    assert_eq!((u(&k["total"]), u(&v["block_time_ns"])), (total, total));
    assert!(u(&v["gpu_wall_ns"]) < total, "block-time sums 64 blocks");
    let iso = &v["compute_isolation"];
    let per = iso["per_block"].as_array().unwrap();
    assert_eq!(per.len(), 64);
    let (mut len, mut blocked) = (0, 0);
    for (p, b) in per.iter().zip(blocks) {
        assert_eq!(p["block"], b["block"]);
        assert_eq!(u(&p["length_ns"]), u(&b["total"]));
        assert_eq!(
            u(&p["compute_ns"]),
            u(&p["length_ns"]) - u(&p["blocked_ns"])
        );
        // A block's exposed wait is part of its blocked time (the rest hides behind compute).
        assert!(u(&b["exposed_wait"]) <= u(&p["blocked_ns"]));
        assert!(u(&p["overlap_ns"]) <= u(&p["blocked_ns"]));
        len += u(&p["length_ns"]);
        blocked += u(&p["blocked_ns"]);
    }
    assert_eq!(
        (u(&iso["length_ns"]), u(&iso["blocked_ns"])),
        (len, blocked)
    );
    assert_eq!(u(&iso["compute_ns"]), len - blocked);
    assert!(blocked <= u(&iso["wait_sum_ns"]));
    // Native buffers record SM ids: SM figures are numbers.
    assert!(v["imbalance"]["sms"]["max_over_median"].as_f64().unwrap() >= 1.0);
    assert!(v["imbalance"]["tail"].is_u64());
    // The text states the same sums and what they mean.
    assert!(
        text.contains(&format!(
            "block-time {total} ns: sum over 64 blocks of each block's first-to-last stamp"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "  block-time {len} - blocked {blocked} = compute {} ns",
            len - blocked
        )),
        "{text}"
    );
    assert!(!text.contains("n/a"), "{text}");
}

/// The sample uses the signal / wait convention: `ikp analyze` links every wait (kv,
/// scores and probs per tile, kv_free for all but the first two tiles of a block), and the
/// critical path of the slowest block crosses its three groups. The text names tracks by
/// block and group, never by lane index, and shows a bounded table.
#[test]
fn analyze_links_the_sample_and_its_critical_path_crosses_groups() {
    let (text, v) = analyze_sample();
    let tiles: u64 = (0..64)
        .map(|b| ikp_device::sample::tiles_of(b) as u64)
        .sum();
    let want = 4 * tiles - 2 * 64;
    assert!(
        text.contains(&format!("signal/wait links: {want}\n")),
        "{text}"
    );
    let links = v["links"].as_array().unwrap();
    assert_eq!(links.len() as u64, want);
    assert!(links.iter().all(|l| l["from"]["kind"] == "instant"
        && l["from_lane"] != l["to_lane"]
        && l["from_ts"].as_u64() < l["to_ts"].as_u64()));
    // The JSON has every step, named by block / group / warp / SM.
    let cp = &v["critical_path"];
    let blk = cp["block"].as_u64().unwrap();
    assert_eq!(
        blk,
        v["imbalance"]["blocks"]["slowest"][0][0].as_u64().unwrap()
    );
    let steps = cp["steps"].as_array().unwrap();
    assert!(steps.len() > 15, "{}", steps.len());
    let mut groups: Vec<u64> = steps.iter().map(|s| s["group"].as_u64().unwrap()).collect();
    groups.sort_unstable();
    groups.dedup();
    assert_eq!(groups, vec![0, 1, 2]);
    for s in steps {
        assert_eq!(s["block"].as_u64(), Some(blk));
        assert!(s["warp"].is_u64() && s["sm"].is_u64());
        let track = format!(
            "block {blk} · group {} (warp {}, SM {})",
            s["group"], s["warp"], s["sm"]
        );
        assert_eq!(s["track"], track.as_str());
        if !s["waited_on"].is_null() {
            assert_eq!(s["category"], "wait");
            assert!(s["waited_on"]["region"]
                .as_str()
                .unwrap()
                .starts_with("signal."));
        }
    }
    assert!(steps.iter().any(|s| !s["waited_on"].is_null()));
    assert_eq!(
        steps.iter().filter(|s| s["longest_wait"] == true).count(),
        3
    );
    // The text: a header, 15 rows, "… K more".
    let start = text
        .find(&format!("critical path of block {blk} "))
        .expect("a critical path");
    let table: Vec<&str> = text[start..].lines().collect();
    assert!(
        table[2].trim_start().starts_with("step  track"),
        "{}",
        table[2]
    );
    let rows: Vec<&str> = table[3..]
        .iter()
        .take_while(|l| !l.trim_start().starts_with('…'))
        .copied()
        .collect();
    assert_eq!(rows.len(), 15, "{rows:#?}");
    assert!(rows
        .iter()
        .all(|r| r.contains(&format!("block {blk} · group "))));
    assert_eq!(rows.iter().filter(|r| r.ends_with("<<")).count(), 3);
    assert!(
        table[3 + 15].contains(&format!("… {} more steps", steps.len() - 15)),
        "{}",
        table[3 + 15]
    );
    assert!(rows
        .iter()
        .any(|r| r.contains("wait.scores") && r.contains("signal.scores from group 1")));
    assert!(!text.contains("@lane") && !text.contains("lane5"), "{text}");
    assert!(
        text.lines().all(|l| l.chars().count() < 200),
        "a line too long"
    );
}

/// `ikp decode --perfetto` on the sample draws one flow per link: each id started once
/// (by a `signal.*` instant) and terminated once (by a slice end).
#[test]
fn decode_perfetto_draws_the_sample_links_as_flows() {
    use perfetto_protos::trace::Trace;
    use perfetto_protos::track_event::track_event::Type;
    use protobuf::Message;
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("a.trace");
    let o = ikp(&[
        "decode",
        &sample(),
        "--perfetto",
        s(&out),
        "--perfetto-compression",
        "none",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = Trace::parse_from_bytes(&std::fs::read(&out).unwrap()).unwrap();
    let (mut starts, mut ends): (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
    for p in &t.packet {
        let te = p.track_event();
        if !te.flow_ids.is_empty() {
            assert_eq!(te.type_(), Type::TYPE_INSTANT);
        }
        if !te.terminating_flow_ids.is_empty() {
            assert_eq!(te.type_(), Type::TYPE_SLICE_END);
        }
        starts.extend(&te.flow_ids);
        ends.extend(&te.terminating_flow_ids);
    }
    let trace =
        ikp_host::decode::load(std::path::Path::new(&sample()), &Default::default()).unwrap();
    let n = ikp_host::analysis::links::links(&trace).len();
    assert!(n > 0);
    starts.sort_unstable();
    ends.sort_unstable();
    assert_eq!(starts.len(), n);
    starts.dedup();
    assert_eq!(starts.len(), n, "a flow id started twice");
    assert_eq!(starts, ends);
}

#[test]
fn report_of_a_missing_buffer_fails_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let o = ikp(&["report", "/nonexistent/x.ikp", "-o", s(d.path())]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("/nonexistent/x.ikp"), "{err}");
    assert!(!d.path().join("report.html").exists());
    let o = ikp(&["report", &sample(), "-o", s(d.path()), "--gpu", "z80"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown GPU"));
}

/// Renders `url` headless; returns (PNG path, console lines).
fn render(url: &str, dir: &Path) -> (PathBuf, Vec<String>) {
    let png = dir.join("shot.png");
    let shot = format!("--screenshot={}", png.display());
    let o = chromium::headless(
        dir,
        &[
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,1600",
            &shot,
        ],
        url,
    );
    let console = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    (png, console)
}

/// Share of pixels that are not near-white, and the number of distinct colours.
fn ink(png: &Path) -> (f64, usize) {
    let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    let ch = info.color_type.samples();
    let px: Vec<&[u8]> = buf[..info.buffer_size()].chunks(ch).collect();
    let inked = px
        .iter()
        .filter(|p| p[..3].iter().any(|&c| c < 235))
        .count();
    let mut colours: Vec<[u8; 3]> = px.iter().map(|p| [p[0], p[1], p[2]]).collect();
    colours.sort_unstable();
    colours.dedup();
    (inked as f64 / px.len() as f64, colours.len())
}

#[test]
fn report_renders_in_headless_chromium_without_console_output() {
    let d = tempfile::tempdir().unwrap();
    let o = ikp(&["report", &sample(), "-o", s(d.path()), "--xlsx"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let xlsx = std::fs::read(d.path().join("report.xlsx")).unwrap();
    assert_eq!(&xlsx[..2], b"PK", "an xlsx is a zip archive");
    let html = d.path().join("report.html");
    let text = std::fs::read_to_string(&html).unwrap();
    for id in [
        "breakdown-0",
        "regions-0",
        "hists-0",
        "heatmap-0",
        "imbalance-0",
    ] {
        assert!(
            text.contains(&format!("id=\"{id}\"")),
            "missing section {id}"
        );
    }
    let (png, console) = render(&format!("file://{}", html.display()), d.path());
    assert!(console.is_empty(), "console output: {console:?}");
    let (share, colours) = ink(&png);
    // Charts and tables cover a good part of the page and use the chart palette.
    assert!(
        share > 0.05,
        "page looks blank: {:.3} of pixels inked",
        share
    );
    assert!(
        colours > 20,
        "only {colours} colours: charts did not render"
    );

    // The checks can fail: a blank page and a page that logs are both caught.
    let blank = d.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let (png, console) = render(&format!("file://{}", blank.display()), d.path());
    assert!(console.is_empty());
    assert!(ink(&png).0 < 0.001);
    let noisy = d.path().join("noisy.html");
    std::fs::write(
        &noisy,
        "<!DOCTYPE html><html><body><script>console.error('x')</script></body></html>",
    )
    .unwrap();
    assert_eq!(
        render(&format!("file://{}", noisy.display()), d.path())
            .1
            .len(),
        1
    );
}

/// A one-lane buffer whose `mma` region lasts `mma_ns` three times, then `load` 50 ns.
fn small_buffer(path: &Path, mma_ns: u64) {
    use ikp_device::encoder::BufferWriter;
    use ikp_device::{Layout, TimerMode};
    let layout = Layout {
        grid: [1, 1, 1],
        groups_per_block: 1,
        records_per_lane: 16,
        timer: TimerMode::Globaltimer,
        regions: vec!["mma".into(), "load".into()],
        counters: vec![],
        ..Layout::default()
    };
    let mut b = BufferWriter::new(layout).unwrap();
    let mut lane = b.lane(0);
    let t0 = 1_000_000u64;
    lane.init(0, 0, 0, t0, 0);
    let mut t = t0;
    for _ in 0..3 {
        lane.begin(0, 0, t).end(0, 0, t + mma_ns);
        t += mma_ns + 10;
    }
    lane.begin(1, 0, t).end(1, 0, t + 50).finalize(t + 60, 0);
    std::fs::write(path, b.to_bytes()).unwrap();
}

#[test]
fn diff_flags_a_slower_region_and_sets_the_exit_code_on_request() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a.ikp"), d.path().join("b.ikp"));
    small_buffer(&a, 100);
    small_buffer(&b, 130);
    let json = d.path().join("diff.json");
    let o = ikp(&["diff", s(&a), s(&b), "--json", s(&json)]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("mma") && l.ends_with("REGRESSION")),
        "{text}"
    );
    assert!(text.contains("1 regression(s)"), "{text}");
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let mma = v["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "mma")
        .unwrap();
    assert!((mma["mean_change_pct"].as_f64().unwrap() - 30.0).abs() < 1e-9);
    assert_eq!(
        ikp(&["diff", s(&a), s(&b), "--fail-on-regression"])
            .status
            .code(),
        Some(3)
    );
    assert_eq!(
        ikp(&["diff", s(&a), s(&a), "--fail-on-regression"])
            .status
            .code(),
        Some(0)
    );
    let o = ikp(&["diff", s(&a), "/nonexistent/b.ikp"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/b.ikp"));
}

#[test]
fn plot_writes_a_histogram_and_an_overlay_per_region() {
    let d = tempfile::tempdir().unwrap();
    let o = ikp(&["plot", &sample(), "-o", s(d.path()), "--top-blocks", "4"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut files: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    let regions = files.iter().filter(|f| f.starts_with("region_")).count();
    assert!(regions >= 5, "{files:?}");
    assert_eq!(
        files
            .iter()
            .filter(|f| f.starts_with("blocks_region_"))
            .count(),
        regions
    );
    let overlay = std::fs::read_to_string(
        d.path().join(
            files
                .iter()
                .find(|f| f.starts_with("blocks_region_"))
                .unwrap(),
        ),
    )
    .unwrap();
    assert_eq!(overlay.matches("<polyline").count(), 4);
}
