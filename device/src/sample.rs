//! Deterministic sample buffers shaped like a warp-specialized attention kernel.
//!
//! Each block runs three lanes, as a FlashAttention-style warp-specialized kernel does: a
//! **producer** warp group loading Q and K/V tiles, an **MMA** warp group running the QK^T
//! and PV GEMMs, and a **softmax** warp group (with nested `rowmax` and `exp2` phases)
//! between them, then the epilogue. Blocks get 8 to 10 KV tiles, so they are imbalanced,
//! and the launch starts just before the 32-bit globaltimer wraps, so the decoder's
//! unwrapping is exercised by every use of the sample.
//!
//! The lanes hand tiles to each other with the `signal.<channel>` / `wait.<channel>`
//! convention of `ikp_host::analysis::links` (the token in the payload is the KV tile
//! index `k`), so `ikp analyze` finds the links and a critical path that crosses the three
//! lanes, and the Perfetto trace draws the links as flow arrows:
//!
//! | channel   | signal (instant)                          | wait (span)                         |
//! |-----------|-------------------------------------------|-------------------------------------|
//! | `kv`      | producer: tile `k` landed                 | MMA, before QK^T of tile `k`        |
//! | `scores`  | MMA: QK^T of tile `k` done                | softmax, before its pass on `k`     |
//! | `probs`   | softmax: P of tile `k` written            | MMA, before PV of tile `k`          |
//! | `kv_free` | MMA: PV of tile `k` done, its stage freed | producer, before loading `k + 2`    |
//!
//! Every wait ends at least 10 ns after its signal (the barrier's latency), never at the
//! same time. The waits also record the spin iterations they took as wait-counter samples
//! (`kv_full_wait` for `wait.kv`, `kv_empty_wait` for `wait.kv_free`).
//!
//! [`attention`] writes the buffer with the reference encoder (`samples/attention.ikp` in
//! the repository is its output, checked by a test); [`attention_tvm`] writes the same
//! schedule in the TVM / warpscope format, at any size (benchmarks), and
//! [`attention_flashinfer`] in FlashInfer's; [`mpk`] writes a persistent kernel's run in
//! Mirage's MPK format.

use crate::encoder::{BufferWriter, LaneWriter};
use crate::layout::{Layout, LayoutError};
use crate::tvm;
use crate::wire::lane_flags;

/// Region names of the sample, by id.
pub const REGIONS: [&str; 17] = [
    "mainloop",
    "load_q",
    "load_kv",
    "wait.kv",
    "qk_gemm",
    "pv_gemm",
    "softmax",
    "rowmax",
    "exp2",
    "tile_done",
    "signal.kv",
    "signal.kv_free",
    "wait.kv_free",
    "signal.scores",
    "wait.scores",
    "signal.probs",
    "wait.probs",
];
/// Region ids of the sample (indices into [`REGIONS`]).
mod r {
    pub const MAINLOOP: u32 = 0;
    pub const LOAD_Q: u32 = 1;
    pub const LOAD_KV: u32 = 2;
    pub const WAIT_KV: u32 = 3;
    pub const QK_GEMM: u32 = 4;
    pub const PV_GEMM: u32 = 5;
    pub const SOFTMAX: u32 = 6;
    pub const ROWMAX: u32 = 7;
    pub const EXP2: u32 = 8;
    pub const TILE_DONE: u32 = 9;
    pub const SIGNAL_KV: u32 = 10;
    pub const SIGNAL_KV_FREE: u32 = 11;
    pub const WAIT_KV_FREE: u32 = 12;
    pub const SIGNAL_SCORES: u32 = 13;
    pub const WAIT_SCORES: u32 = 14;
    pub const SIGNAL_PROBS: u32 = 15;
    pub const WAIT_PROBS: u32 = 16;
}
/// Wait-counter names of the sample, by id.
pub const COUNTERS: [&str; 2] = ["kv_full_wait", "kv_empty_wait"];
/// Lanes per block: producer, MMA, softmax.
pub const GROUPS: u32 = 3;
/// Blocks of the shipped sample.
pub const BLOCKS: u32 = 64;
/// Record capacity per lane of the shipped sample (the MMA lane of a 10-tile block
/// writes 112).
pub const RECORDS_PER_LANE: u32 = 128;
/// Warp of each group's leader (warp groups of 4 warps).
const LEADER_WARP: [u32; 3] = [0, 4, 8];
/// Launch start: 5 us before globaltimer_lo wraps.
const T0: u64 = (0x1_8000u64 << 32) - 5_000;

