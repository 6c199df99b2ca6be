//! Property tests of the peers' decoders against their encoders (`peers/`, written from
//! each tool's sources): arbitrary schedules are written in the tool's format and must
//! decode to exactly what a small reference model predicts.
//!
//! - yao-jz: warps of arbitrary records (begins, ends, marks, types the macros never
//!   write, 16-bit region ids, a timer that steps back), rings of 1 to 32 events that
//!   overflow, warps that never flush, junk in every slot never written. The model keeps
//!   the last `cap` records of each flushed warp, as the tool's `write_trace` does, and
//!   pairs them by the documented rules (the innermost open begin of the region closes;
//!   begins opened after it stay open; begins never closed and ends with nothing open are
//!   unmatched; a stamp behind the latest one takes the latest time).
//! - Proton: CTAs of warps of scopes (overlapping or not), written by both writer
//!   versions, with or without `baseTimeNanoseconds`, read at Proton's 1 GHz or at a
//!   clock given; the model places each CTA's first scope at its init time and converts
//!   the cycles after it at the clock rate.
use crate::peers;

use ikp_host::decode::{decode_bytes, DecodeOptions, FormatChoice};
use ikp_host::{Trace, Unpaired};
use peers::{proton, yaojz, Rng};
use proptest::prelude::*;

/// A warp's program: `(region, type, dt)` records, `dt` the time since the previous one
/// (negative: the timer stepped back).
#[derive(Clone, Debug)]
struct WarpProg {
    flush: bool,
    smid: u32,
    recs: Vec<(u16, u16, i64)>,
}

/// A record: region, type, and the time since the warp's previous record: a few us, a
/// jump of 2^33 ns (past what 32 bits hold: 64-bit stamps need no unwrap; 48 of them stay
/// within the bounds under which the warps are one launch, `ikp_host::decode::set_aside`),
/// or a step back.
fn record() -> impl Strategy<Value = (u16, u16, i64)> {
    (
        prop_oneof![6 => 0u16..4, 1 => any::<u16>()],
        prop_oneof![4 => Just(0u16), 4 => Just(1u16), 2 => Just(2u16), 1 => 3u16..100],
        prop_oneof![6 => 0i64..3_000, 1 => Just(1i64 << 33), 1 => -500i64..0],
    )
}

fn warp_prog() -> impl Strategy<Value = WarpProg> {
    (
        prop::bool::weighted(0.85),
        0u32..1024,
        prop::collection::vec(record(), 0..48),
    )
        .prop_map(|(flush, smid, recs)| WarpProg { flush, smid, recs })
}

/// `(blocks, threads_per_block, cap, warps)`.
fn yaojz_launch() -> impl Strategy<Value = (u32, u32, u32, Vec<WarpProg>)> {
    (1u32..5, 1u32..129, 0u32..6).prop_flat_map(|(blocks, threads, log_cap)| {
        let warps = blocks * threads.div_ceil(32);
        (
            Just(blocks),
            Just(threads),
            Just(1u32 << log_cap),
            prop::collection::vec(warp_prog(), warps as usize),
        )
    })
}

/// What a lane must decode to.
#[derive(Debug, Default, PartialEq, Eq)]
struct Expect {
    /// `(region, depth, begin, end)`.
    spans: Vec<(u16, u16, u64, u64)>,
    instants: Vec<(u16, u64)>,
    unmatched_begin: Vec<Unpaired>,
    unmatched_end: Vec<Unpaired>,
    unknown: u64,
    backward: u64,
    /// First and latest times.
    times: (u64, u64),
}

