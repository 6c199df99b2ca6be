//! Runs the real `ikp.cuh` encoding logic on the CPU: `tests/kernels/emulate.cpp` includes
//! the generated header under `IKP_HOST_EMULATION`, is compiled by the host C++ compiler
//! and "launches" a 3D grid of 3 x 2 x 2 blocks of 16 x 2 x 3 threads (three groups of 32:
//! a fenced globaltimer lane, a clock lane and an undeclared group). The buffer it writes
//! must equal, word for word, what the Rust reference encoder writes for the same program
//! ([`program`]), and a small decoder written here must recover exactly the spans,
//! payloads, ids, drops and counters the program produced.
//!
//! The second program ([`ring_program`]) runs ring lanes (a producer issuing async copies
//! and a consumer ending them, in two lanes of a block) four times into a buffer of three
//! epochs: every ring wraps several times, the fourth launch must record nothing but its
//! launch count, and again the buffer must equal the reference encoder's.
//!
//! The emulated SM clock advances on each read (`kReadCycles` in emulate.cpp, [`READ_CYCLES`]
//! here), so the record-cost calibration at init sees known rounds and every lane's CALIB
//! word must be [`CALIB_GLOBALTIMER_LANE`] or [`CALIB_CLOCK_LANE`].
use crate::support;

use ikp_device::encoder::{BufferWriter, LaneWriter};
use ikp_device::wire::{self, lane, lane_flags, Kind, MetaKind};
use ikp_device::{Layout, TimerMode};
use std::process::Command;
use std::sync::OnceLock;

const GRID: [u32; 3] = [3, 2, 2];
const BLOCK: [u32; 3] = [16, 2, 3];
const GROUPS: u32 = 2;
const CAP: u32 = 16;
const LOAD: u32 = 0;
const COMPUTE: u32 = 1;
const STORE: u32 = 2;
const TILE: u32 = 3;
const WAIT_FULL: u32 = 0;
const WAIT_EMPTY: u32 = 1;
/// Block 5's clock lane runs 6 tiles: 11 + 12 records for 16 slots.
const FULL_LANE: u64 = 5 * GROUPS as u64 + 1;
/// Cycles each emulated clock read adds, by read index mod 4 (`kReadCycles`).
const READ_CYCLES: [u64; 4] = [6, 1, 9, 4];
/// A globaltimer lane's CALIB word: its records read no clock, so its rounds are the
/// bracket reads 1..2 and 3..4 of the lane (+9, +6): the shorter, 6, over 4 records,
/// rounded.
const CALIB_GLOBALTIMER_LANE: u32 = 2;
/// A clock lane's: each record reads the clock too, rounds of reads 1..6 (+9 +4 +6 +1 +9 =
/// 29) and 7..12 (+6 +1 +9 +4 +6 = 26): 26 / 4 rounded.
const CALIB_CLOCK_LANE: u32 = 7;

const RING_GRID: [u32; 3] = [3, 1, 1];
const RING_BLOCK: [u32; 3] = [64, 1, 1];
const RING_CAP: u32 = 8;
const RING_EPOCHS: u32 = 3;
/// One launch more than the buffer has epochs: it must record nothing.
const RING_LAUNCHES: u32 = 4;
const COPY: u32 = 4;

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

