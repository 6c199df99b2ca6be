//! The other profilers' formats: the shipped samples are exactly what the encoders of
//! `peers/` (re-implementations of each tool's writer) produce, and their decodes match
//! golden files: the decoded model written out in full, the summary JSON and the table.
//! `IKP_BLESS=1 cargo test -p ikp-host --test host golden_peers::` rewrites samples and golden files.
//!
//! Each test also checks the decode's meaning against the program the sample was made
//! from, so a blessed file that is wrong fails too.
use crate::golden_check::{self, golden};
use crate::peers;
use crate::shares_oracle;

use ikp_host::decode::{decode_bytes, names, DecodeOptions, FormatChoice};
use ikp_host::write::{self, SummaryOptions};
use ikp_host::TraceStats;
use ikp_host::{Names, Trace, WireFormat};
use peers::{proton, yaojz, Rng};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Compares `got` with the shipped sample `rel` (from the repository root), or rewrites
/// it under `IKP_BLESS=1`.
fn sample(rel: &str, got: &[u8]) {
    golden_check::check(&repo().join(rel), got);
}

/// The decoded model, every field, times relative to the time base.
fn dump(t: &Trace) -> String {
    let src = &t.source;
    let base = src.time_base;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "source format={:?} version={} timer={:?} grid={:?} groups_per_block={} records_per_lane={} time_base={} clock={:?} assumed_clock={:?}",
        src.format, src.version, src.timer, src.grid, src.groups_per_block, src.records_per_lane, base, src.clock, src.assumed_clock
    );
    let _ = writeln!(s, "regions {:?}", t.names.regions);
    for l in &t.lanes {
        let _ = writeln!(
            s,
            "lane {} block {} group {} warp {:?} sm {:?} start +{} end +{} finalized {} written {} dropped {}",
            l.id, l.block, l.group, l.warp, l.sm, l.start - base, l.end - base, l.finalized, l.written, l.dropped
        );
        for k in l.spans.clone() {
            let sp = &t.spans;
            assert_eq!(sp.lane[k], l.id);
            let _ = writeln!(
                s,
                "  span {} depth {} payload {} +{}..+{}",
                t.names.region(sp.region[k]),
                sp.depth[k],
                sp.payload[k],
                sp.begin[k] - base,
                sp.end[k] - base
            );
        }
        for k in l.instants.clone() {
            let i = &t.instants;
            assert_eq!(i.lane[k], l.id);
            let _ = writeln!(
                s,
                "  instant {} +{}",
                t.names.region(i.region[k]),
                i.ts[k] - base
            );
        }
    }
    let d = &t.diagnostics;
    for (what, v) in [
        ("unmatched begin", &d.unmatched_begin),
        ("unmatched end", &d.unmatched_end),
    ] {
        for u in v {
            let _ = writeln!(
                s,
                "{what}: lane {} {} +{}",
                u.lane,
                t.names.region(u.region),
                u.ts - base
            );
        }
    }
    let _ = writeln!(
        s,
        "after_finalize {} unfinalized_lanes {} unknown_records {} backward_steps {} set_aside {}",
        d.after_finalize,
        d.unfinalized_lanes,
        d.unknown_records,
        d.backward_steps,
        d.set_aside.len()
    );
    s
}

/// The summary JSON as written, and parsed.
fn summary(t: &Trace, name: &str) -> (Vec<u8>, Value) {
    let opt = SummaryOptions::default();
    let mut v = Vec::new();
    write::summary::write_summary(
        &mut v,
        &write::summary::summarize(&TraceStats::of(t), &opt, name),
    )
    .unwrap();
    let parsed = serde_json::from_slice(&v).unwrap();
    (v, parsed)
}

fn table(t: &Trace) -> Vec<u8> {
    let mut v = Vec::new();
    write::table::write_table(&mut v, &TraceStats::of(t), &Default::default()).unwrap();
    v
}

const YAOJZ_REGIONS: [&str; 5] = ["tile", "load_kv", "mma", "softmax", "kv_ready"];

/// One warp's program: `(region, type)` records, in order.
fn yaojz_program(block: u32, warp: u32) -> Vec<(u16, u16)> {
    let (b, e, m) = (0u16, 1u16, 2u16);
    let mut p = vec![(0, b)];
    if warp == 0 {
        for _ in 0..2 {
            p.extend([(1, b), (1, e), (4, m)]);
        }
    } else {
        // Block 3's warp 3 loops four times: 18 records in a ring of 16.
        let iters = if (block, warp) == (3, 3) { 4 } else { 2 };
        for _ in 0..iters {
            p.extend([(2, b), (2, e), (3, b), (3, e)]);
        }
    }
    if (block, warp) == (1, 1) {
        p.push((2, 7)); // a type the macros never write
    }
    p.push((0, e));
    p
}

