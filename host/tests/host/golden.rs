//! Golden files of every text output (Chrome JSON in both event styles and groupings,
//! summary JSON, block distributions, CSV, terminal table) for a small native buffer and a
//! small TVM-format buffer, and of the Chrome JSON and summary of a native buffer whose
//! regions overlap. `IKP_BLESS=1 cargo test -p ikp-host --test host golden::` rewrites them.
//!
//! Each test also re-parses its output and checks its meaning against the decoded trace,
//! so a blessed file that is wrong fails too.
use crate::shares_oracle;

use crate::golden_check::golden;

use ikp_device::encoder::BufferWriter;
use ikp_device::tvm::pack;
use ikp_device::{Layout, TimerMode};
use ikp_host::decode::{decode, DecodeOptions};
use ikp_host::write::{self, BlockDistOptions, ChromeOptions, SummaryOptions};
use ikp_host::TraceStats;
use ikp_host::{BlockFilter, WriteError};
use ikp_host::{Names, Trace};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;

/// Two blocks x two lanes: nesting, repeats, an instant, counter samples, an unmatched
/// begin and end, drops, one lane never finalized.
fn native() -> Trace {
    let layout = Layout {
        grid: [2, 1, 1],
        groups_per_block: 2,
        records_per_lane: 12,
        timer: TimerMode::Globaltimer,
        regions: vec!["mainloop".into(), "load \"kv\"".into(), "mma,wgmma".into()],
        counters: vec!["kv_wait".into()],
        ..Layout::default()
    };
    let mut b = BufferWriter::new(layout).unwrap();
    let t0 = 1_000_000u64;
    b.lane(0)
        .init(4, 0, 0, t0, 0)
        .begin(0, 0, t0 + 10)
        .begin(1, 0, t0 + 20)
        .end(1, 0, t0 + 520)
        .counter_sample(0, 12)
        .counter_add(0, 12)
        .begin(1, 1, t0 + 530)
        .end(1, 1, t0 + 1030)
        .end(0, 0, t0 + 1100)
        .finalize(t0 + 1200, 0);
    b.lane(1)
        .init(4, 4, 0, t0 + 5, 0)
        .begin(0, 0, t0 + 15)
        .begin(2, 0, t0 + 600)
        .end(2, 0, t0 + 800)
        .instant(2, 7, t0 + 801)
        .begin(2, 1, t0 + 1040)
        .end(2, 1, t0 + 1290)
        .end(0, 0, t0 + 1300)
        .end(1, 0, t0 + 1301)
        .finalize(t0 + 1400, 0);
    {
        let mut l = b.lane(2);
        l.init(9, 0, 0, t0 + 50, 0);
        for k in 0..7u32 {
            let s = t0 + 100 + 300 * k as u64;
            l.begin(1, k, s).end(1, k, s + 250 + 10 * k as u64);
        }
        l.finalize(t0 + 2500, 0);
    }
    b.lane(3)
        .init(9, 4, 0, t0 + 60, 0)
        .begin(0, 0, t0 + 70)
        .begin(2, 0, t0 + 100)
        .end(2, 0, t0 + 400);
    decode(&b.into_words(), &DecodeOptions::default()).unwrap()
}

/// One block x two lanes whose regions overlap as well as nest. Lane 0: `mainloop` holds a
/// `load` and a `wait` begun inside the load that outlives it, with an `mma` begun inside
/// the wait after the load ended. Lane 1: `load`, `wait`, `mma` begun in turn and ended in
/// the same order (a staircase: three rows), then a `load` holding an `mma` repeated in
/// itself, an instant and a counter sample.
fn overlapping() -> Trace {
    let layout = Layout {
        grid: [1, 1, 1],
        groups_per_block: 2,
        records_per_lane: 24,
        timer: TimerMode::Globaltimer,
        regions: vec![
            "mainloop".into(),
            "load".into(),
            "wait".into(),
            "mma".into(),
        ],
        counters: vec!["kv_wait".into()],
        ..Layout::default()
    };
    let mut b = BufferWriter::new(layout).unwrap();
    let t0 = 2_000_000u64;
    b.lane(0)
        .init(3, 0, 0, t0, 0)
        .begin(0, 0, t0 + 10)
        .begin(1, 1, t0 + 100)
        .begin(2, 2, t0 + 200)
        .end(1, 0, t0 + 300)
        .begin(3, 3, t0 + 350)
        .end(3, 0, t0 + 450)
        .end(2, 0, t0 + 500)
        .end(0, 0, t0 + 1000)
        .finalize(t0 + 1100, 0);
    b.lane(1)
        .init(3, 4, 0, t0 + 5, 0)
        .begin(1, 4, t0 + 10)
        .begin(2, 5, t0 + 20)
        .begin(3, 6, t0 + 30)
        .end(1, 0, t0 + 400)
        .end(2, 0, t0 + 500)
        .counter_sample(0, 9)
        .end(3, 0, t0 + 600)
        .begin(1, 7, t0 + 700)
        .begin(3, 8, t0 + 710)
        .begin(3, 9, t0 + 720)
        .end(3, 0, t0 + 730)
        .instant(2, 1, t0 + 735)
        .end(3, 0, t0 + 740)
        .end(1, 0, t0 + 800)
        .finalize(t0 + 900, 0);
    decode(&b.into_words(), &DecodeOptions::default()).unwrap()
}

