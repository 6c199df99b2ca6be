//! Analysis tests on hand-built traces whose answers are worked out by hand in comments.
use super::blocks::BlockView;
use super::breakdown::{block_breakdowns, block_time_breakdown, BlockBreakdown, TimeBreakdown};
use super::categories::CategoryTable;
use super::gaps::gaps;
use super::imbalance::imbalance;
use super::isolation::{fit_ns_per_iteration, isolate_compute};
use crate::model::*;
use crate::testutil::{lane, trace};
use crate::time::DurationNs;
use proptest::prelude::*;

fn sum(b: &TimeBreakdown) -> DurationNs {
    b.compute
        + b.exposed_wait
        + b.exposed_load
        + b.exposed_store
        + b.exposed_comm
        + b.exposed_other
        + b.idle
}

#[test]
fn breakdown_unions_lanes_and_exposes_by_priority() {
    // lane 0: load [0,10) mma [10,30); lane 1: wait [5,25) mma [25,40); block ends at 50.
    // compute = [10,40) = 30; wait exposed = [5,10) = 5; load exposed = [0,5) = 5; idle = 10.
    let t = trace(
        &["load", "mma", "wait"],
        vec![
            lane(0, 3, 0, 40, &[(0, 0, 10), (1, 10, 30)]),
            lane(0, 3, 0, 50, &[(2, 5, 25), (1, 25, 40)]),
        ],
    );
    let b = block_time_breakdown(&BlockView::new(&t, &CategoryTable::default()));
    assert_eq!(
        (b.total, b.compute, b.exposed_wait, b.exposed_load, b.idle),
        (50, 30, 5, 5, 10)
    );
    assert_eq!(sum(&b), b.total);
    let blocks = block_breakdowns(&BlockView::new(&t, &CategoryTable::default()));
    assert_eq!(
        blocks,
        vec![BlockBreakdown {
            block: 0,
            start: 0,
            time: b
        }]
    );
}

#[test]
fn nested_time_goes_to_the_innermost_region() {
    // mainloop [0,100) holds wait [10,30) and mma [40,90): self time other = 10 + 10 + 10.
    let t = trace(
        &["mainloop", "wait_full", "mma"],
        vec![lane(0, 0, 0, 100, &[(0, 0, 100), (1, 10, 30), (2, 40, 90)])],
    );
    let b = block_time_breakdown(&BlockView::new(&t, &CategoryTable::default()));
    assert_eq!(
        (b.compute, b.exposed_wait, b.exposed_other, b.idle),
        (50, 20, 30, 0)
    );
}

#[test]
fn a_region_outliving_the_one_it_began_in_keeps_its_time() {
    // mma [0,100) holds load [10,30), and wait [20,50) begun inside the load outlives it:
    // self time mma [0,10) + [50,100), load [10,20), wait [20,50) (the later region's,
    // where two overlap); the mma does not get back [30,50) when the load ends.
    let t = trace(
        &["mma", "load", "wait"],
        vec![lane(0, 0, 0, 100, &[(0, 0, 100), (1, 10, 30), (2, 20, 50)])],
    );
    assert_eq!(t.spans.depth, [0, 1, 2]);
    let b = block_time_breakdown(&BlockView::new(&t, &CategoryTable::default()));
    assert_eq!(
        (b.compute, b.exposed_wait, b.exposed_load, b.idle),
        (60, 30, 10, 0)
    );
    assert_eq!(sum(&b), b.total);
    assert_eq!(crate::stats::self_times(&t), [60, 10, 30]);
}

#[test]
fn concurrent_waits_of_one_block_count_once() {
    // Block 0, two groups: g0 waits [10,30) then computes [30,100); g1 waits [20,40) then
    // computes [40,90). Blocked = [10,40) = 30 (the sum of waits would be 40), compute =
    // 100 - 30 = 70; of the blocked time, [30,40) has g0 computing: overlap 10.
    let t = trace(
        &["wait", "mma"],
        vec![
            lane(0, 0, 0, 100, &[(0, 10, 30), (1, 30, 100)]),
            lane(0, 0, 0, 100, &[(0, 20, 40), (1, 40, 90)]),
        ],
    );
    let iso = isolate_compute(&BlockView::new(&t, &CategoryTable::default()), None);
    assert_eq!(
        (
            iso.length_ns,
            iso.blocked_ns,
            iso.wait_sum_ns,
            iso.compute_ns,
            iso.overlap_ns
        ),
        (100, 30, 40, 70, 10)
    );
    assert_eq!(iso.blocked_from_counters_ns, None);
    assert_eq!(iso.per_block.len(), 1);
    let b = &iso.per_block[0];
    assert_eq!(
        (b.block, b.length_ns, b.blocked_ns, b.compute_ns),
        (0, 100, 30, 70)
    );
    // The breakdown of the same block: compute [30,100), exposed wait [10,30), idle [0,10).
    let k = block_time_breakdown(&BlockView::new(&t, &CategoryTable::default()));
    assert_eq!(
        (k.total, k.compute, k.exposed_wait, k.idle),
        (100, 70, 20, 10)
    );
}

