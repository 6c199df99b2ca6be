//! GPU instrumentation overhead: how much each way of instrumenting a kernel slows it down.
//!
//! `cargo bench --bench gpu_overhead` (on a machine with a CUDA GPU). For each bench kernel
//! (`gpu_overhead/kernels.cu`: the three example kernels and a GEMM on half data) it
//! compiles five builds with NVRTC for the device's architecture (uninstrumented baseline,
//! fenced zones, unfenced zones, counters only, compiled out), checks they compute the
//! same output, then times `REPS` (30) repetitions of every build with CUDA events, the
//! builds interleaved within a repetition in a rotating order. It prints the slowdown of
//! each build against the baseline, repetition by repetition, as mean / std / median per
//! kernel and pooled over all kernels (`ikp::host::overhead`, the method of the tt-metal
//! counter proposal), then runs criterion over the same launches for its own statistics.
//!
//! Without a GPU (no CUDA driver library, or `CUDA_ERROR_NO_DEVICE`) it prints that it
//! skipped and exits 0, so `cargo bench` and `cargo test --all-targets` pass everywhere.
//! `IKP_OVERHEAD_REPS=n` changes the number of repetitions (at least 30 for the report).
#[path = "gpu_overhead/variants.rs"]
mod variants;

use std::collections::BTreeMap;
use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use criterion::Criterion;
use ikp::host::nvrtc::Arch;
use ikp::host::overhead::{slowdowns, SlowdownStats};
use ikp::host::session::cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use ikp::host::session::{open_device, HostSession, IkpArg, SessionError};
use variants::{KernelSpec, Variant, KERNELS, SOURCE};

type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// Repetitions of every build (reference 004 uses 30).
const REPS: usize = 30;

fn drv(
    call: &'static str,
) -> impl FnOnce(ikp::host::session::cudarc::driver::DriverError) -> SessionError {
    move |e| SessionError::driver(call, e)
}

/// Device buffers and launch shape of one kernel's workload.
struct Workload {
    spec: KernelSpec,
    cfg: LaunchConfig,
    /// Records per lane the instrumented builds need.
    records: u32,
    /// Scalar parameters after the pointers.
    scalars: Vec<u32>,
    /// Input buffers (f32 or half bits).
    input: Input,
    /// One output buffer per build, so outputs can be compared after the runs.
    outputs: BTreeMap<Variant, Output>,
}

enum Input {
    F32(CudaSlice<f32>),
    Half(CudaSlice<u16>, CudaSlice<u16>),
}

enum Output {
    F32(CudaSlice<f32>),
    Half(CudaSlice<u16>),
}

fn blocks_1d(cfg: &LaunchConfig) -> [u32; 3] {
    [cfg.grid_dim.0, cfg.grid_dim.1, cfg.grid_dim.2]
}

/// Small deterministic inputs in [0.5, 1.5), so FMA chains stay finite.
fn inputs(n: usize, seed: u64) -> Vec<f32> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            0.5 + (x % 1024) as f32 / 1024.0
        })
        .collect()
}

fn workload(stream: &Arc<CudaStream>, spec: KernelSpec, sms: u32) -> Result<Workload, BoxError> {
    let f32_out = |n: usize| -> Result<Output, BoxError> {
        Ok(Output::F32(
            stream
                .alloc_zeros::<f32>(n)
                .map_err(drv("cuMemAlloc (output)"))?,
        ))
    };
    let (cfg, records, scalars, input, out_len, half) = match spec.name {
        "load_compute_store" => {
            // Every SM full (8 blocks of 256 threads), a long dependent FMA chain.
            let (blocks, threads, iters) = (8 * sms, 256u32, 32_768u32);
            let n = (blocks * threads) as usize;
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: 0,
            };
            let input = stream
                .clone_htod(&inputs(n, 1))
                .map_err(drv("cuMemcpyHtoD (input)"))?;
            (cfg, 6, vec![n as u32, iters], Input::F32(input), n, false)
        }
        "warp_specialized" => {
            let (blocks, tiles, iters) = (16 * sms, 256u32, 256u32);
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (64, 1, 1),
                shared_mem_bytes: 0,
            };
            let input = stream
                .clone_htod(&inputs((blocks * tiles * 32) as usize, 2))
                .map_err(drv("cuMemcpyHtoD (input)"))?;
            let out = (blocks * 32) as usize;
            (
                cfg,
                2 * tiles,
                vec![tiles, iters],
                Input::F32(input),
                out,
                false,
            )
        }
        "persistent" => {
            let (blocks, threads, iters) = (sms, 256u32, 512u32);
            let tiles = 64 * sms;
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: 0,
            };
            let n = (tiles * threads) as usize;
            let input = stream
                .clone_htod(&inputs(n, 3))
                .map_err(drv("cuMemcpyHtoD (input)"))?;
            let per_lane = 8 * tiles.div_ceil(blocks);
            (
                cfg,
                per_lane,
                vec![tiles, iters],
                Input::F32(input),
                n,
                false,
            )
        }
        "gemm_half" => {
            let (m, n, k) = (2048u32, 2048u32, 2048u32);
            let cfg = LaunchConfig {
                grid_dim: (n / 64, m / 64, 1),
                block_dim: (16, 16, 1),
                shared_mem_bytes: 0,
            };
            let half = |len: usize, seed| -> Vec<u16> {
                inputs(len, seed)
                    .into_iter()
                    .map(|v| half::f16::from_f32(v - 1.0).to_bits())
                    .collect()
            };
            let a = stream
                .clone_htod(&half((m * k) as usize, 4))
                .map_err(drv("cuMemcpyHtoD (A)"))?;
            let b = stream
                .clone_htod(&half((k * n) as usize, 5))
                .map_err(drv("cuMemcpyHtoD (B)"))?;
            let records = 4 * (k / 16) + 2;
            (
                cfg,
                records,
                vec![m, n, k],
                Input::Half(a, b),
                (m * n) as usize,
                true,
            )
        }
        other => return Err(format!("no workload for kernel {other}").into()),
    };
    let mut outputs = BTreeMap::new();
    for v in Variant::ALL {
        let out = if half {
            Output::Half(
                stream
                    .alloc_zeros::<u16>(out_len)
                    .map_err(drv("cuMemAlloc (C)"))?,
            )
        } else {
            f32_out(out_len)?
        };
        outputs.insert(v, out);
    }
    Ok(Workload {
        spec,
        cfg,
        records,
        scalars,
        input,
        outputs,
    })
}

