//! Property tests of the decoders against the reference encoder: arbitrary lane programs
//! (nested and repeated regions with payloads, instants, counter samples and totals,
//! timestamps that cross the 2^32 wrap, timers that step back a little, lanes that
//! overflow their capacity and drop, lanes that never finalize or never run) are written
//! with
//! `ikp_device::encoder::BufferWriter` (or, for the TVM family, with the peers' own device
//! code re-implemented from their sources in `peers/` — TVM's `CudaProfiler`, FlashInfer's
//! and Mirage's `PROFILER_*` macros — which shares no constant with ikp) and must
//! decode to exactly the spans, instants, samples, drops and counters that a small
//! reference model of the pairing rules predicts.
//!
//! The model is the documented contract, written independently of the decoder: an end
//! closes the innermost open begin of its region, and begins opened after it that are still
//! open stay open (overlapping regions); a span's depth is 0 when nothing was open at its
//! begin, else one more than the depth of the innermost open begin; begins still open at
//! the end of the lane and ends with no open begin of their region are unmatched; a
//! counter sample takes the time of the record before it (the lane start if none);
//! a stamp behind the lane's latest one gets that latest time and is counted; in clock
//! mode, a lane of at least `OWN_RATIO_MIN_NS` converts with its own ratio, the others with
//! the ratio pooled over every lane.
use ikp_device::encoder::BufferWriter;
use ikp_device::wire::{self, lane_flags, Kind};
use ikp_device::{Layout, TimerMode};
use ikp_host::decode::{self, decode, DecodeOptions, OWN_RATIO_MIN_NS};
use ikp_host::{ClockCalibration, Trace, Unpaired, WireFormat};
use proptest::prelude::*;

use crate::peers;

/// One step of a lane program. `dt` is the time since the previous timed record (ticks;
/// negative when the timer stepped back).
#[derive(Clone, Debug)]
enum Op {
    Begin {
        region: u16,
        payload: u32,
        dt: i64,
    },
    /// Closes the open begin at `pick / 4 % open` (counted from the bottom of the stack),
    /// or, when nothing is open or `pick % 4 == 0`, is an end of `region` (a stray end if
    /// no begin of `region` is open).
    End {
        pick: usize,
        region: u16,
        dt: i64,
    },
    Instant {
        region: u16,
        payload: u32,
        dt: i64,
    },
    /// Counter id `counter % (n_counters + 1)`: the extra id is unknown to the buffer.
    Sample {
        counter: u32,
        value: u32,
    },
    Add {
        counter: u32,
        n: u64,
    },
}

#[derive(Clone, Debug)]
struct LaneProg {
    /// Runs `init` at all.
    init: bool,
    finalize: bool,
    smid: u32,
    warp: u32,
    start_gt: u64,
    start_clk: u64,
    ops: Vec<Op>,
    /// Ticks from the last record to finalize (at least 1).
    tail: u64,
}

fn dt() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => 0i64..2_000,
        1 => (1i64 << 30)..(1i64 << 31), // large steps: wraps the 32-bit stamp quickly
        1 => Just((1i64 << 31) - 1),     // the largest step forward the format allows
        1 => -5_000i64..0,               // the timer stepped back
    ]
}

fn region() -> impl Strategy<Value = u16> {
    prop_oneof![8 => 0u16..6, 1 => Just(wire::MAX_REGIONS as u16 - 1)]
}

fn payload() -> impl Strategy<Value = u32> {
    prop_oneof![3 => 0u32..16, 1 => Just(wire::MAX_PAYLOAD), 1 => any::<u32>().prop_map(|p| p & wire::PAYLOAD_MASK)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (region(), payload(), dt()).prop_map(|(region, payload, dt)| Op::Begin { region, payload, dt }),
        4 => (any::<usize>(), region(), dt()).prop_map(|(pick, region, dt)| Op::End { pick, region, dt }),
        2 => (region(), payload(), dt()).prop_map(|(region, payload, dt)| Op::Instant { region, payload, dt }),
        1 => (any::<u32>(), any::<u32>()).prop_map(|(counter, value)| Op::Sample { counter, value }),
        1 => (any::<u32>(), 0u64..1 << 40).prop_map(|(counter, n)| Op::Add { counter, n }),
    ]
}

