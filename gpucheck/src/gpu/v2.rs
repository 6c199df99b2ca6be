//! The device paths of wire format v2, checked on the raw buffer words (the decoder's
//! reading of them is checked by the host tests):
//!
//! - `ring`: lanes of an 8-slot ring record 3 to 29 instants; each keeps exactly its newest
//!   records, oldest first from `(written + overwritten) % capacity`, and counts the rest
//!   as overwritten;
//! - `record-cost`: every lane of that launch measured its record cost at init (the CALIB
//!   word): not zero, and below [`CALIB_BOUND`] cycles;
//! - `epochs/graph`: one launch captured into a CUDA Graph, replayed 4 times with nothing
//!   in between into a buffer of 3 epochs: each lane's launch counter says 4, epochs 0..3
//!   each hold one launch, in launch order, and the 4th replay wrote nothing;
//! - `async-ranges`: in each block warp 0 begins ranges that warp 1 ends; every token
//!   begun is ended in the other lane, no earlier than it began.

use ikp_device::wire::{self, lane as seg, lane_flags, Kind};
use ikp_device::{Header, Layout, Overflow, TimerMode};
use ikp_host::cuda::cudarc::driver::{sys, LaunchConfig, PushKernelArg};
use ikp_host::cuda::HostSession;

use super::{drv, median, Error, Gpu};
use crate::results::{Check, Status};

/// Ring capacity (a power of two).
pub const RING_CAP: u32 = 8;
/// Blocks of the ring launch (two lanes each).
pub const RING_BLOCKS: u32 = 4;
/// A record costs tens of cycles; a CALIB word past this is not a record's cost.
pub const CALIB_BOUND: u64 = 2_000;
/// Epochs of the graph check's buffer, and the replays launched into it.
pub const EPOCHS: u32 = 3;
/// Replays of the graph: one more than the epochs.
pub const REPLAYS: u32 = 4;
/// The graph kernel's instant payload.
pub const TAG: u32 = 7;
/// Blocks (two lanes each) of the graph and async-range launches.
pub const BLOCKS: u32 = 4;
/// Ranges each producer warp begins.
pub const RANGES: u32 = 6;

/// Instants lane (block, group) of the ring launch attempts: lane 0 fits, the others wrap
/// up to 3 times.
pub fn ring_attempts(block: u32, group: u32) -> u32 {
    3 + 5 * block + 11 * group
}

/// The ring launch's layout.
pub fn ring_layout() -> Layout {
    Layout {
        grid: [RING_BLOCKS, 1, 1],
        groups_per_block: 2,
        records_per_lane: RING_CAP,
        timer: TimerMode::Globaltimer,
        regions: vec!["mark".into()],
        overflow: Overflow::Ring,
        ..Layout::default()
    }
}

/// The graph check's layout.
pub fn epochs_layout() -> Layout {
    Layout {
        grid: [BLOCKS, 1, 1],
        groups_per_block: 2,
        records_per_lane: 4,
        regions: vec!["replay".into()],
        epochs: EPOCHS,
        ..Layout::default()
    }
}

/// The async-range launch's layout: region 0 is async.
pub fn ranges_layout() -> Layout {
    Layout {
        grid: [BLOCKS, 1, 1],
        groups_per_block: 2,
        records_per_lane: 2 * RANGES,
        regions: vec!["copy".into()],
        async_regions: vec![0],
        ..Layout::default()
    }
}

/// A segment's `(written, dropped)` (for a ring: present, overwritten) and whether it was
/// finalized.
fn counts(seg_words: &[u64], cap: u32) -> (u32, u32, bool) {
    let trailer = (seg::EVENTS + cap) as usize;
    let c = seg_words[trailer + seg::T_COUNT as usize];
    (
        c as u32,
        (c >> wire::COUNT_DROPPED_SHIFT) as u32,
        seg_words[trailer + seg::T_END_GT as usize] != 0,
    )
}

