//! Persistent grid: one block per SM loops over TILES_PER_SM * SMs + 3 tiles; each tile is
//! a region with nested load / compute / store regions, all tagged with the tile index.
//! Run with `cargo run --example persistent [OUT_DIR]` on a machine with a CUDA GPU.
#![allow(dead_code)]

#[path = "../common/mod.rs"]
mod common;

use std::sync::Arc;

use common::{drv, BoxError, Launch};
use ikp::device::{Layout, TimerMode};
use ikp::host::cuda::cudarc::driver::{sys::CUdevice_attribute, CudaContext};
use ikp::host::cuda::HostSession;

/// Kernel source.
pub const KERNEL: &str = include_str!("kernel.cu");
/// Kernel (and example) name.
pub const NAME: &str = "persistent";
/// Region names, indexed by the kernel's region ids.
pub const REGIONS: [&str; 4] = ["tile", "load", "compute", "store"];
/// Threads per block (= elements per tile).
pub const THREADS: u32 = 128;
/// Whole tiles per SM; three more tiles make the grid's last round uneven.
pub const TILES_PER_SM: u32 = 4;
/// Base FMA iterations per tile (tile `t` runs `ITERS * (1 + t % 4)`): 25 to 100 us of
/// compute per tile, many timer ticks even where %globaltimer ticks every 1 us.
pub const ITERS: u32 = 10_000;

/// Grid size and tile count for a device with `sms` multiprocessors.
pub fn shape(sms: u32) -> (u32, u32) {
    let blocks = sms.max(1);
    (blocks, blocks * TILES_PER_SM + 3)
}

/// The launch layout: each tile writes 8 records (four begin / end pairs); a block runs
/// at most `ceil(tiles / blocks)` tiles.
pub fn layout(blocks: u32, tiles: u32) -> Layout {
    Layout {
        grid: [blocks, 1, 1],
        groups_per_block: 1,
        records_per_lane: 8 * tiles.div_ceil(blocks),
        timer: TimerMode::Globaltimer,
        regions: REGIONS.iter().map(|s| s.to_string()).collect(),
        counters: vec![],
        ..Layout::default()
    }
}

/// Compiles, launches one block per SM and reads back; returns the session.
pub fn run(ctx: &Arc<CudaContext>) -> Result<HostSession, BoxError> {
    let sms = ctx
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(drv("cuDeviceGetAttribute (multiprocessor count)"))?;
    let (blocks, tiles) = shape(sms as u32);
    let n = (tiles * THREADS) as usize;
    let l = Launch {
        blocks,
        threads: THREADS,
        n_in: n,
        n_out: n,
        count: tiles,
        iters: ITERS,
        layout: layout(blocks, tiles),
    };
    // SAFETY: the kernel has the examples' signature; tile `t < tiles` reads and writes
    // THREADS floats at `t * THREADS` of each buffer, which hold tiles * THREADS floats.
    let (session, out) = unsafe { common::launch(ctx, NAME, KERNEL, l) }?;
    if out.iter().any(|v| !v.is_finite() || *v == 0.0) {
        return Err("persistent: some tile was not computed".into());
    }
    Ok(session)
}

fn main() -> std::process::ExitCode {
    common::main(NAME, run)
}
