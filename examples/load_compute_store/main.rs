//! Load / compute / store: the simplest instrumented kernel (4 blocks of 128 threads, one
//! lane per block, three regions). Run with `cargo run --example load_compute_store [OUT_DIR]`
//! on a machine with a CUDA GPU.
#![allow(dead_code)]

#[path = "../common/mod.rs"]
mod common;

use std::sync::Arc;

use common::{drv, BoxError};
use ikp::device::{Layout, TimerMode};
use ikp::host::session::cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use ikp::host::session::HostSession;

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
/// FMA iterations of the compute region.
pub const ITERS: u32 = 4000;

/// The launch layout: one lane per block, 6 records each (three begin / end pairs).
pub fn layout() -> Layout {
    Layout {
        grid: [BLOCKS, 1, 1],
        groups_per_block: 1,
        records_per_lane: 6,
        timer: TimerMode::Globaltimer,
        regions: REGIONS.iter().map(|s| s.to_string()).collect(),
        counters: vec![],
    }
}

/// Compiles, launches and reads back; returns the session holding the buffer.
pub fn run(ctx: &Arc<CudaContext>) -> Result<HostSession, BoxError> {
    let stream = ctx.default_stream();
    let kernel = common::load_kernel(ctx, NAME, KERNEL)?;
    let n = BLOCKS * THREADS;
    let input = stream
        .clone_htod(&vec![1.0f32; n as usize])
        .map_err(drv("cuMemcpyHtoD (input)"))?;
    let mut output = stream
        .alloc_zeros::<f32>(n as usize)
        .map_err(drv("cuMemAlloc (output)"))?;
    let mut session = HostSession::new(&stream, layout())?;
    let prof = session.kernel_arg();
    let cfg = LaunchConfig {
        grid_dim: (BLOCKS, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut launch = stream.launch_builder(&kernel);
    launch
        .arg(&mut output)
        .arg(&input)
        .arg(&n)
        .arg(&ITERS)
        .arg(&prof);
    // SAFETY: the argument list matches the kernel's signature (float*, const float*,
    // unsigned, unsigned, ikp::Arg) and the buffers hold `n` floats.
    unsafe { launch.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
    session.read_back()?;
    let out = stream
        .clone_dtoh(&output)
        .map_err(drv("cuMemcpyDtoH (output)"))?;
    if out.iter().any(|v| !v.is_finite() || *v != out[0]) {
        return Err("load_compute_store: threads computed different results".into());
    }
    Ok(session)
}

fn main() -> std::process::ExitCode {
    common::main(NAME, run)
}
