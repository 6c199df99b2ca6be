//! Ring lanes, several launches in one buffer (epochs) and the overhead correction, on
//! buffers from the reference encoder: order restored, overwritten records and orphan
//! ends counted, stamps unwrapped back from the end stamp, one trace per launch, launches
//! beyond the buffer reported, corrected durations exact; and a clear error (never a
//! panic) for every inconsistent buffer.
use ikp_device::encoder::BufferWriter;
use ikp_device::wire::{self, lane, lane_flags};
use ikp_device::{Header, Layout, Overflow, TimerMode};
use ikp_host::decode::{decode, decode_launches, DecodeError, DecodeOptions};
use ikp_host::{Epoch, SetAsideReason, Trace};

fn ring(lanes: u32, cap: u32, timer: TimerMode) -> Layout {
    Layout {
        groups_per_block: lanes,
        records_per_lane: cap,
        timer,
        regions: vec!["outer".into(), "inner".into(), "mark".into()],
        overflow: Overflow::Ring,
        ..Layout::default()
    }
}

fn dec(words: &[u64]) -> Trace {
    decode(words, &DecodeOptions::default()).unwrap()
}

/// `(region, depth, begin, end)` of every span of lane position `p`.
fn spans(t: &Trace, p: usize) -> Vec<(u16, u16, u64, u64)> {
    let s = &t.spans;
    (t.lanes[p].spans.clone())
        .map(|i| (s.region[i], s.depth[i], s.begin[i], s.end[i]))
        .collect()
}

/// Word index of lane `l`'s trailer count word.
fn count_word(words: &[u64], l: u64) -> usize {
    let h = Header::parse(words).unwrap();
    h.lane_range(l).start + (lane::EVENTS + h.layout.records_per_lane + lane::T_COUNT) as usize
}

/// Lane 0 of a ring of 8: `outer` begun, 9 `inner` spans, `outer` ended: 20 records,
/// record `i` at `t0 + 10 i`, ending at `t0 + 200`; `flags` the lane's.
fn wrapped_once(timer: TimerMode, t0: u64, start: (u64, u64), end: (u64, u64)) -> Vec<u64> {
    let mut b = BufferWriter::new(ring(1, 8, timer)).unwrap();
    let flags = lane_flags::RING
        | if timer == TimerMode::Clock {
            lane_flags::CLOCK
        } else {
            0
        };
    let mut w = b.lane(0);
    w.init(1, 0, flags, start.0, start.1);
    let mut i = 0u64;
    let mut t = || {
        i += 1;
        t0 + 10 * (i - 1)
    };
    w.begin(0, 0, t());
    for _ in 0..9 {
        w.begin(1, 0, t()).end(1, 0, t());
    }
    w.end(0, 0, t());
    w.finalize(end.0, end.1);
    b.into_words()
}

#[test]
fn a_ring_that_wrapped_keeps_the_newest_records_in_order_and_counts_the_rest() {
    // Records far more than 2^31 ns after the lane's start, across a 2^32 boundary (the
    // 15th record is at 9 * 2^32): only the end stamp can anchor them.
    let t0 = 9u64 << 32;
    let t0 = t0 - 150;
    let start = 7u64 << 32;
    let words = wrapped_once(TimerMode::Globaltimer, t0, (start, 0), (t0 + 200, 0));
    let t = dec(&words);
    let l = &t.lanes[0];
    assert_eq!((l.written, l.overwritten, l.dropped), (8, 12, 0));
    assert_eq!(l.start, start);
    // Records 12..20 survive: an orphan end, three inner spans, outer's orphan end.
    let at = |i: u64| t0 + 10 * i;
    let want = vec![
        (1, 0, at(13), at(14)),
        (1, 0, at(15), at(16)),
        (1, 0, at(17), at(18)),
    ];
    assert_eq!(spans(&t, 0), want);
    let d = &t.diagnostics;
    assert_eq!(d.ends_of_overwritten_begins, 2);
    assert!(d.unmatched_end.is_empty() && d.unmatched_begin.is_empty());
    let c = t.diagnostic_counts();
    assert_eq!((c.overwritten, c.ends_of_overwritten_begins), (12, 2));
    assert!(!c.is_clean());
    assert!(
        c.to_string().contains("12 records overwritten in rings"),
        "{c}"
    );
}