/// The yao-jz sample: 4 blocks x 4 warps (128 threads), rings of 16 events. Block 3's
/// warp 3 overflows its ring, block 2's warp 2 never flushes, block 0's warp 2 sees its
/// timer step back 20 ns once.
fn yaojz_sample() -> (yaojz::Session, Vec<u8>) {
    let mut junk = Rng(0x5EED_0001);
    let mut s = yaojz::Session::init(16, 4, 128, &mut junk);
    let mut steps = Rng(0x5EED_0002);
    let t0 = 1_723_456_789_000_000_000u64;
    for block in 0..4 {
        for warp in 0..4 {
            let mut w = yaojz::Warp::init(16, 4, block, warp, 2 * block + 1);
            let mut t = t0 + 1_500 * block as u64 + 40 * warp as u64;
            for (k, (region, kind)) in yaojz_program(block, warp).into_iter().enumerate() {
                t += 32 * (1 + steps.below(20));
                let stamp = if (block, warp, k) == (0, 2, 3) {
                    t - 20 - 32 * 21
                } else {
                    t
                };
                w.record(&mut s, region, kind, stamp);
            }
            if (block, warp) != (2, 2) {
                w.flush(&mut s);
            }
        }
    }
    let bytes = s.dump();
    (s, bytes)
}

fn yaojz_names() -> String {
    YAOJZ_REGIONS.join("\n") + "\n"
}

fn yaojz_decode(bytes: &[u8]) -> Trace {
    let opts = DecodeOptions {
        format: FormatChoice::YaoJz,
        names: Some(Names {
            regions: names::parse(&yaojz_names()).unwrap(),
            counters: vec![],
        }),
        ..Default::default()
    };
    decode_bytes(bytes, &opts).unwrap()
}

#[test]
fn yaojz_sample_decodes_to_what_the_tool_keeps() {
    let (s, bytes) = yaojz_sample();
    sample("samples/yaojz_attention.yjz", &bytes);
    sample("samples/yaojz_attention.names", yaojz_names().as_bytes());
    let t = yaojz_decode(&bytes);
    // Auto-detection finds it, and gives the same trace.
    let auto = DecodeOptions {
        names: Some(Names {
            regions: names::parse(&yaojz_names()).unwrap(),
            counters: vec![],
        }),
        ..Default::default()
    };
    assert_eq!(decode_bytes(&bytes, &auto).unwrap(), t);
    assert_eq!(t.source.format, WireFormat::YaoJz);
    // Every flushed warp is a lane; the one that never flushed is not.
    let ids: Vec<u32> = t.lanes.iter().map(|l| l.id).collect();
    assert_eq!(ids, (0..16).filter(|&i| i != 10).collect::<Vec<u32>>());
    for l in &t.lanes {
        let recs = yaojz::kept(&s, l.id as usize);
        assert_eq!(l.written as usize, recs.len());
        assert_eq!(l.sm, Some(2 * l.block + 1));
        assert_eq!((l.warp, l.group), (Some(l.id % 4), l.id % 4));
        // The spans of a lane are its kept begins that an end closed, in order.
        let begins = recs.iter().filter(|r| r.2 == 0).count();
        let closed = l.spans.len()
            + (t.diagnostics.unmatched_begin.iter())
                .filter(|u| u.lane == l.id)
                .count();
        assert_eq!(begins, closed, "lane {}", l.id);
        let marks = recs.iter().filter(|r| r.2 == 2).count();
        assert_eq!(l.instants.len(), marks);
    }
    let wrapped = t.lanes.iter().find(|l| l.id == 15).unwrap();
    assert_eq!((wrapped.written, wrapped.dropped), (16, 2));
    let d = &t.diagnostics;
    // The overwritten begins of `tile` and of the first `mma` leave their ends unmatched.
    let ends: Vec<(u32, u16)> = d.unmatched_end.iter().map(|u| (u.lane, u.region)).collect();
    assert_eq!(ends, [(15, 2), (15, 0)]);
    assert!(d.unmatched_begin.is_empty());
    assert_eq!((d.unknown_records, d.backward_steps), (1, 1));
    golden("yaojz_decode.txt", dump(&t).as_bytes());
    let (doc, v) = summary(&t, "yaojz_attention.json");
    assert_eq!(v["format"], "yao-jz");
    assert_eq!(v["per_warp_cap"], 16);
    assert_eq!(v["dropped"], 2);
    assert!(v.get("assumed_clock").is_none());
    let e = shares_oracle::expected(&t, &t.lanes);
    assert_eq!(v["lane_dur"].as_f64().unwrap(), e.lane_time as f64);
    golden("yaojz_summary.json", &doc);
    golden("yaojz_table.txt", &table(&t));
}

