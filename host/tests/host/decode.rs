//! Decoder behaviour on hand-built buffers of both formats: pairing, unwrapping, clock
//! conversion, diagnostics, and a clear error (never a panic) for every kind of bad input.
use ikp_device::encoder::BufferWriter;
use ikp_device::tvm::pack;
use ikp_device::wire::{self, lane_flags};
use ikp_device::{Layout, TimerMode};
use ikp_host::decode::{
    self, decode, DecodeError, DecodeOptions, FormatChoice, NoCalibration, OWN_RATIO_MIN_NS,
};
use ikp_host::RawBuffer;
use ikp_host::{Trace, WireFormat};

fn layout(blocks: u32, groups: u32, cap: u32, timer: TimerMode) -> Layout {
    Layout {
        grid: [blocks, 1, 1],
        groups_per_block: groups,
        records_per_lane: cap,
        timer,
        regions: vec!["outer".into(), "inner".into(), "mark".into()],
        counters: vec!["spin".into()],
        ..Layout::default()
    }
}

fn dec(words: &[u64]) -> Trace {
    decode(words, &DecodeOptions::default()).unwrap()
}

/// `(region, depth, payload, begin, end)` of every span of lane position `p`.
fn spans(t: &Trace, p: usize) -> Vec<(u16, u16, u32, u64, u64)> {
    let s = &t.spans;
    t.lanes[p]
        .spans
        .clone()
        .map(|i| (s.region[i], s.depth[i], s.payload[i], s.begin[i], s.end[i]))
        .collect()
}

#[test]
fn nested_and_repeated_regions_pair_by_stack() {
    let mut b = BufferWriter::new(layout(2, 1, 16, TimerMode::Globaltimer)).unwrap();
    b.lane(1)
        .init(7, 3, 0, 1000, 0)
        .begin(0, 1, 1010)
        .begin(0, 2, 1020) // same region nested in itself
        .begin(1, 3, 1030)
        .end(1, 0, 1040)
        .end(0, 0, 1050)
        .begin(1, 4, 1060)
        .end(1, 0, 1070)
        .end(0, 0, 1080)
        .instant(2, 9, 1090)
        .finalize(1100, 0);
    let t = dec(&b.into_words());
    assert_eq!(t.lanes.len(), 1, "lane 0 never ran init and is not listed");
    let l = &t.lanes[0];
    assert_eq!((l.id, l.block, l.sm, l.warp), (1, 1, Some(7), Some(3)));
    assert_eq!(
        (l.start, l.end, l.finalized, l.written),
        (1000, 1100, true, 9)
    );
    assert_eq!(
        spans(&t, 0),
        [
            (0, 0, 1, 1010, 1080),
            (0, 1, 2, 1020, 1050),
            (1, 2, 3, 1030, 1040),
            (1, 1, 4, 1060, 1070),
        ]
    );
    assert_eq!(t.instants.ts, [1090]);
    assert_eq!(t.instants.payload, [9]);
    assert!(t.diagnostics.unmatched_begin.is_empty() && t.diagnostics.unmatched_end.is_empty());
    assert_eq!(t.source.time_base, 1000);
}

#[test]
fn unmatched_records_are_counted_with_their_regions() {
    let mut b = BufferWriter::new(layout(1, 1, 16, TimerMode::Globaltimer)).unwrap();
    b.lane(0)
        .init(0, 0, 0, 100, 0)
        .end(1, 0, 105) // end without begin
        .begin(0, 0, 110)
        .begin(1, 5, 120) // outlives the region it began in and never ends: unmatched
        .end(0, 0, 130)
        .begin(2, 0, 140) // never closed
        .finalize(200, 0);
    let t = dec(&b.into_words());
    let d = &t.diagnostics;
    assert_eq!(spans(&t, 0), [(0, 0, 0, 110, 130)]);
    assert_eq!(d.unmatched_end.len(), 1);
    assert_eq!((d.unmatched_end[0].region, d.unmatched_end[0].ts), (1, 105));
    let ub: Vec<(u16, u64)> = d.unmatched_begin.iter().map(|u| (u.region, u.ts)).collect();
    assert_eq!(ub, [(1, 120), (2, 140)]);
}

/// Lane 0 of a one-lane buffer holding `prog` (`(begin?, region, time)`), in the native
/// format (each begin's payload is its index in `prog`) and in the TVM format.
fn one_lane_both_formats(prog: &[(bool, u32, u32)]) -> [Trace; 2] {
    let mut b = BufferWriter::new(layout(1, 1, 64, TimerMode::Globaltimer)).unwrap();
    let mut l = b.lane(0);
    l.init(0, 0, 0, 5, 0);
    let mut tvm_lane = Vec::new();
    for (k, &(begin, region, t)) in prog.iter().enumerate() {
        if begin {
            l.begin(region, k as u32, t as u64);
        } else {
            l.end(region, 0, t as u64);
        }
        tvm_lane.push(pack(t, 0, region, u32::from(!begin)));
    }
    l.finalize(1000, 0);
    tvm_lane.push(pack(1000, 0, 0, 3));
    [dec(&b.into_words()), dec(&tvm(1, 1, &[tvm_lane]))]
}

