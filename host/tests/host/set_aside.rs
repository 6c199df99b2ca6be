//! Native lanes whose stamps cannot belong to the launch (issue #17, item 8a): a lane
//! thrown far away by one corrupted stamp word is set aside and named, and the rest of
//! the buffer decodes exactly as if that lane had never run; a genuinely long launch
//! (waves, a persistent lane, lanes that start late) keeps every lane; and no single
//! corrupted word of a real buffer panics the decoder, the analysis or the Perfetto
//! writer, or moves the launch's GPU wall time by more than the bound the rules state.
use ikp_device::encoder::BufferWriter;
use ikp_device::wire::{lane, lane_flags};
use ikp_device::{Header, Layout, TimerMode};
use ikp_host::analysis::blocks::gpu_wall;
use ikp_host::analysis::kernel::{analyze, KernelOptions};
use ikp_host::decode::{
    decode, DecodeOptions, CLOCK_DISAGREEMENT_MAX, LANE_SPAN_MAX_NS, LAUNCH_GAP_MAX_NS,
};
use ikp_host::{write_perfetto, Compression, Launch, PerfettoOptions};
use ikp_host::{BlockFilter, SetAsideLane, SetAsideReason, Trace};

/// How far the issue's corrupted stamp threw its lane: about 544 years, in ns.
const YEARS_544: u64 = 17_175_002_975_966_379_653;
const MIN: u64 = 60_000_000_000;

fn dec(words: &[u64]) -> Trace {
    decode(words, &DecodeOptions::default()).unwrap()
}

/// Word indices of lane `l`'s start globaltimer, start clock64, end globaltimer and end
/// clock64.
fn stamp_words(words: &[u64], l: u64) -> [usize; 4] {
    let h = Header::parse(words).unwrap();
    let r = h.lane_range(l);
    let trailer = r.start + (lane::EVENTS + h.layout.records_per_lane) as usize;
    [
        r.start + lane::START_GT as usize,
        r.start + lane::START_CLK as usize,
        trailer + lane::T_END_GT as usize,
        trailer + lane::T_END_CLK as usize,
    ]
}

/// `words` with lane `l` never run (its segment zeroed).
fn without_lane(words: &[u64], l: u64) -> Vec<u64> {
    let mut w = words.to_vec();
    w[Header::parse(words).unwrap().lane_range(l)].fill(0);
    w
}

/// Decodes `corrupt`, checks that lane `l` alone was set aside, for `why`, and that the
/// trace is otherwise the one of the buffer without that lane; returns the lane's entry.
fn set_aside_as_if_removed(corrupt: &[u64], l: u64, why: SetAsideReason) -> SetAsideLane {
    let mut t = dec(corrupt);
    let removed = dec(&without_lane(corrupt, l));
    assert_eq!(
        t.diagnostics.set_aside.len(),
        1,
        "{:?}",
        t.diagnostics.set_aside
    );
    let s = t.diagnostics.set_aside.pop().unwrap();
    assert_eq!((s.lane, s.reason), (l as u32, why));
    assert_eq!(
        t, removed,
        "the rest of the buffer decodes as without the lane"
    );
    s
}

fn perfetto(t: &Trace) -> Result<Vec<u8>, ikp_host::WriteError> {
    let mut out = Vec::new();
    let opts = PerfettoOptions {
        compression: Compression::None,
        ..Default::default()
    };
    write_perfetto(&mut out, &[Launch::new("t", t)], &opts)?;
    Ok(out)
}

#[test]
fn the_issue_s_start_stamp_544_years_away_sets_its_lane_aside() {
    let clean = ikp_device::sample::attention().unwrap().into_words();
    let t0 = dec(&clean);
    let l = 100u64;
    let [start, _, end, _] = stamp_words(&clean, l);
    let mut words = clean.clone();
    words[start] = clean[start].wrapping_add(YEARS_544);
    let s = set_aside_as_if_removed(&words, l, SetAsideReason::Span);
    // Named in user terms, with the stamps as written.
    let orig = t0.lanes.iter().find(|x| x.id == l as u32).unwrap();
    assert_eq!(s.track, orig.track());
    assert_eq!((s.start, s.end), (words[start], Some(clean[end])));
    let t = dec(&words);
    // The figures are the launch's, not 544 years.
    let wall = analyze(&t, &KernelOptions::default()).gpu_wall_ns;
    assert_eq!(wall, gpu_wall(&dec(&without_lane(&clean, l))));
    assert!(wall <= gpu_wall(&t0), "{wall}");
    perfetto(&t).expect("every time fits the trace's time axis");
    // The one-line diagnostics name the lane.
    let line = t.diagnostic_counts().to_string();
    let want = format!(
        ", 1 lane set aside, its stamps not of this launch: {}",
        orig.track().name()
    );
    assert!(line.ends_with(&want), "{line}");
}