/// Clock mode, one block x three groups: lane 0 runs 2 ms (its own ratio, 1.5 GHz), lane
/// 1 less than one 1 us globaltimer tick (the pooled ratio), lane 2's clock steps back
/// once (clamped and counted) and it never finalizes.
fn clock() -> Trace {
    let layout = Layout {
        grid: [1, 1, 1],
        groups_per_block: 3,
        records_per_lane: 8,
        timer: TimerMode::Clock,
        regions: vec!["mainloop".into(), "mma".into()],
        counters: vec![],
        ..Layout::default()
    };
    let f = ikp_device::wire::lane_flags::CLOCK;
    let mut b = BufferWriter::new(layout).unwrap();
    let (gt, c) = (5_000_000u64, 1_000u64);
    b.lane(0)
        .init(0, 0, f, gt, c)
        .begin(0, 0, c + 300)
        .begin(1, 0, c + 1_500)
        .end(1, 0, c + 1_501_500)
        .end(0, 0, c + 2_999_700)
        .finalize(gt + 2_000_000, c + 3_000_000);
    b.lane(1)
        .init(1, 0, f, gt + 1_000, c + 40_000)
        .begin(1, 0, c + 40_100)
        .end(1, 0, c + 41_000)
        .finalize(gt + 1_000, c + 41_200);
    b.lane(2)
        .init(2, 0, f, gt + 2_000, c + 90_000)
        .begin(0, 0, c + 90_300)
        .begin(1, 0, c + 90_600)
        .end(1, 0, c + 90_580) // 20 cycles back: clamped to the begin
        .end(0, 0, c + 93_000);
    decode(&b.into_words(), &DecodeOptions::default()).unwrap()
}

/// One block x two groups in the TVM format, names from a names file.
fn tvm() -> Trace {
    let base = u32::MAX - 300; // the trace crosses the 32-bit wrap
    let at = |d: u32| base.wrapping_add(d);
    let lanes = [
        vec![
            pack(at(0), 0, 0, 0),
            pack(at(10), 0, 1, 0),
            pack(at(400), 0, 1, 1),
            pack(at(410), 0, 1, 0),
            pack(at(800), 0, 1, 1),
            pack(at(900), 0, 0, 1),
            pack(at(950), 0, 0, 3),
        ],
        vec![
            pack(at(20), 1, 2, 0),
            pack(at(300), 1, 2, 1),
            pack(at(305), 1, 3, 2),
            pack(at(500), 1, 2, 0),
            pack(at(700), 1, 2, 1),
            pack(at(960), 1, 0, 3),
        ],
    ];
    let mut w = vec![0u64; 1 + 2 * 7];
    w[0] = 2 << 32 | 1;
    for (l, recs) in lanes.iter().enumerate() {
        for (k, &r) in recs.iter().enumerate() {
            w[1 + l + 2 * k] = r;
        }
    }
    let opts = DecodeOptions {
        names: Some(Names {
            regions: ikp_host::decode::names::parse(
                r#"{"0": "kernel", "1": "tma_load", "2": "softmax", "3": "barrier"}"#,
            )
            .unwrap(),
            counters: vec![],
        }),
        ..Default::default()
    };
    decode(&w, &opts).unwrap()
}

fn out(f: impl FnOnce(&mut Vec<u8>) -> Result<(), WriteError>) -> Vec<u8> {
    let mut v = Vec::new();
    f(&mut v).unwrap();
    v
}