#[test]
fn an_end_closes_the_innermost_open_region_of_its_id_and_overlapping_regions_stay_open() {
    // Each case: the program, then the spans as `(region, depth, begin, end)`, the
    // unmatched begins and the unmatched ends as `(region, time)`.
    type Case = (
        Vec<(bool, u32, u32)>,
        Vec<(u16, u16, u64, u64)>,
        Vec<(u16, u64)>,
        Vec<(u16, u64)>,
    );
    let (b, e) = (true, false);
    let cases: Vec<Case> = vec![
        // Begin A, begin B, end A, end B: both pair; a later begin is at depth 0 again.
        (
            vec![
                (b, 1, 10),
                (b, 2, 20),
                (e, 1, 30),
                (e, 2, 40),
                (b, 3, 50),
                (e, 3, 60),
            ],
            vec![(1, 0, 10, 30), (2, 1, 20, 40), (3, 0, 50, 60)],
            vec![],
            vec![],
        ),
        // A B C, ended A C B.
        (
            vec![
                (b, 1, 10),
                (b, 2, 20),
                (b, 3, 30),
                (e, 1, 40),
                (e, 3, 50),
                (e, 2, 60),
                (b, 4, 70),
                (e, 4, 80),
            ],
            vec![
                (1, 0, 10, 40),
                (2, 1, 20, 60),
                (3, 2, 30, 50),
                (4, 0, 70, 80),
            ],
            vec![],
            vec![],
        ),
        // A region begun inside B after B's parent A ended is one level below B.
        (
            vec![
                (b, 1, 10),
                (b, 2, 20),
                (e, 1, 30),
                (b, 3, 40),
                (e, 3, 50),
                (e, 2, 60),
                (b, 4, 70),
                (e, 4, 80),
            ],
            vec![
                (1, 0, 10, 30),
                (2, 1, 20, 60),
                (3, 2, 40, 50),
                (4, 0, 70, 80),
            ],
            vec![],
            vec![],
        ),
        // A repeat of A inside A pairs innermost first, also under another open region.
        (
            vec![
                (b, 1, 10),
                (b, 1, 20),
                (b, 2, 30),
                (e, 1, 40),
                (e, 1, 50),
                (e, 2, 60),
                (b, 3, 70),
                (e, 3, 80),
            ],
            vec![
                (1, 0, 10, 50),
                (1, 1, 20, 40),
                (2, 2, 30, 60),
                (3, 0, 70, 80),
            ],
            vec![],
            vec![],
        ),
        // An end of an id never begun, while others are open (one of them overlapping
        // the region it began in), pairs with nothing and changes nothing.
        (
            vec![
                (b, 1, 10),
                (b, 2, 20),
                (e, 5, 25),
                (e, 1, 30),
                (e, 5, 40),
                (e, 2, 50),
            ],
            vec![(1, 0, 10, 30), (2, 1, 20, 50)],
            vec![],
            vec![(5, 25), (5, 40)],
        ),
        // A region left open after the one it began in ended is unmatched at the lane's
        // end; regions begun inside it pair.
        (
            vec![(b, 1, 10), (b, 2, 20), (e, 1, 30), (b, 3, 40), (e, 3, 50)],
            vec![(1, 0, 10, 30), (3, 2, 40, 50)],
            vec![(2, 20)],
            vec![],
        ),
    ];
    for (prog, want, want_ub, want_ue) in cases {
        let [native, tvm] = one_lane_both_formats(&prog);
        for t in [&native, &tvm] {
            let got: Vec<_> = spans(t, 0)
                .into_iter()
                .map(|(r, d, _, b, e)| (r, d, b, e))
                .collect();
            assert_eq!(got, want, "{:?}: {prog:?}", t.source.format);
            let d = &t.diagnostics;
            let ub: Vec<_> = d.unmatched_begin.iter().map(|u| (u.region, u.ts)).collect();
            let ue: Vec<_> = d.unmatched_end.iter().map(|u| (u.region, u.ts)).collect();
            assert_eq!((ub, ue), (want_ub.clone(), want_ue.clone()), "{prog:?}");
        }
        // A span's payload is its begin's (native format).
        for (k, &(r, _, at, _)) in want.iter().enumerate() {
            let i = prog
                .iter()
                .position(|&(x, y, t)| x && y == r as u32 && t as u64 == at);
            assert_eq!(native.spans.payload[k], i.unwrap() as u32);
        }
    }
}