#[test]
fn an_end_stamp_far_from_the_start_sets_its_lane_aside_either_way() {
    let clean = ikp_device::sample::attention().unwrap().into_words();
    let l = 7u64;
    let [_, _, end, _] = stamp_words(&clean, l);
    for bad in [
        clean[end].wrapping_add(YEARS_544),
        clean[end] ^ (1 << 62),
        clean[end] + LANE_SPAN_MAX_NS + 1,
        1, // before the start
    ] {
        let mut words = clean.clone();
        words[end] = bad;
        let s = set_aside_as_if_removed(&words, l, SetAsideReason::Span);
        assert_eq!(s.end, Some(bad));
    }
}

/// A small globaltimer launch: `n` lanes of one block each, from `t0` (lane `l` starts
/// `l * 100` ns later and runs 10 us with a region and an instant); lanes in `open` never
/// finalize.
fn small_launch(n: u64, t0: u64, open: &[u64]) -> Vec<u64> {
    let mut b = BufferWriter::new(Layout {
        grid: [n as u32, 1, 1],
        groups_per_block: 1,
        records_per_lane: 8,
        timer: TimerMode::Globaltimer,
        regions: vec!["work".into(), "mark".into()],
        counters: vec![],
        ..Layout::default()
    })
    .unwrap();
    for l in 0..n {
        let s = t0 + l * 100;
        let mut w = b.lane(l);
        w.init(l as u32, 0, 0, s, 0)
            .begin(0, 0, s + 10)
            .end(0, 0, s + 9_000)
            .instant(1, 1, s + 9_500);
        if !open.contains(&l) {
            w.finalize(s + 10_000, 0);
        }
    }
    b.into_words()
}

#[test]
fn a_lane_far_from_the_launch_is_set_aside_finalized_or_not() {
    let t0 = 0x1_8000u64 << 32;
    // A lane that never finalized: its start alone places it.
    let words = small_launch(5, t0, &[3]);
    let [start, _, end, _] = stamp_words(&words, 3);
    for bad in [
        words[start].wrapping_add(YEARS_544),
        words[start] ^ (1 << 44),
        3,
    ] {
        let mut w = words.clone();
        w[start] = bad;
        let s = set_aside_as_if_removed(&w, 3, SetAsideReason::Apart);
        assert_eq!((s.start, s.end, s.end_clock), (bad, None, None));
    }
    // A finalized lane moved whole (both its stamps overwritten).
    let words = small_launch(5, t0, &[]);
    let mut w = words.clone();
    w[start] = words[start] + LAUNCH_GAP_MAX_NS + 20_000;
    w[end] = words[end] + LAUNCH_GAP_MAX_NS + 20_000;
    set_aside_as_if_removed(&w, 3, SetAsideReason::Apart);
    // Within the gap of the others, it is a late lane of the launch, and kept.
    let mut w = words.clone();
    w[start] = words[start] + LAUNCH_GAP_MAX_NS;
    w[end] = words[end] + LAUNCH_GAP_MAX_NS;
    let t = dec(&w);
    assert!(t.diagnostics.set_aside.is_empty());
    assert_eq!(t.lanes.len(), 5);
}

/// A clock-mode launch: `n` lanes of one block each, clock64 at 1.5 cycles per ns (lane
/// `l`'s clock from `l << 40`); lane `l` runs `2 + l` ms (a lane of `short` 20 us, less
/// than `OWN_RATIO_MIN_NS`: it takes the pooled ratio) with a region every 100 us.
fn clock_launch(n: u64, t0: u64, short: &[u64]) -> Vec<u64> {
    let mut b = BufferWriter::new(Layout {
        grid: [n as u32, 1, 1],
        groups_per_block: 1,
        records_per_lane: 64,
        timer: TimerMode::Clock,
        regions: vec!["step".into()],
        counters: vec![],
        ..Layout::default()
    })
    .unwrap();
    for l in 0..n {
        let (gt0, clk0) = (t0 + l * 1_000, (l << 40) + 12_345);
        let clk = |ns: u64| clk0 + ns * 3 / 2;
        let len = if short.contains(&l) {
            20_000
        } else {
            (2 + l) * 1_000_000
        };
        let mut w = b.lane(l);
        w.init(l as u32, 0, lane_flags::CLOCK, gt0, clk0);
        let mut t = 1_000;
        while t + 2_000 < len && t < 25 * 100_000 {
            w.begin(0, 0, clk(t)).end(0, 0, clk(t + 1_000));
            t += 100_000;
        }
        w.finalize(gt0 + len, clk(len));
    }
    b.into_words()
}

