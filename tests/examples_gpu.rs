//! Runs every example end to end on a GPU and checks the decoded trace: every lane
//! finalized, nothing dropped or unpaired, the expected spans, payloads and counters, and
//! the compute region dominating where the kernel says it should. The GPU tests are
//! skipped (notice on stderr) without a GPU; `IKP_GPU_TESTS=1` turns the skip into a
//! failure.
//!
//! The checks themselves run without a GPU too: on buffers the reference encoder writes
//! the way each kernel records (every stamp, the lanes' 64-bit start and end included, on
//! the coarse timer some GPUs have, so ties are everywhere), and on broken variants of them
//! that the checks must reject.
use crate::support::gpu_or_skip;
use crate::{load_compute_store, persistent, warp_specialized};
use ikp::device::encoder::BufferWriter;
use ikp::host::TraceWriteOptions;
use ikp::host::{decode as decode_words, DecodeOptions};
use ikp::host::{Lane, Trace};

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// Nothing lost and nothing out of order (the checks every GPU trace of the bundle gets,
/// `ikp_gpucheck::verify`), from the expected number of lanes.
fn clean(trace: &Trace, lanes: usize) -> Result<(), String> {
    ensure!(
        trace.lanes.len() == lanes,
        "{} lanes recorded, expected {lanes}",
        trace.lanes.len()
    );
    ikp_gpucheck::verify::clean_and_ordered(trace)
}

/// Total span time of `region` in `lane`.
fn region_time(trace: &Trace, lane: &Lane, region: u16) -> u64 {
    lane.spans
        .clone()
        .filter(|&i| trace.spans.region[i] == region)
        .map(|i| trace.spans.dur(i))
        .sum()
}

/// (payload, region, depth) of every span of `lane`, sorted: the order of spans that
/// start in the same timer tick is not defined, so checks compare sorted lists.
fn spans_of(trace: &Trace, lane: &Lane) -> Vec<(u32, u16, u16)> {
    let mut v: Vec<_> = lane
        .spans
        .clone()
        .map(|i| {
            (
                trace.spans.payload[i],
                trace.spans.region[i],
                trace.spans.depth[i],
            )
        })
        .collect();
    v.sort_unstable();
    v
}

fn check_load_compute_store(trace: &Trace) -> Result<(), String> {
    use load_compute_store as ex;
    clean(trace, ex::BLOCKS as usize)?;
    ensure!(
        trace.names.regions == ex::REGIONS,
        "names {:?}",
        trace.names.regions
    );
    for lane in &trace.lanes {
        let spans = spans_of(trace, lane);
        ensure!(
            spans == [(0, 0, 0), (0, 1, 0), (0, 2, 0)],
            "lane {}: spans {spans:?}",
            lane.id
        );
        let compute = region_time(trace, lane, 1);
        let all: u64 = (0..3).map(|r| region_time(trace, lane, r)).sum();
        ensure!(
            compute * 10 >= all * 7,
            "lane {}: compute {compute} ns of {all} ns, expected it to dominate",
            lane.id
        );
    }
    Ok(())
}

fn check_warp_specialized(trace: &Trace) -> Result<(), String> {
    use warp_specialized as ex;
    clean(trace, (ex::BLOCKS * 2) as usize)?;
    ensure!(
        trace.names.counters == ex::COUNTERS,
        "counters {:?}",
        trace.names.counters
    );
    let (full, empty) = (0usize, 1usize);
    let mut producer_waits = 0u64;
    for (pos, lane) in trace.lanes.iter().enumerate() {
        ensure!(
            lane.warp == Some(lane.group),
            "lane {}: leader warp {:?}",
            lane.id,
            lane.warp
        );
        let region = if lane.group == ex::PRODUCER { 0 } else { 1 };
        let expect: Vec<(u32, u16, u16)> = (0..ex::TILES).map(|t| (t, region, 0)).collect();
        let spans = spans_of(trace, lane);
        ensure!(spans == expect, "lane {}: spans {spans:?}", lane.id);
        let counters = trace.lane_counters(pos);
        let samples: Vec<usize> = lane.samples.clone().collect();
        if lane.group == ex::PRODUCER {
            ensure!(
                counters[full] == 0,
                "producer lane {} counted full-slot waits",
                lane.id
            );
            ensure!(samples.is_empty(), "producer lane {} has samples", lane.id);
            producer_waits += counters[empty];
        } else {
            ensure!(
                counters[empty] == 0,
                "consumer lane {} counted empty-slot waits",
                lane.id
            );
            ensure!(
                samples.len() as u32 == ex::TILES,
                "consumer lane {}: {} samples, one per tile expected",
                lane.id,
                samples.len()
            );
            ensure!(
                samples
                    .iter()
                    .all(|&i| trace.samples.counter[i] == full as u16),
                "consumer lane {}: samples of the wrong counter",
                lane.id
            );
            let sampled: u64 = samples.iter().map(|&i| trace.samples.value[i] as u64).sum();
            ensure!(
                sampled == counters[full],
                "consumer lane {}: samples add to {sampled}, the total is {}",
                lane.id,
                counters[full]
            );
            let consume = region_time(trace, lane, 1);
            let life = lane.end - lane.start;
            ensure!(
                consume * 10 >= life * 7,
                "consumer lane {}: consume {consume} ns of {life} ns, expected it to dominate",
                lane.id
            );
        }
    }
    ensure!(
        producer_waits > 0,
        "producers never waited for a free slot although consumers are much slower"
    );
    Ok(())
}

