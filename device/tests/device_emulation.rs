//! Runs the real `ikp.cuh` encoding logic on the CPU: `tests/kernels/emulate.cpp` includes
//! the generated header under `IKP_HOST_EMULATION`, is compiled by the host C++ compiler
//! and "launches" a 3D grid of 3 x 2 x 2 blocks of 16 x 2 x 3 threads (three groups of 32:
//! a fenced globaltimer lane, a clock lane and an undeclared group). The buffer it writes
//! must equal, word for word, what the Rust reference encoder writes for the same program
//! ([`program`]), and a small decoder written here must recover exactly the spans,
//! payloads, ids, drops and counters the program produced.
mod support;

use ikp_device::encoder::{BufferWriter, LaneWriter};
use ikp_device::wire::{self, lane, lane_flags, Kind, MetaKind};
use ikp_device::{Layout, TimerMode};
use std::process::Command;
use std::sync::OnceLock;

const GRID: [u32; 3] = [3, 2, 2];
const BLOCK: [u32; 3] = [16, 2, 3];
const GROUPS: u32 = 2;
const CAP: u32 = 14;
const LOAD: u32 = 0;
const COMPUTE: u32 = 1;
const STORE: u32 = 2;
const TILE: u32 = 3;
const WAIT_FULL: u32 = 0;
const WAIT_EMPTY: u32 = 1;
/// Block 5's clock lane runs 6 tiles: 9 + 12 records for 14 slots.
const FULL_LANE: u64 = 5 * GROUPS as u64 + 1;

fn layout() -> Layout {
    Layout {
        grid: GRID,
        groups_per_block: GROUPS,
        records_per_lane: CAP,
        timer: TimerMode::Globaltimer,
        regions: ["load", "compute", "store", "tile"]
            .map(String::from)
            .to_vec(),
        counters: ["wait_full", "wait_empty"].map(String::from).to_vec(),
        ..Layout::default()
    }
}

/// Same as `lane_start` in emulate.cpp.
fn lane_start(b: u32, g: u32) -> u64 {
    0xFFFF_FFA0 + b as u64 * 37 + g as u64 * 11
}

/// Same as the `smid` shim in emulate.cpp.
fn smid(b: u32) -> u32 {
    (b * 7 + 3) % 11
}

/// What a decoder must recover from one lane.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct LaneView {
    smid: u32,
    warp: u32,
    flags: u32,
    /// Lane start and end in the lane's timer unit (ns or cycles), full 64 bits.
    start: u64,
    end: u64,
    /// `(region, payload, begin, end)` in the order the spans close.
    spans: Vec<(u32, u32, u64, u64)>,
    /// `(region, payload, time)`.
    instants: Vec<(u32, u32, u64)>,
    /// `(counter, spins, time of the record before)`.
    samples: Vec<(u32, u32, u64)>,
    written: u32,
    dropped: u32,
    counters: Vec<u64>,
}

/// The emulated program, mirrored in Rust: it drives the reference encoder and predicts
/// what the decoder must see.
struct Model<'a> {
    w: LaneWriter<'a>,
    ns: u64,
    clock: bool,
    cursor: u32,
    last_time: u64,
    open: Vec<(u32, u32, u64)>,
    view: LaneView,
}