#[test]
fn a_clock_pair_that_disagrees_with_the_others_sets_its_lane_aside() {
    let t0 = 1u64 << 50;
    let words = clock_launch(6, t0, &[4]);
    let clean = dec(&words);
    assert!(clean.diagnostics.set_aside.is_empty());
    let c = clean.source.clock.unwrap();
    assert!((c.pooled_mhz() - 1500.0).abs() < 1.0, "{c:?}");
    for l in [2u64, 4] {
        let [_, start_clk, end_gt, end_clk] = stamp_words(&words, l);
        // A high bit set in the end clock64; the start clock64 lower by 2^36 (a high bit
        // cleared); the end globaltimer 18 min late (within the span bound, so only the
        // clock tells).
        let bad = [
            (end_clk, words[end_clk] | (1 << 60)),
            (start_clk, words[start_clk] - (1 << 36)),
            (end_gt, words[end_gt] + LAUNCH_GAP_MAX_NS),
        ];
        for (at, v) in bad {
            let mut w = words.clone();
            w[at] = v;
            let s = set_aside_as_if_removed(&w, l, SetAsideReason::Clock);
            assert_eq!(s.track.block, l as u32);
            let t = dec(&w);
            // The pooled rate is the others' (the pool would otherwise be off by orders
            // of magnitude), and every time stays near the launch.
            let c = t.source.clock.unwrap();
            assert!((c.pooled_mhz() - 1500.0).abs() < 1.0, "{c:?}");
            assert!(gpu_wall(&t) <= gpu_wall(&clean));
            perfetto(&t).unwrap();
        }
    }
}

/// A launch of one-lane blocks `(start, length, slow)` from `t0`: clock64 at 1.2 cycles
/// per ns, or 5x slower (a throttled SM) for a `slow` lane; one region per lane.
fn long_launch(timer: TimerMode, t0: u64, lanes: &[(u64, u64, bool)]) -> Vec<u64> {
    let mut b = BufferWriter::new(Layout {
        grid: [lanes.len() as u32, 1, 1],
        groups_per_block: 1,
        records_per_lane: 8,
        timer,
        regions: vec!["work".into()],
        counters: vec![],
        ..Layout::default()
    })
    .unwrap();
    let flags = match timer {
        TimerMode::Clock => lane_flags::CLOCK,
        TimerMode::Globaltimer => 0,
    };
    for (l, &(start, len, slow)) in lanes.iter().enumerate() {
        let (start, clk0) = (t0 + start, 1_000 + l as u64);
        let cycles = |ns: u64| if slow { ns * 6 / 25 } else { ns * 6 / 5 };
        let stamp = |ns: u64| match timer {
            TimerMode::Clock => clk0 + cycles(ns),
            TimerMode::Globaltimer => start + ns,
        };
        b.lane(l as u64)
            .init(l as u32, 0, flags, start, clk0)
            .begin(0, 0, stamp(5))
            .end(0, 0, stamp(1_000))
            .finalize(start + len, clk0 + cycles(len));
    }
    b.into_words()
}

#[test]
fn a_long_launch_with_waves_and_late_lanes_keeps_every_lane() {
    let t0 = 0x1_8000u64 << 32;
    // Three waves of four blocks, each block 25 min (longer than the gap), a wave starting
    // as the one before ends, one block on a throttled SM; then a block starting 17 min
    // after the last wave ended.
    let mut waves: Vec<(u64, u64, bool)> = (0..12u64)
        .map(|l| ((l / 4) * 25 * MIN + (l % 4) * 1_000, 25 * MIN, l == 5))
        .collect();
    waves.push((75 * MIN + 3_000 + 17 * MIN, MIN, false));
    // A persistent kernel: lanes open for 4.5 h, one of them starting 4 h late.
    let persistent = [
        (0, 270 * MIN, false),
        (20, 270 * MIN - 20, false),
        (40, 270 * MIN - 40, true),
        (240 * MIN, 10 * MIN, false),
    ];
    for timer in [TimerMode::Globaltimer, TimerMode::Clock] {
        for (lanes, wall) in [(&waves[..], 93 * MIN + 3_000), (&persistent[..], 270 * MIN)] {
            let t = dec(&long_launch(timer, t0, lanes));
            assert!(t.diagnostics.set_aside.is_empty(), "{timer:?}");
            assert_eq!(t.lanes.len(), lanes.len());
            assert_eq!(gpu_wall(&t), wall, "{timer:?}");
        }
    }
}

