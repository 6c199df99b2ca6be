//! A persistent kernel recorded in stream mode: one block per SM runs 20,000 tiles per SM,
//! 8 records a tile (about 21 M records on 132 SMs), through a ring of 512 records (4 KiB)
//! per lane that a drain thread empties into `OUT_DIR/persistent_stream.ikps` while the
//! kernel runs; a lane whose ring is full waits for room (`Overflow::StreamWait`), so no
//! record is lost. Then the stream file is decoded like any buffer and written as a
//! Perfetto trace.
//! Run with `cargo run --example persistent_stream [OUT_DIR [TILES_PER_SM]]` on a machine
//! with a CUDA GPU (the GPU bundle runs it under compute-sanitizer with fewer tiles).
#![allow(dead_code)]

#[path = "../common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use common::{drv, BoxError};
use ikp::device::{Layout, Overflow, TimerMode};
use ikp::host::cuda::cudarc::driver::{
    sys::CUdevice_attribute, CudaContext, LaunchConfig, PushKernelArg,
};
use ikp::host::cuda::{open_device, SessionOptions, StreamSession};
use ikp::host::{atomic, write_perfetto, Launch, PerfettoOptions};

/// Kernel source.
pub const KERNEL: &str = include_str!("kernel.cu");
/// Kernel (and example) name.
pub const NAME: &str = "persistent_stream";
/// Region names, indexed by the kernel's region ids.
pub const REGIONS: [&str; 4] = ["tile", "load", "compute", "store"];
/// Threads per block.
pub const THREADS: u32 = 128;
/// Tiles per SM, unless the second argument says otherwise.
pub const TILES_PER_SM: u32 = 20_000;
/// FMA iterations per tile: about 10 us of work between records, so 132 SMs make about
/// 10^8 records/s, what the drain is measured at (`stream/wait`).
pub const ITERS: u32 = 5_000;
/// Ring capacity per lane, records (a power of two).
pub const RING: u32 = 512;

/// The stream layout for `blocks` blocks of one lane each.
pub fn layout(blocks: u32) -> Layout {
    Layout {
        grid: [blocks, 1, 1],
        records_per_lane: RING,
        timer: TimerMode::Globaltimer,
        regions: REGIONS.iter().map(|s| s.to_string()).collect(),
        overflow: Overflow::StreamWait,
        ..Layout::default()
    }
}

/// Compiles, launches one block per SM with the drain beside it, and returns the stream
/// file's path.
pub fn run(
    ctx: &Arc<CudaContext>,
    out_dir: &std::path::Path,
    tiles_per_sm: u32,
) -> Result<PathBuf, BoxError> {
    let sms = ctx
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(drv("cuDeviceGetAttribute (multiprocessor count)"))? as u32;
    let stream = ctx.default_stream();
    let kernel = common::load_kernel(ctx, NAME, KERNEL)?;
    let n = (64 * THREADS) as usize;
    let input = stream
        .clone_htod(&vec![1.0f32; n])
        .map_err(drv("cuMemcpyHtoD (input)"))?;
    let mut output = stream
        .alloc_zeros::<f32>(n)
        .map_err(drv("cuMemAlloc (output)"))?;
    let mut session = StreamSession::new(&stream, layout(sms), SessionOptions::default())?;
    let prof = session.kernel_arg();
    let tiles = sms * tiles_per_sm;
    let path = out_dir.join(format!("{NAME}.ikps"));
    let stats = session.record(&path, |s| {
        let cfg = LaunchConfig {
            grid_dim: (sms, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = s.launch_builder(&kernel);
        b.arg(&mut output)
            .arg(&input)
            .arg(&tiles)
            .arg(&ITERS)
            .arg(&prof);
        // SAFETY: the kernel's signature; it reads and writes 64 * THREADS floats.
        unsafe { b.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
        Ok(())
    })?;
    println!(
        "{NAME}: drained {} records in {} polls ({:.1} ms), at most {} waiting in one ring",
        stats.records,
        stats.polls,
        stats.wall_ns as f64 / 1e6,
        stats.max_backlog
    );
    Ok(path)
}

fn main() -> ExitCode {
    let out_dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "ikp-out".into()));
    let result = (|| -> Result<(), BoxError> {
        let tiles_per_sm = match std::env::args().nth(2) {
            Some(n) => n.parse().map_err(|e| format!("TILES_PER_SM {n:?}: {e}"))?,
            None => TILES_PER_SM,
        };
        std::fs::create_dir_all(&out_dir)?;
        let ctx = open_device(0)?;
        let path = run(&ctx, &out_dir, tiles_per_sm)?;
        // A stream file decodes as any buffer does.
        let trace = ikp::host::load(&path, &Default::default())?;
        let perfetto = out_dir.join(format!("{NAME}.trace"));
        atomic::write_file(&perfetto, |w| {
            write_perfetto(w, &[Launch::new(NAME, &trace)], &PerfettoOptions::default())
        })?;
        println!(
            "{NAME}: {} lanes, {} spans, {} records dropped",
            trace.lanes.len(),
            trace.spans.len(),
            trace.dropped()
        );
        println!("stream file: {} (ikp decode reads it)", path.display());
        println!("perfetto: {}", perfetto.display());
        Ok(())
    })();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            ExitCode::FAILURE
        }
    }
}