#[test]
fn a_clock_mode_ring_unwraps_back_from_its_end_clock64() {
    // 1 cycle per ns: the lane spans 2^34 cycles (about 17 s), records near its end.
    let (clk0, gt0) = ((5u64 << 32) - 7, 1u64 << 40);
    let c_first = (9u64 << 32) - 150;
    let clk_end = c_first + 200;
    let gt_end = gt0 + (clk_end - clk0);
    let words = wrapped_once(TimerMode::Clock, c_first, (gt0, clk0), (gt_end, clk_end));
    let t = dec(&words);
    let ns = |i: u64| gt0 + (c_first + 10 * i - clk0);
    assert_eq!(spans(&t, 0)[0], (1, 0, ns(13), ns(14)));
    assert_eq!(t.lanes[0].end, gt_end);
}

#[test]
fn a_ring_that_wrapped_many_times_keeps_its_last_records() {
    let mut b = BufferWriter::new(ring(1, 4, TimerMode::Globaltimer)).unwrap();
    let mut w = b.lane(0);
    w.init(0, 0, lane_flags::RING, 1_000, 0);
    for i in 0..1_003u64 {
        w.instant(2, i as u32, 2_000 + 7 * i);
    }
    w.finalize(2_000 + 7 * 1_003, 0);
    let t = dec(&b.into_words());
    assert_eq!((t.lanes[0].written, t.lanes[0].overwritten), (4, 999));
    assert_eq!(t.instants.payload, [999, 1_000, 1_001, 1_002]);
    let ts: Vec<u64> = (999..1_003).map(|i| 2_000 + 7 * i).collect();
    assert_eq!(t.instants.ts, ts);
    assert_eq!(t.diagnostics.ends_of_overwritten_begins, 0);
}

#[test]
fn a_ring_that_did_not_wrap_decodes_as_any_lane() {
    let mut b = BufferWriter::new(ring(2, 8, TimerMode::Globaltimer)).unwrap();
    b.lane(0)
        .init(0, 0, lane_flags::RING, 100, 0)
        .begin(0, 0, 110)
        .end(0, 0, 120)
        .finalize(130, 0);
    // Never finalized, not full: its records are in order from slot 0.
    b.lane(1)
        .init(0, 0, lane_flags::RING, 100, 0)
        .begin(0, 0, 140)
        .end(1, 0, 150);
    let t = dec(&b.into_words());
    assert_eq!(spans(&t, 0), [(0, 0, 110, 120)]);
    assert_eq!(t.lanes[1].overwritten, 0);
    // An ordinary unmatched end (the ring did not wrap) and begin.
    let d = &t.diagnostics;
    assert_eq!((d.unmatched_end.len(), d.unmatched_begin.len()), (1, 1));
    assert_eq!(d.ends_of_overwritten_begins, 0);
}

#[test]
fn a_full_ring_that_never_finalized_is_set_aside_not_decoded() {
    let mut b = BufferWriter::new(ring(2, 4, TimerMode::Globaltimer)).unwrap();
    let mut w = b.lane(0);
    w.init(3, 1, lane_flags::RING, 100, 0);
    for i in 0..6 {
        w.instant(2, 0, 110 + i);
    }
    b.lane(1)
        .init(0, 0, lane_flags::RING, 100, 0)
        .instant(2, 0, 120)
        .finalize(130, 0);
    let t = dec(&b.into_words());
    assert_eq!(t.lanes.len(), 1);
    assert_eq!(t.lanes[0].id, 1);
    let s = &t.diagnostics.set_aside;
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].lane, s[0].reason), (0, SetAsideReason::UnorderedRing));
    let c = t.diagnostic_counts();
    assert_eq!(c.set_aside_unordered_rings, 1);
    assert!(
        c.set_aside_phrase()
            .contains("full rings that never finalized"),
        "{}",
        c.set_aside_phrase()
    );
}