/// One lane event of the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    /// Begin of (region, payload) at t.
    B(u32, u32, u64),
    /// End of (region, payload) at t.
    E(u32, u32, u64),
    /// Instant (region, payload) at t.
    I(u32, u32, u64),
    /// Counter sample (counter, iterations).
    S(u32, u32),
}

impl Ev {
    /// Writes the event to `lane`; a counter sample also adds its iterations to the
    /// counter's total, as `IKP_WAIT_SAMPLED` does.
    pub fn write_to(self, lane: &mut LaneWriter<'_>) {
        match self {
            Ev::B(r, p, t) => lane.begin(r, p, t),
            Ev::E(r, p, t) => lane.end(r, p, t),
            Ev::I(r, p, t) => lane.instant(r, p, t),
            Ev::S(c, v) => lane.counter_sample(c, v).counter_add(c, v as u64),
        };
    }
}

/// Small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// `base` plus up to `spread` ns of jitter.
    fn dur(&mut self, base: u64, spread: u64) -> u64 {
        base + self.next() % (spread + 1)
    }
}

/// The schedule of one block: events of the producer, MMA and softmax lanes, the lanes'
/// start and end times (the shipped sample's run, seed 0).
pub fn block_schedule(block: u32, tiles: u32) -> [(u64, u64, Vec<Ev>); 3] {
    block_schedule_seeded(block, tiles, 0)
}

/// [`block_schedule`] of another run of the same kernel: `seed` changes every duration's
/// jitter (seed 0 is the shipped sample).
pub fn block_schedule_seeded(block: u32, tiles: u32, seed: u64) -> [(u64, u64, Vec<Ev>); 3] {
    use r::*;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15
        ^ (block as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03)
        ^ seed.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    let t0 = T0 + (block as u64 % 16) * 150 + rng.dur(0, 100);
    let (mut p, mut m, mut s) = (Vec::new(), Vec::new(), Vec::new());
    // Producer: Q, then K/V tiles into two stages, each reused once the PV GEMM of the
    // tile before in it has freed it.
    let mut tp = t0 + 40;
    p.push(Ev::B(MAINLOOP, 0, tp));
    tp = span(&mut p, LOAD_Q, 0, tp, rng.dur(700, 150));
    let mut pv_end: Vec<u64> = Vec::new();
    // MMA and softmax state.
    let mut tm = t0 + 60;
    m.push(Ev::B(MAINLOOP, 0, tm));
    let mut ts = t0 + 80;
    s.push(Ev::B(MAINLOOP, 0, ts));
    for k in 0..tiles {
        // Producer waits for the stage to be free (PV of tile k-2 done).
        if k >= 2 {
            let free = pv_end[(k - 2) as usize];
            tp = wait(&mut p, WAIT_KV_FREE, k - 2, tp + 5, free, 10, Some(1));
        }
        tp = span(&mut p, LOAD_KV, k, tp + 10, rng.dur(850, 200));
        p.push(Ev::I(SIGNAL_KV, k, tp));
        let kv_ready = tp;
        // MMA: wait for the tile, QK^T, hand the scores to softmax.
        tm = wait(&mut m, WAIT_KV, k, tm + 10, kv_ready, 15, Some(0));
        tm = span(&mut m, QK_GEMM, k, tm, rng.dur(560, 80));
        m.push(Ev::I(SIGNAL_SCORES, k, tm));
        let scores = tm;
        // Softmax on the scores, nested phases, then P back to the MMA group.
        ts = wait(&mut s, WAIT_SCORES, k, ts + 5, scores, 15, None) + 10;
        s.push(Ev::B(SOFTMAX, k, ts));
        let t = span(&mut s, ROWMAX, k, ts + 10, rng.dur(180, 60));
        ts = span(&mut s, EXP2, k, t, rng.dur(320, 90)) + 12;
        s.push(Ev::E(SOFTMAX, k, ts));
        s.push(Ev::I(SIGNAL_PROBS, k, ts));
        let probs = ts;
        // MMA: PV once softmax is done; the stage of tile k is then free.
        tm = wait(&mut m, WAIT_PROBS, k, tm + 5, probs, 15, None);
        tm = span(&mut m, PV_GEMM, k, tm + 5, rng.dur(480, 70));
        m.push(Ev::I(SIGNAL_KV_FREE, k, tm));
        pv_end.push(tm);
    }
    tp += 30;
    p.push(Ev::E(MAINLOOP, 0, tp));
    tm += 30;
    m.push(Ev::E(MAINLOOP, 0, tm));
    ts = ts.max(tm) + 40;
    s.push(Ev::E(MAINLOOP, 0, ts));
    // The softmax group marks the epilogue with tile_done (payload = tiles).
    s.push(Ev::I(TILE_DONE, tiles, ts + 5));
    let end = |t: u64| t + 25;
    [
        (t0, end(tp), p),
        (t0 + 5, end(tm), m),
        (t0 + 9, end(ts + 5), s),
    ]
}