fn us(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

/// Checks a Chrome trace against the model: per-thread B/E nesting and time order, one
/// B (or X) per span with the right duration, instants, metadata for every row.
fn check_chrome(doc: &[u8], t: &Trace, opt: &ChromeOptions) {
    let v: Value = serde_json::from_slice(doc).unwrap();
    assert_eq!(v["displayTimeUnit"], "ns");
    let all = v["traceEvents"].as_array().unwrap();
    // The lanes' lifetime rows (tid step 9007), checked apart from the spans' rows.
    let life_row = |e: &Value| {
        e["ph"] != "M" && (e["tid"].as_u64()).is_some_and(|t| t >= 9_007_000_000_000_000)
    };
    let (life, ev): (Vec<&Value>, Vec<&Value>) = all.iter().partition(|e| life_row(e));
    check_lifetimes(&life, t, opt);
    let lanes: Vec<_> = t.lanes.iter().collect();
    let n_spans: usize = lanes.iter().map(|l| l.spans.len()).sum();
    let n_inst: usize = lanes.iter().map(|l| l.instants.len()).sum();
    let ph = |p: &str| ev.iter().filter(|e| e["ph"] == p).count();
    let mut names: HashMap<(u64, u64), bool> = HashMap::new();
    for e in ev
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
    {
        names.insert(
            (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()),
            true,
        );
    }
    assert_eq!(ph("i"), n_inst);
    let mut durs: Vec<u64> = Vec::new();
    if opt.emit_complete_events {
        assert_eq!((ph("X"), ph("B"), ph("E")), (n_spans, 0, 0));
        // Each row's X events nest: in file order (begin order) an event lies within
        // every earlier one of its row that has not ended by its begin (touching ends are
        // not crossings).
        let mut open: HashMap<(u64, u64), Vec<(f64, f64)>> = HashMap::new();
        for e in ev.iter().filter(|e| e["ph"] == "X") {
            durs.push((us(&e["dur"]) * 1000.0).round() as u64);
            let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
            assert!(names.contains_key(&key), "event on an unnamed row {key:?}");
            let (b, end) = (us(&e["ts"]), us(&e["ts"]) + us(&e["dur"]));
            let stack = open.entry(key).or_default();
            while stack.last().is_some_and(|&(_, pe)| pe <= b) {
                stack.pop();
            }
            if let Some(&(pb, pe)) = stack.last() {
                assert!(
                    pb <= b && end <= pe + 1e-9,
                    "{e} crosses [{pb}, {pe}] on {key:?}"
                );
            }
            stack.push((b, end));
        }
    } else {
        assert_eq!((ph("B"), ph("E"), ph("X")), (n_spans, n_spans, 0));
        let mut stacks: HashMap<(u64, u64), (Vec<f64>, f64)> = HashMap::new();
        for e in ev.iter().filter(|e| e["ph"] == "B" || e["ph"] == "E") {
            let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
            assert!(names.contains_key(&key), "event on an unnamed row {key:?}");
            let (stack, last) = stacks.entry(key).or_default();
            let ts = us(&e["ts"]);
            assert!(ts >= *last, "time goes backwards on {key:?}");
            *last = ts;
            if e["ph"] == "B" {
                stack.push(ts);
            } else {
                let b = stack.pop().expect("E without B");
                durs.push(((ts - b) * 1000.0).round() as u64);
            }
        }
        assert!(stacks.values().all(|(s, _)| s.is_empty()), "unclosed B");
    }
    let mut want: Vec<u64> = lanes
        .iter()
        .flat_map(|l| l.spans.clone().map(|i| t.spans.dur(i)))
        .collect();
    want.sort_unstable();
    durs.sort_unstable();
    let scaled: Vec<u64> = want
        .iter()
        .map(|&d| (d as f64 * opt.scale).round() as u64)
        .collect();
    assert_eq!(durs, scaled);
}

/// The lifetime events of a Chrome trace: one per lane (`X`, or `B` then `E`), from its
/// start to its end, where the format records them; none otherwise.
fn check_lifetimes(life: &[&Value], t: &Trace, opt: &ChromeOptions) {
    let ns = |v: &Value| (us(v) * 1000.0).round() as i64;
    let scaled = |d: u64| (d as f64 * opt.scale).round() as i64;
    let base = t.source.time_base;
    let mut want: Vec<(i64, i64)> = (t.lanes.iter())
        .filter(|_| t.source.format.records_lane_lifetimes())
        .map(|l| (scaled(l.start - base), scaled(l.end.max(l.start) - l.start)))
        .collect();
    let mut got: Vec<(i64, i64)> = if opt.emit_complete_events {
        (life.iter())
            .map(|e| {
                assert_eq!(
                    (&e["ph"], &e["name"]),
                    (&Value::from("X"), &Value::from("lifetime"))
                );
                (ns(&e["ts"]), ns(&e["dur"]))
            })
            .collect()
    } else {
        (life.chunks(2))
            .map(|p| {
                assert_eq!(
                    (&p[0]["ph"], &p[0]["name"]),
                    (&Value::from("B"), &Value::from("lifetime"))
                );
                assert_eq!(
                    (&p[1]["ph"], &p[1]["tid"]),
                    (&Value::from("E"), &p[0]["tid"])
                );
                (ns(&p[0]["ts"]), ns(&p[1]["ts"]) - ns(&p[0]["ts"]))
            })
            .collect()
    };
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(got.len(), want.len(), "one lifetime per lane");
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g.0 - w.0).abs() <= 1 && (g.1 - w.1).abs() <= 1,
            "lifetime {g:?}, want {w:?}"
        );
    }
}

