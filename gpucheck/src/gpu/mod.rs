//! The GPU checks of the bundle. Each launches a kernel of `kernels.cu` with an ikp
//! session, decodes the buffer, and compares the trace with the ground truth the kernel
//! wrote beside it (raw timer reads by the same thread), so a figure here says how far
//! ikp's numbers are from what happened on the GPU:
//!
//! - [`timer`]: the `%globaltimer` resolution (tick) of this GPU;
//! - [`timing`]: regions around busy-waits of known length, both timer modes;
//! - [`axis`]: blocks on different SMs stamping the same moment agree;
//! - [`overflow`]: a full lane drops exactly what it should and nothing else moves;
//! - [`host_clock`]: a session's host clock sync maps device time onto the host's clocks
//!   within its error bound.
//! - [`correction`]: the decoder's overhead correction against a region without records;
//! - [`ring`]: ring lanes that wrap, and the record-cost word of their launch; [`epochs`]:
//!   a CUDA Graph replayed into a buffer of epochs; [`ranges`]: async ranges across warps
//!   (these three read the raw buffer words).

/// `unsafe { launch!(gpu, "kernel", blocks, threads; args..) }?` launches kernel `kernel` of
/// `kernels.cu` on the checks' stream with `blocks` blocks of `threads` threads and the
/// given arguments; a driver error, named `cuLaunchKernel (kernel)` (or the `=> call`
/// given), becomes the check's error. Unsafe as every launch: the arguments must be the
/// kernel's parameters (each call's SAFETY comment says how).
macro_rules! launch {
    ($gpu:expr, $kernel:literal, $($rest:tt)+) => {
        launch!($gpu, $kernel => concat!("cuLaunchKernel (", $kernel, ")"), $($rest)+)
    };
    ($gpu:expr, $kernel:expr => $call:expr, $blocks:expr, $threads:expr; $($arg:expr),+) => {{
        let f = $gpu.function($kernel)?;
        let mut b = $gpu.stream.launch_builder(&f);
        $(b.arg($arg);)+
        b.launch($crate::gpu::grid($blocks, $threads))
            .map(drop)
            .map_err($crate::gpu::drv($call))
    }};
}

pub mod axis;
pub mod correction;
pub mod device_ring;
pub mod epochs;
pub mod host_clock;
pub mod overflow;
pub mod ranges;
pub mod ring;
pub mod stream;
pub mod timer;
pub mod timing;
mod words;

use std::sync::Arc;

use ikp_device::Layout;
use ikp_host::cuda::cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, DriverError,
    LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use ikp_host::cuda::{open_device, HostSession, SessionOptions};
use ikp_host::Trace;
use ikp_host::{cuda::nvrtc::Compiler, Arch};

use crate::results::Check;

/// How long [`Gpu::warm_up`] keeps every SM busy before a check: an H100 goes from its
/// idle clock to its working clock within tens of ms of load.
pub const WARM_UP_NS: u64 = 150_000_000;

/// Source of the checks' kernels.
pub const SOURCE: &str = include_str!("kernels.cu");

/// The checks, in the order the runner runs them.
pub const CHECKS: [&str; 15] = [
    "timer/resolution",
    "timing/globaltimer",
    "timing/clock",
    "time-axis",
    "overflow",
    "host-clock",
    "ring",
    "record-cost",
    "epochs/graph",
    "async-ranges",
    "overhead-correction",
    "stream/wait",
    "stream/drop",
    "stream/sweep",
    "stream/device-ring",
];

/// Device 0 with the checks' kernels loaded.
#[derive(Debug)]
pub struct Gpu {
    /// Its primary context.
    pub ctx: Arc<CudaContext>,
    /// The stream every check runs on.
    pub stream: Arc<CudaStream>,
    /// Its architecture.
    pub arch: Arch,
    /// Its SM count.
    pub sms: u32,
    module: Arc<CudaModule>,
}

/// Session options without a host clock sync.
pub const NO_SYNC: SessionOptions = SessionOptions {
    clock_sync_samples: 0,
};