#[test]
fn blocks_are_measured_separately_and_summed() {
    // Block 0 (SM 0) waits [0,50) then computes [50,100); block 1 (SM 1) computes over
    // [20,320). A union across blocks would call [0,50) blocked for the whole GPU (compute
    // 320 - 50 = 270 of 320); per block, only block 0 is blocked: block-time 100 + 300 =
    // 400, blocked 50, compute 50 + 300 = 350.
    let t = trace(
        &["wait", "mma"],
        vec![
            lane(0, 0, 0, 100, &[(0, 0, 50), (1, 50, 100)]),
            lane(1, 1, 20, 320, &[(1, 20, 320)]),
        ],
    );
    let iso = isolate_compute(&BlockView::new(&t, &CategoryTable::default()), None);
    let per: Vec<_> = iso
        .per_block
        .iter()
        .map(|b| (b.block, b.length_ns, b.blocked_ns, b.compute_ns))
        .collect();
    assert_eq!(per, vec![(0, 100, 50, 50), (1, 300, 0, 300)]);
    assert_eq!(
        (iso.length_ns, iso.blocked_ns, iso.compute_ns),
        (400, 50, 350)
    );
    assert_eq!((iso.compute_spread.min, iso.compute_spread.max), (50, 300));
    let bb = block_breakdowns(&BlockView::new(&t, &CategoryTable::default()));
    assert_eq!(
        bb.iter()
            .map(|b| (b.block, b.start, b.time.total, b.time.compute))
            .collect::<Vec<_>>(),
        vec![(0, 0, 100, 50), (1, 20, 300, 300)]
    );
    let k = block_time_breakdown(&BlockView::new(&t, &CategoryTable::default()));
    assert_eq!(k, bb.iter().map(|b| b.time).sum::<TimeBreakdown>());
    assert_eq!(
        (k.total, k.compute, k.exposed_wait, k.idle),
        (400, 350, 50, 0)
    );
    assert_eq!(super::blocks::gpu_wall(&t), 320);
}

#[test]
fn nested_regions_block_only_for_their_own_time() {
    // g0: mainloop [0,200) > { wait.x [10,60) > { mma [20,30) }, mma [100,150) };
    // g1: wait [40,120). Self time: g0 waits [10,20) + [30,60), computes [20,30) +
    // [100,150), runs the loop's own code [0,10) + [60,100) + [150,200).
    // Blocked = [10,20) ∪ [30,120) = 100 (the mma inside the wait is not blocked);
    // compute = 200 - 100 = 100; overlap = [100,120) = 20.
    let t = trace(
        &["mainloop", "wait.x", "mma"],
        vec![
            lane(
                0,
                0,
                0,
                200,
                &[(0, 0, 200), (1, 10, 60), (2, 20, 30), (2, 100, 150)],
            ),
            lane(0, 0, 0, 200, &[(1, 40, 120)]),
        ],
    );
    let iso = isolate_compute(&BlockView::new(&t, &CategoryTable::default()), None);
    assert_eq!(
        (
            iso.length_ns,
            iso.blocked_ns,
            iso.compute_ns,
            iso.overlap_ns,
            iso.wait_sum_ns
        ),
        (200, 100, 100, 20, 50 + 80)
    );
    // Breakdown: compute [20,30) + [100,150) = 60; exposed wait = blocked minus compute =
    // [10,20) + [30,100) = 80; other = [0,10) + [150,200) = 60; idle 0.
    let k = block_time_breakdown(&BlockView::new(&t, &CategoryTable::default()));
    assert_eq!(
        (k.compute, k.exposed_wait, k.exposed_other, k.idle, k.total),
        (60, 80, 60, 0, 200)
    );
    assert_eq!(sum(&k), k.total);
}

