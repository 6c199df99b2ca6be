//! HostSession on a real GPU: header upload, kernel argument, launch, read-back, the raw
//! file, decoding, trace writing and reset. Skipped (with a notice on stderr) when there is
//! no GPU; `IKP_GPU_TESTS=1` turns the skip into a failure.

use std::sync::Arc;

use crate::session_support::gpu_or_skip;
use ikp_device::{Layout, TimerMode};
use ikp_host::cuda::cudarc::driver::{
    CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg,
};
use ikp_host::Trace;
use ikp_host::{cuda::nvrtc::Compiler, Arch};
use ikp_host::{
    cuda::{HostSession, SessionError},
    TraceWriteOptions,
};

/// Two lanes per block (one per warp); each leader records `reps` spans of region 0 with
/// the repetition as payload, one instant, and adds `blockIdx.x` to counter 0.
const KERNEL: &str = r#"
#include "ikp.cuh"
extern "C" __global__ void session_probe(unsigned reps, ikp::Arg prof) {
  ikp::Lane<> lane(prof, threadIdx.x / 32u, threadIdx.x % 32u == 0u);
  for (unsigned r = 0; r < reps; ++r) {
    IKP_SCOPE(lane, 0u, r);
    __nanosleep(100);
  }
  lane.instant(1u, 42u);
  lane.count(0u, blockIdx.x);
  lane.finalize();
}

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Keeps one thread busy for `ns` nanoseconds of %globaltimer.
extern "C" __global__ void busy(unsigned long long ns) {
  const unsigned long long t0 = now_ns();
  while (now_ns() - t0 < ns) {
  }
}

/// Clock mode: each leader records `reps` spans of region 0, each around a spin of `ns`
/// nanoseconds of %globaltimer, stamped with %clock (converted to ns by the decoder).
extern "C" __global__ void clock_probe(unsigned reps, unsigned long long ns, ikp::Arg prof) {
  ikp::Lane<ikp::Fence::None, ikp::Timer::Clock> lane(prof, threadIdx.x / 32u,
                                                      threadIdx.x % 32u == 0u);
  for (unsigned r = 0; r < reps; ++r) {
    lane.begin(0u, r);
    if (lane.active()) {
      const unsigned long long t0 = now_ns();
      while (now_ns() - t0 < ns) {
      }
    }
    lane.end(0u, r);
  }
  lane.finalize();
}
"#;

const BLOCKS: u32 = 6;
const REPS: u32 = 5;

fn layout(records_per_lane: u32) -> Layout {
    Layout {
        grid: [3, 2, 1],
        groups_per_block: 2,
        records_per_lane,
        timer: TimerMode::Globaltimer,
        regions: vec!["sleep".into(), "mark".into()],
        counters: vec!["block_sum".into()],
        ..Layout::default()
    }
}

fn kernel(ctx: &Arc<CudaContext>, name: &str) -> CudaFunction {
    Compiler::new(Arch::of_device(ctx).unwrap())
        .cubin("session_probe.cu", KERNEL)
        .unwrap_or_else(|e| panic!("{e}"))
        .load(ctx)
        .unwrap()
        .load_function(name)
        .unwrap()
}

fn launch(ctx: &Arc<CudaContext>, session: &HostSession, reps: u32) {
    launch_on(ctx, session, session.stream(), reps)
}