fn lane_prog() -> impl Strategy<Value = LaneProg> {
    (
        (prop::bool::weighted(0.9), prop::bool::weighted(0.85)),
        (0u32..200, 0u32..32),
        // The lane's start after its launch's base (a multiple of 2^32, see `launch`):
        // near a wrap of the 32-bit stamp half of the time.
        prop_oneof![
            0u64..1 << 36,
            (1u64..16, 0u64..5_000).prop_map(|(k, b)| (k << 32) - b)
        ],
        1u64..1 << 40,
        prop::collection::vec(op(), 0..40),
        1u64..1 << 20,
    )
        .prop_map(
            |((init, finalize), (smid, warp), start_gt, start_clk, ops, tail)| LaneProg {
                init,
                finalize,
                smid,
                warp,
                start_gt,
                start_clk,
                ops,
                tail,
            },
        )
}

/// The lanes of one launch: each starts less than 2^37 ns after a base shared by all,
/// anywhere below 2^50 ns. Lanes much further apart cannot be of one launch (the decoder
/// sets them aside: `ikp_host::decode::set_aside`, `# Lanes set aside`).
fn launch(lanes: std::ops::Range<usize>) -> impl Strategy<Value = Vec<LaneProg>> {
    (1u64..1 << 18, prop::collection::vec(lane_prog(), lanes)).prop_map(|(k, progs)| {
        (progs.into_iter())
            .map(|p| LaneProg {
                start_gt: (k << 32) + p.start_gt,
                ..p
            })
            .collect()
    })
}

/// A program as records: `(kind, region, payload, time_lo, decoded ticks)`, where the
/// decoded ticks are the latest stamp of the lane so far (a stamp behind it is clamped).
struct Encoded {
    records: Vec<(Kind, u32, u32, u32, u64)>,
    /// Per record: whether its stamp is behind the lane's latest one.
    back: Vec<bool>,
    adds: Vec<(u32, u64)>,
    /// The lane's latest stamp.
    last_ticks: u64,
}

fn records_of(p: &LaneProg, anchor: u64, n_counters: u32) -> Encoded {
    // `t` is the device's timer, `mx` the latest stamp the decoder has seen.
    let (mut t, mut mx) = (anchor, anchor);
    let mut open: Vec<u16> = Vec::new();
    let mut out = Encoded {
        records: vec![],
        back: vec![],
        adds: vec![],
        last_ticks: anchor,
    };
    // The next stamp: its low half, and the ticks the decoder gives it.
    fn step(t: &mut u64, mx: &mut u64, back: &mut Vec<bool>, dt: i64) -> (u32, u64) {
        *t = t.saturating_add_signed(dt).max(1);
        back.push(*t < *mx);
        *mx = (*mx).max(*t);
        (*t as u32, *mx)
    }
    for op in &p.ops {
        match *op {
            Op::Begin {
                region,
                payload,
                dt,
            } => {
                let (lo, at) = step(&mut t, &mut mx, &mut out.back, dt);
                open.push(region);
                out.records
                    .push((Kind::Begin, region as u32, payload, lo, at));
            }
            Op::End { pick, region, dt } => {
                let (lo, at) = step(&mut t, &mut mx, &mut out.back, dt);
                let r = if open.is_empty() || pick % 4 == 0 {
                    region
                } else {
                    open[pick / 4 % open.len()]
                };
                // Mirror the pairing: the innermost open `r` closes, the rest stay open.
                if let Some(j) = open.iter().rposition(|&o| o == r) {
                    open.remove(j);
                }
                out.records.push((Kind::End, r as u32, 0, lo, at));
            }
            Op::Instant {
                region,
                payload,
                dt,
            } => {
                let (lo, at) = step(&mut t, &mut mx, &mut out.back, dt);
                out.records
                    .push((Kind::Instant, region as u32, payload, lo, at));
            }
            Op::Sample { counter, value } => {
                let c = counter % (n_counters + 1);
                out.records.push((
                    Kind::Meta,
                    wire::MetaKind::CounterSample as u32,
                    c,
                    value,
                    mx,
                ));
                out.back.push(false);
            }
            Op::Add { counter, n } => {
                if n_counters > 0 {
                    out.adds.push((counter % n_counters, n));
                }
            }
        }
    }
    out.last_ticks = mx;
    out
}

/// What the decoder must give back for one lane (times in ns).
#[derive(Debug, Default, PartialEq, Eq)]
struct Expect {
    spans: Vec<(u16, u16, u32, u64, u64)>,
    instants: Vec<(u16, u32, u64)>,
    samples: Vec<(u16, u64, u32)>,
    unmatched_begin: Vec<Unpaired>,
    unmatched_end: Vec<Unpaired>,
    unknown: u64,
}