fn check_persistent(trace: &Trace) -> Result<(), String> {
    use persistent as ex;
    let blocks = trace.source.grid[0];
    let (_, tiles) = ex::shape(blocks);
    clean(trace, blocks as usize)?;
    let mut seen = Vec::new();
    let (mut tile_time, mut compute_time) = (0u64, 0u64);
    for lane in &trace.lanes {
        let mine: Vec<u32> = (lane.block..tiles).step_by(blocks as usize).collect();
        // Per tile: the tile span (depth 0) with load, compute, store nested in it.
        let expect: Vec<(u32, u16, u16)> = mine
            .iter()
            .flat_map(|&t| [(t, 0, 0), (t, 1, 1), (t, 2, 1), (t, 3, 1)])
            .collect();
        let spans = spans_of(trace, lane);
        ensure!(
            spans == expect,
            "block {}: spans {spans:?}, expected {expect:?}",
            lane.block
        );
        seen.extend(mine);
        tile_time += region_time(trace, lane, 0);
        compute_time += region_time(trace, lane, 2);
    }
    seen.sort_unstable();
    ensure!(
        seen == (0..tiles).collect::<Vec<_>>(),
        "tiles run: {seen:?}"
    );
    ensure!(
        compute_time * 10 >= tile_time * 7,
        "compute {compute_time} ns of {tile_time} ns of tile time, expected it to dominate"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// On the GPU.

#[test]
fn load_compute_store_runs_end_to_end() {
    let Some(ctx) = gpu_or_skip() else {
        return;
    };
    let session = load_compute_store::run(&ctx).unwrap_or_else(|e| panic!("{e}"));
    let trace = session.decode().unwrap();
    check_load_compute_store(&trace).unwrap_or_else(|e| panic!("load_compute_store: {e}"));

    // The session writes the Chrome trace and its summary, of the trace just checked.
    let dir = tempfile::tempdir().unwrap();
    let out = session
        .write_trace(dir.path().join("lcs.json"), &TraceWriteOptions::default())
        .unwrap();
    let summary = std::fs::read(out.summary.as_ref().expect("a summary by default")).unwrap();
    let chrome = std::fs::read(&out.chrome).unwrap();
    check_written(&out.trace, &chrome, &summary).unwrap_or_else(|e| panic!("lcs.json: {e}"));
}

/// The Chrome trace and the summary written from `trace` (load_compute_store's): one
/// event per span, named after its region, in well-formed Chrome JSON; the compute
/// region once per block in the summary.
fn check_written(trace: &Trace, chrome: &[u8], summary: &[u8]) -> Result<(), String> {
    let chrome: serde_json::Value =
        serde_json::from_slice(chrome).map_err(|e| format!("Chrome trace: {e}"))?;
    let events = chrome["traceEvents"]
        .as_array()
        .ok_or("the Chrome trace has no traceEvents")?;
    // A span is one complete event (`X`, the default) or a begin / end pair; each lane's
    // lifetime (init to finalize) is one more, on its own row, apart from the spans.
    let lifetime =
        |e: &serde_json::Value| e["name"] == "lifetime" && e["args"]["finalized"].is_boolean();
    let opened = |name: Option<&str>| {
        events
            .iter()
            .filter(|e| (e["ph"] == "X" || e["ph"] == "B") && !lifetime(e))
            .filter(|e| name.is_none_or(|n| e["name"] == n))
            .count()
    };
    let lifetimes = events
        .iter()
        .filter(|e| (e["ph"] == "X" || e["ph"] == "B") && lifetime(e))
        .count();
    let (begins, ends) = (
        events.iter().filter(|e| e["ph"] == "B").count(),
        events.iter().filter(|e| e["ph"] == "E").count(),
    );
    let spans = trace.spans.len();
    ensure!(spans > 0, "no spans");
    ensure!(
        opened(None) == spans && begins == ends,
        "{} spans written ({begins} begins, {ends} ends) for {spans} spans",
        opened(None)
    );
    ensure!(
        lifetimes == trace.lanes.len(),
        "{lifetimes} lane lifetimes written for {} lanes",
        trace.lanes.len()
    );
    for (id, name) in trace.names.regions.iter().enumerate() {
        let want = trace
            .spans
            .region
            .iter()
            .filter(|&&r| r as usize == id)
            .count();
        let got = opened(Some(name));
        ensure!(
            got == want,
            "{got} spans named {name} written, {want} in the trace"
        );
    }
    let summary: serde_json::Value =
        serde_json::from_slice(summary).map_err(|e| format!("summary: {e}"))?;
    let compute = summary["regions"]
        .as_array()
        .ok_or("the summary has no regions")?
        .iter()
        .find(|r| r["name"] == "compute")
        .ok_or("no compute region in the summary")?;
    ensure!(
        compute["count"] == load_compute_store::BLOCKS,
        "compute count {} for {} blocks",
        compute["count"],
        load_compute_store::BLOCKS
    );
    Ok(())
}

#[test]
fn warp_specialized_runs_end_to_end() {
    let Some(ctx) = gpu_or_skip() else {
        return;
    };
    let session = warp_specialized::run(&ctx).unwrap_or_else(|e| panic!("{e}"));
    let trace = session.decode().unwrap();
    check_warp_specialized(&trace).unwrap_or_else(|e| panic!("warp_specialized: {e}"));
}

#[test]
fn persistent_runs_end_to_end() {
    let Some(ctx) = gpu_or_skip() else {
        return;
    };
    let session = persistent::run(&ctx).unwrap_or_else(|e| panic!("{e}"));
    let trace = session.decode().unwrap();
    check_persistent(&trace).unwrap_or_else(|e| panic!("persistent: {e}"));
}

// ---------------------------------------------------------------------------------------
// The checks, without a GPU: buffers written as each kernel records, on a timer with a
// 1 us tick (ties everywhere), then broken on purpose.

const TICK: u64 = 1000;
const T0: u64 = 1_700_000_000_000;

fn tick(t: u64) -> u64 {
    t / TICK * TICK
}

fn decode(w: BufferWriter) -> Trace {
    decode_words(&w.into_words(), &DecodeOptions::default()).unwrap()
}

/// `mutate(block, lane writer)` may break one lane; `None` records it faithfully.
fn synthetic_lcs(break_lane: Option<fn(&mut ikp::device::encoder::LaneWriter<'_>)>) -> Trace {
    let mut w = BufferWriter::new(load_compute_store::layout()).unwrap();
    for b in 0..load_compute_store::BLOCKS as u64 {
        let mut l = w.lane(b);
        let s = T0 + 300 * b;
        l.init(b as u32, 0, 2, tick(s), 0);
        l.begin(0, 0, tick(s + 100)).end(0, 0, tick(s + 600));
        l.begin(1, 0, tick(s + 600)).end(1, 0, tick(s + 9_300));
        l.begin(2, 0, tick(s + 9_300));
        match (b, break_lane) {
            (2, Some(f)) => f(&mut l),
            _ => {
                l.end(2, 0, tick(s + 9_400)).finalize(tick(s + 9_500), 0);
            }
        }
    }
    decode(w)
}

fn synthetic_ws(consumer_compute: u64, producer_waits: bool) -> Trace {
    use warp_specialized as ex;
    let mut w = BufferWriter::new(ex::layout()).unwrap();
    for b in 0..ex::BLOCKS {
        let s = T0 + 500 * b as u64;
        {
            let mut p = w.lane((b * 2) as u64);
            p.init(b, 0, 0, tick(s), 0);
            for t in 0..ex::TILES as u64 {
                let at = s + t * consumer_compute.max(700);
                p.begin(0, t as u32, tick(at))
                    .end(0, t as u32, tick(at + 600));
            }
            if producer_waits {
                p.counter_add(1, 1234);
            }
            p.finalize(tick(s + ex::TILES as u64 * consumer_compute + 1000), 0);
        }
        let mut c = w.lane((b * 2 + 1) as u64);
        c.init(b, 1, 0, tick(s), 0);
        let mut total = 0;
        for t in 0..ex::TILES as u64 {
            let spins = if t == 0 { 40 } else { 0 };
            total += spins as u64;
            c.counter_sample(0, spins);
            let at = s + 700 + t * consumer_compute;
            c.begin(1, t as u32, tick(at))
                .end(1, t as u32, tick(at + consumer_compute));
        }
        c.counter_add(0, total);
        c.finalize(tick(s + 700 + ex::TILES as u64 * consumer_compute + 100), 0);
    }
    decode(w)
}

fn synthetic_persistent(blocks: u32, skip_tile: Option<u32>) -> Trace {
    use persistent as ex;
    let (blocks, tiles) = ex::shape(blocks);
    let mut w = BufferWriter::new(ex::layout(blocks, tiles)).unwrap();
    for b in 0..blocks {
        let mut l = w.lane(b as u64);
        let mut at = T0 + 100 * b as u64;
        l.init(b, 0, 0, tick(at), 0);
        for t in (b..tiles).step_by(blocks as usize) {
            if Some(t) == skip_tile {
                continue;
            }
            let work = 3_000 * (1 + (t % 4) as u64);
            let p = t;
            l.begin(0, p, tick(at));
            l.begin(1, p, tick(at)).end(1, p, tick(at + 400));
            l.begin(2, p, tick(at + 400))
                .end(2, p, tick(at + 400 + work));
            l.begin(3, p, tick(at + 400 + work))
                .end(3, p, tick(at + 500 + work));
            l.end(0, p, tick(at + 500 + work));
            at += 600 + work;
        }
        l.finalize(tick(at), 0);
    }
    decode(w)
}

/// `t` written as the session writes it: (Chrome trace, summary).
fn written(t: &Trace) -> (Vec<u8>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    ikp::host::write_trace(&path, t, &TraceWriteOptions::default()).unwrap();
    let summary = std::fs::read(ikp::host::summary_path(&path)).unwrap();
    (std::fs::read(&path).unwrap(), summary)
}

#[test]
fn checks_accept_traces_recorded_as_the_kernels_record() {
    let lcs = synthetic_lcs(None);
    check_load_compute_store(&lcs).unwrap();
    let (chrome, summary) = written(&lcs);
    check_written(&lcs, &chrome, &summary).unwrap();
    check_warp_specialized(&synthetic_ws(5_000, true)).unwrap();
    check_persistent(&synthetic_persistent(7, None)).unwrap();
    check_persistent(&synthetic_persistent(1, None)).unwrap();
}

#[test]
fn checks_reject_lost_records_and_wrong_shapes() {
    let err = |r: Result<(), String>| r.expect_err("a broken trace passed the checks");
    // A lane that never finalizes, and one whose last end was dropped.
    let e = err(check_load_compute_store(&synthetic_lcs(Some(|_l| {}))));
    assert!(e.contains("never finalized"), "{e}");
    let e = err(check_load_compute_store(&synthetic_lcs(Some(|l| {
        l.finalize(T0 + 20_000, 0);
    }))));
    assert!(e.contains("unmatched begins") || e.contains("spans"), "{e}");
    // Consumers that do not dominate their lane; producers that never wait.
    let e = err(check_warp_specialized(&synthetic_ws(100, true)));
    assert!(e.contains("expected it to dominate"), "{e}");
    let e = err(check_warp_specialized(&synthetic_ws(5_000, false)));
    assert!(e.contains("never waited"), "{e}");
    // A tile that was never run.
    let e = err(check_persistent(&synthetic_persistent(7, Some(9))));
    assert!(e.contains("block 2: spans"), "{e}");
    // Written files that are not those of the trace: another trace's, or cut short.
    let lcs = synthetic_lcs(None);
    let (chrome, summary) = written(&lcs);
    let (other, _) = written(&synthetic_ws(5_000, true));
    let e = err(check_written(&lcs, &other, &summary));
    assert!(e.contains("spans"), "{e}");
    let e = err(check_written(&lcs, &chrome[..chrome.len() / 2], &summary));
    assert!(e.contains("Chrome trace"), "{e}");
    let e = err(check_written(&lcs, &chrome, b"{\"regions\": []}"));
    assert!(e.contains("no compute region"), "{e}");
}
