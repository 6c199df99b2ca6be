//! GPU instrumentation overhead: how much each way of instrumenting a kernel slows it down.
//!
//! `cargo bench --bench gpu_overhead` (on a machine with a CUDA GPU; without `--bench`
//! criterion runs one test iteration). For each bench kernel (`gpu_overhead/kernels.cu`:
//! the three example kernels, a GEMM on half data, a memory-bound copy, and on sm_90 a
//! Hopper warp-specialized GEMM, TMA and wgmma, whose result is also checked against a CPU
//! reference on sampled entries) it compiles eleven
//! builds with NVRTC for the device's architecture (uninstrumented baseline, fenced zones,
//! unfenced zones, counters only, compiled out, the same regions recorded the peers' way:
//! the TVM / FlashInfer record sequence, the fenced build launched with a null `ikp::Arg`,
//! fenced and unfenced zones on the SM clock, and the other design of the off switch,
//! `IKP_OFF_BRANCH=0`: unfenced zones and the null `ikp::Arg` with every record predicated
//! on every warp instead of behind a branch on the warp vote), checks they compute the same output, then
//! times `REPS` (30) repetitions of every build with CUDA events, the builds interleaved
//! within a repetition in a rotating order. One timing is [`LAUNCHES`] back-to-back
//! launches between one event pair (a launch is short next to the event's resolution),
//! after a reset of a buffer of the recording builds' size for *every* build, the baseline
//! too, so all start with the same L2 state. It prints the slowdown of each build against
//! the baseline, repetition by repetition, as mean / std / median per kernel and pooled
//! over all kernels (`ikp::host::stats::overhead`, the method of the tt-metal counter proposal),
//! with each build's registers per thread and resident blocks per SM (an occupancy cliff
//! is not the records' cost and is named as such), then runs criterion over the same
//! launches for its own statistics.
//!
//! With `IKP_OVERHEAD_JSON=FILE` it also writes the figures as JSON (format
//! `ikp-gpu-overhead`, version 1): `{"format", "version", "complete", "gpu", "arch",
//! "sms", "reps", "launches_per_timing", "kernels": [{"kernel", "builds": [{"build",
//! "regs", "local_bytes", "block_threads", "blocks_per_sm", "median_ms", "slowdown": null
//! | {"n", "mean", "std", "median", "ci95": [low, high]}}]}], "pooled": [{"build",
//! "slowdown"}]}`; slowdowns are percent (`ci95`: the 95 % confidence interval of the
//! mean, [`SlowdownStats::ci95`]), times are one launch's. The file is rewritten after
//! each kernel (`"complete": false` until the last), so a run stopped later keeps the
//! kernels it finished. The GPU bundle's runner reads it.
//!
//! `IKP_OVERHEAD_PROFILE=kernel,...` launches each build of the kernels named once, for
//! Nsight Compute (the GPU bundle's `overhead/ncu` checks), and times nothing.
//!
//! `IKP_OVERHEAD_CRITERION=0` leaves out the criterion phase (the GPU bundle's runner sets
//! it: the paired repetitions are its figures, and criterion's adds a minute and a half).
//!
//! Without a GPU (no CUDA driver library, or `CUDA_ERROR_NO_DEVICE`) it prints that it
//! skipped and exits 0, so `cargo bench` and `cargo test --all-targets` pass everywhere;
//! with `IKP_GPU_TESTS=1` (the GPU bundle sets it) a missing GPU is an error.
//! `IKP_OVERHEAD_REPS=n` changes the number of repetitions (at least 30 for the report).
#[path = "gpu_overhead/variants.rs"]
mod variants;

use std::collections::BTreeMap;
use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use criterion::Criterion;
use ikp::host::cuda::cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig,
    PushKernelArg,
};
use ikp::host::cuda::{open_device, HostSession, IkpArg, SessionError};
use ikp::host::stats::overhead::{slowdowns, SlowdownStats};
use ikp::host::Arch;
use serde_json::{json, Value};
use variants::{KernelSpec, TvmArg, Variant, KERNELS, SOURCE};