/// The reference model of the pairing: `recs` are the lane's timed records.
fn model(lane: u32, recs: &[(Kind, u32, u32, u32, u64)], ns: impl Fn(u64) -> u64) -> Expect {
    let mut e = Expect::default();
    // Open begins, innermost last: (region, payload, time, depth, record index).
    let mut open: Vec<(u16, u32, u64, u16, usize)> = Vec::new();
    // Spans with the index of their begin record: the trace lists them in that order.
    let mut spans = Vec::new();
    let mut last;
    for (k, &(kind, region, payload, _, ticks)) in recs.iter().enumerate() {
        let r = region as u16;
        match kind {
            Kind::Begin => {
                last = ns(ticks);
                let depth = open.last().map_or(0, |o| o.3 + 1);
                open.push((r, payload, last, depth, k));
            }
            Kind::End => {
                last = ns(ticks);
                match open.iter().rposition(|o| o.0 == r) {
                    None => e.unmatched_end.push(Unpaired {
                        lane,
                        region: r,
                        payload,
                        ts: last,
                    }),
                    Some(i) => {
                        let o = open.remove(i);
                        spans.push((o.4, (r, o.3, o.1, o.2, last)));
                    }
                }
            }
            Kind::Instant => {
                last = ns(ticks);
                e.instants.push((r, payload, last));
            }
            Kind::Meta => unreachable!("lane_expect takes the meta records out"),
        }
    }
    spans.sort_by_key(|s| s.0);
    e.spans = spans.into_iter().map(|s| s.1).collect();
    for o in open {
        e.unmatched_begin.push(Unpaired {
            lane,
            region: o.0,
            payload: o.1,
            ts: o.2,
        });
    }
    e
}

fn lane_expect(
    lane: u32,
    recs: &[(Kind, u32, u32, u32, u64)],
    start_ns: u64,
    n_counters: u32,
    ns: impl Fn(u64) -> u64,
) -> Expect {
    // Meta records carry their value in the time slot: model them with the value moved
    // out, so `model` sees the time of the record before them.
    let mut e = Expect::default();
    let mut samples = Vec::new();
    let mut last = start_ns;
    let mut rest = Vec::with_capacity(recs.len());
    for &r in recs {
        if r.0 == Kind::Meta {
            if r.2 < n_counters {
                samples.push((r.2 as u16, last, r.3));
            } else {
                e.unknown += 1;
            }
        } else {
            last = ns(r.4);
            rest.push(r);
        }
    }
    let m = model(lane, &rest, ns);
    e.spans = m.spans;
    e.instants = m.instants;
    e.samples = samples;
    e.unmatched_begin = m.unmatched_begin;
    e.unmatched_end = m.unmatched_end;
    e
}

fn got(t: &Trace, p: usize) -> Expect {
    let l = &t.lanes[p];
    let (s, i, c) = (&t.spans, &t.instants, &t.samples);
    let spans: Vec<_> = l
        .spans
        .clone()
        .map(|k| (s.region[k], s.depth[k], s.payload[k], s.begin[k], s.end[k]))
        .collect();
    let d = &t.diagnostics;
    let mut ub: Vec<Unpaired> = d
        .unmatched_begin
        .iter()
        .filter(|u| u.lane == l.id)
        .copied()
        .collect();
    let mut ue: Vec<Unpaired> = d
        .unmatched_end
        .iter()
        .filter(|u| u.lane == l.id)
        .copied()
        .collect();
    ub.sort_by_key(|u| (u.ts, u.region, u.payload));
    ue.sort_by_key(|u| (u.ts, u.region, u.payload));
    for k in l.spans.clone() {
        assert_eq!(s.lane[k], l.id);
    }
    Expect {
        spans,
        instants: l
            .instants
            .clone()
            .map(|k| (i.region[k], i.payload[k], i.ts[k]))
            .collect(),
        samples: l
            .samples
            .clone()
            .map(|k| (c.counter[k], c.ts[k], c.value[k]))
            .collect(),
        unmatched_begin: ub,
        unmatched_end: ue,
        unknown: 0,
    }
}

/// `e` with its unmatched records in the order [`got`] sorts them (spans stay in begin
/// order).
fn sorted(mut e: Expect) -> Expect {
    e.unmatched_begin
        .sort_by_key(|u| (u.ts, u.region, u.payload));
    e.unmatched_end.sort_by_key(|u| (u.ts, u.region, u.payload));
    e
}