/// A ring segment's records, oldest first.
pub fn ring_order(seg_words: &[u64], cap: u32) -> Vec<wire::Record> {
    let (written, over, _) = counts(seg_words, cap);
    let events = &seg_words[seg::EVENTS as usize..][..cap as usize];
    let oldest = if over > 0 {
        ((written as u64 + over as u64) % cap as u64) as usize
    } else {
        0
    };
    (0..(written.min(cap)) as usize)
        .map(|i| wire::unpack_record(events[(oldest + i) % cap as usize]))
        .collect()
}

fn header(words: &[u64]) -> Result<Header, Vec<String>> {
    Header::parse(words).map_err(|e| vec![format!("the buffer's header does not parse: {e}")])
}

/// Every difference between the ring launch's buffer and what its lanes did.
pub fn ring_differences(words: &[u64]) -> Vec<String> {
    let h = match header(words) {
        Ok(h) => h,
        Err(e) => return e,
    };
    let mut bad = Vec::new();
    for l in 0..h.layout.lane_count() {
        let (b, g) = ((l / 2) as u32, (l % 2) as u32);
        let n = ring_attempts(b, g);
        let s = &words[h.lane_range(l)];
        let who = format!("lane {l} (block {b} group {g})");
        match wire::unpack_ids(s[seg::IDS as usize]) {
            Some(ids) if ids.flags & lane_flags::RING != 0 => {}
            other => bad.push(format!("{who}: IDS {other:?}, no RING flag")),
        }
        let (written, over, fin) = counts(s, RING_CAP);
        let want = n.min(RING_CAP);
        if !fin || (written, over) != (want, n - want) {
            bad.push(format!(
                "{who}: finalized {fin}, {written} present and {over} overwritten, \
                 expected {want} and {}",
                n - want
            ));
            continue;
        }
        let got: Vec<(Kind, u32)> = ring_order(s, RING_CAP)
            .iter()
            .map(|r| (r.kind, r.payload))
            .collect();
        let expect: Vec<(Kind, u32)> = (n - want..n).map(|i| (Kind::Instant, i)).collect();
        if got != expect {
            bad.push(format!(
                "{who}: records oldest first {got:?}, expected {expect:?}"
            ));
        }
    }
    bad
}

/// Every lane's CALIB word, and what is wrong with them.
pub fn calib_differences(words: &[u64]) -> (Vec<u64>, Vec<String>) {
    let h = match header(words) {
        Ok(h) => h,
        Err(e) => return (Vec::new(), e),
    };
    let calib: Vec<u64> = (0..h.layout.lane_count())
        .map(|l| words[h.lane_range(l).start + seg::CALIB as usize])
        .collect();
    let bad = calib
        .iter()
        .enumerate()
        .filter(|(_, &c)| c == 0 || c >= CALIB_BOUND)
        .map(|(l, c)| format!("lane {l}: CALIB {c} cycles, expected 1..{CALIB_BOUND}"))
        .collect();
    (calib, bad)
}

/// Every difference between the graph check's buffer and `replays` replays of one launch.
pub fn epochs_differences(words: &[u64], replays: u32) -> Vec<String> {
    let h = match header(words) {
        Ok(h) => h,
        Err(e) => return e,
    };
    let mut bad = Vec::new();
    let cap = h.layout.records_per_lane;
    for l in 0..h.layout.lane_count() {
        let counter = words[h.launch_counter(l)];
        if counter != replays as u64 {
            bad.push(format!(
                "lane {l}: launch counter {counter}, expected {replays}"
            ));
        }
        let mut previous_end = 0;
        for e in 0..EPOCHS {
            let s = &words[h.segment_range(e, l)];
            let who = format!("lane {l} epoch {e}");
            let ran = wire::unpack_ids(s[seg::IDS as usize]).is_some();
            if ran != (e < replays) {
                bad.push(format!("{who}: ran init {ran}, {replays} replays"));
                continue;
            }
            if !ran {
                continue;
            }
            let (written, dropped, fin) = counts(s, cap);
            let r = wire::unpack_record(s[seg::EVENTS as usize]);
            if !fin || (written, dropped) != (1, 0) || (r.kind, r.payload) != (Kind::Instant, TAG) {
                bad.push(format!(
                    "{who}: finalized {fin}, {written} written {dropped} dropped, first {r:?}"
                ));
            }
            let (start, end) = (
                s[seg::START_GT as usize],
                s[(seg::EVENTS + cap + seg::T_END_GT) as usize],
            );
            if start < previous_end {
                bad.push(format!(
                    "{who}: starts at {start} ns, before epoch {} ended ({previous_end} ns)",
                    e - 1
                ));
            }
            previous_end = end;
        }
    }
    bad
}