/// Pushes a span of `region` (payload `k`) from `t` lasting `d`; returns its end.
fn span(v: &mut Vec<Ev>, region: u32, k: u32, t: u64, d: u64) -> u64 {
    v.push(Ev::B(region, k, t));
    v.push(Ev::E(region, k, t + d));
    t + d
}

/// Pushes a wait span of `region` (payload `k`) from `t` until `latency` after `ready`,
/// then its spins (one per 40 ns) as a sample of `counter` if any; returns its end.
fn wait(
    v: &mut Vec<Ev>,
    region: u32,
    k: u32,
    t: u64,
    ready: u64,
    latency: u64,
    counter: Option<u32>,
) -> u64 {
    let end = t.max(ready) + latency;
    v.push(Ev::B(region, k, t));
    v.push(Ev::E(region, k, end));
    if let Some(c) = counter {
        v.push(Ev::S(c, (ready.saturating_sub(t) / 40) as u32));
    }
    end
}

/// Tiles of block `b` in the shipped sample (8 to 10: imbalanced blocks).
pub fn tiles_of(block: u32) -> u32 {
    8 + (block * 7 + 3) % 3
}

/// SM of block `b` in the shipped sample: two blocks per SM.
pub fn sm_of(block: u32) -> u32 {
    (block / 2) * 3 % 132
}

/// The shipped sample buffer (`samples/attention.ikp`): 64 blocks x 3 lanes, native
/// format, globaltimer mode, with wait-counter samples and totals.
pub fn attention() -> Result<BufferWriter, LayoutError> {
    attention_seeded(0)
}

/// Another run of the sample kernel: the same shape, every duration's jitter drawn from
/// `seed` (seed 0 is the shipped sample), for trying `ikp diff` on two runs.
pub fn attention_seeded(seed: u64) -> Result<BufferWriter, LayoutError> {
    let layout = Layout {
        grid: [BLOCKS, 1, 1],
        groups_per_block: GROUPS,
        records_per_lane: RECORDS_PER_LANE,
        regions: REGIONS.iter().map(|s| s.to_string()).collect(),
        counters: COUNTERS.iter().map(|s| s.to_string()).collect(),
        ..Layout::default()
    };
    let mut w = BufferWriter::new(layout)?;
    for b in 0..BLOCKS {
        let schedule = block_schedule_seeded(b, tiles_of(b), seed);
        for (g, (start, end, evs)) in schedule.into_iter().enumerate() {
            let lane_id = (b * GROUPS + g as u32) as u64;
            let mut lane = w.lane(lane_id);
            // clock64 runs at 1.755 GHz from an arbitrary origin.
            let clk = |t: u64| 9_000_000 + (t - T0 + 1_000_000) * 1755 / 1000;
            let (sm, warp) = (sm_of(b), LEADER_WARP[g]);
            lane.init(sm, warp, lane_flags::BLOCK_FENCE, start, clk(start));
            for e in evs {
                e.write_to(&mut lane);
            }
            lane.finalize(end, clk(end));
        }
    }
    Ok(w)
}

