//! The definition of region shares (`ikp_host::definitions`) pinned on hand-built buffers
//! written with `ikp_device::encoder::BufferWriter`: nested regions, two lanes, time
//! outside any region. Each case checks `ikp_host::stats` and the summary JSON against
//! figures worked out by hand and against a brute-force reference (`shares_oracle`); a
//! property test holds the reference against arbitrary lane programs.
use crate::nested_lanes;
use crate::shares_oracle;

use ikp_device::encoder::BufferWriter;
use ikp_device::{Layout, TimerMode};
use ikp_host::decode::{decode, DecodeOptions};
use ikp_host::stats::{Shares, OUTSIDE};
use ikp_host::write::{block_dists, summary, SummaryOptions};
use ikp_host::BlockFilter;
use ikp_host::Trace;
use ikp_host::TraceStats;
use nested_lanes::{T0, WAIT};
use proptest::prelude::*;
use serde_json::Value;
use shares_oracle::expected;

/// The shared hand-built buffer ([`nested_lanes::writer`]), decoded.
fn buffer(which: &[u64]) -> Trace {
    decode(
        &nested_lanes::writer(which).into_words(),
        &DecodeOptions::default(),
    )
    .unwrap()
}

/// `(region, count, inclusive, self)` of every region, ascending by id.
fn regions(s: &Shares) -> Vec<(u16, u64, u64, u64)> {
    s.regions
        .iter()
        .map(|r| (r.region, r.count, r.inclusive, r.self_time))
        .collect()
}

/// Checks `s` against the brute-force reference for the lanes of `filter`.
fn check_reference(t: &Trace, s: &Shares, filter: &BlockFilter) {
    let e = expected(t, t.lanes.iter().filter(|l| filter.contains(l.block)));
    assert_eq!((s.lane_time, s.outside), (e.lane_time, e.outside));
    for r in &s.regions {
        assert_eq!(r.self_time, e.self_ns.get(&r.region).copied().unwrap_or(0));
        assert_eq!(r.inclusive, e.inclusive[&r.region]);
    }
    let selfs: u64 = s.regions.iter().map(|r| r.self_time).sum();
    assert_eq!(selfs + s.outside, s.lane_time, "shares sum to 100 %");
}

/// The summary JSON of the lanes of `filter`.
fn summary_json(t: &Trace, filter: BlockFilter, scale: f64) -> Value {
    let opt = SummaryOptions {
        scale,
        ..Default::default()
    };
    let t = t.filter_blocks(&filter);
    let mut v = Vec::new();
    summary::write_summary(
        &mut v,
        &summary::summarize(&TraceStats::of(&t), &opt, "t.json"),
    )
    .unwrap();
    serde_json::from_slice(&v).unwrap()
}

/// Region `name`'s `(total_dur, self_dur, self_share)` in summary JSON `v`.
fn json_region(v: &Value, name: &str) -> (f64, f64, f64) {
    let r = v["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no region {name}"));
    let f = |k: &str| r[k].as_f64().unwrap();
    (f("total_dur"), f("self_dur"), f("self_share"))
}

#[test]
fn nested_regions_count_only_their_own_time() {
    let t = buffer(&[0]);
    let s = Shares::of(&t, &t.lanes);
    // mainloop 800 ns minus its direct children (the two mma, 200 + 100): 500; the first mma
    // 200 minus the wait inside it: 150, plus the second: 250 self of 300 inclusive.
    assert_eq!(
        regions(&s),
        [(0, 1, 800, 500), (1, 2, 300, 250), (2, 1, 50, 50)]
    );
    assert_eq!((s.lanes, s.lane_time, s.outside), (1, 1000, 200));
    check_reference(&t, &s, &BlockFilter::default());
    let v = summary_json(&t, BlockFilter::default(), 1.0);
    assert_eq!(json_region(&v, "mainloop"), (800.0, 500.0, 0.5));
    assert_eq!(json_region(&v, "mma"), (300.0, 250.0, 0.25));
    assert_eq!(json_region(&v, "wait"), (50.0, 50.0, 0.05));
    assert_eq!(
        (&v["lane_dur"], &v["outside_dur"], &v["outside_share"]),
        (&1000.0.into(), &200.0.into(), &0.2.into())
    );
}

#[test]
fn two_lanes_are_shares_of_their_summed_time() {
    let t = buffer(&[0, 1]);
    let s = Shares::of(&t, &t.lanes);
    // 1000 + 500 ns of lane time; wait is 50 ns in lane 0 and all of lane 1.
    assert_eq!((s.lanes, s.lane_time, s.outside), (2, 1500, 200));
    assert_eq!(s.region(WAIT as u16).unwrap().self_time, 550);
    check_reference(&t, &s, &BlockFilter::default());
    let rows: Vec<_> = s
        .rows()
        .iter()
        .map(|r| (r.region.map(|x| x.region), r.self_time))
        .collect();
    assert_eq!(
        rows,
        [(Some(2), 550), (Some(0), 500), (Some(1), 250), (None, 200)],
        "by self time, then the time outside any region"
    );
    assert_eq!(s.rows().last().unwrap().cumulative, 1.0);
    // Shares do not depend on the summary's scale; durations do.
    let v = summary_json(&t, BlockFilter::default(), 0.5);
    let (total, own, share) = json_region(&v, "wait");
    assert_eq!((total, own), (275.0, 275.0));
    assert_eq!(share, 550.0 / 1500.0);
    assert_eq!(v["lane_dur"], 750.0);
}