/// A check's failure to run at all (a driver or compile error), as text.
pub type Error = String;

fn drv(call: &'static str) -> impl FnOnce(DriverError) -> Error {
    move |e| ikp_host::cuda::SessionError::driver(call, e).to_string()
}

/// A one-dimensional launch of `blocks` blocks of `threads` threads.
fn grid(blocks: u32, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl Gpu {
    /// Opens device 0 and compiles the checks' kernels for its exact architecture.
    pub fn open() -> Result<Gpu, Error> {
        let ctx = open_device(0).map_err(|e| e.to_string())?;
        let arch = Arch::of_device(&ctx).map_err(|e| e.to_string())?;
        let sms = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(drv("cuDeviceGetAttribute (SM count)"))? as u32;
        let module = Compiler::new(arch)
            .cubin("gpucheck.cu", SOURCE)
            .map_err(|e| e.to_string())?
            .load(&ctx)
            .map_err(|e| e.to_string())?;
        let stream = ctx.default_stream();
        Ok(Gpu {
            ctx,
            stream,
            arch,
            sms,
            module,
        })
    }

    /// Kernel `name` of `kernels.cu`.
    pub fn function(&self, name: &str) -> Result<CudaFunction, Error> {
        self.module
            .load_function(name)
            .map_err(drv("cuModuleGetFunction"))
    }

    /// A device copy of `host`.
    pub fn upload<T: DeviceRepr>(&self, host: &[T]) -> Result<CudaSlice<T>, Error> {
        self.stream.clone_htod(host).map_err(drv("cuMemcpyHtoD"))
    }

    /// A zeroed device buffer of `len` elements.
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<CudaSlice<T>, Error> {
        self.stream.alloc_zeros(len).map_err(drv("cuMemAlloc"))
    }

    /// The host copy of `dev`, after everything queued before.
    pub fn download<T: DeviceRepr>(&self, dev: &CudaSlice<T>) -> Result<Vec<T>, Error> {
        self.stream.clone_dtoh(dev).map_err(drv("cuMemcpyDtoH"))
    }

    /// Runs [`WARM_UP_NS`] of FMA work on every SM and returns the SM clock at its end in
    /// MHz (clock64 over `%globaltimer`, block 0), so that what a check times next runs
    /// at the working clock, not the idle one (each check is a fresh process on a GPU that
    /// may have idled between them).
    pub fn warm_up(&self) -> Result<f64, Error> {
        let mut out = self.zeros::<u64>(2)?;
        let mut sink = self.zeros::<f32>(1)?;
        // SAFETY: warm_up(u64 ns, u64* out[2], float* sink[1]).
        unsafe { launch!(self, "warm_up", self.sms * 4, 256; &WARM_UP_NS, &mut out, &mut sink) }?;
        let o = self.download(&out)?;
        Ok(if o[1] > 0 {
            o[0] as f64 * 1e3 / o[1] as f64
        } else {
            0.0
        })
    }

    /// A session for `layout` on the checks' stream.
    pub fn session(&self, layout: Layout) -> Result<HostSession, Error> {
        HostSession::new(&self.stream, layout).map_err(|e| e.to_string())
    }
}

/// Reads back and decodes a session after its launch.
pub fn decode(session: &mut HostSession) -> Result<Trace, Error> {
    session.read_back().map_err(|e| e.to_string())?;
    session.decode().map_err(|e| e.to_string())
}

/// Runs check `name` on device 0. Errors that stop a check from running at all become a
/// failed check of that name.
pub fn run(name: &str) -> Vec<Check> {
    let gpu = match Gpu::open() {
        Ok(g) => g,
        Err(e) => return vec![Check::fail(name, format!("could not start: {e}"))],
    };
    // Every check starts at the working clock; the clocks before and after are figures of
    // each check (the kernel's own measure at the end of the warm-up, and nvidia-smi's).
    let warm_mhz = match std::env::var_os(NO_WARM_UP_VAR) {
        Some(_) => None,
        None => match gpu.warm_up() {
            Ok(m) => Some(m),
            Err(e) => return vec![Check::fail(name, format!("warming up: {e}"))],
        },
    };
    let smi_before = smi_sm_mhz();
    let result = match name {
        "timer/resolution" => timer::check(&gpu).map(|c| vec![c]),
        "timing/globaltimer" => timing::check(&gpu, timing::Mode::Globaltimer).map(|c| vec![c]),
        "timing/clock" => timing::check(&gpu, timing::Mode::Clock).map(|c| vec![c]),
        "time-axis" => axis::check(&gpu).map(|c| vec![c]),
        "overflow" => overflow::check(&gpu).map(|c| vec![c]),
        "host-clock" => host_clock::check(&gpu).map(|c| vec![c]),
        "ring" => ring::check(&gpu).map(|c| vec![c]),
        "record-cost" => ring::calib_check(&gpu).map(|c| vec![c]),
        "epochs/graph" => epochs::check(&gpu).map(|c| vec![c]),
        "async-ranges" => ranges::check(&gpu).map(|c| vec![c]),
        "overhead-correction" => correction::check(&gpu).map(|c| vec![c]),
        "stream/wait" => stream::check(&gpu, true).map(|c| vec![c]),
        "stream/drop" => stream::check(&gpu, false).map(|c| vec![c]),
        "stream/sweep" => stream::sweep(&gpu).map(|c| vec![c]),
        "stream/device-ring" => device_ring::check(&gpu).map(|c| vec![c]),
        other => Err(format!("no GPU check named {other:?}; they are {CHECKS:?}")),
    };
    let smi_after = smi_sm_mhz();
    let checks = result.unwrap_or_else(|e| vec![Check::fail(name, e)]);
    let with_clocks = |c: Check| {
        c.figure("sm_mhz_after_warm_up", warm_mhz.map(|m| round(m, 0)))
            .figure("smi_sm_mhz_before", smi_before)
            .figure("smi_sm_mhz_after", smi_after)
    };
    checks.into_iter().map(with_clocks).collect()
}

/// The SM clock nvidia-smi reads now, MHz (None where it cannot).
fn smi_sm_mhz() -> Option<f64> {
    crate::machine::nvidia_smi()?
        .get("smi_clocks_sm")?
        .as_str()?
        .parse()
        .ok()
}

/// Writes `contents` as `name` into the directory the runner names in
/// [`DATA_DIR_VAR`] (which it archives with the logs): raw per-lane data a figure was
/// computed from, for reading a run again off the machine. Best effort: a check never
/// fails for want of it.
pub fn save_data(name: &str, contents: &str) {
    if let Some(dir) = std::env::var_os(DATA_DIR_VAR) {
        let dir = std::path::Path::new(&dir);
        if std::fs::create_dir_all(dir).is_ok() {
            let _ = std::fs::write(dir.join(name), contents);
        }
    }
}

/// Set (to anything), a check child skips [`Gpu::warm_up`]: the runner sets it for the
/// runs under compute-sanitizer, where nothing is timed.
pub const NO_WARM_UP_VAR: &str = "IKP_GPUCHECK_NO_WARM_UP";

/// The variable that names where [`save_data`] writes (set by the runner for its children).
pub const DATA_DIR_VAR: &str = "IKP_GPUCHECK_DATA";

/// The median of `v` (sorted in place); 0 for an empty slice.
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    // The middle value, or the mean of the two middle ones.
    (v[(v.len() - 1) / 2] + v[v.len() / 2]) / 2.0
}

/// `a - b` in ns, as a float. The difference is taken in integers first: the operands are
/// `%globaltimer` readings (ns since 1970, about 2^61), which a double holds only to the
/// nearest 256 ns, and converting them first made every error a multiple of 256 ns.
pub fn signed_ns(a: u64, b: u64) -> f64 {
    (i128::from(a) - i128::from(b)) as f64
}

/// `x` rounded to `digits` decimals, for figures.
pub fn round(x: f64, digits: i32) -> f64 {
    let p = 10f64.powi(digits);
    (x * p).round() / p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&mut []), 0.0);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(round(1.23456, 2), 1.23);
    }
}