impl Workload {
    /// Launches build `v` of the kernel on `stream` (asynchronously).
    fn launch(
        &mut self,
        stream: &Arc<CudaStream>,
        f: &CudaFunction,
        v: Variant,
        prof: Option<&IkpArg>,
    ) -> Result<(), BoxError> {
        let mut b = stream.launch_builder(f);
        let out = self.outputs.get_mut(&v).ok_or("no output buffer")?;
        match (out, &self.input) {
            (Output::F32(o), Input::F32(i)) => {
                b.arg(o).arg(i);
            }
            (Output::Half(c), Input::Half(a, bm)) => {
                b.arg(c).arg(a).arg(bm);
            }
            _ => return Err("output and input kinds disagree".into()),
        }
        for s in &self.scalars {
            b.arg(s);
        }
        if let Some(p) = prof {
            b.arg(p);
        }
        // SAFETY: the arguments match the kernel's signature in kernels.cu for this build
        // (pointers to buffers of the sizes the launch shape indexes, the scalar parameters,
        // then ikp::Arg for every build but the baseline), which the NVRTC test checks
        // parameter by parameter.
        unsafe { b.launch(self.cfg) }.map_err(drv("cuLaunchKernel"))?;
        Ok(())
    }

    /// The output of build `v` as bits, for comparison.
    fn output_bits(&self, stream: &Arc<CudaStream>, v: Variant) -> Result<Vec<u32>, BoxError> {
        Ok(match &self.outputs[&v] {
            Output::F32(o) => stream
                .clone_dtoh(o)
                .map_err(drv("cuMemcpyDtoH (output)"))?
                .into_iter()
                .map(f32::to_bits)
                .collect(),
            Output::Half(o) => stream
                .clone_dtoh(o)
                .map_err(drv("cuMemcpyDtoH (C)"))?
                .into_iter()
                .map(u32::from)
                .collect(),
        })
    }
}

/// One kernel ready to run: its workload, one function per build, one session per
/// recording build.
struct Bench {
    work: Workload,
    functions: BTreeMap<Variant, CudaFunction>,
    sessions: BTreeMap<Variant, HostSession>,
    /// A session for the compiled-out build: it takes the argument but never writes.
    idle: HostSession,
}

impl Bench {
    fn new(
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        arch: Arch,
        spec: KernelSpec,
        sms: u32,
    ) -> Result<Bench, BoxError> {
        let work = workload(stream, spec, sms)?;
        let mut functions = BTreeMap::new();
        for v in Variant::ALL {
            let module = v
                .compiler(arch)
                .cubin("gpu_overhead.cu", SOURCE)?
                .load(ctx)?;
            let f = module
                .load_function(spec.name)
                .map_err(drv("cuModuleGetFunction"))?;
            functions.insert(v, f);
        }
        let layout = spec.layout(blocks_1d(&work.cfg), work.records);
        let mut sessions = BTreeMap::new();
        for v in Variant::ALL.into_iter().filter(|v| v.records()) {
            sessions.insert(v, HostSession::new(stream, layout.clone())?);
        }
        let idle = HostSession::new(stream, layout)?;
        Ok(Bench {
            work,
            functions,
            sessions,
            idle,
        })
    }