fn ring_layout() -> Layout {
    Layout {
        grid: RING_GRID,
        groups_per_block: 2,
        records_per_lane: RING_CAP,
        regions: ["load", "compute", "store", "tile", "copy"]
            .map(String::from)
            .to_vec(),
        counters: vec!["wait_full".into()],
        overflow: wire::Overflow::Ring,
        epochs: RING_EPOCHS,
        async_regions: vec![COPY],
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
    cap: u32,
    ring: bool,
    /// The emulated clock's reads so far and the cycles they added.
    reads: usize,
    skew: u64,
    cursor: u32,
    last_time: u64,
    open: Vec<(u32, u32, u64)>,
    view: LaneView,
    /// Every record attempted, as its word (for the ring checks).
    attempted: Vec<u64>,
}

impl<'a> Model<'a> {
    /// A lane's init on the device: stamps, then the record-cost calibration.
    fn init(
        w: LaneWriter<'a>,
        start: u64,
        (smid, warp, flags): (u32, u32, u32),
        cap: u32,
        ring: bool,
        n_counters: usize,
    ) -> Self {
        let clock = flags & lane_flags::CLOCK != 0;
        let mut m = Model {
            w,
            ns: start,
            clock,
            cap,
            ring,
            reads: 0,
            skew: 0,
            cursor: 0,
            last_time: 0,
            open: Vec::new(),
            view: LaneView {
                smid,
                warp,
                flags,
                counters: vec![0; n_counters],
                ..LaneView::default()
            },
            attempted: Vec::new(),
        };
        let clk = m.clock_read();
        m.w.init(smid, warp, flags, start, clk);
        m.view.start = if clock { clk } else { start };
        m.last_time = m.view.start;
        // Two rounds of CALIB_RECORDS records between two clock reads (a clock lane's
        // records read the clock too); the shorter round per record, rounded, is stored.
        let records = u64::from(wire::CALIB_RECORDS);
        let mut least = u64::MAX;
        for _ in 0..2 {
            let c0 = m.clock_read();
            for _ in 0..records {
                m.stamp();
            }
            least = least.min(m.clock_read() - c0);
        }
        m.w.calibrate(((least + records / 2) / records) as u32);
        m
    }
    /// One read of the emulated SM clock (`ikp::emu::clock64` in emulate.cpp).
    fn clock_read(&mut self) -> u64 {
        self.skew += READ_CYCLES[self.reads % 4];
        self.reads += 1;
        2 * self.ns + 64 + self.skew
    }
    /// The stamp of a timed record. The leader's warp reads the timer at every record,
    /// whether it lands or not (only the store is under the room predicate); the other
    /// warps branch around it.
    fn stamp(&mut self) -> u64 {
        if self.clock {
            self.clock_read()
        } else {
            self.ns
        }
    }
    fn step(&mut self, dt: u64) {
        self.ns += dt;
    }
    /// Whether the next record lands in the segment (the device's predicate).
    fn lands(&self) -> bool {
        self.ring || self.cursor < self.cap
    }
    /// One timed record; returns its time if it landed.
    fn timed(&mut self, kind: Kind, region: u32, payload: u32) -> Option<u64> {
        let read = self.stamp();
        let landed = self.lands();
        let t = if landed { read } else { 0 };
        self.w.record(kind, region, payload, t as u32);
        self.attempted.push(wire::pack_record(
            t as u32,
            wire::pack_tag(kind, region, payload),
        ));
        self.cursor += 1;
        landed.then(|| {
            self.last_time = t;
            t
        })
    }
    fn begin(&mut self, region: u32, payload: u32) {
        if let Some(t) = self.timed(Kind::Begin, region, payload) {
            self.open.push((region, payload, t));
        }
    }
    fn end(&mut self, region: u32, payload: u32) {
        if let Some(t) = self.timed(Kind::End, region, payload) {
            let (r, p, b) = self.open.pop().expect("model: end without begin");
            assert_eq!((r, p), (region, payload), "model nests properly");
            self.view.spans.push((r, p, b, t));
        }
    }
    fn instant(&mut self, region: u32, payload: u32) {
        if let Some(t) = self.timed(Kind::Instant, region, payload) {
            self.view
                .instants
                .push((region & wire::REGION_MASK, payload & wire::PAYLOAD_MASK, t));
        }
    }
    /// An async range's begin: recorded like a begin, never paired within the lane.
    fn range_begin(&mut self, region: u32, token: u32) {
        self.timed(Kind::Begin, region, token);
    }
    fn range_end(&mut self, region: u32, token: u32) {
        self.timed(Kind::End, region, token);
    }
    fn count(&mut self, id: u32, n: u32) {
        self.w.counter_add(id, n as u64);
        self.view.counters[id as usize] += n as u64;
    }
    fn sample(&mut self, id: u32, n: u32) {
        self.w.counter_sample(id, n);
        self.attempted.push(wire::pack_record(
            n,
            wire::pack_tag(Kind::Meta, MetaKind::CounterSample as u32, id),
        ));
        if self.lands() {
            self.view.samples.push((id, n, self.last_time));
        }
        self.cursor += 1;
    }
    fn finalize(&mut self) {
        let end_clk = self.clock_read();
        self.w.finalize(self.ns, end_clk);
        self.view.end = if self.clock { end_clk } else { self.ns };
        self.view.written = self.cursor.min(self.cap);
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
    m.count(WAIT_FULL, 2); // a runtime id
    m.count(WAIT_EMPTY, 4); // IKP_WAIT with a runtime id
    m.count(WAIT_FULL, 1); // IKP_WAIT, an id with a side effect
    m.count(WAIT_EMPTY, 1); // IKP_WAIT_SAMPLED, the same
    m.sample(WAIT_EMPTY, 1);
    m.count(WAIT_EMPTY, 0); // IKP_WAIT_SAMPLED that passes at once
    m.sample(WAIT_EMPTY, 0);
    m.count(WAIT_FULL, 3); // the ids' evaluations: once each
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
        let flags = if g == 1 {
            lane_flags::CLOCK
        } else {
            lane_flags::BLOCK_FENCE
        };
        // The leader is the group's first thread: linear index 32 * g, warp g.
        let ids = (smid(b), g, flags);
        let w = buf.lane(lane_id);
        let mut m = Model::init(w, lane_start(b, g), ids, CAP, false, n_counters);
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

/// `ring_program()` of emulate.cpp, step for step.
fn ring_program(m: &mut Model, b: u32, g: u32, launch: u32) {
    for t in 0..ring_tiles(b, launch) {
        m.step(3 + t as u64 % 4);
        let token = copy_token(b, launch, t);
        if g == 0 {
            m.begin(TILE, t);
            m.step(2);
            m.range_begin(COPY, token);
            m.end(TILE, t); // IKP_SCOPE closes after the range begins
        } else {
            let spins = t % 3;
            m.count(WAIT_FULL, spins); // IKP_WAIT_SAMPLED
            m.sample(WAIT_FULL, spins);
            m.step(1);
            m.range_end(COPY, token);
            m.begin(TILE, t);
            m.step(5);
            m.end(TILE, t);
        }
    }
    m.step(1);
    m.instant(TILE, 0xABC);
    m.step(2);
    m.finalize();
}

/// Same as in emulate.cpp.
fn ring_tiles(b: u32, launch: u32) -> u32 {
    5 + 3 * b + launch
}
fn copy_token(b: u32, launch: u32, t: u32) -> u32 {
    b << 12 | launch << 8 | t
}
fn ring_start(b: u32, g: u32, launch: u32) -> u64 {
    5000 + 100_000 * launch as u64 + b as u64 * 37 + g as u64 * 11
}

/// What one lane of one launch of the ring program attempted (`None`: the launch found
/// its epochs used up and recorded nothing).
struct RingLane {
    launch: u32,
    lane: u64,
    attempted: Option<Vec<u64>>,
}

/// The reference encoder's buffer after each launch of the ring program, and what every
/// lane attempted.
fn ring_reference() -> (Vec<Vec<u64>>, Vec<RingLane>) {
    let layout = ring_layout();
    let mut buf = BufferWriter::new(layout.clone()).unwrap();
    let (mut after, mut lanes) = (Vec::new(), Vec::new());
    for launch in 0..RING_LAUNCHES {
        for lane_id in 0..layout.lane_count() {
            let (b, g) = ((lane_id / 2) as u32, (lane_id % 2) as u32);
            let flags = lane_flags::RING
                | if g == 1 {
                    lane_flags::CLOCK | lane_flags::BLOCK_FENCE
                } else {
                    0
                };
            let attempted = buf.launch(lane_id).map(|w| {
                let ids = (smid(b), g, flags);
                let mut m = Model::init(w, ring_start(b, g, launch), ids, RING_CAP, true, 1);
                ring_program(&mut m, b, g, launch);
                m.attempted
            });
            lanes.push(RingLane {
                launch,
                lane: lane_id,
                attempted,
            });
        }
        after.push(buf.clone().into_words());
    }
    (after, lanes)
}

/// Words of a file the emulator wrote.
fn read_words(path: &std::path::Path) -> Vec<u64> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The emulator, compiled once per test process.
fn emulator() -> &'static std::path::Path {
    static EXE: OnceLock<(tempfile::TempDir, std::path::PathBuf)> = OnceLock::new();
    &EXE.get_or_init(|| compile_emulator(&[])).1
}

/// Compiles emulate.cpp with `-D` switches (`IKP_CALIBRATE=0`).
fn compile_emulator(defines: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("emulate");
    let mut cc = support::host_cxx();
    cc.args(["-std=c++17", "-Wall", "-Wextra", "-Werror"]);
    for d in defines {
        cc.arg(format!("-D{d}"));
    }
    cc.arg("-I")
        .arg(support::header_dir())
        .arg(support::kernels_dir().join("emulate.cpp"))
        .arg("-o")
        .arg(&exe);
    support::run(cc);
    (dir, exe)
}

/// Runs `program` `launches` times into one buffer of `layout`; returns the buffer after
/// each launch and the last launch's stdout.
fn emulate(
    program: &str,
    layout: Layout,
    launches: u32,
    grid: [u32; 3],
    block: [u32; 3],
) -> (Vec<Vec<u64>>, String) {
    emulate_with(emulator(), program, layout, launches, grid, block)
}

/// [`emulate`] with another build of the emulator.
fn emulate_with(
    exe: &std::path::Path,
    program: &str,
    layout: Layout,
    launches: u32,
    grid: [u32; 3],
    block: [u32; 3],
) -> (Vec<Vec<u64>>, String) {
    let arg = layout.kernel_arg(0);
    let header_only = BufferWriter::new(layout).unwrap().into_words();
    emulate_arg(exe, program, arg, &header_only, launches, grid, block)
}

/// [`emulate_with`] with any kernel argument (a null one: the runtime off switch) and the
/// buffer `words` (the emulator points `arg.buf` at it unless `arg` has no lanes).
fn emulate_arg(
    exe: &std::path::Path,
    program: &str,
    arg: wire::KernelArg,
    words: &[u64],
    launches: u32,
    grid: [u32; 3],
    block: [u32; 3],
) -> (Vec<Vec<u64>>, String) {
    let dir = tempfile::tempdir().unwrap();
    let arg_path = dir.path().join("arg.bin");
    let buf_path = dir.path().join("buf.bin");
    std::fs::write(&arg_path, bytemuck::bytes_of(&arg)).unwrap();
    std::fs::write(&buf_path, bytemuck::cast_slice::<u64, u8>(words)).unwrap();
    let (mut after, mut stdout) = (Vec::new(), String::new());
    for launch in 0..launches {
        let mut run = Command::new(exe);
        run.arg(program)
            .arg(launch.to_string())
            .arg(&arg_path)
            .arg(&buf_path);
        for d in grid.iter().chain(&block) {
            run.arg(d.to_string());
        }
        stdout = support::run(run);
        after.push(read_words(&buf_path));
    }
    (after, stdout)
}

struct Emulated {
    words: Vec<u64>,
    stdout: String,
}

/// The basic program, emulated once per test process.
fn emulated() -> &'static Emulated {
    static RUN: OnceLock<Emulated> = OnceLock::new();
    RUN.get_or_init(|| {
        let (mut after, stdout) = emulate("basic", layout(), 1, GRID, BLOCK);
        Emulated {
            words: after.pop().unwrap(),
            stdout,
        }
    })
}

/// The ring program's buffer after each of its launches, emulated once per test process.
fn ring_emulated() -> &'static (Vec<Vec<u64>>, String) {
    static RUN: OnceLock<(Vec<Vec<u64>>, String)> = OnceLock::new();
    RUN.get_or_init(|| emulate("ring", ring_layout(), RING_LAUNCHES, RING_GRID, RING_BLOCK))
}