#[test]
fn a_block_filter_keeps_the_set_aside_lanes_of_its_blocks() {
    let t0 = 0x1_8000u64 << 32;
    let mut words = small_launch(6, t0, &[]);
    for l in [1, 4] {
        let [start, ..] = stamp_words(&words, l);
        words[start] ^= 1 << 60;
    }
    let t = dec(&words);
    let lanes =
        |t: &Trace| -> Vec<u32> { t.diagnostics.set_aside.iter().map(|s| s.lane).collect() };
    assert_eq!(lanes(&t), [1, 4]);
    assert_eq!(lanes(&t.filter_blocks(&BlockFilter::new(vec![0, 4]))), [4]);
    let filtered = decode(
        &words,
        &DecodeOptions {
            blocks: BlockFilter::new(vec![1, 2]),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(lanes(&filtered), [1]);
    assert_eq!(filtered.lanes.len(), 1);
}

#[test]
fn a_lane_at_the_end_of_the_time_axis_is_set_aside_not_wrapped() {
    // One lane alone, its start 100 ns before 2^64 (never finalized: no other stamp to
    // compare with): its records once unwrapped past 2^64 into spans ending before they
    // began. Or 5 ns past 2^63, finalized, where no int64 time axis reaches.
    for (start, finalized) in [(u64::MAX - 100, false), ((1 << 63) + 5, true)] {
        let mut b = BufferWriter::new(Layout {
            grid: [1, 1, 1],
            groups_per_block: 1,
            records_per_lane: 8,
            timer: TimerMode::Globaltimer,
            regions: vec!["work".into()],
            counters: vec![],
            ..Layout::default()
        })
        .unwrap();
        let mut w = b.lane(0);
        w.init(0, 0, 0, start, 0)
            .begin(0, 0, start.wrapping_add(50))
            .end(0, 0, start.wrapping_add(300));
        if finalized {
            w.finalize(start + 400, 0);
        }
        let t = dec(&b.into_words());
        let s = &t.diagnostics.set_aside;
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!((s[0].start, s[0].reason), (start, SetAsideReason::Range));
        assert!(t.lanes.is_empty() && t.spans.is_empty());
        assert_eq!(analyze(&t, &KernelOptions::default()).gpu_wall_ns, 0);
        perfetto(&t).unwrap();
    }
}

/// Replacements tried for a stamp word `w`: extreme values, single high bits flipped
/// (each moves the stamp by 2^k ns or cycles; the rules' bounds are 2^40 and 2^44), and
/// the issue's 544 years added.
fn stamp_mutations(w: u64) -> Vec<u64> {
    let mut v = vec![0, 1, u64::MAX, w.wrapping_add(YEARS_544)];
    v.extend([63, 60, 50, 47, 45, 44, 43, 40, 36].map(|k| w ^ (1u64 << k)));
    v
}

/// Replacements tried for any other word `w`: extreme values, a few bits flipped.
fn word_mutations(w: u64) -> Vec<u64> {
    let mut v = vec![0, u64::MAX];
    v.extend([63, 40, 32, 31, 1].map(|k| w ^ (1u64 << k)));
    v
}

/// What one corrupted buffer did: an error, a trace with lanes set aside, or without.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Refused,
    SetAside,
    Decoded,
}

/// What a corrupted buffer's trace must stay within: `wall` ns from the launch's start,
/// and in clock mode a pooled clock rate within [`CLOCK_DISAGREEMENT_MAX`] times `mhz`.
struct Bounds {
    wall: u64,
    mhz: Option<f64>,
}

/// Decodes `words` and, if that succeeds, analyses it and writes it to Perfetto: nothing
/// may panic, the writer must succeed, and the GPU wall time, every event time and the
/// clock rate must be within `b`. A trace equal to one in `seen` but for the stamps of
/// its set-aside lanes (which neither the analysis nor the writer reads) was checked
/// already.
fn check_mutated(words: &[u64], b: &Bounds, seen: &mut Vec<Trace>) -> Result<Outcome, String> {
    let Ok(mut t) = decode(words, &DecodeOptions::default()) else {
        return Ok(Outcome::Refused); // a clean error
    };
    if let (Some(c), Some(mhz)) = (t.source.clock, b.mhz) {
        let k = CLOCK_DISAGREEMENT_MAX as f64;
        if !(mhz / k..=mhz * k).contains(&c.pooled_mhz()) {
            return Err(format!(
                "clock {} MHz, {mhz} MHz without the corruption",
                c.pooled_mhz()
            ));
        }
    }
    let bound = b.wall;
    let outcome = match t.diagnostics.set_aside.is_empty() {
        true => Outcome::Decoded,
        false => Outcome::SetAside,
    };
    for s in &mut t.diagnostics.set_aside {
        (s.start, s.end, s.start_clock, s.end_clock) = (0, None, None, None);
    }
    if seen.contains(&t) {
        return Ok(outcome);
    }
    let wall = analyze(&t, &KernelOptions::default()).gpu_wall_ns;
    if wall > bound {
        return Err(format!("GPU wall time {wall} ns"));
    }
    let tb = t.source.time_base;
    let mut times = (t.spans.begin.iter().chain(&t.spans.end))
        .chain(&t.instants.ts)
        .chain(&t.samples.ts);
    if let Some(&x) = times.find(|&&x| x < tb || x - tb > bound) {
        return Err(format!("an event at {x} ns, time base {tb}"));
    }
    perfetto(&t).map_err(|e| format!("Perfetto: {e}"))?;
    seen.push(t);
    Ok(outcome)
}

/// Every mutation of the stamp words `stamps` and other words `others` of `clean`, each
/// alone, checked by [`check_mutated`] against the clean GPU wall time plus
/// [`LANE_SPAN_MAX_NS`] (what one corrupted stamp may add: `ikp_host::decode::set_aside`,
/// `# Lanes set aside`) and the clean clock rate; the outcomes.
fn sweep(clean: &[u64], stamps: &[usize], others: &[usize]) -> Vec<Outcome> {
    let t = dec(clean);
    let bound = Bounds {
        wall: gpu_wall(&t) + LANE_SPAN_MAX_NS,
        mhz: t.source.clock.map(|c| c.pooled_mhz()),
    };
    let mut seen = Vec::new();
    let mut out = Vec::new();
    let tries = (stamps.iter().map(|&i| (i, stamp_mutations(clean[i]))))
        .chain(others.iter().map(|&i| (i, word_mutations(clean[i]))));
    for (i, values) in tries {
        for v in values {
            let mut words = clean.to_vec();
            words[i] = v;
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                check_mutated(&words, &bound, &mut seen)
            }));
            match r {
                Ok(Ok(o)) => out.push(o),
                Ok(Err(e)) => panic!("word {i} = {v:#018x}: {e}"),
                Err(_) => panic!("word {i} = {v:#018x}: panicked"),
            }
        }
    }
    out
}