fn check_native(
    progs: &[LaneProg],
    cap: u32,
    groups: u32,
    n_counters: u32,
    clock: bool,
    ring: bool,
) -> Result<(), TestCaseError> {
    let blocks = (progs.len() as u32).div_ceil(groups).max(1);
    let layout = Layout {
        grid: [blocks, 1, 1],
        groups_per_block: groups,
        records_per_lane: cap,
        timer: if clock {
            TimerMode::Clock
        } else {
            TimerMode::Globaltimer
        },
        regions: vec!["a".into(), "b".into(), "".into()],
        counters: (0..n_counters).map(|c| format!("c{c}")).collect(),
        overflow: if ring {
            ikp_device::Overflow::Ring
        } else {
            ikp_device::Overflow::DropNewest
        },
        ..Layout::default()
    };
    let mut b = BufferWriter::new(layout).unwrap();
    let flags = if clock { lane_flags::CLOCK } else { 0 } | if ring { lane_flags::RING } else { 0 };
    let mut orphans = 0u64;
    // In clock mode every lane finalizes, so each has its (globaltimer, clock64) pairs.
    // `(end ticks, end globaltimer)` of a lane that ran init.
    let ends = |p: &LaneProg| {
        let anchor = if clock { p.start_clk } else { p.start_gt };
        let end_ticks = records_of(p, anchor, n_counters).last_ticks + p.tail;
        let end_gt = if clock {
            // Any ns span works for the conversion; keep ~1 ns per cycle plus a twist.
            p.start_gt + (end_ticks - p.start_clk) + (end_ticks - p.start_clk) / 7
        } else {
            end_ticks
        };
        (end_ticks, end_gt)
    };
    // The pooled calibration: every lane's ns and cycles, summed.
    let mut calib = ClockCalibration::default();
    for p in progs.iter().filter(|p| clock && p.init) {
        let (end_ticks, end_gt) = ends(p);
        calib.pooled_ns += end_gt - p.start_gt;
        calib.pooled_cycles += end_ticks - p.start_clk;
        calib.pool_lanes += 1;
        if end_gt - p.start_gt >= OWN_RATIO_MIN_NS {
            calib.own_ratio_lanes += 1;
        } else {
            calib.pooled_ratio_lanes += 1;
        }
    }
    // Per listed lane: (id, expected, lane fields).
    let mut want = Vec::new();
    let mut backward = 0;
    for (l, p) in progs.iter().enumerate() {
        if !p.init {
            continue;
        }
        // A ring finalizes: a full one that did not would be set aside.
        let finalize = p.finalize || clock || ring;
        let anchor = if clock { p.start_clk } else { p.start_gt };
        let enc = records_of(p, anchor, n_counters);
        let (end_ticks, end_gt) = ends(p);
        let mut w = b.lane(l as u64);
        w.init(p.smid, p.warp, flags, p.start_gt, p.start_clk);
        for &(kind, region, payload, lo, _) in &enc.records {
            w.record(kind, region, payload, lo);
        }
        for &(c, n) in &enc.adds {
            w.counter_add(c, n);
        }
        if finalize {
            w.finalize(end_gt, if clock { end_ticks } else { 0 });
        }
        let n_rec = enc.records.len();
        let overwritten = if ring {
            n_rec.saturating_sub(cap as usize) as u64
        } else {
            0
        };
        let mut written: Vec<_> = if ring {
            enc.records[overwritten as usize..].to_vec()
        } else {
            enc.records[..n_rec.min(cap as usize)].to_vec()
        };
        let dropped = if ring {
            0
        } else if finalize {
            n_rec.saturating_sub(cap as usize) as u64
        } else {
            // An unfinalized lane is read up to its last non-zero word.
            while written
                .last()
                .is_some_and(|r| wire::pack_record(r.3, wire::pack_tag(r.0, r.1, r.2)) == 0)
            {
                written.pop();
            }
            0
        };
        backward += enc.back[..written.len()].iter().filter(|&&b| b).count() as u64;
        let (gt0, clk0) = (p.start_gt, p.start_clk);
        // Clock mode only: in globaltimer mode `end_ticks` are ns, unrelated to clk0.
        let (num, den) = if !clock {
            (1, 1)
        } else if end_gt - gt0 >= OWN_RATIO_MIN_NS {
            (end_gt - gt0, end_ticks - clk0)
        } else {
            (calib.pooled_ns, calib.pooled_cycles)
        };
        let ns = move |ticks: u64| {
            if clock {
                gt0 + ((ticks - clk0) as u128 * num as u128 / den as u128) as u64
            } else {
                ticks
            }
        };
        let mut totals = vec![0u64; n_counters as usize];
        for &(c, n) in &enc.adds {
            totals[c as usize] = totals[c as usize].wrapping_add(n);
        }
        let last_ns = written
            .iter()
            .rev()
            .find(|r| r.0 != Kind::Meta)
            .map_or(p.start_gt, |r| ns(r.4));
        // A ring that wrapped unwraps back from its end: a sample before its first timed
        // record takes that record's time (its end's, with none).
        let sample_start = match written.iter().find(|r| r.0 != Kind::Meta) {
            Some(r) if overwritten > 0 => ns(r.4),
            None if overwritten > 0 => end_gt,
            _ => p.start_gt,
        };
        let mut e = lane_expect(l as u32, &written, sample_start, n_counters, ns);
        if overwritten > 0 {
            // Ends whose begins were overwritten: counted, not unmatched.
            orphans += e.unmatched_end.len() as u64;
            e.unmatched_end.clear();
        }
        want.push((
            l as u32,
            e,
            (
                p.start_gt,
                if finalize { end_gt } else { last_ns },
                finalize,
                written.len() as u64,
                dropped,
                overwritten,
            ),
            (p.smid, p.warp),
            totals,
        ));
    }
    let want_empty = want.is_empty();
    let t = decode(&b.into_words(), &DecodeOptions::default())
        .map_err(|e| TestCaseError::fail(format!("decode failed: {e}")))?;
    prop_assert_eq!(t.lanes.len(), want.len(), "listed lanes");
    let mut unknown = 0;
    for (p, (id, e, f, ids, totals)) in want.into_iter().enumerate() {
        let l = &t.lanes[p];
        prop_assert_eq!(l.id, id);
        prop_assert_eq!((l.block, l.group), (id / groups, id % groups));
        prop_assert_eq!((l.sm, l.warp), (Some(ids.0), Some(ids.1)));
        prop_assert_eq!(
            (
                l.start,
                l.end,
                l.finalized,
                l.written,
                l.dropped,
                l.overwritten
            ),
            f,
            "lane {} fields",
            id
        );
        prop_assert_eq!(t.lane_counters(p), &totals[..], "lane {} totals", id);
        unknown += e.unknown;
        let e = sorted(e);
        let g = got(&t, p);
        prop_assert_eq!(&g.spans, &e.spans, "lane {} spans", id);
        prop_assert_eq!(&g.instants, &e.instants, "lane {} instants", id);
        prop_assert_eq!(&g.samples, &e.samples, "lane {} samples", id);
        prop_assert_eq!(&g.unmatched_begin, &e.unmatched_begin, "lane {} ub", id);
        prop_assert_eq!(&g.unmatched_end, &e.unmatched_end, "lane {} ue", id);
    }
    prop_assert_eq!(t.diagnostics.unknown_records, unknown);
    prop_assert_eq!(t.diagnostics.ends_of_overwritten_begins, orphans);
    prop_assert_eq!(t.diagnostics.after_finalize, 0);
    prop_assert_eq!(t.diagnostics.backward_steps, backward);
    prop_assert!(
        t.diagnostics.set_aside.is_empty(),
        "{:?}",
        t.diagnostics.set_aside
    );
    prop_assert_eq!(t.source.clock, (clock && !want_empty).then_some(calib));
    let min_start = t.lanes.iter().map(|l| l.start).min().unwrap_or(0);
    prop_assert_eq!(t.source.time_base, min_start);
    Ok(())
}