fn check_summary(doc: &[u8], t: &Trace, opt: &SummaryOptions) {
    let v: Value = serde_json::from_slice(doc).unwrap();
    let lanes: Vec<_> = t.lanes.iter().collect();
    let n_spans: usize = lanes.iter().map(|l| l.spans.len()).sum();
    let regions = v["regions"].as_array().unwrap();
    let count: u64 = regions.iter().map(|r| r["count"].as_u64().unwrap()).sum();
    assert_eq!(count as usize, n_spans);
    for r in regions {
        let p = &r["percentiles"];
        let ps: Vec<f64> = ["p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99"]
            .iter()
            .map(|k| us(&p[k]))
            .collect();
        assert!(ps.windows(2).all(|w| w[0] <= w[1]));
        assert!(us(&r["min_dur"]) <= ps[0] && ps[7] <= us(&r["max_dur"]));
        let prob: f64 = r["hist"]["prob"].as_array().unwrap().iter().map(us).sum();
        assert!((prob - 1.0).abs() < 1e-9);
        assert_eq!(
            r["hist"]["bins"].as_u64().unwrap() as usize,
            r["hist"]["prob"].as_array().unwrap().len()
        );
        // Mean recomputed from the model.
        let id = r["region"].as_u64().unwrap() as u16;
        let d: Vec<u64> = lanes
            .iter()
            .flat_map(|l| l.spans.clone())
            .filter(|&i| t.spans.region[i] == id)
            .map(|i| t.spans.dur(i))
            .collect();
        let mean = d.iter().sum::<u64>() as f64 / d.len() as f64 * opt.scale;
        assert!((us(&r["mean_dur"]) - mean).abs() < 1e-6);
    }
    // Self time, lane time and shares against the brute-force reference.
    let e = shares_oracle::expected(t, lanes.iter().copied());
    let k = opt.scale;
    assert_eq!(us(&v["lane_dur"]), e.lane_time as f64 * k);
    assert_eq!(us(&v["outside_dur"]), e.outside as f64 * k);
    let mut shares = us(&v["outside_share"]);
    for r in regions {
        let id = r["region"].as_u64().unwrap() as u16;
        let own = e.self_ns.get(&id).copied().unwrap_or(0);
        assert_eq!(us(&r["self_dur"]), own as f64 * k);
        assert_eq!(us(&r["total_dur"]), e.inclusive[&id] as f64 * k);
        // serde_json may read a float back one ulp off.
        let share = own as f64 / e.lane_time as f64;
        assert!((us(&r["self_share"]) - share).abs() <= 2.0 * f64::EPSILON * share);
        shares += us(&r["self_share"]);
    }
    assert!((shares - 1.0).abs() < 1e-12, "shares sum to {shares}");
    let ub = lanes
        .iter()
        .map(|l| {
            t.diagnostics
                .unmatched_begin
                .iter()
                .filter(|u| u.lane == l.id)
                .count()
        })
        .sum::<usize>();
    assert_eq!(v["unmatched_begin"].as_u64().unwrap() as usize, ub);
    assert_eq!(v["backward_steps"], t.diagnostics.backward_steps);
    match t.source.clock {
        None => assert!(v["clock"].is_null()),
        Some(c) => {
            let j = &v["clock"];
            assert_eq!(
                [&j["pooled_ns"], &j["pooled_cycles"], &j["pool_lanes"]],
                [c.pooled_ns, c.pooled_cycles, c.pool_lanes]
            );
            assert_eq!(
                [&j["own_ratio_lanes"], &j["pooled_ratio_lanes"]],
                [c.own_ratio_lanes, c.pooled_ratio_lanes]
            );
            let mhz = c.pooled_cycles as f64 * 1e3 / c.pooled_ns as f64;
            assert!((us(&j["pooled_mhz"]) - mhz).abs() < 1e-9);
        }
    }
    assert_eq!(
        v["dropped"].as_u64().unwrap(),
        lanes.iter().map(|l| l.dropped).sum::<u64>()
    );
    if opt.summary_dump_by_block_warp {
        for (_, r) in v["by_block_warp_regions"].as_object().unwrap() {
            let e = r["by_block_warp"].as_array().unwrap();
            let k = opt.summary_topk_block_warp_per_region as usize;
            assert!(k == 0 || e.len() <= k);
        }
    }
}

fn check_csv(doc: &[u8], t: &Trace) {
    let text = std::str::from_utf8(doc).unwrap();
    let mut lines = text.lines();
    assert_eq!(format!("{}\n", lines.next().unwrap()), write::csv::HEADER);
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), t.spans.len());
    for (i, row) in rows.iter().enumerate() {
        // Names may hold quoted commas: read numbers from both ends.
        let f: Vec<&str> = row.split(',').collect();
        let n = f.len();
        let (b, e, d): (u64, u64, u64) = (
            f[n - 5].parse().unwrap(),
            f[n - 4].parse().unwrap(),
            f[n - 3].parse().unwrap(),
        );
        assert_eq!(e - b, d);
        assert_eq!(d, t.spans.dur(i));
        assert_eq!(b, t.spans.begin[i] - t.source.time_base);
    }
}

#[test]
fn chrome_native_begin_end_by_sm() {
    let t = native();
    let opt = ChromeOptions {
        emit_complete_events: false,
        ..Default::default()
    };
    let doc = out(|w| write::chrome::write_chrome(w, &t, &opt));
    check_chrome(&doc, &t, &opt);
    golden("native_chrome.json", &doc);
}

#[test]
fn chrome_native_complete_events_by_block_filtered_and_scaled() {
    let t = native().filter_blocks(&BlockFilter::new(vec![1]));
    let opt = ChromeOptions {
        emit_complete_events: true,
        group_by_smid: false,
        scale: 2.0,
    };
    let doc = out(|w| write::chrome::write_chrome(w, &t, &opt));
    check_chrome(&doc, &t, &opt);
    let v: Value = serde_json::from_slice(&doc).unwrap();
    assert!(v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] != "M")
        .all(|e| e["pid"] == 1));
    golden("native_chrome_x_by_block.json", &doc);
}