/// The reference model of one lane's kept records `(ts, region, type)`.
fn model(lane: u32, recs: &[(u64, u16, u16)]) -> Expect {
    let mut e = Expect::default();
    // Open begins: (region, begin, slot in `rows`).
    let mut open: Vec<(u16, u64, usize)> = Vec::new();
    let mut rows: Vec<(u16, u16, u64, Option<u64>)> = Vec::new();
    let mut latest: Option<u64> = None;
    let up = |r: u16, ts: u64| Unpaired {
        lane,
        region: r,
        payload: 0,
        ts,
    };
    for &(ts, r, kind) in recs {
        let t = match latest {
            Some(l) if ts < l => {
                e.backward += 1;
                l
            }
            _ => ts,
        };
        latest = Some(t);
        match kind {
            0 => {
                // 0 with nothing open, else one more than the innermost open region.
                let depth = open.last().map_or(0, |o| rows[o.2].1 + 1);
                rows.push((r, depth, t, None));
                open.push((r, t, rows.len() - 1));
            }
            1 => match open.iter().rposition(|o| o.0 == r) {
                None => e.unmatched_end.push(up(r, t)),
                Some(i) => {
                    let o = open.remove(i);
                    rows[o.2].3 = Some(t);
                }
            },
            2 => e.instants.push((r, t)),
            _ => e.unknown += 1,
        }
    }
    for o in open {
        e.unmatched_begin.push(up(o.0, o.1));
    }
    e.spans = (rows.into_iter())
        .filter_map(|(r, d, b, end)| end.map(|end| (r, d, b, end)))
        .collect();
    e.times = (recs.first().map_or(0, |r| r.0), latest.unwrap_or(0));
    e
}

fn got(t: &Trace, p: usize) -> Expect {
    let l = &t.lanes[p];
    let (s, i) = (&t.spans, &t.instants);
    let d = &t.diagnostics;
    Expect {
        spans: (l.spans.clone())
            .map(|k| (s.region[k], s.depth[k], s.begin[k], s.end[k]))
            .collect(),
        instants: (l.instants.clone())
            .map(|k| (i.region[k], i.ts[k]))
            .collect(),
        unmatched_begin: (d.unmatched_begin.iter())
            .filter(|u| u.lane == l.id)
            .copied()
            .collect(),
        unmatched_end: (d.unmatched_end.iter())
            .filter(|u| u.lane == l.id)
            .copied()
            .collect(),
        unknown: 0,
        backward: 0,
        times: (l.start, l.end),
    }
}

/// A flushed warp: its slot, SM, records overwritten, and records kept `(ts, region,
/// type)`.
type KeptWarp = (u32, u32, u64, Vec<(u64, u16, u16)>);

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn yaojz_rings_decode_to_what_the_tool_keeps(
        (blocks, threads, cap, warps) in yaojz_launch(),
        junk in any::<u64>(),
        single_threaded in any::<bool>(),
    ) {
        let mut s = yaojz::Session::init(cap, blocks, threads, &mut Rng(junk | 1));
        let wpb = s.warps_per_block;
        let t0 = 1u64 << 60;
        // The kept records of each flushed warp, straight from its program.
        let mut want: Vec<KeptWarp> = Vec::new();
        for (slot, p) in warps.iter().enumerate() {
            let (block, warp) = (slot as u32 / wpb, slot as u32 % wpb);
            let mut w = yaojz::Warp::init(cap, wpb, block, warp, p.smid);
            let mut t = t0 + 1_000 * slot as u64;
            let mut written = Vec::new();
            for &(region, kind, dt) in &p.recs {
                t = t.saturating_add_signed(dt);
                w.record(&mut s, region, kind, t);
                written.push((t, region, kind));
            }
            if p.flush {
                w.flush(&mut s);
                let n = written.len();
                if n > 0 {
                    let kept = written[n.saturating_sub(cap as usize)..].to_vec();
                    want.push((slot as u32, p.smid, (n - kept.len()) as u64, kept));
                }
            }
        }
        let opts = DecodeOptions { format: FormatChoice::Auto, single_threaded, ..Default::default() };
        let t = decode_bytes(&s.dump(), &opts).unwrap();
        prop_assert_eq!(t.lanes.len(), want.len());
        let (mut unknown, mut backward) = (0, 0);
        for (p, (slot, smid, dropped, kept)) in want.iter().enumerate() {
            let l = &t.lanes[p];
            prop_assert_eq!(l.id, *slot);
            prop_assert_eq!((l.block, l.group, l.warp), (slot / wpb, slot % wpb, Some(slot % wpb)));
            prop_assert_eq!(l.sm, Some(*smid));
            prop_assert_eq!((l.written, l.dropped), (kept.len() as u64, *dropped));
            let e = model(*slot, kept);
            unknown += e.unknown;
            backward += e.backward;
            prop_assert_eq!(got(&t, p), Expect { unknown: 0, backward: 0, ..e });
        }
        prop_assert_eq!(t.diagnostics.unknown_records, unknown);
        prop_assert_eq!(t.diagnostics.backward_steps, backward);
        prop_assert_eq!(t.source.records_per_lane, cap);
        prop_assert_eq!(t.source.grid, [blocks, 1, 1]);
    }
}