#[test]
fn rate_is_fitted_from_timed_waits_with_samples() {
    // Waits of 100 ns / 50 iters and 60 ns / 30 iters: rate = (100*50 + 60*30) / (50² + 30²) = 2.
    let mut l = lane(0, 0, 0, 400, &[(0, 0, 100), (0, 200, 260)]);
    l.samples = vec![(0, 100, 50), (0, 260, 30)];
    let mut l2 = lane(1, 1, 0, 400, &[]);
    l2.samples = vec![(0, 300, 10)]; // counter-only lane: [280, 300) blocked by estimate.
    let t = trace(&["wait"], vec![l, l2]);
    let rate = fit_ns_per_iteration(&BlockView::new(&t, &CategoryTable::default())).unwrap();
    assert!((rate - 2.0).abs() < 1e-12, "{rate}");
    // Per block: block 0 [0,100) + [200,260); block 1 [280,300).
    let iso = isolate_compute(&BlockView::new(&t, &CategoryTable::default()), None);
    assert_eq!(iso.blocked_from_counters_ns, Some(100 + 60 + 20));
    let per: Vec<_> = iso
        .per_block
        .iter()
        .map(|b| b.blocked_from_counters_ns)
        .collect();
    assert_eq!(per, vec![Some(160), Some(20)]);
    let iso = isolate_compute(&BlockView::new(&t, &CategoryTable::default()), Some(1.0));
    assert_eq!(iso.blocked_from_counters_ns, Some(50 + 30 + 10));
}

#[test]
fn imbalance_finds_the_straggler_and_the_tail() {
    // Four SMs, one block each; block 3 runs to 400 while the others end at 100.
    let t = trace(
        &["mma"],
        vec![
            lane(0, 0, 0, 100, &[]),
            lane(1, 1, 0, 100, &[]),
            lane(2, 2, 0, 100, &[]),
            lane(3, 3, 0, 400, &[]),
        ],
    );
    let im = imbalance(&BlockView::new(&t, &CategoryTable::default()));
    assert_eq!(im.blocks.slowest[0], (3, 400));
    assert_eq!((im.blocks.median, im.blocks.max), (100, 400));
    assert!((im.blocks.max_over_median - 4.0).abs() < 1e-12);
    assert_eq!(im.sm_occupancy, vec![(0, 4), (100, 1), (400, 0)]);
    assert_eq!(im.tail, Some(300));
    let sms = im.sms.as_ref().expect("SM ids are known");
    assert_eq!(
        (sms.count, sms.min, sms.median, sms.p90, sms.max),
        (4, 100, 100, 400, 400)
    );
}

#[test]
fn gaps_are_grouped_by_region_pair() {
    let t = trace(
        &["load", "mma"],
        vec![lane(
            0,
            0,
            0,
            100,
            &[(0, 0, 10), (1, 15, 30), (0, 30, 40), (1, 47, 60)],
        )],
    );
    let g = gaps(&t);
    assert_eq!(
        (g[0].from, g[0].to, g[0].count, g[0].total, g[0].max),
        (0, 1, 2, 12, 7)
    );
    assert_eq!((g[1].from, g[1].to, g[1].count, g[1].total), (1, 0, 1, 0));
}

#[test]
fn a_gap_starts_when_the_last_region_open_ends() {
    // load [0,10) with a wait [5,30) begun inside it that outlives it, then mma [40,50):
    // the lane is idle over [30,40), not [10,40); the gap is still load -> mma.
    let t = trace(
        &["load", "wait", "mma"],
        vec![lane(0, 0, 0, 60, &[(0, 0, 10), (1, 5, 30), (2, 40, 50)])],
    );
    let g = gaps(&t);
    assert_eq!(g.len(), 1);
    assert_eq!((g[0].from, g[0].to, g[0].count, g[0].total), (0, 2, 1, 10));
}