    /// Runs build `v` once between two events; returns the kernel time in ms.
    fn timed(
        &mut self,
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        v: Variant,
    ) -> Result<f64, BoxError> {
        let prof = match self.sessions.get_mut(&v) {
            Some(s) => {
                s.reset()?;
                Some(s.kernel_arg())
            }
            None if v.takes_prof() => Some(self.idle.kernel_arg()),
            None => None,
        };
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = ctx.new_event(flags).map_err(drv("cuEventCreate"))?;
        let end = ctx.new_event(flags).map_err(drv("cuEventCreate"))?;
        start.record(stream).map_err(drv("cuEventRecord"))?;
        let f = self.functions[&v].clone();
        self.work.launch(stream, &f, v, prof.as_ref())?;
        end.record(stream).map_err(drv("cuEventRecord"))?;
        let ms = start.elapsed_ms(&end).map_err(drv("cuEventElapsedTime"))?;
        Ok(ms as f64)
    }
}

/// Times of every build of one kernel, `reps` repetitions, builds interleaved.
fn measure(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    bench: &mut Bench,
    reps: usize,
) -> Result<BTreeMap<Variant, Vec<f64>>, BoxError> {
    // Warm-up: first launches pay for module loading and clock ramp-up.
    for _ in 0..3 {
        for v in Variant::ALL {
            bench.timed(ctx, stream, v)?;
        }
    }
    // Every build computed the same output (the instrumentation must not change results).
    let base = bench.work.output_bits(stream, Variant::Baseline)?;
    for v in Variant::ALL {
        if bench.work.output_bits(stream, v)? != base {
            return Err(format!(
                "{}: {} output differs from the baseline",
                bench.work.spec.name,
                v.name()
            )
            .into());
        }
    }
    let mut times: BTreeMap<Variant, Vec<f64>> = BTreeMap::new();
    for r in 0..reps {
        for i in 0..Variant::ALL.len() {
            let v = Variant::ALL[(i + r) % Variant::ALL.len()];
            let t = bench.timed(ctx, stream, v)?;
            times.entry(v).or_default().push(t);
        }
    }
    Ok(times)
}

fn report(results: &[(String, BTreeMap<Variant, Vec<f64>>)]) -> Result<(), BoxError> {
    let mut pooled: BTreeMap<Variant, Vec<f64>> = BTreeMap::new();
    for (kernel, times) in results {
        let base = &times[&Variant::Baseline];
        let median_ms = SlowdownStats::of(base)?.median;
        println!(
            "{kernel}: baseline median {median_ms:.4} ms over {} repetitions",
            base.len()
        );
        for v in Variant::ALL.into_iter().skip(1) {
            let s = slowdowns(base, &times[&v])?;
            println!("  {:<15} vs baseline: {}", v.name(), SlowdownStats::of(&s)?);
            pooled.entry(v).or_default().extend(s);
        }
    }
    println!("all kernels ({} kernels):", results.len());
    for v in Variant::ALL.into_iter().skip(1) {
        println!(
            "  {:<15} vs baseline: {}",
            v.name(),
            SlowdownStats::of(&pooled[&v])?
        );
    }
    Ok(())
}

/// Whether `e` means "no GPU here" (skip) rather than a failure.
fn no_gpu(e: &SessionError) -> bool {
    matches!(
        e,
        SessionError::NoDriver { .. } | SessionError::NoSuchDevice { count: 0, .. }
    ) || e.is_no_device()
}

fn run(ctx: Arc<CudaContext>) -> Result<(), BoxError> {
    let reps = std::env::var("IKP_OVERHEAD_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(REPS);
    let stream = ctx.default_stream();
    let arch = Arch::of_device(&ctx).map_err(drv("cuDeviceGetAttribute (compute capability)"))?;
    let sms = ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(drv("cuDeviceGetAttribute (SM count)"))? as u32;
    println!(
        "gpu_overhead: {} ({arch}, {sms} SMs), {reps} repetitions per build",
        ctx.name().unwrap_or_else(|_| "unknown GPU".into())
    );
    let mut benches = Vec::new();
    let mut results = Vec::new();
    for spec in KERNELS {
        let mut b = Bench::new(&ctx, &stream, arch, spec, sms)?;
        results.push((spec.name.to_string(), measure(&ctx, &stream, &mut b, reps)?));
        benches.push(b);
    }
    report(&results)?;

    // Criterion over the same launches: GPU time per launch from the events.
    let mut c = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    for b in &mut benches {
        let mut g = c.benchmark_group(format!("gpu_overhead/{}", b.work.spec.name));
        for v in Variant::ALL {
            g.bench_function(v.name().replace(' ', "_"), |bencher| {
                bencher.iter_custom(|iters| {
                    let mut total = 0.0;
                    for _ in 0..iters {
                        total += b.timed(&ctx, &stream, v).expect("launch failed");
                    }
                    Duration::from_secs_f64(total / 1e3)
                })
            });
        }
        g.finish();
    }
    c.final_summary();
    Ok(())
}

fn main() -> std::process::ExitCode {
    let ctx = match open_device(0) {
        Ok(ctx) => ctx,
        Err(e) if no_gpu(&e) => {
            println!("gpu_overhead: skipped, no CUDA GPU available ({e})");
            return std::process::ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("gpu_overhead: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match run(ctx) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gpu_overhead: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