impl Model<'_> {
    fn time(&self) -> u64 {
        if self.clock {
            2 * self.ns + 64
        } else {
            self.ns
        }
    }
    fn step(&mut self, dt: u64) {
        self.ns += dt;
    }
    /// Counts the attempt; true if the record lands in the segment.
    fn slot(&mut self) -> bool {
        self.cursor += 1;
        self.cursor <= CAP
    }
    fn begin(&mut self, region: u32, payload: u32) {
        let t = self.time();
        self.w.begin(region, payload, t);
        if self.slot() {
            self.last_time = t;
            self.open.push((region, payload, t));
        }
    }
    fn end(&mut self, region: u32, payload: u32) {
        let t = self.time();
        self.w.end(region, payload, t);
        if self.slot() {
            self.last_time = t;
            let (r, p, b) = self.open.pop().expect("model: end without begin");
            assert_eq!((r, p), (region, payload), "model nests properly");
            self.view.spans.push((r, p, b, t));
        }
    }
    fn instant(&mut self, region: u32, payload: u32) {
        let t = self.time();
        self.w.instant(region, payload, t);
        if self.slot() {
            self.last_time = t;
            self.view
                .instants
                .push((region & wire::REGION_MASK, payload & wire::PAYLOAD_MASK, t));
        }
    }
    fn count(&mut self, id: u32, n: u32) {
        self.w.counter_add(id, n as u64);
        self.view.counters[id as usize] += n as u64;
    }
    fn sample(&mut self, id: u32, n: u32) {
        self.w.counter_sample(id, n);
        if self.slot() {
            self.view.samples.push((id, n, self.last_time));
        }
    }
    fn finalize(&mut self) {
        let (end_gt, end_clk) = (self.ns, 2 * self.ns + 64);
        self.w.finalize(end_gt, end_clk);
        self.view.end = self.time();
        self.view.written = self.cursor.min(CAP);
        self.view.dropped = self.cursor - self.view.written;
    }
}

/// `program()` of emulate.cpp, step for step.
fn program(m: &mut Model, b: u32, g: u32) {
    m.step(10);
    m.begin(LOAD, b);
    m.step(25);
    m.end(LOAD, b);
    m.step(5);
    m.begin(COMPUTE, 7); // IKP_SCOPE
    m.step(100);
    m.begin(STORE, 0xF_FFFF); // nested IKP_SCOPE
    m.step(3);
    m.end(STORE, 0xF_FFFF);
    m.step(2);
    m.count(WAIT_FULL, b + g); // IKP_WAIT
    m.end(COMPUTE, 7);
    m.count(WAIT_EMPTY, 3); // IKP_WAIT_SAMPLED
    m.sample(WAIT_EMPTY, 3);
    m.count(WAIT_FULL, 5);
    // count(9, 1000): no such counter, nothing happens.
    m.step(1);
    m.instant(TILE, 42);
    let n_tiles = if b == 5 && g == 1 { 6 } else { 1 };
    for t in 0..n_tiles {
        m.step(4);
        m.begin(TILE, b * 16 + t);
        m.step(6);
        m.end(TILE, b * 16 + t);
    }
    m.step(1);
    m.instant(1024 + STORE, 0x10_0003);
    m.step(7);
    m.finalize();
}

/// The reference encoder's buffer and the predicted view of every lane.
fn reference() -> (Vec<u64>, Vec<LaneView>) {
    let layout = layout();
    let n_counters = layout.counters.len();
    let mut buf = BufferWriter::new(layout.clone()).unwrap();
    let mut views = Vec::new();
    for lane_id in 0..layout.lane_count() {
        let (b, g) = (
            (lane_id / GROUPS as u64) as u32,
            (lane_id % GROUPS as u64) as u32,
        );
        let clock = g == 1;
        let flags = if clock {
            lane_flags::CLOCK
        } else {
            lane_flags::BLOCK_FENCE
        };
        let start = lane_start(b, g);
        let mut w = buf.lane(lane_id);
        // The leader is the group's first thread: linear index 32 * g, warp g.
        w.init(smid(b), g, flags, start, 2 * start + 64);
        let view = LaneView {
            smid: smid(b),
            warp: g,
            flags,
            start: if clock { 2 * start + 64 } else { start },
            counters: vec![0; n_counters],
            ..LaneView::default()
        };
        let mut m = Model {
            w,
            ns: start,
            clock,
            cursor: 0,
            last_time: view.start,
            open: Vec::new(),
            view,
        };
        program(&mut m, b, g);
        views.push(m.view);
    }
    (buf.into_words(), views)
}

