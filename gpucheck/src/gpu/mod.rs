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
//! - [`v2`]: ring lanes, the record-cost word, epochs under a replayed CUDA Graph, async
//!   ranges across warps (raw buffer words).

pub mod axis;
pub mod correction;
pub mod host_clock;
pub mod overflow;
pub mod timer;
pub mod timing;
pub mod v2;

use std::sync::Arc;

use ikp_device::Layout;
use ikp_host::cuda::cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, DriverError,
    ValidAsZeroBits,
};
use ikp_host::cuda::{open_device, HostSession};
use ikp_host::model::Trace;
use ikp_host::{cuda::nvrtc::Compiler, Arch};

use crate::results::{Check, Status};

/// Source of the checks' kernels.
pub const SOURCE: &str = include_str!("kernels.cu");

/// The checks, in the order the runner runs them.
pub const CHECKS: [&str; 11] = [
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
];

/// Device 0 with the checks' kernels loaded.
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

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("arch", &self.arch)
            .field("sms", &self.sms)
            .finish()
    }
}

/// A check's failure to run at all (a driver or compile error), as text.
pub type Error = String;

fn drv(call: &'static str) -> impl FnOnce(DriverError) -> Error {
    move |e| ikp_host::cuda::SessionError::driver(call, e).to_string()
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
        Err(e) => {
            return vec![Check::new(
                name,
                Status::Fail,
                true,
                format!("could not start: {e}"),
            )]
        }
    };
    let result = match name {
        "timer/resolution" => timer::check(&gpu).map(|c| vec![c]),
        "timing/globaltimer" => timing::check(&gpu, timing::Mode::Globaltimer).map(|c| vec![c]),
        "timing/clock" => timing::check(&gpu, timing::Mode::Clock).map(|c| vec![c]),
        "time-axis" => axis::check(&gpu).map(|c| vec![c]),
        "overflow" => overflow::check(&gpu).map(|c| vec![c]),
        "host-clock" => host_clock::check(&gpu).map(|c| vec![c]),
        "ring" => v2::ring_check(&gpu).map(|c| vec![c]),
        "record-cost" => v2::calib_check(&gpu).map(|c| vec![c]),
        "epochs/graph" => v2::epochs_check(&gpu).map(|c| vec![c]),
        "async-ranges" => v2::ranges_check(&gpu).map(|c| vec![c]),
        "overhead-correction" => correction::check(&gpu).map(|c| vec![c]),
        other => Err(format!("no GPU check named {other:?}; they are {CHECKS:?}")),
    };
    result.unwrap_or_else(|e| vec![Check::new(name, Status::Fail, true, e)])
}

/// The median of `v` (sorted in place); 0 for an empty slice.
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
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