proptest! {
    /// The breakdown equation holds exactly for any nested lane programs.
    #[test]
    fn breakdown_parts_sum_to_total(progs in prop::collection::vec(
        prop::collection::vec((0u16..4, 0u64..1000, 1u64..200), 0..6), 1..5)) {
        let lanes = progs.into_iter().enumerate().map(|(k, p)| {
            // Top-level spans laid end to end, each with one nested child at its middle.
            let mut t = 0;
            let mut spans = vec![];
            for (r, gap, len) in p {
                let b = t + gap;
                spans.push((r, b, b + len));
                spans.push(((r + 1) % 4, b + len / 4, b + len / 2));
                t = b + len;
            }
            lane(k as u32 / 2, k as u32, 0, t + 5, &spans)
        }).collect();
        let t = trace(&["load", "mma", "wait_x", "other"], lanes);
        let b = block_time_breakdown(&BlockView::new(&t, &CategoryTable::default()));
        prop_assert_eq!(sum(&b), b.total);
        let bbs = block_breakdowns(&BlockView::new(&t, &CategoryTable::default()));
        for bb in &bbs {
            prop_assert_eq!(sum(&bb.time), bb.time.total);
        }
        // The kernel's figures are the sums of the blocks'.
        prop_assert_eq!(bbs.iter().map(|x| x.time).sum::<TimeBreakdown>(), b);
        let iso = isolate_compute(&BlockView::new(&t, &CategoryTable::default()), None);
        prop_assert_eq!(iso.length_ns, b.total);
        for x in &iso.per_block {
            prop_assert_eq!(x.compute_ns + x.blocked_ns, x.length_ns);
            prop_assert!(x.overlap_ns <= x.blocked_ns);
        }
    }
}