/// A minimal decoder: unwraps 32-bit timestamps against the lane's 64-bit start and pairs
/// each end with the innermost open begin of the same region.
fn decode(words: &[u64]) -> Vec<LaneView> {
    let h = ikp_device::Header::parse(words).expect("valid header");
    let cap = h.layout.records_per_lane;
    let trailer = (lane::EVENTS + cap) as usize;
    (0..h.layout.lane_count())
        .map(|l| {
            let seg = &words[h.lane_range(l)];
            let ids = wire::unpack_ids(seg[lane::IDS as usize]).expect("lane ran init");
            let clock = ids.flags & lane_flags::CLOCK != 0;
            let (start_i, end_i) = if clock {
                (lane::START_CLK, lane::T_END_CLK)
            } else {
                (lane::START_GT, lane::T_END_GT)
            };
            let count = seg[trailer + lane::T_COUNT as usize];
            let mut v = LaneView {
                smid: ids.smid,
                warp: ids.warp,
                flags: ids.flags,
                start: seg[start_i as usize],
                end: seg[trailer + end_i as usize],
                written: count as u32,
                dropped: (count >> wire::COUNT_DROPPED_SHIFT) as u32,
                counters: seg[trailer + lane::T_COUNTERS as usize..].to_vec(),
                ..LaneView::default()
            };
            let mut now = v.start;
            let mut open: Vec<(u32, u32, u64)> = Vec::new();
            for &word in &seg[lane::EVENTS as usize..][..v.written as usize] {
                let r = wire::unpack_record(word);
                if r.kind == Kind::Meta {
                    assert_eq!(MetaKind::from_id(r.region), Some(MetaKind::CounterSample));
                    v.samples.push((r.payload, r.time_lo, now));
                    continue;
                }
                now += r.time_lo.wrapping_sub(now as u32) as u64;
                match r.kind {
                    Kind::Begin => open.push((r.region, r.payload, now)),
                    Kind::End => {
                        let i = open
                            .iter()
                            .rposition(|o| o.0 == r.region)
                            .expect("end without a matching begin");
                        let (region, payload, begin) = open.remove(i);
                        assert_eq!(payload, r.payload, "begin and end payloads differ");
                        v.spans.push((region, payload, begin, now));
                    }
                    Kind::Instant => v.instants.push((r.region, r.payload, now)),
                    Kind::Meta => unreachable!(),
                }
            }
            assert!(open.is_empty(), "lane {l}: unclosed regions {open:?}");
            v
        })
        .collect()
}

struct Emulated {
    words: Vec<u64>,
    stdout: String,
}

/// Compiles emulate.cpp against the generated header and runs it once per test process.
fn emulated() -> &'static Emulated {
    static RUN: OnceLock<Emulated> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("emulate");
        let mut cc = support::host_cxx();
        cc.args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(support::header_dir())
            .arg(support::kernels_dir().join("emulate.cpp"))
            .arg("-o")
            .arg(&exe);
        support::run(cc);

        let layout = layout();
        let arg_path = dir.path().join("arg.bin");
        let buf_path = dir.path().join("buf.bin");
        let arg = layout.kernel_arg(0);
        std::fs::write(&arg_path, bytemuck::bytes_of(&arg)).unwrap();
        let header_only = BufferWriter::new(layout).unwrap();
        std::fs::write(&buf_path, header_only.to_bytes()).unwrap();
        let mut run = Command::new(&exe);
        run.arg(&arg_path).arg(&buf_path);
        for d in GRID.iter().chain(&BLOCK) {
            run.arg(d.to_string());
        }
        let stdout = support::run(run);
        let bytes = std::fs::read(&buf_path).unwrap();
        let words = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        Emulated { words, stdout }
    })
}