#[test]
fn region_straddling_the_32_bit_wrap_keeps_its_true_duration() {
    let start = (7u64 << 32) - 100; // globaltimer_lo wraps 100 ns after init
    let mut b = BufferWriter::new(layout(1, 1, 8, TimerMode::Globaltimer)).unwrap();
    b.lane(0)
        .init(0, 0, 0, start, 0)
        .begin(0, 0, start + 50)
        .end(0, 0, start + 5_000_000_000) // 5 s later: more than one wrap of the start lo
        .finalize(start + 5_000_000_100, 0);
    // Records are less than 2^31 ns apart except this one: 5e9 > 2^32.
    let t = dec(&b.into_words());
    let (_, _, _, b0, e0) = spans(&t, 0)[0];
    assert_eq!(b0, start + 50);
    // 5e9 - 50 ns is more than 2^32: unwrapping sees only the low 32 bits, so it decodes
    // modulo 2^32 (705 ms, under 2^31), as documented (consecutive records must be
    // < 2^31 ticks apart).
    assert_eq!(e0 - b0, (5_000_000_000 - 50) % (1 << 32));
    assert_eq!(t.diagnostics.backward_steps, 0);

    // The largest step forward, 2^31 - 1 ticks, crossing the wrap; one tick more is read
    // as a step back of 2^31 ticks, which is clamped.
    for (step, back) in [((1u64 << 31) - 1, 0), (1 << 31, 1)] {
        let mut b = BufferWriter::new(layout(1, 1, 8, TimerMode::Globaltimer)).unwrap();
        b.lane(0)
            .init(0, 0, 0, start, 0)
            .begin(0, 0, start + 50)
            .end(0, 0, start + 50 + step)
            .finalize(start + 100 + step, 0);
        let t = dec(&b.into_words());
        let want_end = if back == 0 {
            start + 50 + step
        } else {
            start + 50
        };
        assert_eq!(
            spans(&t, 0),
            [(0, 0, 0, start + 50, want_end)],
            "step {step}"
        );
        assert_eq!(t.diagnostics.backward_steps, back, "step {step}");
    }
}

/// Times of every span begin / end and instant of lane position `p`, in record order.
fn times(t: &Trace, p: usize) -> Vec<u64> {
    let l = &t.lanes[p];
    let mut v: Vec<(u64, u64)> = l
        .spans
        .clone()
        .flat_map(|i| [(t.spans.begin[i], 0), (t.spans.end[i], 1)])
        .chain(l.instants.clone().map(|i| (t.instants.ts[i], 2)))
        .collect();
    v.sort();
    v.into_iter().map(|x| x.0).collect()
}

#[test]
fn a_timer_stepping_back_mid_lane_is_clamped_and_counted_in_both_timer_modes() {
    for clock in [false, true] {
        let (timer, flags) = if clock {
            (TimerMode::Clock, lane_flags::CLOCK)
        } else {
            (TimerMode::Globaltimer, 0)
        };
        let mut b = BufferWriter::new(layout(1, 2, 16, timer)).unwrap();
        // Stamps in ticks (ns, or cycles at 1 ns per cycle); the start pair anchors both.
        let s = 1_000_000u64;
        b.lane(0)
            .init(0, 0, flags, s, s)
            .begin(0, 0, s + 100)
            .instant(2, 1, s + 95) // the timer stepped back 5 ticks...
            .end(0, 0, s + 98) // ...and is still behind the begin
            .begin(1, 0, s + 120) // past it again
            .end(1, 0, s + 130)
            .finalize(s + 200, s + 200);
        // Lane 1's first record is 3 ticks before its start stamp.
        b.lane(1)
            .init(1, 0, flags, s, s)
            .begin(0, 0, s - 3)
            .end(0, 0, s + 40)
            .finalize(s + 50, s + 50);
        let t = dec(&b.into_words());
        assert_eq!(t.diagnostics.backward_steps, 3, "clock {clock}");
        // The instant and the end take the latest time; nothing jumps 4.29 s ahead.
        assert_eq!(
            spans(&t, 0),
            [(0, 0, 0, s + 100, s + 100), (1, 0, 0, s + 120, s + 130)]
        );
        assert_eq!(t.instants.ts, [s + 100]);
        assert_eq!(spans(&t, 1), [(0, 0, 0, s, s + 40)]);
        for p in 0..2 {
            let v = times(&t, p);
            assert!(v.windows(2).all(|w| w[0] <= w[1]), "{v:?}");
            assert!(v[0] >= t.lanes[p].start && *v.last().unwrap() <= t.lanes[p].end);
        }
    }
}

#[test]
fn an_end_globaltimer_before_the_start_is_clamped_and_counted() {
    let mut b = BufferWriter::new(layout(1, 2, 8, TimerMode::Globaltimer)).unwrap();
    b.lane(0)
        .init(0, 0, 0, 5_000, 0)
        .begin(0, 0, 5_010)
        .end(0, 0, 5_020)
        .finalize(4_000, 0);
    b.lane(1).init(1, 0, 0, 5_000, 0).finalize(6_000, 0);
    let t = dec(&b.into_words());
    assert_eq!(t.diagnostics.backward_steps, 1);
    assert_eq!((t.lanes[0].start, t.lanes[0].end), (5_000, 5_000));
    assert!(t.lanes[0].finalized);
    assert_eq!(spans(&t, 0), [(0, 0, 0, 5_010, 5_020)]);
    assert_eq!(t.lanes[1].end, 6_000);

    // Clock mode: the lane converts with the pooled ratio of the others (here lane 1's,
    // 2 cycles per ns) and is not in the pool.
    let mut b = BufferWriter::new(layout(1, 2, 8, TimerMode::Clock)).unwrap();
    b.lane(0)
        .init(0, 0, lane_flags::CLOCK, 5_000, 100)
        .begin(0, 0, 300)
        .end(0, 0, 700)
        .finalize(4_000, 1_000);
    b.lane(1)
        .init(1, 0, lane_flags::CLOCK, 5_000, 100)
        .finalize(6_000, 2_100);
    let t = dec(&b.into_words());
    assert_eq!(t.diagnostics.backward_steps, 1);
    assert_eq!(spans(&t, 0), [(0, 0, 0, 5_100, 5_300)]);
    let c = t.source.clock.unwrap();
    assert_eq!(
        (c.pooled_ns, c.pooled_cycles, c.pool_lanes),
        (1_000, 2_000, 1)
    );
}