#[test]
fn chrome_tvm() {
    let t = tvm();
    let opt = ChromeOptions {
        emit_complete_events: false,
        ..Default::default()
    };
    let doc = out(|w| write::chrome::write_chrome(w, &t, &opt));
    check_chrome(&doc, &t, &opt);
    let v: Value = serde_json::from_slice(&doc).unwrap();
    let b = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["ph"] == "B")
        .unwrap()
        .clone();
    assert_eq!(b["args"], serde_json::json!({"block": 0, "group": 0}));
    assert_eq!(b["name"], "kernel");
    golden("tvm_chrome.json", &doc);
}

/// `(pid, tid) -> name` of every `thread_name` event of Chrome trace `v`.
fn thread_names(v: &Value) -> HashMap<(u64, u64), String> {
    (v["traceEvents"].as_array().unwrap().iter())
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| {
            let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
            (key, e["args"]["name"].as_str().unwrap().to_string())
        })
        .collect()
}

#[test]
fn chrome_overlapping_regions_go_to_overlap_rows_of_their_lane() {
    let t = overlapping();
    assert!(t.diagnostics.unmatched_begin.is_empty() && t.diagnostics.unmatched_end.is_empty());
    // B/E by SM (pid = SM 3, tid = block << 6 | warp), X by block (pid = block 0, tid =
    // warp * 32).
    for (complete, by_sm) in [(false, true), (true, false)] {
        let opt = ChromeOptions {
            emit_complete_events: complete,
            group_by_smid: by_sm,
            ..Default::default()
        };
        let doc = out(|w| write::chrome::write_chrome(w, &t, &opt));
        check_chrome(&doc, &t, &opt);
        let v: Value = serde_json::from_slice(&doc).unwrap();
        // Lane 0 (warp 0) needs one overlap row, lane 1 (warp 4) two: tid + n * 10^12.
        let step = 1_000_000_000_000u64;
        let (pid, tid1, prefix) = if by_sm {
            (3, 4, "block 0 ")
        } else {
            (0, 128, "")
        };
        let name = |w: u32| format!("{prefix}warp {w}");
        let mut want: Vec<((u64, u64), String)> = vec![
            ((pid, 0), name(0)),
            ((pid, tid1), name(4)),
            ((pid, step), format!("{} (overlap 1)", name(0))),
            ((pid, step + tid1), format!("{} (overlap 1)", name(4))),
            ((pid, 2 * step + tid1), format!("{} (overlap 2)", name(4))),
            // Native lanes' lifetime rows: tid + 9007 * 10^12.
            ((pid, 9007 * step), format!("{} (lifetime)", name(0))),
            ((pid, 9007 * step + tid1), format!("{} (lifetime)", name(4))),
        ];
        want.sort();
        let mut got: Vec<_> = thread_names(&v).into_iter().collect();
        got.sort();
        assert_eq!(got, want);
        // Each span is on the first row where it nests: lane 0's wait (which outlives the
        // load on the lane's row) on row 1, the mma begun inside it after the load ended
        // back on the lane's row (in the mainloop); lane 1's wait and mma on rows 1 and 2.
        let row_of = |name: &str, ts: f64| -> u64 {
            let e = (v["traceEvents"].as_array().unwrap().iter())
                .find(|e| {
                    e["name"] == name && (e["ph"] == "B" || e["ph"] == "X") && us(&e["ts"]) == ts
                })
                .unwrap_or_else(|| panic!("no {name} at {ts}"));
            e["tid"].as_u64().unwrap()
        };
        let base = t.source.time_base;
        let at = |ns: u64| (2_000_000 + ns - base) as f64 / 1000.0;
        assert_eq!(row_of("load", at(100)), 0);
        assert_eq!(row_of("wait", at(200)), step);
        assert_eq!(row_of("mma", at(350)), 0);
        assert_eq!(row_of("load", at(10)), tid1);
        assert_eq!(row_of("wait", at(20)), step + tid1);
        assert_eq!(row_of("mma", at(30)), 2 * step + tid1);
        assert_eq!(
            row_of("mma", at(720)),
            tid1,
            "nested spans stay on the lane's row"
        );
        golden(
            if complete {
                "overlap_chrome_x_by_block.json"
            } else {
                "overlap_chrome.json"
            },
            &doc,
        );
    }
}