/// The Proton sample: kernel `attn_fwd`, 4 CTAs on 4 SMs, 4 warps each. Warp 0 issues
/// two loads that overlap (two rows in Proton's trace); warps 1 to 3 run a tile of three
/// scopes.
fn proton_kernel() -> proton::Kernel {
    let mut rng = Rng(0x5EED_0003);
    let t0 = 1_723_456_789_000_000_000u64;
    let mut ctas = Vec::new();
    for block in 0..4u32 {
        let init = t0 + 700 * block as u64 + rng.below(50);
        let c = 5_000_000 + rng.below(1 << 30);
        let mut warps = Vec::new();
        for uid in 0..4u32 {
            let mut scopes = Vec::new();
            let mut at = c + 30 * uid as u64;
            if uid == 0 {
                scopes.push(("load_k".to_string(), at, at + 400 + rng.below(100)));
                scopes.push(("load_v".to_string(), at + 150, at + 700 + rng.below(100)));
            } else {
                let start = at;
                for name in ["mma_qk", "softmax", "mma_pv"] {
                    at += 10 + rng.below(40);
                    let end = at + 200 + rng.below(300);
                    scopes.push((name.to_string(), at, end));
                    at = end;
                }
                scopes.push(("tile".to_string(), start, at + 5));
            }
            warps.push(proton::Warp { uid, scopes });
        }
        ctas.push(proton::Cta {
            block,
            proc: 2 * block + 1,
            init,
            pre_final: init + 5_000,
            post_final: init + 5_600,
            warps,
        });
    }
    proton::Kernel {
        name: "attn_fwd".into(),
        ctas,
        call_stack: vec!["ROOT".into(), "attn_fwd".into()],
    }
}

/// Every scope of `k` as `(block, warp, name, begin ns, end ns)` at 1 GHz, each CTA's
/// first scope at its init time (Proton's placement).
fn proton_expected(
    k: &proton::Kernel,
    ns: impl Fn(u64) -> u64,
) -> Vec<(u32, u32, String, u64, u64)> {
    let mut v = Vec::new();
    for c in &k.ctas {
        let first = (c.warps.iter())
            .flat_map(|w| w.scopes.iter().map(|s| s.1))
            .min()
            .unwrap();
        for w in &c.warps {
            for s in &w.scopes {
                let b = c.init + ns(s.1 - first);
                v.push((c.block, w.uid, s.0.clone(), b, c.init + ns(s.2 - first)));
            }
        }
    }
    v.sort();
    v
}

fn spans_of(t: &Trace) -> Vec<(u32, u32, String, u64, u64)> {
    let mut v: Vec<_> = (t.lanes.iter())
        .flat_map(|l| {
            l.spans.clone().map(move |k| {
                let s = &t.spans;
                let name = t.names.region(s.region[k]).into_owned();
                (l.block, l.group, name, s.begin[k], s.end[k])
            })
        })
        .collect();
    v.sort();
    v
}

#[test]
fn proton_sample_decodes_to_the_scopes_written() {
    let k = proton_kernel();
    let text = proton::write(std::slice::from_ref(&k), proton::Writer::InitTimes, None);
    sample("samples/proton_attn_fwd.chrome_trace", text.as_bytes());
    // Warp 0's loads overlap: Proton put them on two rows.
    assert!(text.contains("\"warp 0 (line 1)\""));
    let t = decode_bytes(text.as_bytes(), &DecodeOptions::default()).unwrap();
    assert_eq!(t.source.format, WireFormat::Proton);
    assert_eq!(spans_of(&t), proton_expected(&k, |c| c));
    assert_eq!(t.lanes.len(), 16);
    for l in &t.lanes {
        assert_eq!(l.sm, Some(2 * l.block + 1));
        assert_eq!(l.id, 4 * l.block + l.group);
    }
    // `tile` encloses the three scopes of its warp: they are one level deeper; `load_v`
    // begins while `load_k` is open.
    let s = &t.spans;
    for i in 0..s.len() {
        let name = t.names.region(s.region[i]);
        let want = match &*name {
            "tile" | "load_k" => 0,
            _ => 1,
        };
        assert_eq!(s.depth[i], want, "{name}");
    }
    let c = t.source.assumed_clock.unwrap();
    assert_eq!((c.khz, c.given), (1_000_000, false));
    golden("proton_decode.txt", dump(&t).as_bytes());
    let (doc, v) = summary(&t, "proton_attn_fwd.json");
    assert_eq!(v["format"], "proton");
    assert_eq!(
        v["assumed_clock"],
        serde_json::json!({"mhz": 1000.0, "given": false})
    );
    golden("proton_summary.json", &doc);
    // At a clock given as 1500 MHz the scopes' cycles take 2/3 of the time; the CTAs
    // still start at their init times.
    let opts = DecodeOptions {
        proton_clock_mhz: Some(1500.0),
        ..Default::default()
    };
    let t = decode_bytes(text.as_bytes(), &opts).unwrap();
    let ns = |c: u64| (c * 2 + 1) / 3;
    assert_eq!(spans_of(&t), proton_expected(&k, ns));
    let tab = table(&t);
    let text = String::from_utf8_lossy(&tab);
    assert!(text.contains("1500 MHz (given, not measured)"), "{text}");
    golden("proton_1500mhz_table.txt", &tab);
}