#[test]
fn roofline_counts_concurrent_lanes_of_one_sm_once() {
    use super::roofline::{parse_annotations, preset, roofline};
    // SM 0 runs mma on two lanes over [0,100) and [50,150): SM-time 150 ns, not 200.
    // SM 1 runs it once over [0,100): total SM-time 250 ns for 3 x 1e3 FLOP.
    let t = trace(
        &["mma", "load"],
        vec![
            lane(0, 0, 0, 200, &[(0, 0, 100)]),
            lane(0, 0, 0, 200, &[(0, 50, 150)]),
            lane(1, 1, 0, 200, &[(0, 0, 100), (1, 100, 150)]),
        ],
    );
    let work = parse_annotations(
        r#"{"mma": {"flops": 1e3, "bytes": 1, "dtype": "bf16"}, "load": {"bytes": 500}}"#,
    )
    .unwrap();
    let h100 = preset("H100").unwrap();
    let r = roofline(&t, &work, h100);
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].name.as_str(), r[0].count, r[0].sm_time_ns),
        ("mma", 3, 250)
    );
    // 3e3 FLOP / 250 SM-ns x 132 SMs = 1584 FLOP/ns = 1.584 TFLOP/s.
    assert!((r[0].tflops - 1.584).abs() < 1e-9, "{}", r[0].tflops);
    assert!((r[0].intensity - 1000.0).abs() < 1e-9);
    assert!(!r[0].memory_bound); // ridge = 989.4 / 3.35 ≈ 295 FLOP/B
                                 // load: 500 B / 50 SM-ns x 132 = 1320 B/ns = 1.32 TB/s; no FLOPs -> memory bound.
    assert!((r[1].tb_per_s - 1.32).abs() < 1e-9);
    assert!((r[1].percent_of_roof - 100.0 * 1.32 / 3.35).abs() < 1e-9);
    assert!(r[1].memory_bound);
    assert!(!r[0].impossible && !r[1].impossible);
    // 1e9 FLOP per mma: 3e9 / 250 x 132 = 1.584e9 FLOP/ns = 1584 TFLOP/s, above the H100's
    // 989.4 bf16 peak: flagged, not a finding.
    let over = parse_annotations(r#"{"mma": {"flops": 1e9}}"#).unwrap();
    let r = roofline(&t, &over, h100);
    assert!(r[0].percent_of_roof > 100.0 && r[0].impossible, "{r:?}");
    assert!(parse_annotations(r#"{"mma": {"flop": 1}}"#).is_err());
}

#[test]
fn waits_link_to_the_releasing_signal_and_the_critical_path_follows_them() {
    use super::links::{critical_path, links};
    // Producer lane: load [0,40) then signal.kv(token 1) instant at 40 (as a zero-length span
    // here), load [40,90), signal token 2 at 90. Consumer: wait.kv token 1 [5,42), mma
    // [42,80), wait.kv token 2 [80,91), mma [91,130).
    let mut t = trace(
        &["load", "signal.kv", "wait.kv", "mma", "mainloop"],
        vec![
            lane(
                0,
                0,
                0,
                130,
                &[(0, 0, 40), (1, 40, 40), (0, 40, 90), (1, 90, 90)],
            ),
            lane(
                0,
                0,
                0,
                130,
                // The consumer's work sits inside a loop region: leaves carry the path.
                &[
                    (4, 0, 130),
                    (2, 5, 42),
                    (3, 42, 80),
                    (2, 80, 91),
                    (3, 91, 130),
                ],
            ),
        ],
    );
    // Tokens live in payloads.
    // Span order in lane 0 is load[0,40) load[40,90) signal@40 (nested) signal@90.
    // Lane 1 is mainloop, wait, mma, wait, mma.
    for (i, p) in [(2usize, 1u32), (3, 2), (5, 1), (7, 2)] {
        t.spans.payload[i] = p;
    }
    let l = links(&t);
    assert_eq!(l.len(), 2);
    assert_eq!(
        (
            l[0].from_lane,
            l[0].from_ts,
            l[0].to_lane,
            l[0].to_ts,
            l[0].token
        ),
        (0, 40, 1, 42, 1)
    );
    assert_eq!((l[1].from_ts, l[1].to_ts, l[1].token), (90, 91, 2));
    // The signalling events are the zero-length signal spans (span order: load, load,
    // signal@40, signal@90 in lane 0).
    use super::links::SignalEvent;
    assert_eq!(
        (l[0].from, l[1].from),
        (SignalEvent::Span(2), SignalEvent::Span(3))
    );
    let path = critical_path(&t, 0, &l);
    let names: Vec<_> = path
        .iter()
        .map(|&i| (t.spans.lane[i], t.spans.begin[i]))
        .collect();
    // mma[91) <- wait[80) released by the signal at 90 <- signal at 40 (leaf inside
    // load[40,90)) <- load[0,40).
    assert_eq!(names, vec![(0, 0), (0, 40), (0, 90), (1, 80), (1, 91)]);
    assert!(names.contains(&(0, 40)), "{names:?}");
    assert!(
        !names.contains(&(1, 42)),
        "the first mma is not critical: {names:?}"
    );
}

#[test]
fn instant_signals_link_and_only_waits_held_up_by_them_are_on_the_critical_path() {
    use super::links::{critical_path, links, may_link, SignalEvent};
    // Producer lane 0: load [0,100), load [100,200), signal.kv instants: token 0 at 100,
    // token 1 at 200. Consumer lane 1: wait.kv 0 [10,110) (held up until the signal),
    // mma [110,300), wait.kv 1 [300,315) (its signal came at 200: nothing to wait for),
    // mma [315,500).
    let mut t = trace(
        &["load", "signal.kv", "wait.kv", "mma"],
        vec![
            lane(0, 0, 0, 200, &[(0, 0, 100), (0, 100, 200)]),
            lane(
                0,
                0,
                0,
                500,
                &[(2, 10, 110), (3, 110, 300), (2, 300, 315), (3, 315, 500)],
            ),
        ],
    );
    t.instants.push(0, 1, 0, 100);
    t.instants.push(0, 1, 1, 200);
    t.lanes[0].instants = 0..2;
    t.spans.payload[4] = 1; // the second wait's token
    assert!(may_link(&t.names));
    let l = links(&t);
    let got: Vec<_> = l
        .iter()
        .map(|l| (l.from, l.from_ts, l.to_span, l.to_ts))
        .collect();
    assert_eq!(
        got,
        vec![
            (SignalEvent::Instant(0), 100, 2, 110),
            (SignalEvent::Instant(1), 200, 4, 315)
        ]
    );
    let path: Vec<_> = critical_path(&t, 0, &l)
        .iter()
        .map(|&i| (t.spans.lane[i], t.spans.begin[i]))
        .collect();
    // The signal at 100 was issued by the load that ended then, not the one beginning then;
    // the second wait's predecessor is the mma before it on its own lane.
    assert_eq!(path, vec![(0, 0), (1, 10), (1, 110), (1, 300), (1, 315)]);
    // Names without a channel on both sides: no link work at all.
    t.names.regions[2] = "wait.other".into();
    assert!(!may_link(&t.names) && links(&t).is_empty());
}

#[test]
fn diff_flags_regressions_only_when_mean_and_median_both_grow() {
    use super::diff::diff;
    use crate::stats::TraceStats;
    // A: mma 100 x3, load 50 x3. B: mma 120 x3 (+20%), load: one outlier (mean +33%,
    // median unchanged), store appears, wait disappears.
    let a = trace(
        &["mma", "load", "wait"],
        vec![lane(
            0,
            0,
            0,
            1000,
            &[
                (0, 0, 100),
                (0, 100, 200),
                (0, 200, 300),
                (1, 300, 350),
                (1, 400, 450),
                (1, 500, 550),
                (2, 600, 610),
            ],
        )],
    );
    let b = trace(
        &["mma", "load", "store"],
        vec![lane(
            0,
            0,
            0,
            1100,
            &[
                (0, 0, 120),
                (0, 120, 240),
                (0, 240, 360),
                (1, 400, 450),
                (1, 500, 550),
                (1, 600, 700),
                (2, 800, 810),
            ],
        )],
    );
    let d = diff(&TraceStats::of(&a), &TraceStats::of(&b), 5.0);
    assert_eq!(d.kernel, (1000, 1100));
    assert!((d.kernel_change_pct - 10.0).abs() < 1e-9);
    let mma = d.regions.iter().find(|r| r.name == "mma").unwrap();
    assert!(mma.regression && (mma.mean_change_pct - 20.0).abs() < 1e-9);
    let load = d.regions.iter().find(|r| r.name == "load").unwrap();
    assert!(!load.regression, "an outlier alone is not a regression");
    assert!((load.mean_change_pct - 100.0 / 3.0).abs() < 1e-9 && load.p50_change_pct == 0.0);
    assert_eq!(
        (d.added.clone(), d.removed.clone()),
        (vec!["store".to_string()], vec!["wait".to_string()])
    );
    assert_eq!(d.regressions().count(), 1);
    // Percentile indices used by diff are p50 and p99.
    assert_eq!(
        (
            crate::stats::PERCENTILES[3].0,
            crate::stats::PERCENTILES[7].0
        ),
        ("p50", "p99")
    );
}

#[test]
fn step_stats_follow_regions_across_launches() {
    use super::steps::{step_stats, steps_json};
    use crate::stats::TraceStats;
    let a = trace(
        &["mma", "load"],
        vec![lane(0, 0, 0, 100, &[(0, 0, 10), (0, 10, 40)])],
    );
    let b = trace(
        &["load", "mma"],
        vec![lane(0, 0, 0, 100, &[(0, 0, 5), (1, 5, 25)])],
    );
    let (a, b) = (TraceStats::of(&a), TraceStats::of(&b));
    let s = step_stats(&[&a, &b]);
    let mma = &s["mma"];
    assert_eq!(
        (mma.cnt, mma.time, mma.min_t, mma.max_t, mma.id),
        (3, 60, 10, 30, 0)
    );
    assert_eq!(mma.step_ids, vec![0, 1]);
    assert!((mma.avg - 20.0).abs() < 1e-12);
    assert_eq!((s["load"].step_ids.clone(), s["load"].id), (vec![1], 1));
    let j = steps_json(&[&a, &b]);
    assert_eq!(j["mma"]["cnt"], 3);
    assert_eq!(j["load"]["step_ids"][0], 1);
}

#[test]
fn self_time_excludes_direct_children_only() {
    use crate::stats::self_times;
    // loop [0,100) > {mma [10,50) > {inner [20,30)}, wait [60,70)}; then load [100,120).
    let t = trace(
        &["loop", "mma", "inner", "wait", "load"],
        vec![lane(
            0,
            0,
            0,
            120,
            &[
                (0, 0, 100),
                (1, 10, 50),
                (2, 20, 30),
                (3, 60, 70),
                (4, 100, 120),
            ],
        )],
    );
    assert_eq!(self_times(&t), vec![100 - 40 - 10, 40 - 10, 10, 10, 20]);
    let total: DurationNs = self_times(&t).iter().sum();
    assert_eq!(total, 120);
}

#[test]
fn without_sm_ids_sm_figures_are_not_available() {
    use super::imbalance::sm_figures_unavailable;
    let mut t = trace(
        &["mma"],
        vec![lane(0, 0, 0, 100, &[]), lane(1, 1, 0, 300, &[])],
    );
    for l in &mut t.lanes {
        l.sm = None;
    }
    let im = imbalance(&BlockView::new(&t, &CategoryTable::default()));
    assert_eq!((im.sms.clone(), im.tail), (None, None));
    assert!(im.sm_occupancy.is_empty());
    assert_eq!((im.blocks.count, im.blocks.max), (2, 300));
    assert_eq!(
        sm_figures_unavailable(WireFormat::Tvm),
        "n/a (the TVM format records no SM ids)"
    );
}