/// Lanes of a TVM-family launch: each lane's start after the base, its records as
/// `(kind, event, dt, event number)` (kind 0 begin, 1 end, 2 instant), and whether it
/// finalizes (TVM only).
type FamilyLanes = Vec<(u32, Vec<(u8, u16, i64, u32)>, bool)>;

fn family_lanes() -> impl Strategy<Value = FamilyLanes> {
    let ev = prop_oneof![8 => 0u16..4, 1 => Just(511u16)];
    let dt = prop_oneof![3 => 0i64..1 << 31, 1 => -3_000i64..0];
    let no = prop_oneof![3 => 0u32..8, 1 => Just((1u32 << MPK_EVENT_NO_BITS) - 1)];
    // Kinds: 0 begins, 1 ends an open region (any of them: regions overlap), 2 is an
    // instant, 3 ends `ev` whether it is open or not.
    let rec = (0u8..4, ev, dt, no);
    prop::collection::vec(
        (
            0u32..1 << 20,
            prop::collection::vec(rec, 1..24),
            any::<bool>(),
        ),
        1..5,
    )
}

/// Bits of Mirage's event number (`profiler.h`: bits 31..19 of the tag).
const MPK_EVENT_NO_BITS: u32 = 13;

/// The leader of one lane of a TVM-family launch, writing as its format's device code
/// does (`peers::{tvm, flashinfer, mirage}`, written from the peers' sources).
enum PeerLane {
    Tvm(peers::tvm::Profiler),
    FlashInfer(peers::flashinfer::Closure),
    Mirage(peers::mirage::Closure),
}