/// Asserts two buffers are equal, listing the words that differ.
fn assert_same_words(got: &[u64], want: &[u64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
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
        "{what}: {} words differ:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

#[test]
fn emulated_buffer_equals_the_reference_encoder_word_for_word() {
    let (want, _) = reference();
    assert_same_words(&emulated().words, &want, "basic program");
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

/// The basic program's buffer through ikp's own decoder: a launch of globaltimer and clock
/// lanes mixed (the timer is each lane's choice) decodes with no diagnostic but the full
/// lane's drops, and every
/// lane has the spans and instants the test's decoder reads, in the lane's order; the
/// globaltimer lanes' times in ns exactly, the clock lanes' converted from cycles.
#[test]
fn the_decoder_reads_the_emulated_mixed_timer_buffer() {
    let words = &emulated().words;
    let views = decode(words);
    let t = ikp_host::decode(words, &Default::default()).unwrap();
    // Nothing to report but the full lane's drops.
    let mut c = t.diagnostic_counts();
    let dropped: u64 = views.iter().map(|v| v.dropped as u64).sum();
    assert_eq!((c.dropped, dropped > 0), (dropped, true));
    c.dropped = 0;
    assert!(c.is_clean(), "{c}");
    assert!(t.source.clock.is_some(), "clock lanes are calibrated");
    assert_eq!(t.lanes.len(), views.len());
    let mut clock_lanes = 0;
    for (l, v) in t.lanes.iter().zip(&views) {
        let clock = v.flags & lane_flags::CLOCK != 0;
        clock_lanes += usize::from(clock);
        let s = &t.spans;
        // ikp orders a lane's spans by begin; the view lists them as they close.
        let mut want: Vec<(u32, u32, u64, u64)> = v.spans.clone();
        want.sort_by_key(|w| w.2);
        let got: Vec<(u32, u32, u64, u64)> = (l.spans.clone())
            .map(|i| (s.region[i] as u32, s.payload[i], s.begin[i], s.end[i]))
            .collect();
        let ids = |v: &[(u32, u32, u64, u64)]| -> Vec<(u32, u32)> {
            v.iter().map(|w| (w.0, w.1)).collect()
        };
        assert_eq!(ids(&got), ids(&want), "lane {}", l.id);
        let i = &t.instants;
        let inst: Vec<(u32, u32)> = (l.instants.clone())
            .map(|k| (i.region[k] as u32, i.payload[k]))
            .collect();
        let want_inst: Vec<(u32, u32)> = v.instants.iter().map(|w| (w.0, w.1)).collect();
        assert_eq!(inst, want_inst, "lane {}", l.id);
        if clock {
            // Cycles became ns: each span lasts about half its cycles (a 2 GHz clock).
            for (g, w) in got.iter().zip(&want) {
                let (ns, cycles) = (g.3 - g.2, w.3 - w.2);
                assert!(
                    ns.abs_diff(cycles / 2) <= 1 + cycles / 8,
                    "lane {} {g:?} {w:?}",
                    l.id
                );
            }
        } else {
            assert_eq!(got, want, "lane {}", l.id);
        }
    }
    assert!(
        clock_lanes > 0 && clock_lanes < views.len(),
        "a mixed launch"
    );
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
    // 25 ns at 2 cycles per ns, plus what the emulated clock's reads add: reads 5 and 6
    // of the lane stamp LOAD's begin and end (read 0 is init's, 1..=4 the calibration's),
    // reads 12 and 13 the tile's.
    assert_eq!(dur(l9, LOAD), [50 + READ_CYCLES[6 % 4]]);
    assert_eq!(dur(l9, TILE), [12 + READ_CYCLES[13 % 4]]);
    assert_eq!(l9.spans.last().unwrap().1, 4 * 16, "tile payload");
    // Counters: 4 + 1 spins + 5 and 2 added (a constant id and a runtime one), a wait
    // that passed at once, 1 spin and 3 evaluations of the ids of the waits whose ids
    // count them (once each); 3 spins sampled once, 4 spins of a wait with a runtime id, 1
    // spin sampled and a sampled wait that passed at once; the bogus id changed nothing.
    assert_eq!(l9.counters, [16, 8]);
    let samples: Vec<(u32, u32)> = l9.samples.iter().map(|s| (s.0, s.1)).collect();
    assert_eq!(samples, [(WAIT_EMPTY, 3), (WAIT_EMPTY, 1), (WAIT_EMPTY, 0)]);
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
    assert_eq!((full.written, full.dropped), (CAP, 11 + 12 - CAP));
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
            assert_eq!((v.written, v.dropped), (13, 0), "lane {l}");
        }
    }
}

#[test]
fn undeclared_lanes_never_write_and_fences_run_on_every_thread_of_a_writing_warp() {
    let e = emulated();
    // 12 blocks x 32 threads of the fenced group (one warp, its leader's) x 11 fenced calls
    // (10 records and finalize); the block past lane_count is off and fences nothing, the
    // unfenced groups add none.
    let fences = e.stdout.split_whitespace().next().unwrap();
    assert_eq!(fences, format!("fences={}", 12 * 32 * 11), "{}", e.stdout);
    assert!(e.stdout.trim().ends_with("canary=OK"), "{}", e.stdout);
}

/// The runtime off switch: a null `ikp::Arg` (all zero, no lanes; the emulator keeps its
/// null buffer pointer, so a store through it would crash) runs both programs, every mode
/// of lane, and no thread reads a timer, fences or writes: the buffer is as laid out.
#[test]
fn a_null_arg_reads_no_timer_fences_nothing_and_writes_nothing() {
    for (program, layout, grid, block) in [
        ("basic", layout(), GRID, BLOCK),
        ("ring", ring_layout(), RING_GRID, RING_BLOCK),
    ] {
        let laid_out = BufferWriter::new(layout).unwrap().into_words();
        let (after, stdout) = emulate_arg(
            emulator(),
            program,
            wire::KernelArg::default(),
            &laid_out,
            2,
            grid,
            block,
        );
        assert_eq!(
            stdout.trim(),
            "fences=0 timer_reads=0 canary=OK",
            "{program}"
        );
        for a in &after {
            assert_same_words(a, &laid_out, &format!("{program} with a null Arg"));
        }
    }
    // The same programs with their real argument do read timers (the count can fail).
    let e = emulated();
    assert!(!e.stdout.contains("timer_reads=0 "), "{}", e.stdout);
}

#[test]
fn every_lane_stores_its_calibrated_record_cost() {
    let words = &emulated().words;
    let h = ikp_device::Header::parse(words).unwrap();
    for l in 0..h.layout.lane_count() {
        let seg = &words[h.lane_range(l)];
        let clock =
            wire::unpack_ids(seg[lane::IDS as usize]).unwrap().flags & lane_flags::CLOCK != 0;
        let want = if clock {
            CALIB_CLOCK_LANE
        } else {
            CALIB_GLOBALTIMER_LANE
        };
        assert_eq!(
            seg[lane::CALIB as usize],
            want as u64,
            "lane {l} (clock: {clock})"
        );
    }
}

#[test]
fn ring_launches_equal_the_reference_encoder_word_for_word() {
    let (want, _) = ring_reference();
    let (got, _) = ring_emulated();
    assert_eq!(got.len(), RING_LAUNCHES as usize);
    for (launch, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_same_words(g, w, &format!("ring program after launch {launch}"));
    }
}

#[test]
fn a_launch_past_the_epochs_only_counts_itself() {
    let (got, stdout) = ring_emulated();
    assert!(stdout.contains("canary=OK"), "{stdout}");
    let h = ikp_device::Header::parse(&got[0]).unwrap();
    let lanes = h.layout.lane_count();
    let (third, fourth) = (&got[2], &got[3]);
    for l in 0..lanes {
        let c = h.launch_counter(l);
        assert_eq!(third[c], 3, "lane {l} after 3 launches");
        assert_eq!(fourth[c], 4, "lane {l} counts the 4th launch");
    }
    // Nothing else changed: the 4th launch wrote no segment.
    let changed: Vec<usize> = (0..third.len())
        .filter(|&i| third[i] != fourth[i])
        .collect();
    let counters: Vec<usize> = (0..lanes).map(|l| h.launch_counter(l)).collect();
    assert_eq!(changed, counters);
    // Each of the 3 launches wrote its own epoch: the first launch filled epoch 0 only.
    for l in 0..lanes {
        for e in 0..RING_EPOCHS {
            let ids = got[0][h.segment_range(e, l).start + lane::IDS as usize];
            assert_eq!(
                wire::unpack_ids(ids).is_some(),
                e == 0,
                "epoch {e} lane {l}"
            );
        }
    }
}

/// A lane's records in the order they were written, read from the raw ring: the oldest at
/// `(written + overwritten) % cap`.
fn ring_order(seg: &[u64]) -> (u32, u32, Vec<u64>) {
    let trailer = (lane::EVENTS + RING_CAP) as usize;
    let count = seg[trailer + lane::T_COUNT as usize];
    let (written, over) = (count as u32, (count >> wire::COUNT_DROPPED_SHIFT) as u32);
    let events = &seg[lane::EVENTS as usize..trailer];
    let oldest = if over > 0 {
        ((written + over) % RING_CAP) as usize
    } else {
        0
    };
    let records = (0..written as usize)
        .map(|i| events[(oldest + i) % RING_CAP as usize])
        .collect();
    (written, over, records)
}

#[test]
fn wrapped_rings_keep_the_newest_records_in_order() {
    let (got, _) = ring_emulated();
    let words = got.last().unwrap();
    let h = ikp_device::Header::parse(words).unwrap();
    assert_eq!(h.layout.overflow, wire::Overflow::Ring);
    let (_, lanes) = ring_reference();
    let mut wraps = Vec::new();
    for rl in lanes.iter().filter(|rl| rl.launch < RING_EPOCHS) {
        let attempted = rl.attempted.as_ref().expect("launch within the epochs");
        let seg = &words[h.segment_range(rl.launch, rl.lane)];
        let ids = wire::unpack_ids(seg[lane::IDS as usize]).unwrap();
        assert_ne!(ids.flags & lane_flags::RING, 0, "ring flag");
        let clock = ids.flags & lane_flags::CLOCK != 0;
        let want = if clock {
            CALIB_CLOCK_LANE
        } else {
            CALIB_GLOBALTIMER_LANE
        };
        assert_eq!(seg[lane::CALIB as usize], want as u64);
        let (written, over, records) = ring_order(seg);
        let n = attempted.len() as u32;
        assert_eq!(
            (written, over),
            (RING_CAP, n - RING_CAP),
            "lane {}",
            rl.lane
        );
        assert_eq!(
            records,
            attempted[(n - RING_CAP) as usize..],
            "lane {}",
            rl.lane
        );
        // The last record is the lane's closing instant.
        let last = wire::unpack_record(*records.last().unwrap());
        assert_eq!((last.kind, last.payload), (Kind::Instant, 0xABC));
        wraps.push(n / RING_CAP);
    }
    // Blocks run 5 + 3b + launch tiles of 3 or 4 records: 2 to 6 wraps.
    assert_eq!(
        (wraps.iter().min(), wraps.iter().max()),
        (Some(&2), Some(&6))
    );
}

#[test]
fn async_ranges_begin_in_the_producer_lane_and_end_in_the_consumer_lane() {
    let (got, _) = ring_emulated();
    let words = got.last().unwrap();
    let h = ikp_device::Header::parse(words).unwrap();
    assert!(h.layout.is_async(COPY));
    for e in 0..RING_EPOCHS {
        for b in 0..RING_GRID[0] {
            let copies = |g: u64, kind: Kind| -> Vec<u32> {
                let (_, _, records) = ring_order(&words[h.segment_range(e, 2 * b as u64 + g)]);
                records
                    .iter()
                    .map(|&w| wire::unpack_record(w))
                    .filter(|r| r.region == COPY && r.kind == kind)
                    .map(|r| r.payload)
                    .collect()
            };
            let (begins, ends) = (copies(0, Kind::Begin), copies(1, Kind::Begin));
            assert!(ends.is_empty(), "the consumer begins no copy");
            assert!(copies(0, Kind::End).is_empty(), "the producer ends no copy");
            let ends = copies(1, Kind::End);
            assert!(
                !begins.is_empty() && !ends.is_empty(),
                "epoch {e} block {b}"
            );
            // Tokens name their block and launch; the consumer's surviving ends are the
            // last tiles' tokens, which the producer began (its ring kept the last ones).
            for &t in begins.iter().chain(&ends) {
                assert_eq!((t >> 12, (t >> 8) & 0xF), (b, e), "token {t:#x}");
            }
            let last_tile = ring_tiles(b, e) - 1;
            assert_eq!(*begins.last().unwrap(), copy_token(b, e, last_tile));
            assert_eq!(*ends.last().unwrap(), copy_token(b, e, last_tile));
        }
    }
}

#[test]
fn the_init_switches_leave_out_the_calibration_and_the_epochs() {
    // IKP_CALIBRATE=0: every lane still runs, its CALIB word stays 0 ("not measured").
    let (_dir, exe) = compile_emulator(&["IKP_CALIBRATE=0"]);
    let (after, _) = emulate_with(&exe, "basic", layout(), 1, GRID, BLOCK);
    let words = &after[0];
    let h = ikp_device::Header::parse(words).unwrap();
    for l in 0..h.layout.lane_count() {
        let s = h.lane_range(l).start;
        assert!(wire::unpack_ids(words[s + lane::IDS as usize]).is_some());
        assert_eq!(words[s + lane::CALIB as usize], 0, "lane {l}");
    }
    // IKP_EPOCHS=0 into a buffer of several epochs: nothing written, nothing counted.
    let (_dir, exe) = compile_emulator(&["IKP_EPOCHS=0"]);
    let (after, stdout) = emulate_with(&exe, "ring", ring_layout(), 1, RING_GRID, RING_BLOCK);
    assert!(stdout.contains("canary=OK"), "{stdout}");
    let untouched = BufferWriter::new(ring_layout()).unwrap().into_words();
    assert_same_words(
        &after[0],
        &untouched,
        "IKP_EPOCHS=0 lane in a 3-epoch buffer",
    );
}

/// The other design of the off switch (`IKP_OFF_BRANCH=0`: every record predicated on the
/// leader, no branch on a warp vote) records what the default build records: every lane of
/// the basic and ring programs decodes to the same records and counts. Globaltimer lanes
/// match to the nanosecond; a clock lane's times differ only because the emulated SM clock
/// advances per read and the leader's warp reads it less often (only the leader reads, under
/// the store's predicate), which the timer-read count shows.
#[test]
fn the_predicated_build_records_what_the_default_build_records() {
    let (_dir, exe) = compile_emulator(&["IKP_OFF_BRANCH=0"]);
    let reads = |stdout: &str| -> u64 {
        let field = stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix("timer_reads="));
        field.expect("timer_reads=").parse().unwrap()
    };
    let untimed = |v: &LaneView| {
        let spans: Vec<_> = v.spans.iter().map(|s| (s.0, s.1)).collect();
        let instants: Vec<_> = v.instants.iter().map(|i| (i.0, i.1)).collect();
        let samples: Vec<_> = v.samples.iter().map(|s| (s.0, s.1)).collect();
        let ids = (v.smid, v.warp, v.flags, v.written, v.dropped);
        (ids, v.counters.clone(), spans, instants, samples)
    };
    let (after, stdout) = emulate_with(&exe, "basic", layout(), 1, GRID, BLOCK);
    assert!(stdout.trim().ends_with("canary=OK"), "{stdout}");
    let (got, want) = (decode(&after[0]), decode(&emulated().words));
    assert_eq!(got.len(), want.len());
    let mut global = 0;
    for (l, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(untimed(g), untimed(w), "lane {l}");
        if w.flags & lane_flags::CLOCK == 0 {
            assert_eq!(g, w, "globaltimer lane {l}");
            global += 1;
        }
    }
    assert!(
        global > 0 && global < want.len(),
        "both timers in the program"
    );
    let (default, predicated) = (reads(&emulated().stdout), reads(&stdout));
    assert!(
        predicated < default,
        "{predicated} timer reads, default {default}"
    );
    // The ring program: the same words in every launch (its lanes read the globaltimer).
    let (after, _) = emulate_with(
        &exe,
        "ring",
        ring_layout(),
        RING_LAUNCHES,
        RING_GRID,
        RING_BLOCK,
    );
    for (i, (g, w)) in after.iter().zip(&ring_emulated().0).enumerate() {
        assert_same_words(g, w, &format!("predicated ring program, launch {i}"));
    }
}