#[test]
fn time_outside_any_region_is_a_share_of_its_own() {
    let t = buffer(&[0, 1, 2, 3]);
    assert_eq!(t.lanes.len(), 4);
    let all = Shares::of(&t, &t.lanes);
    assert_eq!((all.lane_time, all.outside), (3000, 200 + 700 + 500));
    check_reference(&t, &all, &BlockFilter::default());
    // Block 1 alone: softmax 300 of 1000 + 500 ns, the rest (lane 3 entirely) outside.
    let f = BlockFilter::new(vec![1]);
    let b1 = Shares::of(&t, t.lanes.iter().filter(|l| f.contains(l.block)));
    assert_eq!((b1.lanes, b1.lane_time, b1.outside), (2, 1500, 1200));
    assert_eq!(regions(&b1), [(3, 1, 300, 300)]);
    check_reference(&t, &b1, &f);
    let v = summary_json(&t, f, 1.0);
    assert_eq!(json_region(&v, "softmax"), (300.0, 300.0, 0.2));
    assert_eq!(v["outside_share"], 0.8);
    assert_eq!(OUTSIDE, "(outside any region)");
}

#[test]
fn block_distributions_are_shares_of_their_block() {
    let t = buffer(&[0, 1, 2, 3]);
    let (_, files) =
        block_dists::block_dists(&TraceStats::of(&t), &Default::default(), "t.json", "d");
    let b1 = files.iter().find(|f| f.block == 1).unwrap();
    assert_eq!(
        (b1.lane_dur, b1.outside_dur, b1.outside_share),
        (1500.0, 1200.0, 0.8)
    );
    assert_eq!(
        (b1.regions[0].self_dur, b1.regions[0].self_share),
        (300.0, 0.2)
    );
    let b0 = files.iter().find(|f| f.block == 0).unwrap();
    let sum: f64 = b0.regions.iter().map(|r| r.self_share).sum::<f64>() + b0.outside_share;
    assert!((sum - 1.0).abs() < 1e-12, "{sum}");
}

#[test]
fn a_begin_never_closed_leaves_its_time_to_the_enclosing_span() {
    // loop [0, 100) holds mma [10, 20); `wait` begins at 30 and never ends, so the mma
    // [40, 50) begun inside it is the loop's direct child, not the first mma's.
    let layout = Layout {
        grid: [1, 1, 1],
        groups_per_block: 1,
        records_per_lane: 16,
        timer: TimerMode::Globaltimer,
        regions: ["loop", "mma", "wait"].map(String::from).to_vec(),
        counters: vec![],
        ..Layout::default()
    };
    let mut b = BufferWriter::new(layout).unwrap();
    b.lane(0)
        .init(0, 0, 0, T0, 0)
        .begin(0, 0, T0)
        .begin(1, 0, T0 + 10)
        .end(1, 0, T0 + 20)
        .begin(2, 0, T0 + 30)
        .begin(1, 1, T0 + 40)
        .end(1, 1, T0 + 50)
        .end(0, 0, T0 + 100)
        .finalize(T0 + 100, 0);
    let t = decode(&b.into_words(), &DecodeOptions::default()).unwrap();
    assert_eq!(t.diagnostics.unmatched_begin.len(), 1);
    let s = Shares::of(&t, &t.lanes);
    assert_eq!(regions(&s), [(0, 1, 100, 80), (1, 2, 20, 20)]);
    assert_eq!((s.lane_time, s.outside), (100, 0));
    check_reference(&t, &s, &BlockFilter::default());
}

/// A lane program: begins and ends (an end closes the open begin `pick % depth`, whose
/// region may have begun before others still open, or is a stray end with nothing open)
/// with the time since the previous record.
fn program() -> impl Strategy<Value = Vec<(bool, u32, usize, u64)>> {
    prop::collection::vec((any::<bool>(), 0u32..3, 0usize..4, 0u64..50), 0..24)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Whatever the nesting or overlaps, unclosed begins and stray ends, the regions' self
    /// times and the time outside any region split each lane's time exactly as the
    /// reference does.
    #[test]
    fn shares_match_the_reference(
        progs in prop::collection::vec((program(), 0u64..100, any::<bool>()), 1..5),
    ) {
        let layout = Layout {
            grid: [progs.len() as u32, 1, 1],
            groups_per_block: 1,
            records_per_lane: 32,
            timer: TimerMode::Globaltimer,
            regions: vec!["a".into(), "b".into(), "c".into()],
            counters: vec![],
            ..Layout::default()
        };
        let mut b = BufferWriter::new(layout).unwrap();
        for (l, (ops, gap, fin)) in progs.iter().enumerate() {
            let mut w = b.lane(l as u64);
            let mut t = T0 + gap;
            w.init(0, 0, 0, t, 0);
            let mut open: Vec<u32> = Vec::new();
            for &(begin, region, pick, dt) in ops {
                t += dt;
                if begin {
                    w.begin(region, 0, t);
                    open.push(region);
                } else if open.is_empty() {
                    w.end(region, 0, t);
                } else {
                    let r = open[pick % open.len()];
                    let j = open.iter().rposition(|&o| o == r).unwrap();
                    open.remove(j);
                    w.end(r, 0, t);
                }
            }
            if *fin {
                w.finalize(t + gap, 0);
            }
        }
        let t = decode(&b.into_words(), &DecodeOptions::default()).unwrap();
        let s = Shares::of(&t, &t.lanes);
        let e = expected(&t, &t.lanes);
        prop_assert_eq!((s.lane_time, s.outside), (e.lane_time, e.outside));
        for r in &s.regions {
            prop_assert_eq!(r.self_time, e.self_ns.get(&r.region).copied().unwrap_or(0));
        }
        let last = s.rows().last().unwrap().cumulative;
        prop_assert!(s.lane_time == 0 || last == 1.0, "cumulative ends at {}", last);
    }
}