/// The same schedule in the TVM / warpscope wire format, `blocks` blocks of
/// `tiles` KV tiles each (`24 * tiles + 8` records per block from 2 tiles on, in
/// `3 * (10 * tiles + 3)` words: lanes are padded to the longest). Counter samples and payloads do not exist in
/// that format and are left out (so the signal / wait tokens are lost); every lane ends
/// with a finalize record.
pub fn attention_tvm(blocks: u32, tiles: u32) -> Vec<u64> {
    attention_tvm_seeded(blocks, tiles, 0)
}

/// [`attention_tvm`] of another run (see [`attention_seeded`]).
pub fn attention_tvm_seeded(blocks: u32, tiles: u32, seed: u64) -> Vec<u64> {
    let mut out = tvm::Slots::new(GROUPS, blocks);
    for b in 0..blocks {
        for (g, (_, end, evs)) in block_schedule_seeded(b, tiles, seed)
            .into_iter()
            .enumerate()
        {
            let lane = b * GROUPS + g as u32;
            let rec = |t: u64, ev: u32, ty: u32| tvm::pack(t as u32, lane, ev, ty);
            for e in evs {
                match e {
                    Ev::B(r, _, t) => out.push(lane, rec(t, r, tvm::BEGIN)),
                    Ev::E(r, _, t) => out.push(lane, rec(t, r, tvm::END)),
                    Ev::I(r, _, t) => out.push(lane, rec(t, r, tvm::INSTANT)),
                    Ev::S(..) => {}
                }
            }
            out.push(lane, rec(end, 0, tvm::FINALIZE));
        }
    }
    out.into_words()
}

/// The same schedule as FlashInfer's profiler writes it ([`crate::flashinfer`]): each
/// record carries its block's SM ([`sm_of`]) and its block index, there is no finalize
/// record, and an instant is overwritten by the lane's next record (FlashInfer does not
/// advance the write pointer after one), so of the signals only a lane's last record
/// would survive. Payloads and counter samples do not exist in the format.
pub fn attention_flashinfer(blocks: u32, tiles: u32) -> Vec<u64> {
    use crate::flashinfer::{pack, BEGIN, END, INSTANT};
    let mut out = tvm::Slots::new(GROUPS, blocks);
    for b in 0..blocks {
        for (g, (_, _, evs)) in block_schedule(b, tiles).into_iter().enumerate() {
            let lane = b * GROUPS + g as u32;
            let rec = |t: u64, ev: u32, ty: u32| pack(t as u32, sm_of(b), b, ev, ty);
            for e in evs {
                match e {
                    Ev::B(r, _, t) => out.push(lane, rec(t, r, BEGIN)),
                    Ev::E(r, _, t) => out.push(lane, rec(t, r, END)),
                    Ev::I(r, _, t) => out.store(lane, rec(t, r, INSTANT)),
                    Ev::S(..) => {}
                }
            }
        }
    }
    out.into_words()
}

/// Task types of the [`mpk`] sample and their names, as Mirage's persistent kernel numbers
/// them (`python/mirage/mpk/profiler_persistent.py`): the event ids of its records.
pub const MPK_TASKS: [(u32, &str); 9] = [
    (10, "TASK_BEGIN_TASK_GRAPH"),
    (101, "TASK_EMBEDDING"),
    (103, "TASK_ATTENTION_1"),
    (105, "TASK_SILU_MUL_LINEAR"),
    (108, "TASK_LINEAR_WITH_RESIDUAL"),
    (109, "TASK_ARGMAX"),
    (119, "TASK_RMS_NORM"),
    (120, "TASK_LINEAR"),
    (201, "TASK_SCHD_EVENTS"),
];