#[test]
fn ring_flags_and_counts_that_disagree_are_errors_naming_the_lane() {
    // A ring lane in a drop-newest header.
    let mut b = BufferWriter::new(Layout {
        groups_per_block: 2,
        records_per_lane: 8,
        ..Layout::default()
    })
    .unwrap();
    b.lane(1)
        .init(0, 0, lane_flags::RING, 100, 0)
        .finalize(200, 0);
    let e = decode(&b.into_words(), &DecodeOptions::default()).unwrap_err();
    assert!(matches!(e, DecodeError::Lane { lane: 1, .. }), "{e}");
    assert!(e.to_string().contains("ring"), "{e}");
    // Overwritten records in a ring that is not full.
    let mut b = BufferWriter::new(ring(1, 8, TimerMode::Globaltimer)).unwrap();
    b.lane(0)
        .init(0, 0, lane_flags::RING, 100, 0)
        .instant(2, 0, 110)
        .finalize(200, 0);
    let mut words = b.into_words();
    let k = count_word(&words, 0);
    words[k] = wire::pack_count(1, 40);
    let e = decode(&words, &DecodeOptions::default()).unwrap_err();
    assert!(e.to_string().contains("40 overwritten records"), "{e}");
    // More written than fit.
    words[k] = wire::pack_count(9, 0);
    let e = decode(&words, &DecodeOptions::default()).unwrap_err();
    assert!(matches!(e, DecodeError::Lane { lane: 0, .. }), "{e}");
}

#[test]
fn a_drop_newest_lane_in_a_ring_header_decodes_as_drop_newest() {
    let mut b = BufferWriter::new(ring(1, 2, TimerMode::Globaltimer)).unwrap();
    b.lane(0)
        .init(0, 0, 0, 100, 0)
        .instant(2, 0, 110)
        .finalize(200, 0);
    let mut words = b.into_words();
    let k = count_word(&words, 0);
    words[k] = wire::pack_count(1, 0);
    let t = dec(&words);
    assert_eq!((t.lanes[0].written, t.lanes[0].overwritten), (1, 0));
}

fn epochs_layout(epochs: u32) -> Layout {
    Layout {
        groups_per_block: 2,
        records_per_lane: 8,
        regions: vec!["step".into()],
        epochs,
        ..Layout::default()
    }
}

#[test]
fn each_launch_is_a_trace_and_launches_beyond_the_buffer_are_reported() {
    let mut b = BufferWriter::new(epochs_layout(3)).unwrap();
    for k in 0..4u64 {
        for l in 0..2u64 {
            let t0 = 1_000_000 * (k + 1) + 100 * l;
            match b.launch(l) {
                Some(mut w) => {
                    w.init(0, l as u32, 0, t0, 0)
                        .begin(0, k as u32, t0 + 10)
                        .end(0, k as u32, t0 + 20 + k)
                        .finalize(t0 + 50, 0);
                }
                None => assert_eq!(k, 3, "the 4th launch finds the buffer full"),
            }
        }
    }
    let words = b.into_words();
    let traces = decode_launches(&words, &DecodeOptions::default()).unwrap();
    assert_eq!(traces.len(), 3);
    for (k, t) in traces.iter().enumerate() {
        let want = Epoch {
            index: k as u32,
            epochs: 3,
            launches: 4,
        };
        assert_eq!(t.source.epoch, Some(want));
        assert_eq!(want.not_recorded(), 1);
        assert_eq!(t.lanes.len(), 2);
        assert_eq!(t.spans.payload, [k as u32, k as u32]);
        assert_eq!(t.spans.end[0] - t.spans.begin[0], 10 + k as u64);
    }
    // One trace of several launches is refused, with the way out.
    let e = decode(&words, &DecodeOptions::default()).unwrap_err();
    assert!(matches!(e, DecodeError::SeveralLaunches(3)), "{e}");
    assert!(e.to_string().contains("decode_launches"), "{e}");
}