/// `(kernel, writer, base time, clock MHz)`.
fn proton_launch(
) -> impl Strategy<Value = (proton::Kernel, proton::Writer, Option<u64>, Option<f64>)> {
    let scope = (0usize..6, 0u64..200_000, 0u64..50_000);
    let warp = (0u32..8, prop::collection::vec(scope, 1..8));
    let cta = (
        0u32..200,
        0u64..1_000_000,
        prop::collection::vec(warp, 1..4),
        0u64..2_000_000,
    );
    (
        prop::collection::btree_map(0u32..64, cta, 1..5),
        prop::bool::ANY,
        prop::option::of(1u64..1 << 61),
        prop::option::of(prop_oneof![
            (100u32..4000).prop_map(f64::from),
            Just(1410.5)
        ]),
    )
        .prop_map(|(ctas, init_times, base, clock)| {
            let names = ["load", "mma", "softmax", "store", "wait", "epilogue"];
            let t0 = 1u64 << 60;
            let ctas = (ctas.into_iter())
                .map(|(block, (proc, init, warps, c0))| {
                    let mut seen = std::collections::BTreeSet::new();
                    let warps = (warps.into_iter())
                        .filter(|(uid, _)| seen.insert(*uid))
                        .map(|(uid, scopes)| proton::Warp {
                            uid,
                            scopes: (scopes.into_iter())
                                .map(|(n, s, d)| (names[n].to_string(), c0 + s, c0 + s + d))
                                .collect(),
                        })
                        .collect();
                    proton::Cta {
                        block,
                        proc,
                        init: t0 + init,
                        pre_final: t0 + init + 9,
                        post_final: t0 + init + 20,
                        warps,
                    }
                })
                .collect();
            let writer = if init_times {
                proton::Writer::InitTimes
            } else {
                proton::Writer::Float
            };
            let kernel = proton::Kernel {
                name: "k".into(),
                ctas,
                call_stack: vec![],
            };
            (kernel, writer, base, clock)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn proton_traces_decode_to_the_scopes_written(
        (k, writer, base, clock) in proton_launch(),
    ) {
        let text = proton::write(std::slice::from_ref(&k), writer, base);
        let opts = DecodeOptions { proton_clock_mhz: clock, ..Default::default() };
        let t = decode_bytes(text.as_bytes(), &opts).unwrap();
        let khz = clock.map_or(1_000_000u128, |m| (m * 1e3).round() as u128);
        let ns = |c: u64| ((c as u128 * 1_000_000 + khz / 2) / khz) as u64;
        let min_init = k.ctas.iter().map(|c| c.init).min().unwrap();
        let mut want = Vec::new();
        for c in &k.ctas {
            let first = c.warps.iter().flat_map(|w| w.scopes.iter().map(|s| s.1)).min().unwrap();
            // Where the decoder must put the CTA's first scope.
            let anchor = match (writer, base) {
                (proton::Writer::InitTimes, _) => c.init,
                (proton::Writer::Float, Some(b)) => b + (c.init - min_init),
                (proton::Writer::Float, None) => c.init - min_init,
            };
            for w in &c.warps {
                for s in &w.scopes {
                    want.push((c.block, w.uid, c.proc, s.0.clone(), anchor + ns(s.1 - first), anchor + ns(s.2 - first)));
                }
            }
        }
        want.sort();
        let mut have = Vec::new();
        for l in &t.lanes {
            let sp = &t.spans;
            let r = l.spans.clone();
            // Spans by begin, longer first; depth: the lane's spans before it still open.
            for k in r.clone() {
                if k > r.start {
                    prop_assert!((sp.begin[k - 1], std::cmp::Reverse(sp.end[k - 1])) <= (sp.begin[k], std::cmp::Reverse(sp.end[k])));
                }
                let open = (r.start..k).filter(|&j| sp.end[j] > sp.begin[k]).count();
                prop_assert_eq!(sp.depth[k] as usize, open);
                have.push((l.block, l.group, l.sm.unwrap(), t.names.region(sp.region[k]).into_owned(), sp.begin[k], sp.end[k]));
            }
        }
        have.sort();
        prop_assert_eq!(have, want);
        let c = t.source.assumed_clock.unwrap();
        prop_assert_eq!((c.khz as u128, c.given), (khz, clock.is_some()));
    }
}