impl PeerLane {
    /// The lane's `init` in block `block`, group `group` (on SM `sm`, which only
    /// FlashInfer records) of a launch of `blocks` blocks of `groups` groups.
    fn init(
        fmt: WireFormat,
        buf: &mut [u64],
        (blocks, groups): (u32, u32),
        (block, group, sm): (u32, u32, u32),
    ) -> PeerLane {
        match fmt {
            WireFormat::Tvm => PeerLane::Tvm(peers::tvm::Profiler::init(
                buf, blocks, groups, block, group,
            )),
            WireFormat::FlashInfer => PeerLane::FlashInfer(peers::flashinfer::Closure::init(
                buf, blocks, groups, block, group, sm,
            )),
            WireFormat::Mirage => PeerLane::Mirage(peers::mirage::Closure::init(
                buf, blocks, groups, block, group,
            )),
            _ => unreachable!("{fmt} is not of the TVM family"),
        }
    }

    /// One record: a begin, end or instant of `ev` (with event number `no`, which only
    /// Mirage records) at `globaltimer_lo` = `lo`.
    fn write(&mut self, buf: &mut [u64], kind: Kind, ev: u32, no: u32, lo: u32) {
        match (self, kind) {
            (_, Kind::Meta) => unreachable!("the TVM family has no meta records"),
            (PeerLane::Tvm(p), Kind::Begin) => p.start(buf, ev, lo),
            (PeerLane::Tvm(p), Kind::End) => p.end(buf, ev, lo),
            (PeerLane::Tvm(p), Kind::Instant) => p.instant(buf, ev, lo),
            (PeerLane::FlashInfer(c), Kind::Begin) => c.event_start(buf, ev, lo),
            (PeerLane::FlashInfer(c), Kind::End) => c.event_end(buf, ev, lo),
            (PeerLane::FlashInfer(c), Kind::Instant) => c.event_instant(buf, ev, lo),
            (PeerLane::Mirage(c), Kind::Begin) => c.event_start(buf, ev, no, lo),
            (PeerLane::Mirage(c), Kind::End) => c.event_end(buf, ev, no, lo),
            (PeerLane::Mirage(c), Kind::Instant) => c.event_instant(buf, ev, no, lo),
        }
    }
}

/// SM ids of up to 5 blocks.
fn sms() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(prop_oneof![0u32..4, 0u32..256], 5)
}