#[test]
fn summary_overlapping() {
    let t = overlapping();
    let opt = SummaryOptions::default();
    let doc = out(|w| {
        write::summary::write_summary(
            w,
            &write::summary::summarize(&TraceStats::of(&t), &opt, "overlap.json"),
        )
    });
    check_summary(&doc, &t, &opt);
    let v: Value = serde_json::from_slice(&doc).unwrap();
    let self_of = |name: &str| {
        (v["regions"].as_array().unwrap().iter())
            .find(|r| r["name"] == name)
            .map(|r| us(&r["self_dur"]))
            .unwrap()
    };
    // Time goes to the open region begun last. Lane 0: mainloop [10,100) + [500,1000),
    // load [100,200), wait [200,350) + [450,500), mma [350,450). Lane 1: load [10,20) +
    // [700,710) + [740,800), wait [20,30), mma [30,600) + [710,740).
    assert_eq!(self_of("mainloop"), 590.0);
    assert_eq!(self_of("load"), 100.0 + 10.0 + 10.0 + 60.0);
    assert_eq!(self_of("wait"), 200.0 + 10.0);
    assert_eq!(self_of("mma"), 100.0 + 570.0 + 30.0);
    golden("overlap_summary.json", &doc);
}

#[test]
fn summary_native() {
    let t = native();
    let opt = SummaryOptions::default();
    let doc = out(|w| {
        write::summary::write_summary(
            w,
            &write::summary::summarize(&TraceStats::of(&t), &opt, "native.json"),
        )
    });
    check_summary(&doc, &t, &opt);
    let v: Value = serde_json::from_slice(&doc).unwrap();
    assert_eq!(v["dropped"], 2);
    assert_eq!(v["dropped_by_lane"][0]["lane"], 2);
    assert_eq!(v["unmatched_end"], 1);
    assert_eq!(v["unfinalized_lanes"], 1);
    assert_eq!(v["unmatched_by_region"][0]["name"], "mainloop");
    golden("native_summary.json", &doc);
}

#[test]
fn summary_native_topk_and_filter() {
    let t = native().filter_blocks(&BlockFilter::new(vec![0]));
    let opt = SummaryOptions {
        summary_topk_block_warp_per_region: 1,
        summary_hist_bins: 4,
        ..Default::default()
    };
    let doc = out(|w| {
        write::summary::write_summary(
            w,
            &write::summary::summarize(&TraceStats::of(&t), &opt, "native.json"),
        )
    });
    check_summary(&doc, &t, &opt);
    let v: Value = serde_json::from_slice(&doc).unwrap();
    assert_eq!(v["block_filter"], serde_json::json!([0]));
    // Region "load \"kv\"" is recorded by lane 0 only in block 0: top-1 keeps it.
    let r = &v["by_block_warp_regions"]["region_load \"kv\""]["by_block_warp"];
    assert_eq!(r.as_array().unwrap().len(), 1);
    assert_eq!(r[0]["lane"], 0);
    golden("native_summary_top1_block0.json", &doc);
}