#[test]
fn an_epoch_no_lane_ran_is_omitted_and_one_launch_decodes_alone() {
    let mut b = BufferWriter::new(epochs_layout(4)).unwrap();
    b.segment(0, 0).init(0, 0, 0, 100, 0).finalize(200, 0);
    b.segment(2, 1).init(0, 1, 0, 5_000, 0).finalize(6_000, 0);
    let words = b.into_words();
    let traces = decode_launches(&words, &DecodeOptions::default()).unwrap();
    let idx: Vec<(u32, u64)> = (traces.iter())
        .map(|t| {
            (
                t.source.epoch.unwrap().index,
                t.source.epoch.unwrap().launches,
            )
        })
        .collect();
    // The counters were left untouched: the epochs recorded say 3 launches ran.
    assert_eq!(idx, [(0, 3), (2, 3)]);
    assert_eq!(traces[1].lanes[0].id, 1);
    // One launch recorded in a buffer of several epochs: `decode` gives it.
    let mut b = BufferWriter::new(epochs_layout(4)).unwrap();
    b.launch(0).unwrap().init(0, 0, 0, 100, 0).finalize(200, 0);
    let t = dec(&b.into_words());
    assert_eq!(t.source.epoch.map(|e| (e.index, e.launches)), Some((0, 1)));
}

#[test]
fn a_garbage_launch_counter_is_an_error_naming_the_lane_and_a_bad_epoch_names_it() {
    let mut b = BufferWriter::new(epochs_layout(2)).unwrap();
    b.launch(0).unwrap().init(0, 0, 0, 100, 0).finalize(200, 0);
    let mut words = b.into_words();
    let h = Header::parse(&words).unwrap();
    words[h.launch_counter(1)] = u64::MAX - 3;
    let e = decode_launches(&words, &DecodeOptions::default()).unwrap_err();
    assert!(
        matches!(e, DecodeError::LaunchCounter { lane: 1, .. }),
        "{e}"
    );
    // A counter that is merely large is launches that ran.
    words[h.launch_counter(1)] = 70_000;
    let t = decode_launches(&words, &DecodeOptions::default()).unwrap();
    assert_eq!(t[0].source.epoch.unwrap().not_recorded(), 69_998);
    // Garbage in a later epoch's segment names the launch.
    let at = h.segment_range(1, 0).start + lane::EVENTS as usize;
    words[at] = 0xdead_beef;
    let e = decode_launches(&words, &DecodeOptions::default()).unwrap_err();
    assert!(e.to_string().contains("launch 1: "), "{e}");
}

/// Globaltimer lanes at 0.5 ns per cycle (start and end pairs), 8 cycles per record.
fn correction_buffer() -> Vec<u64> {
    let mut b = BufferWriter::new(Layout {
        groups_per_block: 3,
        records_per_lane: 32,
        regions: vec!["a".into(), "b".into(), "c".into()],
        ..Layout::default()
    })
    .unwrap();
    // Lane 0: a ⊃ b ⊃ instant: a has 3 records inside, b one.
    let mut w = b.lane(0);
    w.init(0, 0, 0, 1_000, 0).calibrate(8);
    w.begin(0, 0, 1_100).begin(1, 0, 1_200).instant(2, 0, 1_250);
    w.end(1, 0, 1_300).end(0, 0, 1_400).finalize(11_000, 20_000);
    // Lane 1: b ends 1 ns before a, with 5 records inside, a 7: b's correction would end
    // it after a's corrected end, so it is clamped there; c is cut to zero length.
    let mut w = b.lane(1);
    w.init(0, 1, 0, 1_000, 0).calibrate(8);
    w.begin(0, 0, 1_100).begin(1, 0, 1_200);
    for k in 0..5 {
        w.instant(2, 0, 1_210 + k);
    }
    w.end(1, 0, 1_300).end(0, 0, 1_301);
    w.begin(2, 0, 1_500).instant(2, 0, 1_501).end(2, 0, 1_502);
    w.finalize(11_000, 20_000);
    // Lane 2: cost not measured.
    let mut w = b.lane(2);
    w.init(0, 2, 0, 1_000, 0);
    w.begin(0, 0, 1_100).instant(2, 0, 1_150).end(0, 0, 1_200);
    w.finalize(11_000, 20_000);
    b.into_words()
}