#[test]
fn emulated_buffer_equals_the_reference_encoder_word_for_word() {
    let (want, _) = reference();
    let got = &emulated().words;
    assert_eq!(got.len(), want.len());
    let diffs: Vec<_> = (0..want.len())
        .filter(|&i| got[i] != want[i])
        .map(|i| {
            format!(
                "word {i}: emulated {:#018x}, reference {:#018x}",
                got[i], want[i]
            )
        })
        .collect();
    assert!(
        diffs.is_empty(),
        "{} words differ:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

#[test]
fn decoded_lanes_match_the_program_exactly() {
    let (_, want) = reference();
    let got = decode(&emulated().words);
    assert_eq!(got.len(), 24);
    for (l, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "lane {l}");
    }
}

#[test]
fn spot_checks_that_do_not_rely_on_the_model() {
    let lanes = decode(&emulated().words);
    // Lane 0: block 0, fenced globaltimer lane. LOAD lasts 25 ns, COMPUTE 105 ns, STORE 3.
    let l0 = &lanes[0];
    assert_eq!(
        (l0.smid, l0.warp, l0.flags),
        (3, 0, lane_flags::BLOCK_FENCE)
    );
    let dur = |v: &LaneView, r: u32| -> Vec<u64> {
        v.spans
            .iter()
            .filter(|s| s.0 == r)
            .map(|s| s.3 - s.2)
            .collect()
    };
    assert_eq!(dur(l0, LOAD), [25]);
    assert_eq!(dur(l0, COMPUTE), [105]);
    assert_eq!(dur(l0, STORE), [3]);
    assert_eq!(l0.spans[1].1, 0xF_FFFF, "largest payload survives");
    // The 32-bit stamps wrapped inside the lane, the decoded times did not.
    assert!(l0.start < 1 << 32 && l0.end > 1 << 32);
    assert_eq!(
        l0.end - l0.start,
        10 + 25 + 5 + 100 + 3 + 2 + 1 + 10 + 1 + 7
    );
    // Lane 9: block 4, clock lane (2 cycles per ns), warp 1, SM (4 * 7 + 3) % 11.
    let l9 = &lanes[9];
    assert_eq!((l9.smid, l9.warp, l9.flags), (9, 1, lane_flags::CLOCK));
    assert_eq!(dur(l9, LOAD), [50]);
    assert_eq!(dur(l9, TILE), [12]);
    assert_eq!(l9.spans.last().unwrap().1, 4 * 16, "tile payload");
    // Counters: 4 + 1 spins + 5 added, 3 spins sampled once; the bogus id changed nothing.
    assert_eq!(l9.counters, [10, 3]);
    assert_eq!(l9.samples.len(), 1);
    assert_eq!((l9.samples[0].0, l9.samples[0].1), (WAIT_EMPTY, 3));
    // Out-of-range region and payload keep their low bits.
    assert_eq!(
        (l9.instants[1].0, l9.instants[1].1),
        (STORE, 3),
        "masked instant"
    );
}

#[test]
fn full_lane_counts_drops_and_keeps_what_fits() {
    let lanes = decode(&emulated().words);
    let full = &lanes[FULL_LANE as usize];
    assert_eq!((full.written, full.dropped), (CAP, 9 + 12 - CAP));
    let tiles: Vec<u32> = full
        .spans
        .iter()
        .filter(|s| s.0 == TILE)
        .map(|s| s.1)
        .collect();
    assert_eq!(
        tiles,
        [80, 81, 82],
        "the first three tiles fit, the rest dropped"
    );
    assert_eq!(full.instants.len(), 1, "the last instant was dropped");
    for (l, v) in lanes.iter().enumerate() {
        if l as u64 != FULL_LANE {
            assert_eq!((v.written, v.dropped), (11, 0), "lane {l}");
        }
    }
}

#[test]
fn undeclared_lanes_never_write_and_fences_run_on_every_thread() {
    let e = emulated();
    // 13 blocks (12 + the one past lane_count) x 32 threads of the fenced group x 11
    // fenced calls (10 records and finalize); the unfenced groups add none.
    assert_eq!(
        e.stdout.trim(),
        format!("fences={} canary=OK", 13 * 32 * 11)
    );
}