/// Writes `lanes` in format `fmt` as its device code does ([`PeerLane`]: the peers' own
/// packing, not ikp's), decodes the buffer, and checks every lane against the reference
/// model.
fn check_family(
    fmt: WireFormat,
    lanes: &FamilyLanes,
    groups: u32,
    sms: &[u32],
) -> Result<(), TestCaseError> {
    let stride = lanes.len().div_ceil(groups as usize) * groups as usize;
    let blocks = stride as u32 / groups;
    // A zeroed buffer with room for every record of the longest lane and its finalize (as
    // the peers' users size it: unused slots stay 0).
    let longest = lanes.iter().map(|l| l.1.len() + 1).max().unwrap_or(0);
    let mut w = vec![0u64; 1 + stride * longest];
    // Lanes start just before a wrap, within 2^31 ns of each other, so the shared base is
    // the earliest.
    let base: u64 = 0xFFFF_0000;
    let mut want = Vec::new();
    let mut backward = 0;
    for (l, (start, ops, fin)) in lanes.iter().enumerate() {
        let (lane, block) = (l as u32, l as u32 / groups);
        let sm = sms[block as usize];
        let finalizes = *fin && fmt == WireFormat::Tvm;
        let mut leader = PeerLane::init(fmt, &mut w, (blocks, groups), (block, lane % groups, sm));
        // The records the device writes: `(kind, event, event number, timer)`; in the
        // formats whose instants do not advance the write pointer, an instant followed by
        // another record is overwritten.
        let mut t = base + *start as u64;
        let mut open: Vec<u16> = vec![];
        let mut written: Vec<(Kind, u16, u32, u64)> = Vec::new();
        for (k, &(kind, ev, dt, no)) in ops.iter().enumerate() {
            if k > 0 {
                t = t.saturating_add_signed(dt);
            }
            if fmt != WireFormat::Tvm && written.last().is_some_and(|r| r.0 == Kind::Instant) {
                // The instant is overwritten: this record follows the one before it, and
                // must be less than 2^31 ns after it (if it is the lane's first, the lanes'
                // first stamps must stay within 2^31 ns of each other).
                written.pop();
                let prev = written.last().map_or(base + *start as u64, |r| r.3);
                t = t.min(prev + (1 << 30));
            }
            if t as u32 == 0 {
                t += 1; // an all-zero slot would read as empty
            }
            let (kind, ev) = match kind {
                0 => {
                    open.push(ev);
                    (Kind::Begin, ev)
                }
                1 | 3 => {
                    let r = if kind == 1 && !open.is_empty() {
                        open[ev as usize % open.len()]
                    } else {
                        ev
                    };
                    // The innermost open region of that id closes; those begun after it
                    // stay open.
                    if let Some(j) = open.iter().rposition(|&o| o == r) {
                        open.remove(j);
                    }
                    (Kind::End, r)
                }
                _ => (Kind::Instant, ev),
            };
            let no = no & ((1 << MPK_EVENT_NO_BITS) - 1);
            leader.write(&mut w, kind, ev as u32, no, t as u32);
            written.push((kind, ev, no, t));
        }
        // `mx` is the lane's latest stamp (a stamp behind it is clamped).
        let mut mx = 0;
        let mut recs = Vec::new();
        for (k, &(kind, ev, no, t)) in written.iter().enumerate() {
            backward += u64::from(k > 0 && t < mx);
            mx = mx.max(t);
            let payload = if fmt == WireFormat::Mirage { no } else { 0 };
            recs.push((kind, ev as u32, payload, t as u32, mx));
        }
        let end = mx + 10;
        if finalizes {
            match &mut leader {
                PeerLane::Tvm(p) => p.finalize(&mut w, end as u32),
                _ => unreachable!("only TVM finalizes"),
            }
        }
        let first = recs[0].4;
        let e = sorted(lane_expect(lane, &recs, first, 0, |x| x));
        let sm = (fmt == WireFormat::FlashInfer).then_some(sm);
        let n = recs.len() as u64 + finalizes as u64;
        want.push((
            lane,
            e,
            first,
            if finalizes { end } else { mx },
            finalizes,
            n,
            sm,
        ));
    }
    let forced = DecodeOptions {
        format: fmt.into(),
        ..Default::default()
    };
    let t = decode(&w, &forced).map_err(|e| TestCaseError::fail(format!("decode failed: {e}")))?;
    prop_assert_eq!(t.source.format, fmt);
    prop_assert_eq!(t.diagnostics.backward_steps, backward);
    let unfinalized = want
        .iter()
        .filter(|w| fmt == WireFormat::Tvm && !w.4)
        .count();
    prop_assert_eq!(t.diagnostics.unfinalized_lanes, unfinalized as u64);
    // Auto-detection never picks another format: the buffer's own format fits, and it
    // is chosen unless another fits too.
    let fits = decode::candidate_formats(&w);
    prop_assert!(
        fits.iter().any(|(f, r)| *f == fmt && r.is_ok()),
        "{:?}",
        fits
    );
    // TVM and Mirage never fit without FlashInfer (`formats.rs`,
    // `buffers_that_fit_several_formats_are_refused_with_the_list`): a lane with records
    // fits both only as lane 0, which FlashInfer also accepts. So the candidates are never
    // exactly those two.
    let ok: Vec<WireFormat> = (fits.iter())
        .filter(|(_, r)| r.is_ok())
        .map(|(f, _)| *f)
        .collect();
    prop_assert_ne!(&ok, &[WireFormat::Tvm, WireFormat::Mirage]);
    prop_assert!(
        !(ok.contains(&WireFormat::Tvm) && ok.contains(&WireFormat::Mirage))
            || ok.contains(&WireFormat::FlashInfer),
        "{:?}",
        ok
    );
    match decode(&w, &DecodeOptions::default()) {
        Ok(auto) => prop_assert_eq!(&auto, &t),
        Err(decode::DecodeError::Ambiguous(several)) => prop_assert!(several.contains(&fmt)),
        Err(e) => prop_assert!(false, "auto-detection failed: {}", e),
    }
    // The one-thread decodes agree with it: into fresh columns (which counts every
    // lane first, too), and into a used trace whose columns are too short (which
    // counts nothing and grows them).
    let one = DecodeOptions {
        single_threaded: true,
        ..forced.clone()
    };
    prop_assert_eq!(&decode(&w, &one).unwrap(), &t);
    let mut tiny = [0u64; 3];
    let mut p = peers::tvm::Profiler::init(&mut tiny, 1, 1, 0, 0);
    p.start(&mut tiny, 1, 7);
    p.end(&mut tiny, 1, 9);
    let tiny_opts = DecodeOptions {
        single_threaded: true,
        format: decode::FormatChoice::Tvm,
        ..Default::default()
    };
    let mut used = decode(&tiny, &tiny_opts).unwrap();
    prop_assert_eq!(used.spans.len(), 1);
    decode::decode_into(&w, &one, &mut used).unwrap();
    prop_assert_eq!(&used, &t);
    // Times come back relative to the 2^32 period of the earliest first stamp.
    let shift = want.iter().map(|w| w.2).min().unwrap() & !0xFFFF_FFFF;
    prop_assert_eq!(t.lanes.len(), want.len());
    for (p, (id, mut e, start, end, fin, written, sm)) in want.into_iter().enumerate() {
        for s in &mut e.spans {
            s.3 -= shift;
            s.4 -= shift;
        }
        for i in &mut e.instants {
            i.2 -= shift;
        }
        for u in e.unmatched_begin.iter_mut().chain(&mut e.unmatched_end) {
            u.ts -= shift;
        }
        let l = &t.lanes[p];
        prop_assert_eq!(
            (l.id, l.block, l.group, l.sm),
            (id, id / groups, id % groups, sm)
        );
        prop_assert_eq!(
            (l.start, l.end, l.finalized, l.written, l.dropped),
            (start - shift, end - shift, fin, written, 0)
        );
        let g = got(&t, p);
        prop_assert_eq!(&g.spans, &e.spans);
        prop_assert_eq!(&g.instants, &e.instants);
        prop_assert_eq!(&g.unmatched_begin, &e.unmatched_begin);
        prop_assert_eq!(&g.unmatched_end, &e.unmatched_end);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Native format, globaltimer stamps: everything the encoder writes comes back.
    #[test]
    fn native_programs_roundtrip(
        progs in launch(1..6),
        cap in prop_oneof![1u32..8, 8u32..64],
        groups in 1u32..4,
        n_counters in 0u32..3,
    ) {
        check_native(&progs, cap, groups, n_counters, false, false)?;
    }

    /// Ring lanes (a power-of-two capacity, every lane finalized, timers that never step
    /// back: a wrapped ring cannot know the latest stamp among the records it lost): the
    /// newest records come back in order, unwrapped back from the end stamp, the others
    /// counted as overwritten, ends whose begins were lost counted apart.
    #[test]
    fn native_ring_programs_roundtrip(
        progs in launch(1..5),
        cap_log in 0u32..6,
        groups in 1u32..3,
        n_counters in 0u32..2,
    ) {
        let forward = |dt: i64| dt.max(0);
        let progs: Vec<LaneProg> = (progs.into_iter())
            .map(|p| LaneProg {
                ops: (p.ops.into_iter())
                    .map(|op| match op {
                        Op::Begin { region, payload, dt } => Op::Begin { region, payload, dt: forward(dt) },
                        Op::End { pick, region, dt } => Op::End { pick, region, dt: forward(dt) },
                        Op::Instant { region, payload, dt } => Op::Instant { region, payload, dt: forward(dt) },
                        other => other,
                    })
                    .collect(),
                ..p
            })
            .collect();
        check_native(&progs, 1 << cap_log, groups, n_counters, false, true)?;
    }

    /// Clock mode: cycles convert with a long lane's own (clock64, globaltimer) pairs, or
    /// the ratio pooled over every lane.
    #[test]
    fn native_clock_programs_roundtrip(
        progs in launch(1..4),
        cap in 1u32..48,
        n_counters in 0u32..2,
    ) {
        check_native(&progs, cap, 2, n_counters, true, false)?;
    }

    /// TVM format (column layout, no payloads, ids, drops or counters): spans, instants,
    /// finalize, the unwrap against the shared base and clamped steps back come back.
    #[test]
    fn tvm_programs_roundtrip(lanes in family_lanes(), groups in 1u32..3, sms in sms()) {
        check_family(WireFormat::Tvm, &lanes, groups, &sms)?;
    }

    /// FlashInfer's format: the same, with each block's SM on its lanes, no finalize, and
    /// instants overwritten by their lane's next record as FlashInfer's device code does.
    #[test]
    fn flashinfer_programs_roundtrip(lanes in family_lanes(), groups in 1u32..3, sms in sms()) {
        check_family(WireFormat::FlashInfer, &lanes, groups, &sms)?;
    }

    /// Mirage's MPK format: the same as FlashInfer's without SM ids, with each record's
    /// event number as its payload.
    #[test]
    fn mirage_programs_roundtrip(lanes in family_lanes(), groups in 1u32..3, sms in sms()) {
        check_family(WireFormat::Mirage, &lanes, groups, &sms)?;
    }
}
