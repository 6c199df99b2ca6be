//! Warp-specialized producer / consumer: per block, a producer warp fills a two-slot
//! shared-memory ring and a consumer warp computes on it; each warp is its own lane, waits
//! are counted (two counters, one also sampled per wait) and regions carry the tile index.
//! Run with `cargo run --example warp_specialized [OUT_DIR]` on a machine with a CUDA GPU.
#![allow(dead_code)]

#[path = "../common/mod.rs"]
mod common;

use std::sync::Arc;

use common::{BoxError, Launch};
use ikp::device::{Layout, TimerMode};
use ikp::host::cuda::cudarc::driver::CudaContext;
use ikp::host::cuda::HostSession;

/// Kernel source.
pub const KERNEL: &str = include_str!("kernel.cu");
/// Kernel (and example) name.
pub const NAME: &str = "warp_specialized";
/// Region names, indexed by the kernel's region ids.
pub const REGIONS: [&str; 2] = ["produce", "consume"];
/// Counter names, indexed by the kernel's counter ids.
pub const COUNTERS: [&str; 2] = ["wait_full", "wait_empty"];
/// Group (lane within a block) of the producer warp.
pub const PRODUCER: u32 = 0;
/// Group of the consumer warp.
pub const CONSUMER: u32 = 1;
/// Blocks in the grid.
pub const BLOCKS: u32 = 8;
/// Threads per block: one producer and one consumer warp.
pub const THREADS: u32 = 64;
/// Tiles each block streams through its ring.
pub const TILES: u32 = 16;
/// Elements per tile (`TILE` in the kernel).
pub const TILE: u32 = 32;
/// FMA iterations per consumed tile: about 50 us, so consuming dominates the consumer
/// lane even where %globaltimer ticks every 1 us.
pub const ITERS: u32 = 20_000;

/// The launch layout: two lanes per block. The consumer writes the most: per tile a
/// counter sample plus a begin / end pair.
pub fn layout() -> Layout {
    Layout {
        grid: [BLOCKS, 1, 1],
        groups_per_block: 2,
        records_per_lane: 3 * TILES,
        timer: TimerMode::Globaltimer,
        regions: REGIONS.iter().map(|s| s.to_string()).collect(),
        counters: COUNTERS.iter().map(|s| s.to_string()).collect(),
        ..Layout::default()
    }
}

/// Compiles, launches and reads back; returns the session holding the buffer.
pub fn run(ctx: &Arc<CudaContext>) -> Result<HostSession, BoxError> {
    let l = Launch {
        blocks: BLOCKS,
        threads: THREADS,
        n_in: (BLOCKS * TILES * TILE) as usize,
        n_out: (BLOCKS * TILE) as usize,
        count: TILES,
        iters: ITERS,
        layout: layout(),
    };
    // SAFETY: the kernel has the examples' signature; block `b` reads its TILES tiles of
    // TILE floats of `in` (BLOCKS * TILES * TILE in all) and writes TILE floats of `out`
    // (BLOCKS * TILE in all).
    let (session, out) = unsafe { common::launch(ctx, NAME, KERNEL, l) }?;
    if out.iter().any(|v| !v.is_finite() || *v != out[0]) {
        return Err("warp_specialized: consumers computed different results".into());
    }
    Ok(session)
}

fn main() -> std::process::ExitCode {
    common::main(NAME, run)
}