#[test]
fn clock_lanes_shorter_than_a_globaltimer_tick_take_the_pooled_ratio() {
    // A GPU whose %globaltimer ticks every 1 us. Lanes 0 and 1 run 2 ms each (at 1.5 and
    // 1.4 GHz); lanes 2..6 run 600 to 900 ns each at 1.5 GHz, so their start and end
    // globaltimers are the same tick or neighbours: on their own ratio their spans would
    // last 0 ns (or far too long).
    let tick = |ns: u64| ns / 1000 * 1000;
    let mut b = BufferWriter::new(layout(2, 4, 8, TimerMode::Clock)).unwrap();
    let f = lane_flags::CLOCK;
    let gt0 = 1_000_000_000u64;
    let mut want_ns = 0;
    let mut want_cycles = 0;
    for (lane, cycles_per_us) in [(0u64, 1500u64), (1, 1400)] {
        let (g, c) = (gt0 + 7_000 * lane, 50_000 + 10_000_000 * lane);
        b.lane(lane)
            .init(lane as u32, 0, f, g, c)
            .begin(0, 0, c + 1_500)
            .end(0, 0, c + 1_501_500)
            .finalize(g + 2_000_000, c + 2_000 * cycles_per_us);
        (want_ns, want_cycles) = (want_ns + 2_000_000, want_cycles + 2_000 * cycles_per_us);
    }
    for lane in 2..7u64 {
        let true_ns = 600 + 75 * (lane - 2); // 600..900 ns
        let g = gt0 + 100_000 * lane + 350 * lane; // unaligned to the tick
        let c = 90_000_000 + 1_000_000 * lane;
        let cycles = true_ns * 3 / 2;
        b.lane(lane)
            .init(lane as u32, 0, f, tick(g), c)
            .begin(1, 0, c + 30)
            .end(1, 0, c + cycles - 30)
            .finalize(tick(g + true_ns), c + cycles);
        want_ns += tick(g + true_ns) - tick(g);
        want_cycles += cycles;
    }
    let t = dec(&b.into_words());
    let c = t.source.clock.expect("clock mode records its calibration");
    assert_eq!(
        (c.pooled_ns, c.pooled_cycles, c.pool_lanes),
        (want_ns, want_cycles, 7)
    );
    assert_eq!((c.own_ratio_lanes, c.pooled_ratio_lanes), (2, 5));
    assert!((c.pooled_mhz() - 1450.0).abs() < 10.0, "{}", c.pooled_mhz());
    // Lanes 0 and 1 (2 ms >= OWN_RATIO_MIN_NS) keep their own rates: 1.5e6 cycles are
    // 1 ms at 1.5 GHz, 1.0714 ms at 1.4 GHz.
    const { assert!(2_000_000 >= OWN_RATIO_MIN_NS) };
    let dur = |p: usize| {
        let (_, _, _, b, e) = spans(&t, p)[0];
        e - b
    };
    // (Lane 1's ends: 1_501_500 and 1_500 cycles x 2_000_000 / 2_800_000, rounded down.)
    assert_eq!((dur(0), dur(1)), (1_000_000, 1_072_500 - 1_071));
    // The short lanes: cycles x pooled ratio, within rounding; never 0.
    for p in 2..7 {
        let cycles = (600 + 75 * (p as u64 - 2)) * 3 / 2 - 60;
        let want = cycles as f64 * c.pooled_ns as f64 / c.pooled_cycles as f64;
        let got = dur(p) as f64;
        assert!((got - want).abs() <= 1.0, "lane {p}: {got} ns, want {want}");
        assert!(got > 0.0);
    }
}

