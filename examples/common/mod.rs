//! Shared by the example launchers: device set-up, kernel compilation and the `main` of
//! each example. Included with `#[path]` (it is not an example itself).
#![allow(dead_code)]

use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use ikp::device::Layout;
use ikp::host::cuda::cudarc::driver::{CudaContext, CudaFunction, LaunchConfig, PushKernelArg};
use ikp::host::{cuda::nvrtc::Compiler, Arch};
use ikp::host::{
    cuda::{open_device, HostSession, SessionError},
    TraceWriteOptions,
};

/// Boxed error of the launchers.
pub type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// Compiles `source` to a cubin for the exact architecture of `ctx`'s device, with the
/// instrumentation on, loads it and returns the kernel `name`.
pub fn load_kernel(
    ctx: &Arc<CudaContext>,
    name: &str,
    source: &str,
) -> Result<CudaFunction, BoxError> {
    let arch = Arch::of_device(ctx)?;
    let module = Compiler::new(arch)
        .cubin(&format!("{name}.cu"), source)?
        .load(ctx)?;
    let function = module
        .load_function(name)
        .map_err(|e| SessionError::driver("cuModuleGetFunction", e))?;
    Ok(function)
}

/// One launch of an example kernel. Every example kernel has the signature
/// `(float* out, const float* in, unsigned count, unsigned iters, ikp::Arg prof)`.
#[derive(Debug)]
pub struct Launch {
    /// Blocks in the grid.
    pub blocks: u32,
    /// Threads per block.
    pub threads: u32,
    /// Floats of `in` (all 1.0).
    pub n_in: usize,
    /// Floats of `out` (zeroed).
    pub n_out: usize,
    /// The kernel's `count` argument (elements or tiles).
    pub count: u32,
    /// The kernel's `iters` argument.
    pub iters: u32,
    /// The ikp buffer layout of the launch.
    pub layout: Layout,
}

/// Compiles kernel `name` from `source`, launches it once as `l` describes with a fresh
/// profiling buffer, and reads back the buffer and `out`.
///
/// # Safety
/// `source` must define `name` with the signature documented on [`Launch`], and the kernel
/// must read at most `l.n_in` floats of `in` and write at most `l.n_out` floats of `out`
/// for the given `count`, `blocks` and `threads`.
pub unsafe fn launch(
    ctx: &Arc<CudaContext>,
    name: &str,
    source: &str,
    l: Launch,
) -> Result<(HostSession, Vec<f32>), BoxError> {
    let stream = ctx.default_stream();
    let kernel = load_kernel(ctx, name, source)?;
    let input = stream
        .clone_htod(&vec![1.0f32; l.n_in])
        .map_err(drv("cuMemcpyHtoD (input)"))?;
    let mut output = stream
        .alloc_zeros::<f32>(l.n_out)
        .map_err(drv("cuMemAlloc (output)"))?;
    let mut session = HostSession::new(&stream, l.layout)?;
    let prof = session.kernel_arg();
    let cfg = LaunchConfig {
        grid_dim: (l.blocks, 1, 1),
        block_dim: (l.threads, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut builder = stream.launch_builder(&kernel);
    builder
        .arg(&mut output)
        .arg(&input)
        .arg(&l.count)
        .arg(&l.iters)
        .arg(&prof);
    // SAFETY: the arguments follow the signature and the buffer sizes the caller
    // guarantees (this function's contract).
    unsafe { builder.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
    session.read_back()?;
    let out = stream
        .clone_dtoh(&output)
        .map_err(drv("cuMemcpyDtoH (output)"))?;
    Ok((session, out))
}

/// Maps a cudarc driver error to the session's typed error.
pub fn drv(
    call: &'static str,
) -> impl FnOnce(ikp::host::cuda::cudarc::driver::DriverError) -> SessionError {
    move |e| SessionError::driver(call, e)
}

/// The `main` of an example: opens device 0, runs the example, saves the raw buffer to
/// `OUT_DIR/<name>.ikp` and the Chrome trace and summary to `OUT_DIR/<name>.json` and
/// `OUT_DIR/<name>_summary.json` (`OUT_DIR` is the first argument, default `ikp-out`),
/// and prints the time per region.
pub fn main(name: &str, run: fn(&Arc<CudaContext>) -> Result<HostSession, BoxError>) -> ExitCode {
    let out_dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "ikp-out".into()));
    let result = (|| -> Result<(), BoxError> {
        let ctx = open_device(0)?;
        let session = run(&ctx)?;
        std::fs::create_dir_all(&out_dir)?;
        let raw = out_dir.join(format!("{name}.ikp"));
        session.save_buffer(&raw)?;
        let written = session.write_trace(
            out_dir.join(format!("{name}.json")),
            &TraceWriteOptions::default(),
        )?;
        let trace = &written.trace;
        println!(
            "{name}: {} lanes, {} spans, {} dropped, {} unfinalized",
            trace.lanes.len(),
            trace.spans.len(),
            trace.dropped(),
            trace.diagnostics.unfinalized_lanes
        );
        for (id, region) in trace.names.regions.iter().enumerate() {
            let durs: Vec<u64> = (0..trace.spans.len())
                .filter(|&i| trace.spans.region[i] as usize == id)
                .map(|i| trace.spans.dur(i))
                .collect();
            let total: u64 = durs.iter().sum();
            let mean = total.checked_div(durs.len() as u64).unwrap_or(0);
            println!(
                "  {region:<10} {:>6} spans  mean {mean:>9} ns  total {total:>11} ns",
                durs.len()
            );
        }
        println!("raw buffer: {} (ikp decode reads it)", raw.display());
        println!("chrome trace: {}", written.chrome.display());
        if let Some(summary) = &written.summary {
            println!("summary: {}", summary.display());
        }
        Ok(())
    })();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}