/// Every difference between the async-range launch's buffer and what its warps did; also
/// the shortest range in ns.
pub fn ranges_differences(words: &[u64]) -> (Vec<String>, Option<u64>) {
    let h = match header(words) {
        Ok(h) => h,
        Err(e) => return (e, None),
    };
    let mut bad = Vec::new();
    let mut shortest: Option<u64> = None;
    if !h.layout.is_async(0) {
        bad.push("region 0 is not marked async in the header".into());
    }
    let cap = h.layout.records_per_lane;
    // (token, kind) -> globaltimer, unwrapped against the lane start (ranges are short).
    let records = |l: u64| -> Vec<(Kind, u32, u64)> {
        let s = &words[h.lane_range(l)];
        let (written, _, _) = counts(s, cap);
        let start = s[seg::START_GT as usize];
        s[seg::EVENTS as usize..][..written.min(cap) as usize]
            .iter()
            .map(|&w| {
                let r = wire::unpack_record(w);
                let t = start + r.time_lo.wrapping_sub(start as u32) as u64;
                (r.kind, r.payload, t)
            })
            .collect()
    };
    for b in 0..BLOCKS as u64 {
        let (producer, consumer) = (records(2 * b), records(2 * b + 1));
        let tokens = |v: &[(Kind, u32, u64)], kind| -> Vec<u32> {
            let mut t: Vec<u32> = v.iter().filter(|r| r.0 == kind).map(|r| r.1).collect();
            t.sort_unstable();
            t
        };
        let expect: Vec<u32> = (0..RANGES).map(|k| (b as u32) << 8 | k).collect();
        let (begun, ended) = (tokens(&producer, Kind::Begin), tokens(&consumer, Kind::End));
        if begun != expect || ended != expect {
            bad.push(format!(
                "block {b}: tokens begun {begun:?} in warp 0, ended {ended:?} in warp 1, \
                 expected {expect:?} in both"
            ));
            continue;
        }
        for &(_, token, began) in producer.iter().filter(|r| r.0 == Kind::Begin) {
            let &(_, _, ended) = consumer
                .iter()
                .find(|r| r.0 == Kind::End && r.1 == token)
                .expect("checked above");
            if ended < began {
                bad.push(format!(
                    "block {b} token {token:#x}: ends at {ended} ns, before it began ({began})"
                ));
            }
            let d = ended.saturating_sub(began);
            shortest = Some(shortest.map_or(d, |s| s.min(d)));
        }
    }
    (bad, shortest)
}