#[test]
fn a_clock_buffer_whose_lanes_all_end_within_one_tick_is_refused_with_the_reason() {
    let mut b = BufferWriter::new(layout(1, 2, 8, TimerMode::Clock)).unwrap();
    for lane in 0..2u64 {
        b.lane(lane)
            .init(0, 0, lane_flags::CLOCK, 7_000, 100)
            .begin(0, 0, 200)
            .end(0, 0, 900)
            .finalize(7_000, 1_000);
    }
    let e = decode(&b.into_words(), &DecodeOptions::default()).unwrap_err();
    assert!(
        matches!(
            e,
            DecodeError::NoClockCalibration(NoCalibration::WithinOneTick {
                lanes: 2,
                cycles: 1_800
            })
        ),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(msg.contains("within one %globaltimer tick"), "{msg}");
    assert!(msg.contains("never assumes a clock frequency"), "{msg}");
}

#[test]
fn clock_mode_converts_cycles_with_the_lanes_own_calibration() {
    let mut b = BufferWriter::new(layout(1, 2, 8, TimerMode::Clock)).unwrap();
    // Lane 0: 2 cycles per ns; starts near the 32-bit cycle wrap.
    let c0 = (1u64 << 32) - 1000;
    b.lane(0)
        .init(0, 0, lane_flags::CLOCK, 10_000, c0)
        .begin(0, 0, c0 + 2000)
        .end(0, 0, c0 + 6000)
        .finalize(20_000, c0 + 20_000);
    // Lane 1 never finalized: borrows lane 0's calibration.
    b.lane(1)
        .init(1, 1, lane_flags::CLOCK, 10_000, 500)
        .begin(0, 0, 500 + 400)
        .end(0, 0, 500 + 1000);
    let t = dec(&b.into_words());
    assert_eq!(spans(&t, 0), [(0, 0, 0, 11_000, 13_000)]);
    assert_eq!(spans(&t, 1), [(0, 0, 0, 10_200, 10_500)]);
    assert_eq!(t.diagnostics.unfinalized_lanes, 1);
    assert_eq!(t.lanes[1].end, 10_500);

    // No finalized lane at all: refused, never guessed.
    let mut b = BufferWriter::new(layout(1, 1, 8, TimerMode::Clock)).unwrap();
    b.lane(0)
        .init(0, 0, lane_flags::CLOCK, 10_000, 500)
        .begin(0, 0, 600);
    let e = decode(&b.into_words(), &DecodeOptions::default()).unwrap_err();
    assert!(
        matches!(e, DecodeError::NoClockCalibration(NoCalibration::NoPair)),
        "{e}"
    );
}

#[test]
fn counter_samples_take_the_previous_records_time_and_totals_are_kept() {
    let mut b = BufferWriter::new(layout(1, 1, 8, TimerMode::Globaltimer)).unwrap();
    b.lane(0)
        .init(0, 0, 0, 500, 0)
        .counter_sample(0, 3) // no record before: lane start
        .begin(0, 0, 520)
        .counter_sample(0, 11)
        .counter_add(0, 14)
        .end(0, 0, 600)
        .finalize(700, 0);
    let t = dec(&b.into_words());
    assert_eq!(t.samples.ts, [500, 520]);
    assert_eq!(t.samples.value, [3, 11]);
    assert_eq!(t.lane_counters(0), [14]);
}

#[test]
fn drops_after_finalize_and_unknown_meta_are_reported() {
    let mut b = BufferWriter::new(layout(1, 2, 4, TimerMode::Globaltimer)).unwrap();
    {
        let mut l = b.lane(0);
        l.init(0, 0, 0, 100, 0);
        for i in 0..3 {
            l.begin(0, i, 110 + 2 * i as u64)
                .end(0, i, 111 + 2 * i as u64);
        }
        l.finalize(200, 0);
    }
    b.lane(1)
        .init(0, 1, 0, 100, 0)
        .record(wire::Kind::Meta, 7, 0, 0) // unknown meta kind
        .finalize(150, 0)
        .begin(0, 0, 160); // after finalize
    let t = dec(&b.into_words());
    assert_eq!((t.lanes[0].written, t.lanes[0].dropped), (4, 2));
    assert_eq!(t.dropped(), 2);
    assert_eq!(spans(&t, 0).len(), 2);
    assert_eq!(t.diagnostics.unmatched_begin.len(), 0);
    assert_eq!(t.diagnostics.unknown_records, 1);
    assert_eq!(t.diagnostics.after_finalize, 1);
}

fn tvm(blocks: u32, groups: u32, lanes: &[Vec<u64>]) -> Vec<u64> {
    let stride = (blocks * groups) as usize;
    let rows = lanes.iter().map(Vec::len).max().unwrap_or(0);
    let mut w = vec![0u64; 1 + stride * rows.max(1)];
    w[0] = (groups as u64) << 32 | blocks as u64;
    for (l, recs) in lanes.iter().enumerate() {
        for (k, &r) in recs.iter().enumerate() {
            w[1 + l + k * stride] = r;
        }
    }
    w
}

#[test]
fn tvm_format_pairs_nested_regions_and_unwraps_with_a_shared_base() {
    // Lane 0 starts before the wrap, lane 1 after it; lane 0's region straddles the wrap.
    let near = u32::MAX - 99;
    let lanes = vec![
        vec![
            pack(near, 0, 0, 0),
            pack(near.wrapping_add(50), 0, 1, 0),
            pack(near.wrapping_add(150), 0, 1, 1), // crosses the wrap
            pack(near.wrapping_add(200), 0, 0, 1),
            pack(near.wrapping_add(210), 0, 4, 2),
            pack(near.wrapping_add(220), 0, 0, 3),
            pack(near.wrapping_add(230), 0, 0, 0), // after finalize
        ],
        vec![pack(20, 1, 2, 0), pack(60, 1, 2, 1), pack(70, 1, 5, 1)],
    ];
    let words = tvm(1, 2, &lanes);
    let t = dec(&words);
    assert_eq!(t.source.format, WireFormat::Tvm);
    assert_eq!((t.source.grid, t.source.groups_per_block), ([1, 1, 1], 2));
    let b = near as u64;
    assert_eq!(t.source.time_base, b);
    assert_eq!(
        spans(&t, 0),
        [(0, 0, 0, b, b + 200), (1, 1, 0, b + 50, b + 150)]
    );
    // Lane 1 is 120 ns after the base (20 + 100 past the wrap), not 4 s before it.
    assert_eq!(spans(&t, 1), [(2, 0, 0, b + 120, b + 160)]);
    let l = &t.lanes[0];
    assert_eq!(
        (l.finalized, l.end, l.sm, l.warp),
        (true, b + 220, None, None)
    );
    assert_eq!((t.lanes[1].block, t.lanes[1].group), (0, 1));
    assert!(!t.lanes[1].finalized);
    assert_eq!(t.diagnostics.after_finalize, 1);
    assert_eq!(t.diagnostics.unfinalized_lanes, 1);
    assert_eq!(t.diagnostics.unmatched_end.len(), 1);
    assert_eq!(t.instants.ts, [b + 210]);
}

#[test]
fn tvm_lanes_far_from_the_shared_base_unwrap_forward_and_steps_back_are_clamped() {
    // First stamps 1, 1.1e9 + 1, 2.2e9 + 1 and 3.3e9 + 1 ns: the largest gap (the first
    // of three equal ones) is from the first to the second, so the base is 1.1e9 + 1 and
    // lane 0 starts 3.19e9 ns after it, more than 2^31.
    let g = 1_100_000_000u32;
    let first = |l: u32| g * l + 1;
    let lanes: Vec<Vec<u64>> = (0..4u32)
        .map(|l| {
            let at = |d: u32| first(l) + d;
            vec![
                pack(at(0), l, 0, 0),
                pack(at(100), l, 1, 2),
                pack(at(96), l, 1, 2), // stepped back 4 ns: clamped
                pack(at(200), l, 0, 1),
                pack(at(300), l, 0, 3),
            ]
        })
        .collect();
    let words = tvm(1, 4, &lanes);
    for single_threaded in [true, false] {
        let opts = DecodeOptions {
            single_threaded,
            ..Default::default()
        };
        let t = decode(&words, &opts).unwrap();
        assert_eq!(t.diagnostics.backward_steps, 4);
        let base = first(1) as u64;
        let start = |l: u32| base + first(l).wrapping_sub(first(1)) as u64;
        assert_eq!(start(0) - base, (1u64 << 32) - g as u64);
        assert_eq!(t.source.time_base, base);
        for l in 0..4 {
            let s = start(l as u32);
            let lane = &t.lanes[l];
            assert_eq!((lane.start, lane.end), (s, s + 300), "lane {l}");
            assert_eq!(spans(&t, l), [(0, 0, 0, s, s + 200)]);
            let i = lane.instants.clone();
            assert_eq!(t.instants.ts[i], [s + 100; 2]);
        }
    }
}

#[test]
fn tvm_long_lanes_pair_across_empty_slots_and_count_every_record_after_finalize() {
    // 1,100 records per lane and 300 empty rows below them. Lane 0 finalizes early, lane
    // 1 late, lane 2 never; lane 1 holds a span that straddles row 512 (where an earlier
    // decoder cut its tiles) and lane 2 one with a hole inside.
    let (rows, lanes_n) = (1100u32, 3u32);
    let mut lanes: Vec<Vec<u64>> = (0..lanes_n)
        .map(|l| {
            (0..rows)
                .map(|k| pack(1000 + 10 * k, l, 1 + k % 2, 2)) // instants
                .collect()
        })
        .collect();
    lanes[0][10] = pack(1100, 0, 0, 3);
    lanes[1][505] = pack(6050, 1, 7, 0);
    lanes[1][515] = pack(6150, 1, 7, 1);
    lanes[1][700] = pack(8000, 1, 0, 3);
    lanes[2][600] = pack(7000, 2, 8, 0);
    lanes[2][604] = pack(7040, 2, 8, 1);
    let mut words = tvm(1, lanes_n, &lanes);
    words.resize(words.len() + 300 * lanes_n as usize, 0);
    // A hole between lane 2's begin and end.
    words[1 + 2 + 602 * lanes_n as usize] = 0;
    for single_threaded in [true, false] {
        let opts = DecodeOptions {
            single_threaded,
            ..Default::default()
        };
        let t = decode(&words, &opts).unwrap();
        let d = &t.diagnostics;
        assert_eq!(d.after_finalize, (1099 - 10) + (1099 - 700));
        assert_eq!(d.unfinalized_lanes, 1);
        let b = t.source.time_base;
        assert_eq!(spans(&t, 1), [(7, 0, 0, 6050 - 1000 + b, 6150 - 1000 + b)]);
        assert_eq!(spans(&t, 2), [(8, 0, 0, 7000 - 1000 + b, 7040 - 1000 + b)]);
        let inst = |p: usize| t.lanes[p].instants.len();
        assert_eq!((inst(0), inst(1), inst(2)), (10, 698, 1097));
        // Into a used trace (on one thread, the decode that does not count first).
        let mut used = t.clone();
        decode::decode_into(&words, &opts, &mut used).unwrap();
        assert_eq!(used, t);
    }
}

#[test]
fn names_file_names_tvm_regions() {
    // One lane without a finalize: it would fit the FlashInfer and Mirage formats too.
    let words = tvm(1, 1, &[vec![pack(5, 0, 1, 0), pack(9, 0, 1, 1)]]);
    let opts = DecodeOptions {
        names: Some(ikp_host::Names {
            regions: decode::names::parse("load\ncompute\n").unwrap(),
            counters: vec![],
        }),
        format: FormatChoice::Tvm,
        ..Default::default()
    };
    let t = decode(&words, &opts).unwrap();
    assert_eq!(t.names.region(1), "compute");
    assert_eq!(t.names.region(3), "region_3");
}

#[test]
fn parallel_decode_equals_single_threaded_decode() {
    let one = DecodeOptions {
        single_threaded: true,
        ..Default::default()
    };
    let words = ikp_device::sample::attention_tvm(400, 200);
    assert!(
        words.len() > 1 << 20,
        "large enough to be split into chunks"
    );
    let a = decode(&words, &one).unwrap();
    let b = decode(&words, &DecodeOptions::default()).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.lanes.len(), 1200);
    assert!(a.diagnostics.unmatched_begin.is_empty() && a.diagnostics.unmatched_end.is_empty());
    let native = ikp_device::sample::attention().unwrap().into_words();
    assert_eq!(decode(&native, &one).unwrap(), dec(&native));
}