#[test]
fn the_overhead_correction_moves_ends_by_the_records_inside_clamped_to_parents() {
    let words = correction_buffer();
    let raw = dec(&words);
    assert_eq!(raw.source.overhead_correction, None);
    let opts = DecodeOptions {
        correct_overhead: true,
        ..Default::default()
    };
    let t = decode(&words, &opts).unwrap();
    assert_eq!(
        spans(&t, 0),
        [(0, 0, 1_100, 1_400 - 12), (1, 1, 1_200, 1_300 - 4)]
    );
    assert_eq!(
        spans(&t, 1),
        [
            (0, 0, 1_100, 1_301 - 28),
            (1, 1, 1_200, 1_301 - 28),
            (2, 0, 1_500, 1_500)
        ]
    );
    assert_eq!(spans(&t, 2), spans(&raw, 2), "not measured: as recorded");
    let c = t.source.overhead_correction.unwrap();
    assert_eq!((c.lanes_corrected, c.lanes_unmeasured), (2, 1));
    assert_eq!(c.per_record_ps_median, 4_000);
    assert_eq!(c.spans_corrected, 5);
    assert_eq!(c.total_ns_removed, 12 + 4 + 28 + 27 + 2);
    // Begins and instants never move.
    assert_eq!(t.spans.begin, raw.spans.begin);
    assert_eq!(t.instants, raw.instants);
}

#[test]
fn clock_mode_converts_the_record_cost_with_the_lane_s_ratio() {
    // 2 cycles per ns; 10 cycles per record: 5 ns.
    let mut b = BufferWriter::new(Layout {
        records_per_lane: 8,
        timer: TimerMode::Clock,
        regions: vec!["a".into()],
        ..Layout::default()
    })
    .unwrap();
    let mut w = b.lane(0);
    w.init(0, 0, lane_flags::CLOCK, 1_000, 0).calibrate(10);
    w.begin(0, 0, 200)
        .instant(0, 0, 300)
        .instant(0, 0, 400)
        .end(0, 0, 600);
    w.finalize(1_000 + 5_000, 10_000);
    let opts = DecodeOptions {
        correct_overhead: true,
        ..Default::default()
    };
    let t = decode(&b.into_words(), &opts).unwrap();
    assert_eq!(spans(&t, 0), [(0, 0, 1_100, 1_300 - 10)]);
    assert_eq!(
        t.source.overhead_correction.unwrap().per_record_ps_median,
        5_000
    );
}

#[test]
fn a_garbage_record_cost_clamps_spans_to_their_begins_never_wraps() {
    let mut b = BufferWriter::new(Layout {
        records_per_lane: 8,
        regions: vec!["a".into(), "b".into()],
        ..Layout::default()
    })
    .unwrap();
    let mut w = b.lane(0);
    w.init(0, 0, 0, 1_000, 0).calibrate(u32::MAX);
    w.begin(0, 0, 1_100)
        .begin(1, 0, 1_150)
        .end(1, 0, 1_160)
        .end(0, 0, 1_200);
    w.finalize(1_000 + (1 << 40), 1);
    let opts = DecodeOptions {
        correct_overhead: true,
        ..Default::default()
    };
    let t = decode(&b.into_words(), &opts).unwrap();
    // 2^40 ns per cycle, u32::MAX cycles a record: past 64 bits, saturated.
    assert_eq!(spans(&t, 0), [(0, 0, 1_100, 1_100), (1, 1, 1_150, 1_150)]);
    let c = t.source.overhead_correction.unwrap();
    assert_eq!((c.per_record_ps_median, c.spans_corrected), (u64::MAX, 2));
}