#[test]
fn summary_tvm() {
    let t = tvm();
    let opt = SummaryOptions::default();
    let doc = out(|w| {
        write::summary::write_summary(
            w,
            &write::summary::summarize(&TraceStats::of(&t), &opt, "tvm.json"),
        )
    });
    check_summary(&doc, &t, &opt);
    let v: Value = serde_json::from_slice(&doc).unwrap();
    assert_eq!(v["format"], "tvm");
    let tma = v["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "tma_load")
        .unwrap();
    // 390 and 390: both spans, one of them across the 32-bit wrap.
    assert_eq!(
        (tma["count"].as_u64(), tma["min_dur"].as_f64()),
        (Some(2), Some(390.0))
    );
    golden("tvm_summary.json", &doc);
}

#[test]
fn summary_clock() {
    let t = clock();
    let opt = SummaryOptions::default();
    let doc = out(|w| {
        write::summary::write_summary(
            w,
            &write::summary::summarize(&TraceStats::of(&t), &opt, "clock.json"),
        )
    });
    check_summary(&doc, &t, &opt);
    let v: Value = serde_json::from_slice(&doc).unwrap();
    assert_eq!(v["backward_steps"], 1);
    // Pooled over the finalized lanes 0 and 1 (lane 1's start and end are one tick: 0 ns).
    assert_eq!(v["clock"]["pooled_ns"], 2_000_000);
    assert_eq!(v["clock"]["pooled_cycles"], 3_001_200);
    assert_eq!(v["clock"]["pool_lanes"], 2);
    assert_eq!(v["clock"]["own_ratio_lanes"], 1);
    assert_eq!(v["clock"]["pooled_ratio_lanes"], 2);
    // Lane 0's mma: 1.5e6 cycles at its own 1.5 GHz.
    let mma = &v["regions"][1];
    assert_eq!(mma["name"], "mma");
    assert_eq!(mma["max_dur"], 1_000_000.0);
    golden("clock_summary.json", &doc);
}

#[test]
fn block_distributions() {
    let t = native();
    let opt = BlockDistOptions {
        block_region_hist_bins: 4,
        block_region_topk_blocks: 1,
        block_region_topk_regions_per_block: 2,
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("native_block_region_dists");
    let mut outs = ikp_host::atomic::Outputs::new();
    write::block_dists::write_block_dists(&mut outs, &p, &TraceStats::of(&t), &opt, "native.json")
        .unwrap();
    assert!(!p.exists(), "the directory is in place only once committed");
    outs.commit().unwrap();
    let index = std::fs::read(p.join("index.json")).unwrap();
    let v: Value = serde_json::from_slice(&index).unwrap();
    // Block 0 has the most span time (3825 ns against 1950 ns).
    assert_eq!(v["blocks"], serde_json::json!([0]));
    assert_eq!(v["dir"], "native_block_region_dists");
    let b0 = std::fs::read(p.join("block_0.json")).unwrap();
    let bv: Value = serde_json::from_slice(&b0).unwrap();
    let regions = bv["regions"].as_array().unwrap();
    assert_eq!(regions.len(), 2);
    assert!(us(&regions[0]["total_dur"]) >= us(&regions[1]["total_dur"]));
    assert_eq!(std::fs::read_dir(&p).unwrap().count(), 2);
    golden("native_block_region_dists/index.json", &index);
    golden("native_block_region_dists/block_0.json", &b0);
}

#[test]
fn csv_native_and_tvm() {
    let t = native();
    let doc = out(|w| write::csv::write_csv(w, &t));
    check_csv(&doc, &t);
    assert!(String::from_utf8_lossy(&doc).contains(",\"mma,wgmma\","));
    golden("native_spans.csv", &doc);
    let t = tvm();
    let doc = out(|w| write::csv::write_csv(w, &t));
    check_csv(&doc, &t);
    // No warp or SM in the TVM format: empty fields.
    assert!(String::from_utf8_lossy(&doc)
        .lines()
        .nth(1)
        .unwrap()
        .starts_with("0,0,0,,,"));
    golden("tvm_spans.csv", &doc);
}

#[test]
fn table_native() {
    let t = native();
    let doc = out(|w| write::table::write_table(w, &TraceStats::of(&t), &Default::default()));
    let text = String::from_utf8(doc.clone()).unwrap();
    let rows: Vec<&str> = text.lines().skip(1).take(4).collect();
    // Sorted by self time: lane 0's and lane 2's loads make "load \"kv\"" the largest;
    // the time outside any region comes last, where the cumulative percent reaches 100.
    assert!(rows[0].starts_with("load \"kv\""), "{text}");
    assert!(
        rows[3].starts_with("(outside any region)") && rows[3].ends_with(" 100.0"),
        "{text}"
    );
    assert!(text.contains("unmatched end 1"));
    assert!(text.contains("backward steps 0"));
    assert!(
        !text.contains("MHz"),
        "no clock line for globaltimer stamps: {text}"
    );
    golden("native_table.txt", &doc);
}

#[test]
fn table_clock() {
    let t = clock();
    let doc = out(|w| write::table::write_table(w, &TraceStats::of(&t), &Default::default()));
    let text = String::from_utf8(doc.clone()).unwrap();
    assert!(text.contains("backward steps 1"), "{text}");
    assert!(
        text.contains("clock 1500.60 MHz pooled over 2 lanes (2000000 ns / 3001200 cycles); 1 lanes on their own ratio, 2 on the pooled one"),
        "{text}"
    );
    golden("clock_table.txt", &doc);
}

/// A shipped sample of the TVM family, decoded with its names file.
fn shipped(buf: &str, names: &str) -> Trace {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let opts = DecodeOptions {
        names: Some(ikp_host::read_names(&root.join(names)).unwrap()),
        ..Default::default()
    };
    ikp_host::load(&root.join(buf), &opts).unwrap()
}

#[test]
fn summary_and_csv_of_the_tvm_sample() {
    let t = shipped("samples/attention_tvm.bin", "samples/attention_names.txt");
    let opt = SummaryOptions::default();
    let doc = out(|w| {
        write::summary::write_summary(
            w,
            &write::summary::summarize(&TraceStats::of(&t), &opt, "tvm.json"),
        )
    });
    check_summary(&doc, &t, &opt);
    let v: Value = serde_json::from_slice(&doc).unwrap();
    assert_eq!(v["format"], "tvm");
    assert_eq!(
        (v["blocks"].as_u64(), v["warps_per_block"].as_u64()),
        (Some(8), Some(3))
    );
    // Every lane finalizes; the signals are instants.
    assert!(t.lanes.iter().all(|l| l.finalized && l.sm.is_none()));
    assert!(!t.instants.ts.is_empty());
    golden("tvm_sample_summary.json", &doc);
    let doc = out(|w| write::csv::write_csv(w, &t));
    check_csv(&doc, &t);
    golden("tvm_sample_spans.csv", &doc);
}

#[test]
fn summary_and_csv_of_the_flashinfer_sample() {
    let t = shipped(
        "samples/attention_flashinfer.bin",
        "samples/attention_names.txt",
    );
    let opt = SummaryOptions::default();
    let doc = out(|w| {
        write::summary::write_summary(
            w,
            &write::summary::summarize(&TraceStats::of(&t), &opt, "fi.json"),
        )
    });
    check_summary(&doc, &t, &opt);
    let v: Value = serde_json::from_slice(&doc).unwrap();
    assert_eq!(v["format"], "flashinfer");
    assert_eq!(
        (v["blocks"].as_u64(), v["warps_per_block"].as_u64()),
        (Some(8), Some(3))
    );
    golden("flashinfer_summary.json", &doc);
    let doc = out(|w| write::csv::write_csv(w, &t));
    check_csv(&doc, &t);
    // Lane 0 is block 0, group 0, on SM 0 (`sample::sm_of`): the SM column is filled.
    let row = String::from_utf8_lossy(&doc)
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    assert!(row.starts_with("0,0,0,,0,"), "{row}");
    golden("flashinfer_spans.csv", &doc);
}

#[test]
fn summary_and_csv_of_the_mirage_sample() {
    let t = shipped("samples/mpk_mirage.bin", "samples/mpk_names.json");
    let opt = SummaryOptions::default();
    let doc = out(|w| {
        write::summary::write_summary(
            w,
            &write::summary::summarize(&TraceStats::of(&t), &opt, "mpk.json"),
        )
    });
    check_summary(&doc, &t, &opt);
    let v: Value = serde_json::from_slice(&doc).unwrap();
    assert_eq!(v["format"], "mirage");
    let names: Vec<&str> = (v["regions"].as_array().unwrap().iter())
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"TASK_SCHD_EVENTS"), "{names:?}");
    golden("mirage_summary.json", &doc);
    let doc = out(|w| write::csv::write_csv(w, &t));
    check_csv(&doc, &t);
    golden("mirage_spans.csv", &doc);
}