#[test]
fn decoding_into_a_used_trace_equals_a_fresh_decode() {
    // Unmatched begins (holes) and a begin after finalize (a gap), in both formats.
    let near = u32::MAX - 99;
    let tvm_odd = tvm(
        1,
        2,
        &[
            vec![
                pack(near, 0, 0, 0),
                pack(near.wrapping_add(50), 0, 1, 0),
                pack(near.wrapping_add(150), 0, 0, 1), // leaves region 1 open
                pack(near.wrapping_add(220), 0, 0, 3),
                pack(near.wrapping_add(230), 0, 0, 0), // after finalize
            ],
            vec![pack(20, 1, 2, 0), pack(60, 1, 2, 1), pack(70, 1, 5, 1)],
        ],
    );
    let mut b = BufferWriter::new(layout(1, 1, 16, TimerMode::Globaltimer)).unwrap();
    b.lane(0)
        .init(0, 0, 0, 100, 0)
        .end(1, 0, 105)
        .begin(0, 0, 110)
        .begin(1, 5, 120)
        .end(0, 0, 130)
        .begin(2, 0, 140)
        .finalize(200, 0);
    let native_odd = b.into_words();
    // Payloads everywhere, so that rows reused by a TVM decode hold stale non-zero ones.
    let mut b = BufferWriter::new(layout(1, 1, 64, TimerMode::Globaltimer)).unwrap();
    let mut l = b.lane(0);
    l.init(0, 0, 0, 100, 0);
    for i in 0..16u64 {
        l.begin(3, 7, 110 + 4 * i)
            .instant(4, 7, 111 + 4 * i)
            .end(3, 7, 112 + 4 * i);
    }
    l.finalize(200, 0);
    let payloads = b.into_words();
    let big_native = ikp_device::sample::attention().unwrap().into_words();
    let big_tvm = ikp_device::sample::attention_tvm(16, 12);
    let (n, t) = (dec(&big_native), dec(&big_tvm));
    assert!(
        t.spans.len() < n.spans.len() && t.instants.len() < n.instants.len(),
        "decoded after the native sample, the TVM buffer reuses its columns"
    );
    for opts in [
        DecodeOptions {
            single_threaded: true,
            ..Default::default()
        },
        DecodeOptions::default(),
    ] {
        // Each decode reuses columns that the one before filled with other rows.
        let mut t = Trace::default();
        let order = [
            &big_native,
            &big_tvm,
            &payloads,
            &tvm_odd,
            &native_odd,
            &payloads,
        ];
        for words in order.into_iter().chain([&big_native, &big_tvm]) {
            decode::decode_into(words, &opts, &mut t).unwrap();
            assert_eq!(t, decode(words, &opts).unwrap());
        }
        assert!(decode::decode_into(&[7, 7], &opts, &mut t).is_err());
        assert_eq!(t, Trace::default(), "an error leaves the trace empty");
    }
}

