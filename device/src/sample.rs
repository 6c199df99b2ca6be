//! Deterministic sample buffers shaped like a warp-specialized attention kernel.
//!
//! Each block runs three lanes, as a FlashAttention-3 style kernel does: a **producer**
//! warp group loading Q and K/V tiles, an **MMA** warp group waiting for each tile and
//! running the QK^T and PV GEMMs, and a **softmax** warp group (with nested `rowmax` and
//! `exp2` phases) between them, then the epilogue. Blocks get 8 to 10 KV tiles, so they
//! are imbalanced, and the launch starts just before the 32-bit globaltimer wraps, so the
//! decoder's unwrapping is exercised by every use of the sample.
//!
//! [`attention`] writes the buffer with the reference encoder (`samples/attention.ikp` in
//! the repository is its output, checked by a test); [`attention_tvm`] writes the same
//! schedule in the TVM / FlashInfer / warpscope format, at any size (benchmarks).

use crate::encoder::BufferWriter;
use crate::layout::{Layout, LayoutError};
use crate::wire::lane_flags;
use crate::TimerMode;

/// Region names of the sample, by id.
pub const REGIONS: [&str; 10] = [
    "mainloop",
    "load_q",
    "load_kv",
    "wait_kv",
    "qk_gemm",
    "pv_gemm",
    "softmax",
    "rowmax",
    "exp2",
    "tile_done",
];
/// Wait-counter names of the sample, by id.
pub const COUNTERS: [&str; 2] = ["kv_full_wait", "kv_empty_wait"];
/// Lanes per block: producer, MMA, softmax.
pub const GROUPS: u32 = 3;
/// Blocks of the shipped sample.
pub const BLOCKS: u32 = 64;
/// Record capacity per lane of the shipped sample.
pub const RECORDS_PER_LANE: u32 = 96;
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
/// start and end times.
pub fn block_schedule(block: u32, tiles: u32) -> [(u64, u64, Vec<Ev>); 3] {
    let mut rng =
        Rng(0x9E37_79B9_7F4A_7C15 ^ (block as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
    let t0 = T0 + (block as u64 % 16) * 150 + rng.dur(0, 100);
    let (mut p, mut m, mut s) = (Vec::new(), Vec::new(), Vec::new());
    // Producer: Q, then K/V tiles two stages ahead of the PV GEMM that frees their slot.
    let mut tp = t0 + 40;
    p.push(Ev::B(0, 0, tp));
    p.push(Ev::B(1, 0, tp));
    tp += rng.dur(700, 150);
    p.push(Ev::E(1, 0, tp));
    let mut kv_ready = Vec::new();
    let mut pv_end: Vec<u64> = Vec::new();
    // MMA and softmax state.
    let mut tm = t0 + 60;
    m.push(Ev::B(0, 0, tm));
    let mut ts = t0 + 80;
    s.push(Ev::B(0, 0, ts));
    for k in 0..tiles {
        // Producer waits for the stage to be free (PV of tile k-2 done).
        if k >= 2 {
            let free = pv_end[(k - 2) as usize];
            if free > tp {
                p.push(Ev::S(1, ((free - tp) / 40) as u32));
                tp = free;
            } else {
                p.push(Ev::S(1, 0));
            }
        }
        tp += 10;
        p.push(Ev::B(2, k, tp));
        tp += rng.dur(850, 200);
        p.push(Ev::E(2, k, tp));
        kv_ready.push(tp);
        // MMA: wait for the tile, QK^T.
        tm += 10;
        m.push(Ev::B(3, k, tm));
        let wait = kv_ready[k as usize].saturating_sub(tm);
        tm = tm.max(kv_ready[k as usize]) + 15;
        m.push(Ev::E(3, k, tm));
        m.push(Ev::S(0, (wait / 40) as u32));
        m.push(Ev::B(4, k, tm));
        tm += rng.dur(560, 80);
        m.push(Ev::E(4, k, tm));
        // Softmax on the scores, nested phases.
        ts = ts.max(tm) + 25;
        s.push(Ev::B(6, k, ts));
        let mut t = ts + 10;
        s.push(Ev::B(7, k, t));
        t += rng.dur(180, 60);
        s.push(Ev::E(7, k, t));
        s.push(Ev::B(8, k, t));
        t += rng.dur(320, 90);
        s.push(Ev::E(8, k, t));
        ts = t + 12;
        s.push(Ev::E(6, k, ts));
        // MMA: PV once softmax is done.
        tm = tm.max(ts) + 20;
        m.push(Ev::B(5, k, tm));
        tm += rng.dur(480, 70);
        m.push(Ev::E(5, k, tm));
        m.push(Ev::I(9, k, tm));
        pv_end.push(tm);
    }
    tp += 30;
    p.push(Ev::E(0, 0, tp));
    tm += 30;
    m.push(Ev::E(0, 0, tm));
    ts = ts.max(tm) + 40;
    s.push(Ev::E(0, 0, ts));
    // The softmax group marks the epilogue with a final tile_done (payload = tiles).
    s.push(Ev::I(9, tiles, ts + 5));
    let end = |t: u64| t + 25;
    [
        (t0, end(tp), p),
        (t0 + 5, end(tm), m),
        (t0 + 9, end(ts + 5), s),
    ]
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
    let layout = Layout {
        grid: [BLOCKS, 1, 1],
        groups_per_block: GROUPS,
        records_per_lane: RECORDS_PER_LANE,
        timer: TimerMode::Globaltimer,
        regions: REGIONS.iter().map(|s| s.to_string()).collect(),
        counters: COUNTERS.iter().map(|s| s.to_string()).collect(),
    };
    let mut w = BufferWriter::new(layout)?;
    for b in 0..BLOCKS {
        for (g, (start, end, evs)) in block_schedule(b, tiles_of(b)).into_iter().enumerate() {
            let lane_id = (b * GROUPS + g as u32) as u64;
            let mut lane = w.lane(lane_id);
            // clock64 runs at 1.755 GHz from an arbitrary origin.
            let clk = |t: u64| 9_000_000 + (t - T0 + 1_000_000) * 1755 / 1000;
            lane.init(
                sm_of(b),
                LEADER_WARP[g],
                lane_flags::BLOCK_FENCE,
                start,
                clk(start),
            );
            for e in evs {
                match e {
                    Ev::B(r, p, t) => lane.begin(r, p, t),
                    Ev::E(r, p, t) => lane.end(r, p, t),
                    Ev::I(r, p, t) => lane.instant(r, p, t),
                    Ev::S(c, v) => lane.counter_sample(c, v).counter_add(c, v as u64),
                };
            }
            lane.finalize(end, clk(end));
        }
    }
    Ok(w)
}

/// The same schedule in the TVM / FlashInfer / warpscope wire format, `blocks` blocks of
/// `tiles` KV tiles each (about `14 * tiles + 14` records per block). Counter samples and
/// payloads do not exist in that format and are left out; every lane ends with a finalize
/// record.
pub fn attention_tvm(blocks: u32, tiles: u32) -> Vec<u64> {
    let stride = (blocks * GROUPS) as usize;
    let lanes: Vec<Vec<u64>> = (0..blocks)
        .flat_map(|b| {
            block_schedule(b, tiles)
                .into_iter()
                .enumerate()
                .map(move |(g, (_, end, evs))| {
                    let lane = b * GROUPS + g as u32;
                    let rec = |t: u64, ev: u32, ty: u32| {
                        ((t as u32 as u64) << 32)
                            | (lane as u64) << 12
                            | ((ev as u64) << 2)
                            | ty as u64
                    };
                    let mut v: Vec<u64> = evs
                        .iter()
                        .filter_map(|e| match *e {
                            Ev::B(r, _, t) => Some(rec(t, r, 0)),
                            Ev::E(r, _, t) => Some(rec(t, r, 1)),
                            Ev::I(r, _, t) => Some(rec(t, r, 2)),
                            Ev::S(..) => None,
                        })
                        .collect();
                    v.push(rec(end, 0, 3));
                    v
                })
        })
        .collect();
    let rows = lanes.iter().map(Vec::len).max().unwrap_or(0);
    let mut buf = vec![0u64; 1 + rows * stride];
    buf[0] = (GROUPS as u64) << 32 | blocks as u64;
    for (l, recs) in lanes.iter().enumerate() {
        for (k, &r) in recs.iter().enumerate() {
            buf[1 + l + k * stride] = r;
        }
    }
    buf
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
    }
}