/// The emulated ring buffer through ikp's own decoder, end to end: one trace per recorded
/// launch (three: the fourth launch found the epochs used up), every ring restored to the
/// order the lane wrote, and the copies paired across lanes as async ranges: each range
/// begins in a block's producer and ends in its consumer with the same token, and what
/// the rings overwrote leaves begins or ends unmatched, never a range.
#[test]
fn the_decoder_reads_the_emulated_ring_buffer() {
    let (got, _) = ring_emulated();
    let words = got.last().unwrap();
    let h = ikp_device::Header::parse(words).unwrap();
    let launches = ikp_host::decode_launches(words, &Default::default()).unwrap();
    assert_eq!(launches.len(), RING_EPOCHS as usize);
    for (e, t) in launches.iter().enumerate() {
        let e32 = e as u32;
        assert_eq!(t.lanes.len(), 2 * RING_GRID[0] as usize, "epoch {e}");
        let a = &t.async_ranges;
        let d = &t.diagnostics;
        let mut surviving = 0;
        for l in &t.lanes {
            let (written, over, records) = ring_order(&words[h.segment_range(e32, l.id as u64)]);
            assert!(over > 0, "epoch {e} lane {}: the ring wrapped", l.id);
            assert_eq!((l.written, l.overwritten), (written as u64, over as u64));
            surviving += (records.iter().map(|&w| wire::unpack_record(w)))
                .filter(|r| r.region == COPY && matches!(r.kind, Kind::Begin | Kind::End))
                .count();
            // The last record the lane wrote is its last instant, decoded last.
            let last = t.instants.region[l.instants.clone()].last().copied();
            assert_eq!(last, Some(TILE as u16), "epoch {e} lane {}", l.id);
        }
        let unmatched = d.async_unmatched_begin.len() + d.async_unmatched_end.len();
        assert_eq!(2 * a.len() + unmatched, surviving, "epoch {e}");
        // Both rings keep the last tiles: the copies the consumer still holds are the ones
        // whose begins the producer still holds (two per block), so all of them pair.
        assert_eq!(
            (a.len(), unmatched),
            (2 * RING_GRID[0] as usize, 0),
            "epoch {e}"
        );
        let lane = |id: u32| &t.lanes[t.lanes.iter().position(|l| l.id == id).unwrap()];
        for k in 0..a.len() {
            let (from, to) = (lane(a.begin_lane[k]), lane(a.end_lane[k]));
            assert_eq!((from.group, to.group), (0, 1), "epoch {e} range {k}");
            assert_eq!(from.block, to.block, "epoch {e} range {k}");
            let token = a.token[k];
            assert_eq!((token >> 12, (token >> 8) & 0xF), (from.block, e32));
            assert!(a.end[k] >= a.begin[k]);
        }
        // A copy is not a span of its lane: no span of the async region.
        assert!(t.spans.region.iter().all(|&r| r != COPY as u16));
    }
}