#[test]
fn forced_format_is_honoured() {
    let native = ikp_device::sample::attention().unwrap().into_words();
    let opts = DecodeOptions {
        format: FormatChoice::Tvm,
        ..Default::default()
    };
    // The ikp magic is not a usable TVM header.
    let e = decode(&native, &opts).unwrap_err();
    assert!(matches!(e, DecodeError::TvmHeader { .. }), "{e}");
    let words = tvm(1, 1, &[vec![pack(5, 0, 1, 0)]]);
    let opts = DecodeOptions {
        format: FormatChoice::Ikp,
        ..Default::default()
    };
    assert!(matches!(
        decode(&words, &opts).unwrap_err(),
        DecodeError::Header(_)
    ));
}

/// Every bad input: an error naming the file and the problem, never a panic.
#[test]
fn bad_inputs_get_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = ikp_device::sample::attention().unwrap().to_bytes();
    let header_len =
        ikp_device::Header::parse(&ikp_device::sample::attention().unwrap().into_words())
            .unwrap()
            .lane_base as usize;
    let set = |bytes: &mut Vec<u8>, word: usize, v: u64| {
        bytes[word * 8..word * 8 + 8].copy_from_slice(&v.to_le_bytes())
    };
    let w = |bytes: &Vec<u8>, word: usize| {
        u64::from_le_bytes(bytes[word * 8..word * 8 + 8].try_into().unwrap())
    };
    let cap = ikp_device::sample::RECORDS_PER_LANE as usize;
    let more = format!("more than the {cap} that fit");
    let mut cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "empty"),
        ("odd", vec![1, 2, 3], "not a multiple of 8"),
        ("truncated", good[..good.len() - 8].to_vec(), "truncated"),
        ("magic", b"NOTATRACE_______".to_vec(), "unrecognized"),
    ];
    let mut newer = good.clone();
    set(&mut newer, 1, w(&good, 1) + 1);
    cases.push(("newer", newer, "upgrade ikp"));
    let mut absurd = good.clone();
    set(&mut absurd, 2, (w(&good, 2) & !0xFFFF_FFFF) | 0xFFFF_FFFF);
    cases.push(("absurd", absurd, "lane_count"));
    let mut ids = good.clone();
    set(&mut ids, header_len + 2, 0xDEAD_BEEF);
    cases.push(("ids", ids, "lacks the lane mark"));
    let mut trailer = good.clone();
    let stride = 7 + cap + 2;
    set(&mut trailer, header_len + 4 + cap + 2, 5000);
    cases.push(("trailer", trailer, &more));
    let mut ghost = good.clone();
    let last_lane = header_len + 191 * stride;
    for k in 0..stride {
        set(&mut ghost, last_lane + k, 0);
    }
    set(&mut ghost, last_lane + 5, 77);
    cases.push(("ghost", ghost, "never ran init"));
    // TVM format: absurd header, lane out of range, record in another lane's slot.
    let tvm_bytes = |words: Vec<u64>| {
        words
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<u8>>()
    };
    cases.push((
        "tvm-absurd",
        tvm_bytes(vec![(1u64 << 32) | 0xFFFF_FFFF, 1]),
        "unrecognized",
    ));
    cases.push((
        "tvm-range",
        tvm_bytes(vec![(1u64 << 32) | 2, pack(1, 0, 0, 0), pack(1, 9, 0, 0)]),
        "out of range",
    ));
    cases.push((
        "tvm-slot",
        tvm_bytes(vec![(1u64 << 32) | 2, pack(1, 1, 0, 0), 0]),
        "puts lane 0 there",
    ));
    for (name, bytes, want) in cases {
        let p = dir.path().join(format!("{name}.bin"));
        std::fs::write(&p, &bytes).unwrap();
        let e = decode::load(&p, &DecodeOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{name}.bin")),
            "{name}: error does not name the file: {e}"
        );
        assert!(e.contains(want), "{name}: expected {want:?} in {e:?}");
    }
    assert!(RawBuffer::read(&dir.path().join("missing.bin")).is_err());
}