/// Launches `ring_wrap` and returns the buffer.
fn ring_launch(gpu: &Gpu) -> Result<Vec<u64>, Error> {
    let f = gpu.function("ring_wrap")?;
    let mut session = gpu.session(ring_layout())?;
    let table: Vec<u32> = (0..RING_BLOCKS * 2)
        .map(|l| ring_attempts(l / 2, l % 2))
        .collect();
    let dev = gpu.upload(&table)?;
    let arg = session.kernel_arg();
    let cfg = LaunchConfig {
        grid_dim: (RING_BLOCKS, 1, 1),
        block_dim: (64, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(&dev).arg(&arg);
    // SAFETY: ring_wrap(const unsigned* attempts, ikp::Arg) with one entry per lane.
    unsafe { b.launch(cfg) }.map_err(drv("cuLaunchKernel (ring_wrap)"))?;
    read(&mut session)
}

fn read(session: &mut HostSession) -> Result<Vec<u64>, Error> {
    session
        .read_back()
        .map(<[u64]>::to_vec)
        .map_err(|e| e.to_string())
}

fn verdict(name: &str, bad: Vec<String>, pass: String) -> Check {
    if bad.is_empty() {
        Check::new(name, Status::Pass, true, pass)
    } else {
        Check::new(name, Status::Fail, true, bad.join("; "))
    }
}

/// The `ring` check.
pub fn ring_check(gpu: &Gpu) -> Result<Check, Error> {
    let words = ring_launch(gpu)?;
    let wraps: u32 = (0..RING_BLOCKS * 2)
        .map(|l| ring_attempts(l / 2, l % 2) / RING_CAP)
        .max()
        .unwrap_or(0);
    let pass = format!(
        "{} ring lanes of {RING_CAP} slots, up to {wraps} wraps: each kept exactly its newest \
         records, oldest first, and counted the overwritten",
        RING_BLOCKS * 2
    );
    Ok(verdict("ring", ring_differences(&words), pass).figure("max_wraps", wraps))
}

/// The `record-cost` check.
pub fn calib_check(gpu: &Gpu) -> Result<Check, Error> {
    let words = ring_launch(gpu)?;
    let (calib, bad) = calib_differences(&words);
    let mut v: Vec<f64> = calib.iter().map(|&c| c as f64).collect();
    let (lo, hi) = (
        calib.iter().min().copied().unwrap_or(0),
        calib.iter().max().copied().unwrap_or(0),
    );
    let med = median(&mut v);
    let pass =
        format!("every lane measured its record cost at init: {lo}..{hi} cycles, median {med}");
    Ok(verdict("record-cost", bad, pass)
        .figure("calib_min_cycles", lo)
        .figure("calib_median_cycles", med)
        .figure("calib_max_cycles", hi))
}

/// The `epochs/graph` check: one launch captured into a CUDA Graph on a new stream (the
/// legacy default stream cannot be captured), replayed [`REPLAYS`] times back to back.
pub fn epochs_check(gpu: &Gpu) -> Result<Check, Error> {
    let f = gpu.function("epoch_replay")?;
    let mut session = gpu.session(epochs_layout())?;
    let arg = session.kernel_arg();
    let stream = gpu.ctx.new_stream().map_err(drv("cuStreamCreate"))?;
    let cfg = LaunchConfig {
        grid_dim: (BLOCKS, 1, 1),
        block_dim: (64, 1, 1),
        shared_mem_bytes: 0,
    };
    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .map_err(drv("cuStreamBeginCapture"))?;
    let mut b = stream.launch_builder(&f);
    let tag = TAG;
    b.arg(&tag).arg(&arg);
    // SAFETY: epoch_replay(unsigned tag, ikp::Arg).
    let launched = unsafe { b.launch(cfg) }.map_err(drv("cuLaunchKernel (epoch_replay, captured)"));
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .map_err(drv("cuStreamEndCapture"))?;
    launched?;
    let graph = graph.ok_or("the capture produced no graph")?;
    for _ in 0..REPLAYS {
        graph.launch().map_err(drv("cuGraphLaunch"))?;
    }
    let words = read(&mut session)?;
    let pass = format!(
        "a CUDA Graph replayed {REPLAYS} times into {EPOCHS} epochs: every lane counted \
         {REPLAYS} launches, epochs 0..{EPOCHS} hold one launch each in launch order, the \
         last replay wrote nothing"
    );
    Ok(
        verdict("epochs/graph", epochs_differences(&words, REPLAYS), pass)
            .figure("replays", REPLAYS)
            .figure("epochs", EPOCHS),
    )
}

/// The `async-ranges` check.
pub fn ranges_check(gpu: &Gpu) -> Result<Check, Error> {
    let f = gpu.function("async_ranges")?;
    let mut session = gpu.session(ranges_layout())?;
    let arg = session.kernel_arg();
    let cfg = LaunchConfig {
        grid_dim: (BLOCKS, 1, 1),
        block_dim: (64, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = gpu.stream.launch_builder(&f);
    let n = RANGES;
    b.arg(&n).arg(&arg);
    // SAFETY: async_ranges(unsigned n, ikp::Arg).
    unsafe { b.launch(cfg) }.map_err(drv("cuLaunchKernel (async_ranges)"))?;
    let words = read(&mut session)?;
    let (bad, shortest) = ranges_differences(&words);
    let pass = format!(
        "{} ranges begun in warp 0 and ended in warp 1 of their block, each ended after it \
         began (shortest {} ns)",
        BLOCKS * RANGES,
        shortest.unwrap_or(0)
    );
    Ok(verdict("async-ranges", bad, pass).figure("ranges", BLOCKS * RANGES))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ikp_device::encoder::BufferWriter;

    fn ring_buffer() -> Vec<u64> {
        let mut w = BufferWriter::new(ring_layout()).unwrap();
        for l in 0..RING_BLOCKS * 2 {
            let mut lw = w.lane(l as u64);
            lw.init(l, l % 2, lane_flags::RING, 1_000, 0)
                .calibrate(40 + l);
            for i in 0..ring_attempts(l / 2, l % 2) {
                lw.instant(0, i, 2_000 + i as u64);
            }
            lw.finalize(9_000, 0);
        }
        w.into_words()
    }

    #[test]
    fn the_expected_ring_buffer_has_no_differences_and_a_swap_is_caught() {
        let mut words = ring_buffer();
        assert_eq!(ring_differences(&words), Vec::<String>::new());
        let (calib, bad) = calib_differences(&words);
        assert!(bad.is_empty() && calib == (40..48).collect::<Vec<u64>>());
        // Two slots of lane 7 swapped: the order is wrong.
        let h = Header::parse(&words).unwrap();
        let at = h.lane_range(7).start + seg::EVENTS as usize;
        words.swap(at, at + 1);
        let d = ring_differences(&words);
        assert!(d.iter().any(|m| m.starts_with("lane 7")), "{d:?}");
        // A zero CALIB word.
        words[h.lane_range(2).start + seg::CALIB as usize] = 0;
        assert!(calib_differences(&words).1[0].starts_with("lane 2: CALIB 0"));
    }

    fn epochs_buffer(replays: u32) -> Vec<u64> {
        let mut w = BufferWriter::new(epochs_layout()).unwrap();
        for r in 0..replays {
            for l in 0..BLOCKS as u64 * 2 {
                let t = 10_000 * (r as u64 + 1);
                if let Some(mut lw) = w.launch(l) {
                    lw.init(0, 0, 0, t, 0);
                    lw.instant(0, TAG, t + 5);
                    lw.finalize(t + 10, 0);
                }
            }
        }
        w.into_words()
    }

    #[test]
    fn replays_fill_one_epoch_each_and_a_missing_replay_is_caught() {
        assert_eq!(
            epochs_differences(&epochs_buffer(4), 4),
            Vec::<String>::new()
        );
        let d = epochs_differences(&epochs_buffer(2), 4);
        assert!(d.iter().any(|m| m.contains("launch counter 2")), "{d:?}");
        assert!(
            d.iter().any(|m| m.contains("epoch 2: ran init false")),
            "{d:?}"
        );
    }

    #[test]
    fn ranges_across_lanes_pass_and_a_lost_end_is_caught() {
        let build = |lose: bool| {
            let mut w = BufferWriter::new(ranges_layout()).unwrap();
            for b in 0..BLOCKS {
                {
                    let mut p = w.lane(2 * b as u64);
                    p.init(0, 0, 0, 1_000, 0);
                    for k in 0..RANGES {
                        p.range_begin(0, b << 8 | k, 1_100 + k as u64);
                    }
                    p.finalize(2_000, 0);
                }
                let mut c = w.lane(2 * b as u64 + 1);
                c.init(0, 1, 0, 1_000, 0);
                for k in (0..RANGES).rev() {
                    if !(lose && b == 2 && k == 3) {
                        c.range_end(0, b << 8 | k, 1_500 + k as u64);
                    }
                }
                c.finalize(2_000, 0);
            }
            w.into_words()
        };
        let (bad, shortest) = ranges_differences(&build(false));
        assert_eq!(bad, Vec::<String>::new());
        assert_eq!(shortest, Some(400));
        let (bad, _) = ranges_differences(&build(true));
        assert!(bad.len() == 1 && bad[0].starts_with("block 2"), "{bad:?}");
    }
}