/// Whether the sweep saw every outcome (so that it checked figures, and the rules ran).
fn saw_all(outcomes: &[Outcome]) -> bool {
    [Outcome::Refused, Outcome::SetAside, Outcome::Decoded]
        .iter()
        .all(|o| outcomes.contains(o))
}

/// The words of lane `l` most worth corrupting besides its stamps: its IDS and count
/// words, first and last record.
fn lane_words(words: &[u64], l: u64) -> Vec<usize> {
    let h = Header::parse(words).unwrap();
    let r = h.lane_range(l);
    let ev = r.start + lane::EVENTS as usize;
    let trailer = ev + h.layout.records_per_lane as usize;
    let written = words[trailer + lane::T_COUNT as usize] as u32 as usize;
    let mut v = vec![
        r.start + lane::IDS as usize,
        trailer + lane::T_COUNT as usize,
        ev,
    ];
    v.extend(written.checked_sub(1).map(|k| ev + k));
    v
}

/// Sweeps the stamps and [`lane_words`] of `lanes`, and the header words past the magic.
fn sweep_lanes(clean: &[u64], lanes: &[u64]) -> Vec<Outcome> {
    let stamps: Vec<usize> = lanes.iter().flat_map(|&l| stamp_words(clean, l)).collect();
    let mut others: Vec<usize> = (1..8).collect();
    others.extend(lanes.iter().flat_map(|&l| lane_words(clean, l)));
    sweep(clean, &stamps, &others)
}

#[test]
fn no_single_corrupted_word_of_the_sample_panics_or_gives_absurd_times() {
    let clean = ikp_device::sample::attention().unwrap().into_words();
    assert!(saw_all(&sweep_lanes(&clean, &[0, 2, 100, 191])));
}

#[test]
fn no_single_corrupted_word_of_a_clock_launch_panics_or_gives_absurd_times() {
    let clean = clock_launch(6, 1u64 << 50, &[4]);
    assert!(saw_all(&sweep_lanes(&clean, &[0, 4, 5])));
}