/// Garbage never panics: random words after a valid header of either format.
#[test]
fn garbage_records_never_panic() {
    let mut x = 0x1234_5678_9ABC_DEF0u64;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let native = ikp_device::sample::attention().unwrap().into_words();
    let hl = ikp_device::Header::parse(&native).unwrap().lane_base as usize;
    for round in 0..200 {
        let mut w = native.clone();
        for _ in 0..(1 + round % 20) {
            let i = hl + (rnd() as usize) % (w.len() - hl);
            w[i] = if round % 3 == 0 {
                rnd()
            } else {
                w[i] ^ (1 << (rnd() % 64))
            };
        }
        let _ = decode(&w, &DecodeOptions::default());
        let mut t = vec![(3u64 << 32) | 4];
        t.extend((0..64).map(|_| if rnd() % 3 == 0 { 0 } else { rnd() }));
        let _ = decode(&t, &DecodeOptions::default());
    }
}

#[test]
fn format_names_round_trip_and_a_wrong_one_lists_them() {
    use ikp_host::FormatChoice;
    for c in FormatChoice::ALL {
        assert_eq!(c.name().parse::<FormatChoice>(), Ok(c));
        assert_eq!(c.to_string(), c.name());
    }
    assert_eq!("YAOJZ".parse::<FormatChoice>(), Ok(FormatChoice::YaoJz));
    assert_eq!(
        "tvm2".parse::<FormatChoice>().unwrap_err().to_string(),
        "unknown format \"tvm2\": expected auto, ikp, tvm, flashinfer, mirage, yao-jz or proton"
    );
}