type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// Repetitions of every build (the tt-metal compute-isolation proposal, docs/references.md,
/// uses 30).
const REPS: usize = 30;
/// Launches timed between one pair of events.
const LAUNCHES: usize = 5;

fn drv(
    call: &'static str,
) -> impl FnOnce(ikp::host::cuda::cudarc::driver::DriverError) -> SessionError {
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
    /// The Hopper GEMM's A (m x k) and B (n x k), their TMA descriptors, and host copies for
    /// the reference check.
    Hopper(Box<HopperInput>),
}

/// The Hopper GEMM's inputs (boxed: the descriptors are 256 bytes).
struct HopperInput {
    // Owned here: the TMA descriptors point into them.
    #[allow(dead_code)]
    a: CudaSlice<u16>,
    #[allow(dead_code)]
    b: CudaSlice<u16>,
    tma_a: TmaDesc,
    tma_b: TmaDesc,
    host: (Vec<u16>, Vec<u16>),
}

/// A CUtensorMap (`TmaDesc` in kernels.cu): 128 opaque bytes, 64-byte aligned, passed by
/// value as a `__grid_constant__` parameter.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct TmaDesc([u64; 16]);

// SAFETY: TmaDesc is plain data laid out as kernels.cu's TmaDesc (and as CUtensorMap).
unsafe impl DeviceRepr for TmaDesc {}

/// Rows x columns of the Hopper GEMM's TMA box (kernels.cu: HG_BM or HG_BN x HG_BK).
const HG_BOX: [u32; 2] = [64, 128];
/// Dynamic shared memory of the Hopper GEMM (kernels.cu: HG_SMEM).
const HG_SMEM: u32 = 3 * 2 * 128 * 64 * 2 + 1024 + 2 * 3 * 8;

/// The TMA descriptor of a `rows` x `cols` half matrix (cols contiguous) at `ptr`, loaded in
/// 128 x 64 boxes with the 128-byte swizzle the kernel's wgmma descriptors expect.
fn tma_desc(ptr: u64, rows: u32, cols: u32) -> Result<TmaDesc, BoxError> {
    let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
    let dims: [u64; 2] = [cols as u64, rows as u64];
    let strides: [u64; 1] = [cols as u64 * 2];
    let elem: [u32; 2] = [1, 1];
    // SAFETY: every pointer is to a live array of the rank the call is given (2; strides
    // rank - 1), `map` is 128 writable bytes, and `ptr` is a device allocation of rows *
    // cols halves that outlives the descriptor's use.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            2,
            ptr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            HG_BOX.as_ptr(),
            elem.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(format!("cuTensorMapEncodeTiled: {r:?}").into());
    }
    // SAFETY: the call succeeded, so it wrote the whole map.
    Ok(TmaDesc(unsafe { map.assume_init() }.opaque))
}