/// A ring buffer of two launches (three ran), lanes 0 wrapped: launch 1, decoded with
/// the overhead correction (8 cycles per record at 0.5 ns per cycle).
fn ring_launch() -> Trace {
    use ikp_device::wire::lane_flags::RING;
    let layout = Layout {
        groups_per_block: 2,
        records_per_lane: 4,
        regions: vec!["step".into(), "load".into()],
        overflow: ikp_device::Overflow::Ring,
        epochs: 2,
        ..Layout::default()
    };
    let mut b = BufferWriter::new(layout).unwrap();
    for k in 0..3u64 {
        let t0 = 1_000_000 * (k + 1);
        if let Some(mut w) = b.launch(0) {
            w.init(2, 0, RING, t0, 0).calibrate(8);
            w.begin(0, 0, t0 + 10)
                .begin(1, 0, t0 + 20)
                .end(1, 0, t0 + 120);
            w.begin(1, 1, t0 + 130)
                .instant(1, 0, t0 + 140)
                .end(1, 1, t0 + 230);
            w.end(0, 0, t0 + 240).finalize(t0 + 300, 600);
        }
        if let Some(mut w) = b.launch(1) {
            w.init(3, 1, RING, t0 + 5, 0);
            w.begin(0, 0, t0 + 15)
                .end(0, 0, t0 + 215)
                .finalize(t0 + 305, 600);
        }
    }
    let words = b.into_words();
    let opts = DecodeOptions {
        correct_overhead: true,
        ..Default::default()
    };
    let mut launches = ikp_host::decode_launches(&words, &opts).unwrap();
    assert_eq!(launches.len(), 2);
    launches.pop().unwrap()
}

#[test]
fn summary_and_table_of_a_ring_launch_with_the_overhead_correction() {
    let t = ring_launch();
    let opt = SummaryOptions::default();
    let doc = out(|w| {
        write::summary::write_summary(
            w,
            &write::summary::summarize(&TraceStats::of(&t), &opt, "ring.json"),
        )
    });
    check_summary(&doc, &t, &opt);
    let v: Value = serde_json::from_slice(&doc).unwrap();
    // Lane 0 wrote 7 records into 4 slots; the survivors hold one orphan end.
    assert_eq!(v["overwritten"], 3);
    assert_eq!(v["overwritten_by_lane"][0]["lane"], 0);
    assert_eq!(
        v["ends_of_overwritten_begins"],
        t.diagnostics.ends_of_overwritten_begins
    );
    assert_eq!(v["ends_of_overwritten_begins"], 1);
    assert_eq!(v["epoch"]["index"], 1);
    assert_eq!(
        (
            v["epoch"]["launches"].clone(),
            v["epoch"]["not_recorded"].clone()
        ),
        (3.into(), 1.into())
    );
    let c = t.source.overhead_correction.unwrap();
    assert_eq!(v["overhead_correction"]["per_record_ns_median"], 4.0);
    assert_eq!(v["overhead_correction"]["lanes_unmeasured"], 1);
    assert_eq!(
        v["overhead_correction"]["total_ns_removed"],
        c.total_ns_removed
    );
    golden("ring_launch_summary.json", &doc);
    let doc = out(|w| write::table::write_table(w, &TraceStats::of(&t), &Default::default()));
    let text = String::from_utf8(doc.clone()).unwrap();
    assert!(
        text.contains("ring: 3 records overwritten in 1 lanes"),
        "{text}"
    );
    assert!(
        text.contains("3 launches ran, the buffer holds 2: the last 1 were not recorded"),
        "{text}"
    );
    assert!(text.contains("4.000 ns per record (median)"), "{text}");
    golden("ring_launch_table.txt", &doc);
}