/// Scheduler blocks of the [`mpk`] sample's grid: they run in the same launch as the
/// workers but record nothing.
pub const MPK_SCHEDULERS: u32 = 2;

/// A run of Mirage's persistent kernel as its profiler writes it ([`crate::mirage`]):
/// `workers` worker blocks (one lane each) and [`MPK_SCHEDULERS`] scheduler blocks that
/// record nothing, each worker running an embedding, `layers` decoder layers of six
/// tasks and an argmax, with a `TASK_SCHD_EVENTS` region after some tasks. Every region
/// carries the worker's task count at its begin, as `task_counter` does (so begin and end
/// agree and the count rises by one per region). The launch starts just before
/// globaltimer_lo wraps. Ids and names in [`MPK_TASKS`].
pub fn mpk(workers: u32, layers: u32) -> Vec<u64> {
    use crate::mirage::{pack, BEGIN, END};
    const LAYER: [(u32, u64); 6] = [
        (119, 900),
        (120, 2_400),
        (103, 3_100),
        (108, 1_800),
        (119, 850),
        (105, 4_200),
    ];
    let mut out = tvm::Slots::new(1, workers + MPK_SCHEDULERS);
    for w in 0..workers {
        let mut rng = Rng(0x9E37_79B9 ^ ((w as u64 + 1) * 0x1000_0001));
        let mut t = T0 + 40 * w as u64;
        let mut n = 0u32;
        let mut region = |ty: u32, base: u64, t: &mut u64, out: &mut tvm::Slots| {
            let d = rng.dur(base, base / 8);
            out.push(w, pack(*t as u32, w, ty, n, BEGIN));
            out.push(w, pack((*t + d) as u32, w, ty, n, END));
            n += 1;
            *t += d + 60;
        };
        region(10, 30, &mut t, &mut out);
        region(101, 1_500, &mut t, &mut out);
        for l in 0..layers {
            for (k, &(ty, base)) in LAYER.iter().enumerate() {
                region(ty, base, &mut t, &mut out);
                // The worker whose task completes an event schedules it.
                if (w + l + k as u32).is_multiple_of(3) {
                    region(201, 200, &mut t, &mut out);
                }
            }
        }
        region(109, 700, &mut t, &mut out);
    }
    out.into_words()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_is_deterministic_ordered_and_fits() {
        for b in [0, 1, 63] {
            let a = block_schedule(b, tiles_of(b));
            assert_eq!(a, block_schedule(b, tiles_of(b)));
            for (start, end, evs) in &a {
                let ts: Vec<u64> = evs
                    .iter()
                    .filter_map(|e| match *e {
                        Ev::B(_, _, t) | Ev::E(_, _, t) | Ev::I(_, _, t) => Some(t),
                        Ev::S(..) => None,
                    })
                    .collect();
                assert!(
                    ts.windows(2).all(|w| w[0] <= w[1]),
                    "lane events out of order"
                );
                assert!(*start <= ts[0] && ts[ts.len() - 1] <= *end);
                assert!(evs.len() <= RECORDS_PER_LANE as usize);
            }
        }
        // The launch crosses a globaltimer_lo wrap.
        let (s, e, _) = &block_schedule(0, 10)[1];
        assert!((*s as u32) > (*e as u32));
        // The longest lane (the MMA's, 10 tiles) fits with room to spare.
        assert_eq!(block_schedule(0, 10)[1].2.len(), 112);
    }

    #[test]
    fn every_wait_follows_its_signal_on_another_lane() {
        for b in [0, 1, 2, 63] {
            let tiles = tiles_of(b);
            let lanes = block_schedule(b, tiles);
            // (channel, token) -> (lane, time) of each signal.
            let mut signals = std::collections::HashMap::new();
            for (g, (_, _, evs)) in lanes.iter().enumerate() {
                for e in evs {
                    if let Ev::I(r, k, t) = *e {
                        if let Some(ch) = REGIONS[r as usize].strip_prefix("signal.") {
                            assert!(signals.insert((ch, k), (g, t)).is_none(), "{ch} {k}");
                        }
                    }
                }
            }
            let mut waits = 0;
            for (g, (_, _, evs)) in lanes.iter().enumerate() {
                for e in evs {
                    if let Ev::E(r, k, t) = *e {
                        if let Some(ch) = REGIONS[r as usize].strip_prefix("wait.") {
                            let (sg, st) = signals[&(ch, k)];
                            assert!(sg != g && st < t, "block {b}: wait.{ch} {k}");
                            waits += 1;
                        }
                    }
                }
            }
            // kv, scores and probs per tile; kv_free for all but the first two tiles.
            assert_eq!(waits, 4 * tiles - 2);
        }
    }

    #[test]
    fn tvm_records_per_block() {
        for tiles in [2, 3, 10] {
            let words = attention_tvm(2, tiles);
            assert_eq!(words.len(), 1 + 2 * 3 * (10 * tiles as usize + 3));
            let records = words[1..].iter().filter(|&&w| w != 0).count();
            assert_eq!(records, 2 * (24 * tiles as usize + 8));
        }
    }

    #[test]
    fn a_seed_gives_another_run_of_the_same_shape() {
        let (a, b) = (block_schedule(3, 10), block_schedule_seeded(3, 10, 7));
        assert_eq!(
            a,
            block_schedule_seeded(3, 10, 0),
            "seed 0 is the shipped sample"
        );
        assert_ne!(a, b);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.2.len(), y.2.len(), "same records");
        }
        assert_ne!(attention_tvm(4, 3), attention_tvm_seeded(4, 3, 7));
    }

    #[test]
    fn flashinfer_sample_keeps_the_tvm_records_but_instants_not_last_in_their_lane() {
        let (tvm_words, fi) = (attention_tvm(3, 4), attention_flashinfer(3, 4));
        assert_eq!(fi[0], tvm_words[0]);
        let stride = 9;
        for lane in 0..stride {
            let col = |w: &[u64]| -> Vec<u64> {
                w[1 + lane..]
                    .iter()
                    .step_by(stride)
                    .copied()
                    .filter(|&x| x != 0)
                    .collect()
            };
            // TVM's begins and ends (stamps and events equal), and its last record before
            // the finalize if that is an instant: no other instant survives.
            let t = col(&tvm_words);
            let last = t[t.len() - 2];
            let mut want: Vec<(u64, u64)> = t
                .iter()
                .filter(|&&w| w & 3 < 2)
                .map(|&w| (w >> 32, w & 0xFFF))
                .collect();
            if last & 3 == 2 {
                want.push((last >> 32, last & 0xFFF));
            }
            let got: Vec<u64> = col(&fi);
            let block = lane as u32 / GROUPS;
            let got_pairs: Vec<(u64, u64)> = got.iter().map(|&w| (w >> 32, w & 0xFFF)).collect();
            assert_eq!(got_pairs, want, "lane {lane}");
            for &w in &got {
                assert_eq!(crate::flashinfer::block_of(w), block as u64);
                assert_eq!(crate::flashinfer::sm_of(w), sm_of(block));
            }
        }
    }

    #[test]
    fn mpk_sample_counts_tasks_per_worker_and_leaves_scheduler_lanes_empty() {
        use crate::mirage::{event_no_of, lane_of};
        let w = mpk(4, 2);
        let stride = 4 + MPK_SCHEDULERS as usize;
        assert_eq!(w[0], tvm::header(1, stride as u32));
        for lane in 0..stride {
            let recs: Vec<u64> = w[1 + lane..]
                .iter()
                .step_by(stride)
                .copied()
                .filter(|&x| x != 0)
                .collect();
            if lane >= 4 {
                assert!(recs.is_empty());
                continue;
            }
            // Begin and end of the n-th region carry n.
            for (k, &r) in recs.iter().enumerate() {
                assert_eq!(lane_of(r), lane as u64);
                assert_eq!(event_no_of(r), k as u32 / 2);
                assert_eq!(r & 3, k as u64 % 2);
            }
            assert!(recs.len() >= 2 * (2 + 2 * 6 + 1));
        }
    }
}