/// Checks `sampled` entries of the Hopper GEMM's output against a CPU reference in f64.
fn check_hopper(c: &[f32], a: &[u16], b: &[u16], n: usize, k: usize) -> Result<(), BoxError> {
    let h = |v: u16| half::f16::from_bits(v).to_f64();
    let m = c.len() / n;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..512 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let (i, j) = ((x % m as u64) as usize, ((x >> 32) % n as u64) as usize);
        let want: f64 = (0..k).map(|l| h(a[i * k + l]) * h(b[j * k + l])).sum();
        let got = c[i * n + j] as f64;
        if (got - want).abs() > 1e-2 + 1e-3 * want.abs() {
            return Err(
                format!("hopper_gemm: C[{i}][{j}] = {got}, the reference says {want}").into(),
            );
        }
    }
    Ok(())
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
    // A 1-D grid of `blocks` of the kernel's block, no dynamic shared memory.
    let grid = |blocks: u32| LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: spec.block,
        shared_mem_bytes: 0,
    };
    let f32_in = |n: usize, seed: u64| -> Result<Input, BoxError> {
        Ok(Input::F32(
            stream
                .clone_htod(&inputs(n, seed))
                .map_err(drv("cuMemcpyHtoD (input)"))?,
        ))
    };
    let (cfg, records, scalars, input, out_len, half) = match spec.name {
        "load_compute_store" => {
            // Every SM full (8 blocks of 256 threads), a long dependent FMA chain.
            let (blocks, threads, iters) = (8 * sms, spec.block.0, 32_768u32);
            let n = (blocks * threads) as usize;
            (
                grid(blocks),
                6,
                vec![n as u32, iters],
                f32_in(n, 1)?,
                n,
                false,
            )
        }
        "warp_specialized" => {
            let (blocks, tiles, iters) = (16 * sms, 256u32, 256u32);
            let input = f32_in((blocks * tiles * 32) as usize, 2)?;
            let out = (blocks * 32) as usize;
            (
                grid(blocks),
                2 * tiles,
                vec![tiles, iters],
                input,
                out,
                false,
            )
        }
        "persistent" => {
            let (blocks, threads, iters) = (sms, spec.block.0, 512u32);
            let tiles = 64 * sms;
            let n = (tiles * threads) as usize;
            let per_lane = 8 * tiles.div_ceil(blocks);
            let input = f32_in(n, 3)?;
            (grid(blocks), per_lane, vec![tiles, iters], input, n, false)
        }
        "gemm_half" => {
            let (m, n, k) = (2048u32, 2048u32, 2048u32);
            let cfg = LaunchConfig {
                grid_dim: (n / 64, m / 64, 1),
                block_dim: spec.block,
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
        "stream_copy" => {
            // 64 Mi floats in and out (512 MiB moved per launch): far past L2.
            let n = 64u32 << 20;
            let (blocks, threads) = (4 * sms, spec.block.0);
            let steps = (n / 4).div_ceil(blocks * threads);
            let input = f32_in(n as usize, 6)?;
            (grid(blocks), 4 * steps, vec![n], input, n as usize, false)
        }
        "region_loop" | "region_loop_dispatch" => {
            // Issue #36's kernel: 4 blocks of 4 warps an SM (528 on 132 SMs), a begin and
            // an end per 64 dependent multiply-adds, about 0.3 ms.
            let (blocks, threads, iters) = (4 * sms, spec.block.0, 2_048u32);
            let n = (blocks * threads) as usize;
            (
                grid(blocks),
                2 * iters,
                vec![iters],
                f32_in(n, 7)?,
                n,
                false,
            )
        }
        "hopper_gemm" => {
            let (m, n, k) = (4096u32, 4096u32, 4096u32);
            let cfg = LaunchConfig {
                grid_dim: (n / 128, m / 128, 1),
                block_dim: spec.block,
                shared_mem_bytes: HG_SMEM,
            };
            let half = |len: usize, seed| -> Vec<u16> {
                inputs(len, seed)
                    .into_iter()
                    .map(|v| half::f16::from_f32(v - 1.0).to_bits())
                    .collect()
            };
            let (ha, hb) = (half((m * k) as usize, 7), half((n * k) as usize, 8));
            let a = stream.clone_htod(&ha).map_err(drv("cuMemcpyHtoD (A)"))?;
            let b = stream.clone_htod(&hb).map_err(drv("cuMemcpyHtoD (B)"))?;
            let tma_a = tma_desc(a.device_ptr(stream).0, m, k)?;
            let tma_b = tma_desc(b.device_ptr(stream).0, n, k)?;
            let input = Input::Hopper(Box::new(HopperInput {
                a,
                b,
                tma_a,
                tma_b,
                host: (ha, hb),
            }));
            (
                cfg,
                2 * (k / 64) + 2,
                vec![m, n, k],
                input,
                (m * n) as usize,
                false,
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
        prof: Option<&Prof>,
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
            (Output::F32(c), Input::Hopper(h)) => {
                b.arg(c).arg(&h.tma_a).arg(&h.tma_b);
            }
            _ => return Err("output and input kinds disagree".into()),
        }
        for s in &self.scalars {
            b.arg(s);
        }
        match prof {
            Some(Prof::Ikp(p)) => {
                b.arg(p);
            }
            Some(Prof::Tvm(p)) => {
                b.arg(p);
            }
            None => {}
        }
        // SAFETY: the arguments match the kernel's signature in kernels.cu for this build
        // (pointers to buffers of the sizes the launch shape indexes, the scalar parameters,
        // then ikp::Arg, or TvmArg for the peers' build, for every build but the baseline),
        // which the NVRTC test checks parameter by parameter; the TVM buffer holds every
        // record the kernel writes (TvmArg::words).
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

/// The profiler argument of one launch.
enum Prof {
    Ikp(IkpArg),
    Tvm(TvmArg),
}

// SAFETY: TvmArg is #[repr(C)] plain data (a device address and two u32, no padding), laid
// out as kernels.cu's TvmArg; the driver copies its 16 bytes into the parameter space.
unsafe impl DeviceRepr for TvmArg {}

/// Registers, local memory and resident blocks per SM of one build.
#[derive(Clone, Copy, Debug)]
struct Resources {
    regs: i32,
    local_bytes: i32,
    blocks_per_sm: u32,
}

impl Resources {
    fn of(f: &CudaFunction, cfg: &LaunchConfig) -> Result<Resources, BoxError> {
        let threads = cfg.block_dim.0 * cfg.block_dim.1 * cfg.block_dim.2;
        Ok(Resources {
            regs: f
                .num_regs()
                .map_err(drv("cuFuncGetAttribute (registers)"))?,
            local_bytes: f
                .local_size_bytes()
                .map_err(drv("cuFuncGetAttribute (local memory)"))?,
            blocks_per_sm: f
                .occupancy_max_active_blocks_per_multiprocessor(
                    threads,
                    cfg.shared_mem_bytes as usize,
                    None,
                )
                .map_err(drv("cuOccupancyMaxActiveBlocksPerMultiprocessor"))?,
        })
    }
}

/// Each build's module, compiled once for every kernel (per build and whether it is the
/// sm_90a build of the Hopper kernel).
type Modules = BTreeMap<(Variant, bool), Arc<ikp::host::cuda::cudarc::driver::CudaModule>>;

/// One kernel ready to run: its workload, one function per build, one session per
/// recording build.
struct Bench {
    work: Workload,
    functions: BTreeMap<Variant, CudaFunction>,
    sessions: BTreeMap<Variant, HostSession>,
    /// A session for the builds that do not record with ikp: the compiled-out build takes
    /// its argument (and never writes), and every non-recording build resets it before its
    /// start event, as the recording builds reset theirs.
    idle: HostSession,
    /// The peers' build's buffer (TVM format, never read: only its cost is measured).
    tvm: CudaSlice<u64>,
    tvm_arg: TvmArg,
    /// Per build: registers, local memory, occupancy.
    resources: BTreeMap<Variant, Resources>,
}

impl Bench {
    fn new(
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        arch: Arch,
        spec: KernelSpec,
        sms: u32,
        modules: &mut Modules,
    ) -> Result<Bench, BoxError> {
        let work = workload(stream, spec, sms)?;
        let mut functions = BTreeMap::new();
        for v in Variant::ALL {
            let module = match modules.get(&(v, spec.hopper)) {
                Some(m) => m.clone(),
                None => {
                    let m = spec
                        .compiler(v, arch)
                        .cubin("gpu_overhead.cu", SOURCE)?
                        .load(ctx)?;
                    modules.insert((v, spec.hopper), m.clone());
                    m
                }
            };
            let f = module
                .load_function(spec.name)
                .map_err(drv("cuModuleGetFunction"))?;
            if work.cfg.shared_mem_bytes > 48 * 1024 {
                f.set_attribute(
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    work.cfg.shared_mem_bytes as i32,
                )
                .map_err(drv("cuFuncSetAttribute (dynamic shared memory)"))?;
            }
            functions.insert(v, f);
        }
        let layout = |timer| spec.layout(blocks_1d(&work.cfg), work.records, timer);
        let mut sessions = BTreeMap::new();
        for v in Variant::ALL.into_iter().filter(|v| v.records()) {
            sessions.insert(v, HostSession::new(stream, layout(v.timer()))?);
        }
        let layout = layout(ikp::device::TimerMode::Globaltimer);
        let lanes = layout.lane_count() as u32;
        let idle = HostSession::new(stream, layout)?;
        let tvm = stream
            .alloc_zeros::<u64>(TvmArg::words(lanes, work.records))
            .map_err(drv("cuMemAlloc (TVM buffer)"))?;
        let tvm_arg = TvmArg {
            buf: tvm.device_ptr(stream).0,
            stride: lanes,
            groups: spec.groups_per_block,
        };
        let mut resources = BTreeMap::new();
        for (&v, f) in &functions {
            resources.insert(v, Resources::of(f, &work.cfg)?);
        }
        Ok(Bench {
            work,
            functions,
            sessions,
            idle,
            tvm,
            tvm_arg,
            resources,
        })
    }

    /// One launch of build `v` after the reset its timings do (the profiling mode).
    fn launch_once(&mut self, stream: &Arc<CudaStream>, v: Variant) -> Result<(), BoxError> {
        let prof = self.prof(stream, v)?;
        let f = self.functions[&v].clone();
        self.work.launch(stream, &f, v, prof.as_ref())
    }

    /// Resets the buffer build `v` writes (its own session's, or the idle one) and returns
    /// its profiler argument.
    fn prof(&mut self, stream: &Arc<CudaStream>, v: Variant) -> Result<Option<Prof>, BoxError> {
        Ok(match self.sessions.get_mut(&v) {
            Some(s) => {
                s.reset()?;
                Some(Prof::Ikp(s.kernel_arg()))
            }
            None => {
                self.idle.reset()?;
                match v {
                    Variant::TvmStyle => {
                        stream
                            .memset_zeros(&mut self.tvm)
                            .map_err(drv("cuMemsetD8Async (TVM buffer)"))?;
                        Some(Prof::Tvm(self.tvm_arg))
                    }
                    // The runtime off switch: an all-zero argument, no lane, no buffer.
                    Variant::NullArg | Variant::NullArgPredicated => {
                        Some(Prof::Ikp(IkpArg::default()))
                    }
                    _ if v.takes_prof() => Some(Prof::Ikp(self.idle.kernel_arg())),
                    _ => None,
                }
            }
        })
    }

    /// Runs build `v` [`LAUNCHES`] times between two events, after resetting a buffer of
    /// the recording builds' size (its own session's, or the idle one), and returns one
    /// launch's time in ms.
    fn timed(
        &mut self,
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        v: Variant,
    ) -> Result<f64, BoxError> {
        let prof = self.prof(stream, v)?;
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = ctx.new_event(flags).map_err(drv("cuEventCreate"))?;
        let end = ctx.new_event(flags).map_err(drv("cuEventCreate"))?;
        start.record(stream).map_err(drv("cuEventRecord"))?;
        let f = self.functions[&v].clone();
        for _ in 0..LAUNCHES {
            self.work.launch(stream, &f, v, prof.as_ref())?;
        }
        end.record(stream).map_err(drv("cuEventRecord"))?;
        let ms = start.elapsed_ms(&end).map_err(drv("cuEventElapsedTime"))?;
        Ok(ms as f64 / LAUNCHES as f64)
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
    // Every build computed the same output (the instrumentation must not change results),
    // and the Hopper GEMM's is the product.
    let base = bench.work.output_bits(stream, Variant::Baseline)?;
    if let Input::Hopper(h) = &bench.work.input {
        let (a, b) = &h.host;
        let c: Vec<f32> = base.iter().map(|&x| f32::from_bits(x)).collect();
        let (n, k) = (
            bench.work.scalars[1] as usize,
            bench.work.scalars[2] as usize,
        );
        check_hopper(&c, a, b, n, k)?;
    }
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

/// Times of one kernel's builds, and the resources of each.
struct Measured {
    kernel: String,
    times: BTreeMap<Variant, Vec<f64>>,
    resources: BTreeMap<Variant, Resources>,
    block_threads: u32,
}

fn stats_json(s: &SlowdownStats) -> Value {
    let r = |x: f64| (x * 1000.0).round() / 1000.0;
    json!({
        "n": s.n, "mean": r(s.mean), "std": r(s.std), "median": r(s.median),
        "ci95": [r(s.ci95.0), r(s.ci95.1)],
    })
}

/// Writes the figures so far to `IKP_OVERHEAD_JSON`, when it is set, whole or not at all.
fn write_json(head: &Value, figures: &Value, complete: bool) -> Result<(), BoxError> {
    let Some(path) = std::env::var_os("IKP_OVERHEAD_JSON") else {
        return Ok(());
    };
    let mut json = figures.clone();
    if let (Value::Object(j), Value::Object(h)) = (&mut json, head) {
        j.extend(h.clone());
        j.insert("complete".into(), complete.into());
    }
    let path = std::path::PathBuf::from(path);
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&json)?)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| format!("writing {}: {e}", path.display()).into())
}

/// Returns the figures as the `ikp-gpu-overhead` JSON, and prints them when `print`.
fn report(results: &[Measured], print: bool) -> Result<Value, BoxError> {
    macro_rules! out {
        ($($t:tt)*) => {
            if print {
                println!($($t)*);
            }
        };
    }
    let mut pooled: BTreeMap<Variant, Vec<f64>> = BTreeMap::new();
    let mut kernels = Vec::new();
    for m in results {
        let base = &m.times[&Variant::Baseline];
        let base_res = m.resources[&Variant::Baseline];
        let median_ms = SlowdownStats::of(base)?.median;
        out!(
            "{}: baseline median {median_ms:.4} ms over {} repetitions ({} regs, {} blocks/SM)",
            m.kernel,
            base.len(),
            base_res.regs,
            base_res.blocks_per_sm
        );
        let mut builds = Vec::new();
        for v in Variant::ALL {
            let res = m.resources[&v];
            let median = SlowdownStats::of(&m.times[&v])?.median;
            let slowdown = if v == Variant::Baseline {
                Value::Null
            } else {
                let s = slowdowns(base, &m.times[&v])?;
                let st = SlowdownStats::of(&s)?;
                let cliff = if res.blocks_per_sm < base_res.blocks_per_sm {
                    format!(
                        "  occupancy cliff: {} -> {} blocks/SM",
                        base_res.blocks_per_sm, res.blocks_per_sm
                    )
                } else {
                    String::new()
                };
                out!(
                    "  {:<15} vs baseline: {st}  ({} regs){cliff}",
                    v.name(),
                    res.regs
                );
                pooled.entry(v).or_default().extend(s);
                stats_json(&st)
            };
            builds.push(json!({
                "build": v.name(),
                "regs": res.regs,
                "local_bytes": res.local_bytes,
                "block_threads": m.block_threads,
                "blocks_per_sm": res.blocks_per_sm,
                "median_ms": (median * 1e5).round() / 1e5,
                "slowdown": slowdown,
            }));
        }
        kernels.push(json!({"kernel": m.kernel, "builds": builds}));
    }
    out!("all kernels ({} kernels):", results.len());
    let mut pooled_json = Vec::new();
    for v in Variant::ALL.into_iter().skip(1) {
        let st = SlowdownStats::of(&pooled[&v])?;
        out!("  {:<15} vs baseline: {st}", v.name());
        pooled_json.push(json!({"build": v.name(), "slowdown": stats_json(&st)}));
    }
    Ok(json!({"kernels": kernels, "pooled": pooled_json}))
}

/// `IKP_OVERHEAD_PROFILE=kernel,kernel`: the profiling mode the GPU bundle runs under Nsight
/// Compute (`ncu`): for each kernel named, one launch of every build, in [`Variant::ALL`]
/// order (after one warm-up launch each, which the bundle's `ncu` skips), and a line
/// `profile: KERNEL BUILD` per profiled launch; no timing.
const PROFILE_VAR: &str = "IKP_OVERHEAD_PROFILE";

fn profile(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    arch: Arch,
    sms: u32,
    list: &str,
) -> Result<(), BoxError> {
    let mut modules = Modules::new();
    for name in list.split(',').filter(|n| !n.is_empty()) {
        let spec = *KERNELS
            .iter()
            .find(|k| k.name == name)
            .ok_or_else(|| format!("{PROFILE_VAR}: no bench kernel {name}"))?;
        if let Err(why) = spec.runs_on(arch) {
            println!("profile: skipped {name} ({why})");
            continue;
        }
        let mut b = Bench::new(ctx, stream, arch, spec, sms, &mut modules)?;
        for v in Variant::ALL {
            b.launch_once(stream, v)?;
        }
        stream.synchronize().map_err(drv("cuStreamSynchronize"))?;
        for v in Variant::ALL {
            b.launch_once(stream, v)?;
            stream.synchronize().map_err(drv("cuStreamSynchronize"))?;
            println!("profile: {name} {}", v.name());
        }
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
    let arch = Arch::of_device(&ctx)?;
    let sms = ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(drv("cuDeviceGetAttribute (SM count)"))? as u32;
    println!(
        "gpu_overhead: {} ({arch}, {sms} SMs), {reps} repetitions per build",
        ctx.name().unwrap_or_else(|_| "unknown GPU".into())
    );
    let mut benches = Vec::new();
    let mut results = Vec::new();
    let head = json!({
        "format": "ikp-gpu-overhead",
        "version": 1,
        "gpu": ctx.name().unwrap_or_else(|_| "unknown GPU".into()),
        "arch": arch.to_string(),
        "sms": sms,
        "reps": reps,
        "launches_per_timing": LAUNCHES,
    });
    if let Ok(list) = std::env::var(PROFILE_VAR) {
        return profile(&ctx, &stream, arch, sms, &list);
    }
    let kernels: Vec<KernelSpec> = KERNELS
        .iter()
        .filter(|k| match k.runs_on(arch) {
            Ok(()) => true,
            Err(why) => {
                println!("{}: skipped ({why})", k.name);
                false
            }
        })
        .copied()
        .collect();
    let mut modules = Modules::new();
    for (i, &spec) in kernels.iter().enumerate() {
        let mut b = Bench::new(&ctx, &stream, arch, spec, sms, &mut modules)?;
        let times = measure(&ctx, &stream, &mut b, reps)?;
        let c = &b.work.cfg;
        results.push(Measured {
            kernel: spec.name.to_string(),
            times,
            resources: b.resources.clone(),
            block_threads: c.block_dim.0 * c.block_dim.1 * c.block_dim.2,
        });
        benches.push(b);
        let last = i + 1 == kernels.len();
        // The report is printed once, at the end; the file after every kernel.
        write_json(&head, &report(&results, last)?, last)?;
    }
    if std::env::var("IKP_OVERHEAD_CRITERION").as_deref() == Ok("0") {
        println!("criterion phase left out (IKP_OVERHEAD_CRITERION=0)");
        return Ok(());
    }

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
        Err(e) if no_gpu(&e) && std::env::var("IKP_GPU_TESTS").as_deref() != Ok("1") => {
            let why = match &e {
                SessionError::NoDriver { .. } => {
                    "no CUDA driver library (libcuda.so.1) found".into()
                }
                e => e.to_string(),
            };
            println!("SKIPPED gpu_overhead: no CUDA GPU ({why})");
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
