//! Load / compute / store: the simplest instrumented kernel (4 blocks of 128 threads, one
//! lane per block, three regions). Run with `cargo run --example load_compute_store [OUT_DIR]`
//! on a machine with a CUDA GPU.
#![allow(dead_code)]

#[path = "../common/mod.rs"]
mod common;

use std::sync::Arc;

use common::{BoxError, Launch};
use ikp::device::{Layout, TimerMode};
use ikp::host::cuda::cudarc::driver::CudaContext;
use ikp::host::cuda::HostSession;

/// Kernel source; it includes `ikp.cuh`, which the NVRTC helper provides.
pub const KERNEL: &str = include_str!("kernel.cu");
/// Kernel (and example) name.
pub const NAME: &str = "load_compute_store";
/// Region names, indexed by the kernel's region ids.
pub const REGIONS: [&str; 3] = ["load", "compute", "store"];
/// Blocks in the grid.
pub const BLOCKS: u32 = 4;
/// Threads per block.
pub const THREADS: u32 = 128;
/// FMA iterations of the compute region: about 100 us of dependent FMAs, so compute
/// dominates the lane by a wide margin even on a GPU whose %globaltimer ticks every 1 us.
pub const ITERS: u32 = 40_000;

/// The launch layout: one lane per block, 6 records each (three begin / end pairs).
pub fn layout() -> Layout {
    Layout {
        grid: [BLOCKS, 1, 1],
        groups_per_block: 1,
        records_per_lane: 6,
        timer: TimerMode::Globaltimer,
        regions: REGIONS.iter().map(|s| s.to_string()).collect(),
        counters: vec![],
        ..Layout::default()
    }
}

/// Compiles, launches and reads back; returns the session holding the buffer.
pub fn run(ctx: &Arc<CudaContext>) -> Result<HostSession, BoxError> {
    let n = BLOCKS * THREADS;
    let l = Launch {
        blocks: BLOCKS,
        threads: THREADS,
        n_in: n as usize,
        n_out: n as usize,
        count: n,
        iters: ITERS,
        layout: layout(),
    };
    // SAFETY: the kernel has the examples' signature and reads / writes element `i` of
    // `in` / `out` for `i < count = n`, the size of both buffers.
    let (session, out) = unsafe { common::launch(ctx, NAME, KERNEL, l) }?;
    if out.iter().any(|v| !v.is_finite() || *v != out[0]) {
        return Err("load_compute_store: threads computed different results".into());
    }
    Ok(session)
}

fn main() -> std::process::ExitCode {
    common::main(NAME, run)
}
