//! HostSession on a real GPU: header upload, kernel argument, launch, read-back, the raw
//! file, decoding, trace writing and reset. Skipped (with a notice on stderr) when there is
//! no GPU; `IKP_GPU_TESTS=1` turns the skip into a failure.
mod session_support;

use std::sync::Arc;

use ikp_device::{Layout, TimerMode};
use ikp_host::nvrtc::{Arch, Compiler};
use ikp_host::session::cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use ikp_host::session::{HostSession, SessionError, TraceWriteOptions};
use session_support::gpu_or_skip;

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
    }
}

fn launch(ctx: &Arc<CudaContext>, session: &HostSession, reps: u32) {
    let f = Compiler::new(Arch::of_device(ctx).unwrap())
        .cubin("session_probe.cu", KERNEL)
        .unwrap_or_else(|e| panic!("{e}"))
        .load(ctx)
        .unwrap()
        .load_function("session_probe")
        .unwrap();
    let stream = session.stream().clone();
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
    let Some(ctx) = gpu_or_skip("session_uploads_header_and_zeroes_the_lanes") else {
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
    let header = l.header_words().unwrap();
    assert_eq!(s.buffer_words() as u64, l.buffer_words());
    let arg = s.kernel_arg();
    assert_ne!(arg.buf, 0);
    assert_eq!(arg.lane_base as usize, header.len());
    assert_eq!(arg.lane_count, BLOCKS * 2);
    let words = s.read_back().unwrap().to_vec();
    assert_eq!(&words[..header.len()], &header[..]);
    assert!(
        words[header.len()..].iter().all(|&w| w == 0),
        "lanes not zeroed"
    );
}

#[test]
fn session_round_trip_launch_read_back_decode_and_write() {
    let Some(ctx) = gpu_or_skip("session_round_trip_launch_read_back_decode_and_write") else {
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
        emit_block_region_distributions: true,
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
}

#[test]
fn reset_clears_the_previous_launch_and_full_lanes_count_drops() {
    let Some(ctx) = gpu_or_skip("reset_clears_the_previous_launch_and_full_lanes_count_drops")
    else {
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