/// Launches `session_probe` on `stream`, which need not be the session's.
fn launch_on(ctx: &Arc<CudaContext>, session: &HostSession, stream: &Arc<CudaStream>, reps: u32) {
    let f = kernel(ctx, "session_probe");
    let arg = session.kernel_arg();
    let cfg = LaunchConfig {
        grid_dim: (3, 2, 1),
        block_dim: (64, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = stream.launch_builder(&f);
    b.arg(&reps).arg(&arg);
    // SAFETY: (unsigned, ikp::Arg) is the kernel's signature.
    unsafe { b.launch(cfg) }.unwrap();
}

#[test]
fn session_uploads_header_and_zeroes_the_lanes() {
    let Some(ctx) = gpu_or_skip() else {
        return;
    };
    let stream = ctx.default_stream();
    let l = layout(2 * REPS + 1);
    let mut s = HostSession::new(&stream, l.clone()).unwrap();
    assert!(matches!(s.decode(), Err(SessionError::NotReadBack)));
    assert!(matches!(
        s.save_buffer("/nonexistent/x"),
        Err(SessionError::NotReadBack)
    ));
    // The session's layout is the one given plus the clock sync it took.
    assert_eq!(
        s.layout(),
        &Layout {
            clock_sync: s.clock_sync(),
            ..l.clone()
        }
    );
    let header = s.layout().header_words().unwrap();
    assert_eq!(s.buffer_words() as u64, l.buffer_words());
    let arg = s.kernel_arg();
    assert_ne!(arg.buf, 0);
    // Wire v2: the lanes' launch counters sit between the header and the first segment.
    assert_eq!(arg.lane_count, BLOCKS * 2);
    assert_eq!(
        arg.lane_base as usize,
        header.len() + arg.lane_count as usize
    );
    assert_eq!(u64::from(arg.lane_base), l.lane_base());
    let words = s.read_back().unwrap().to_vec();
    assert_eq!(&words[..header.len()], &header[..]);
    assert!(
        words[header.len()..].iter().all(|&w| w == 0),
        "lanes not zeroed"
    );
}

#[test]
fn session_round_trip_launch_read_back_decode_and_write() {
    let Some(ctx) = gpu_or_skip() else {
        return;
    };
    let stream = ctx.default_stream();
    let mut s = HostSession::new(&stream, layout(2 * REPS + 1)).unwrap();
    launch(&ctx, &s, REPS);
    s.read_back().unwrap();
    let trace = s.decode().unwrap();
    assert_eq!(trace.lanes.len() as u32, BLOCKS * 2);
    assert_eq!(trace.dropped(), 0);
    assert_eq!(trace.diagnostics.unfinalized_lanes, 0);
    assert!(
        trace.diagnostics.unmatched_begin.is_empty() && trace.diagnostics.unmatched_end.is_empty()
    );
    for (pos, lane) in trace.lanes.iter().enumerate() {
        assert!(lane.finalized, "lane {} not finalized", lane.id);
        assert_eq!(
            lane.warp,
            Some(lane.group),
            "leader warp of lane {}",
            lane.id
        );
        // Sorted: spans starting in the same timer tick have no defined order.
        let mut payloads: Vec<u32> = lane.spans.clone().map(|i| trace.spans.payload[i]).collect();
        payloads.sort_unstable();
        assert_eq!(payloads, (0..REPS).collect::<Vec<_>>(), "lane {}", lane.id);
        assert_eq!(lane.instants.len(), 1);
        assert_eq!(
            trace.lane_counters(pos),
            [lane.block as u64 % 3],
            "counter of lane {}",
            lane.id
        );
    }

    // The raw file decodes to the same trace.
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("probe.ikp");
    s.save_buffer(&raw).unwrap();
    let from_file = ikp_host::decode::load(&raw, &Default::default()).unwrap();
    assert_eq!(from_file, trace);

    // Chrome trace + summary + block distributions.
    let opts = TraceWriteOptions {
        block_dists: Some(Default::default()),
        ..TraceWriteOptions::default()
    };
    let out = s.write_trace(dir.path().join("probe.json"), &opts).unwrap();
    let summary = out.summary.expect("summary written by default");
    assert!(out.chrome.is_file() && summary.is_file());
    assert!(out
        .block_dists
        .expect("asked for")
        .join("index.json")
        .is_file());
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert!(json.to_string().contains("\"sleep\""), "{json}");

    // Perfetto: the file holds the same launch the library writes from the trace.
    let pf = dir.path().join("probe.trace");
    let (stats, written) = s.write_perfetto(&pf, &Default::default()).unwrap();
    assert_eq!(written, trace);
    assert_eq!(stats.slices, trace.spans.len() as u64);
    let mut want = Vec::new();
    ikp_host::write_perfetto(
        &mut want,
        &[ikp_host::Launch::new("probe.trace", &trace)],
        &Default::default(),
    )
    .unwrap();
    assert!(std::fs::read(&pf).unwrap() == want, "probe.trace differs");
}

#[test]
fn reset_clears_the_previous_launch_and_full_lanes_count_drops() {
    let Some(ctx) = gpu_or_skip() else {
        return;
    };
    let stream = ctx.default_stream();
    // Room for 4 records: 2 * REPS + 1 are attempted.
    let mut s = HostSession::new(&stream, layout(4)).unwrap();
    launch(&ctx, &s, REPS);
    s.read_back().unwrap();
    let trace = s.decode().unwrap();
    assert_eq!(trace.dropped(), (BLOCKS * 2 * (2 * REPS + 1 - 4)) as u64);
    assert!(trace.lanes.iter().all(|l| l.finalized && l.written == 4));

    s.reset().unwrap();
    assert!(s.words().is_none(), "reset keeps a stale host copy");
    let header = s.layout().header_words().unwrap();
    let words = s.read_back().unwrap();
    assert_eq!(&words[..header.len()], &header[..]);
    assert!(words[header.len()..].iter().all(|&w| w == 0));

    // The next launch decoded into the previous trace equals a fresh decode of it.
    let mut reused = trace;
    launch(&ctx, &s, 1);
    s.read_back().unwrap();
    s.decode_into(&mut reused).unwrap();
    assert_eq!(reused, s.decode().unwrap());
    assert_eq!(reused.spans.len(), BLOCKS as usize * 2);
}

/// The session takes a host clock sync at `new` and again at `reset` (in the header, so
/// in the decoded trace), within a plausible round trip, and none when asked not to.
#[test]
fn session_takes_a_host_clock_sync_at_new_and_reset() {
    use ikp_host::cuda::SessionOptions;
    use ikp_host::host_now;
    let Some(ctx) = gpu_or_skip() else {
        return;
    };
    let stream = ctx.default_stream();
    let t0 = host_now();
    let mut s = HostSession::new(&stream, layout(4)).unwrap();
    let t1 = host_now();
    let a = s.clock_sync().expect("a clock sync");
    assert_eq!(a.samples, 16);
    assert!(a.round_trip_ns > 0 && a.round_trip_ns < 10_000_000, "{a:?}");
    assert!((t0.realtime_ns..=t1.realtime_ns).contains(&a.host_realtime_ns));
    assert!((t0.monotonic_ns..=t1.monotonic_ns).contains(&a.host_monotonic_ns));
    launch(&ctx, &s, 1);
    s.read_back().unwrap();
    let trace = s.decode().unwrap();
    assert_eq!(trace.source.clock_sync, Some(a));
    // Every span, mapped to the host's realtime, lies between the sync and now.
    let now = host_now();
    for &b in &trace.spans.begin {
        let r = a.device_to_realtime(b);
        let slack = a.round_trip_ns as u64 + 2_000;
        assert!(r + slack >= a.host_realtime_ns && r <= now.realtime_ns + slack);
    }
    s.reset().unwrap();
    let b = s.clock_sync().unwrap();
    assert!(
        b.host_monotonic_ns > a.host_monotonic_ns,
        "reset took a new sync"
    );
    let off = SessionOptions {
        clock_sync_samples: 0,
    };
    let plain = HostSession::with_options(&stream, layout(4), off).unwrap();
    assert_eq!(plain.clock_sync(), None);
}

/// Every lane finalized, nothing dropped or unpaired, `REPS` spans of region 0 per lane.
fn assert_probe_trace(trace: &Trace) {
    assert_eq!(trace.lanes.len() as u32, BLOCKS * 2);
    assert_eq!(trace.dropped(), 0);
    assert!(trace.lanes.iter().all(|l| l.finalized), "unfinalized lanes");
    assert!(
        trace.diagnostics.unmatched_begin.is_empty() && trace.diagnostics.unmatched_end.is_empty()
    );
    for lane in &trace.lanes {
        assert_eq!(lane.spans.len() as u32, REPS, "spans of lane {}", lane.id);
    }
}

#[test]
fn a_launch_on_another_stream_right_after_reset_sees_the_prepared_buffer() {
    let Some(ctx) = gpu_or_skip() else {
        return;
    };
    let (own, other) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let mut s = HostSession::new(&own, layout(2 * REPS + 1)).unwrap();
    // Work queued ahead on the session's stream delays its zeroing and header upload by
    // 50 ms; `reset` must not return before they are done, or the probe launched on the
    // other stream records into a buffer that is zeroed afterwards.
    let busy = kernel(&ctx, "busy");
    let ns: u64 = 50_000_000;
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = own.launch_builder(&busy);
    b.arg(&ns);
    // SAFETY: `busy` takes one unsigned long long.
    unsafe { b.launch(cfg) }.unwrap();
    s.reset().unwrap();
    launch_on(&ctx, &s, &other, REPS);
    s.read_back().unwrap();
    assert_probe_trace(&s.decode().unwrap());
}

#[test]
fn clock_mode_converts_cycles_to_the_nanoseconds_they_took() {
    let Some(ctx) = gpu_or_skip() else {
        return;
    };
    let stream = ctx.default_stream();
    let mut l = layout(2 * REPS);
    l.timer = TimerMode::Clock;
    let mut s = HostSession::new(&stream, l).unwrap();
    let f = kernel(&ctx, "clock_probe");
    let ns: u64 = 20_000;
    let arg = s.kernel_arg();
    let cfg = LaunchConfig {
        grid_dim: (3, 2, 1),
        block_dim: (64, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = stream.launch_builder(&f);
    b.arg(&REPS).arg(&ns).arg(&arg);
    // SAFETY: (unsigned, unsigned long long, ikp::Arg) is the kernel's signature.
    unsafe { b.launch(cfg) }.unwrap();
    s.read_back().unwrap();
    let trace = s.decode().unwrap();
    assert_eq!(trace.source.timer, TimerMode::Clock);
    assert_probe_trace(&trace);
    // Each span waited `ns` of %globaltimer, whose reads are quantized to its tick (up to
    // 1 us on some GPUs): the converted duration is `ns` within a tick plus 10 %.
    let (lo, hi) = (ns - 1_000, ns + 1_000 + ns / 10);
    for i in 0..trace.spans.len() {
        let d = trace.spans.dur(i);
        assert!(
            (lo..=hi).contains(&d),
            "span {i} of lane {} lasted {d} ns in clock mode, expected {ns} ns ({lo}..={hi})",
            trace.spans.lane[i]
        );
    }
}

#[test]
fn the_gpu_tests_kernels_compile_for_ampere_and_hopper_without_a_gpu() {
    // The GPU tests above only compile their kernels on a GPU machine; compile them here
    // so a mistake shows up before one is lent.
    ikp_host::cuda::nvrtc::probe().unwrap_or_else(|e| panic!("{e}"));
    for arch in [Arch::new(8, 0), Arch::new(9, 0)] {
        let cubin = Compiler::new(arch)
            .cubin("session_probe.cu", KERNEL)
            .unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert!(!cubin.bytes().is_empty());
        let ptx = Compiler::new(arch).ptx("session_probe.cu", KERNEL).unwrap();
        let text = ptx.ptx().unwrap();
        for entry in ["session_probe", "busy", "clock_probe"] {
            assert!(
                text.contains(&format!(".entry {entry}(")),
                "{arch}: no {entry}"
            );
        }
        // Clock mode stamps records with %clock.
        let clock_probe = text.split(".entry clock_probe(").nth(1).unwrap();
        assert!(
            clock_probe.contains("%clock;"),
            "{arch}: clock_probe lacks %clock"
        );
    }
}

/// A kernel nobody instrumented (see the file).
const PLAIN: &str = include_str!("../kernels/plain_loops.cu");

/// Runs `plain_loops` from `ptx` over `BLOCKS_P` blocks; returns the output.
fn run_plain(ctx: &Arc<CudaContext>, ptx: &str, attach: Option<(&HostSession, &str)>) -> Vec<f32> {
    use ikp_host::cuda::cudarc::nvrtc::Ptx;
    let stream = ctx.default_stream();
    let module = ctx.load_module(Ptx::from_src(ptx.to_string())).unwrap();
    if let Some((session, symbol)) = attach {
        session.attach_probes(&module, symbol).unwrap();
    }
    let f = module.load_function("plain_loops").unwrap();
    let n = (BLOCKS_P * 128) as usize;
    let input: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let d_in = stream.clone_htod(&input).unwrap();
    let mut d_out = stream.alloc_zeros::<f32>(n).unwrap();
    let cfg = LaunchConfig {
        grid_dim: (BLOCKS_P, 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = stream.launch_builder(&f);
    b.arg(&mut d_out).arg(&d_in).arg(&OUTER).arg(&INNER);
    // SAFETY: (float*, const float*, unsigned, unsigned) is the kernel's signature.
    unsafe { b.launch(cfg) }.unwrap();
    stream.clone_dtoh(&d_out).unwrap()
}

const BLOCKS_P: u32 = 5;
const OUTER: u32 = 3;
const INNER: u32 = 7;

/// `ikp instrument`'s probes on a GPU: the instrumented module computes bit for bit what
/// the plain one does (with the buffer attached and without), every warp records each loop
/// once per entry, nested as in the source, and the trip counts are the known ones
/// (the divergent loop's is its lowest odd thread's: `INNER + 1`).
#[test]
fn instrumented_ptx_records_loops_and_leaves_results_alone() {
    use ikp_host::instrument::{instrument, ProbeSet};
    let Some(ctx) = gpu_or_skip() else {
        return;
    };
    let ptx = Compiler::new(Arch::of_device(&ctx).unwrap())
        .line_info(true)
        .ptx("plain_loops.cu", PLAIN)
        .unwrap_or_else(|e| panic!("{e}"));
    let ptx = ptx.ptx().unwrap().to_string();
    let out = instrument(&ptx, &ProbeSet::default()).unwrap();
    let k = out.manifest.kernel("plain_loops").unwrap();
    assert_eq!(k.warps_per_block, Some(4));
    assert_eq!(k.regions.len(), 3, "{:?}", k.regions);

    let plain = run_plain(&ctx, &ptx, None);
    let unattached = run_plain(&ctx, &out.ptx, None);
    let stream = ctx.default_stream();
    let mut session = HostSession::new(&stream, k.layout(BLOCKS_P, None, 64, 1)).unwrap();
    let recorded = run_plain(&ctx, &out.ptx, Some((&session, &k.symbol)));
    assert!(plain
        .iter()
        .zip(&unattached)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    assert!(plain
        .iter()
        .zip(&recorded)
        .all(|(a, b)| a.to_bits() == b.to_bits()));

    session.read_back().unwrap();
    let trace = session.decode().unwrap();
    let lanes = (BLOCKS_P * 4) as usize;
    assert_eq!(trace.lanes.len(), lanes);
    // Regions by source line order: outer, inner, the divergent loop.
    let (outer, inner, odd) = (0u16, 1u16, 2u16);
    let count = |r: u16| {
        (0..trace.spans.len())
            .filter(|&i| trace.spans.region[i] == r)
            .count()
    };
    assert_eq!(count(outer), lanes);
    assert_eq!(count(inner), lanes * OUTER as usize);
    assert_eq!(count(odd), lanes);
    for i in 0..trace.spans.len() {
        let want = if trace.spans.region[i] == inner { 1 } else { 0 };
        assert_eq!(trace.spans.depth[i], want, "span {i}");
    }
    let values = |c: u16| -> Vec<u32> {
        (0..trace.samples.len())
            .filter(|&i| trace.samples.counter[i] == c)
            .map(|i| trace.samples.value[i])
            .collect()
    };
    assert_eq!(values(0), vec![OUTER; lanes]);
    assert_eq!(values(1), vec![INNER; lanes * OUTER as usize]);
    assert_eq!(values(2), vec![INNER + 1; lanes]);
    let d = &trace.diagnostics;
    assert!(
        d.unmatched_begin.is_empty() && d.unmatched_end.is_empty(),
        "{d:?}"
    );
    assert_eq!((d.backward_steps, d.unfinalized_lanes), (0, 0));
    for (l, lane) in trace.lanes.iter().enumerate() {
        assert!(lane.finalized && lane.end > lane.start, "lane {l}");
        assert_eq!(
            (lane.dropped, lane.warp),
            (0, Some(l as u32 % 4)),
            "lane {l}"
        );
        // Each warp's records: 2 + 2 per loop entry (begin, end + trip-count sample).
        assert_eq!(lane.written, 3 * (1 + OUTER as u64 + 1), "lane {l}");
    }
}
