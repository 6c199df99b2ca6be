//! Finding the CUDA driver and a device without letting cudarc panic ([`probe_driver`]
//! asks first), and saying which driver it is ([`driver_version`], [`driver_library`]).

use std::path::PathBuf;
use std::sync::Arc;

use cudarc::driver::{result, CudaContext, CudaModule};

use super::error::SessionError;
use super::libcuda;
use super::nvrtc::Compiled;
use crate::arch::Arch;

/// Checks that the CUDA driver library (`libcuda.so.1` on Linux, tried first) can be
/// loaded, and that cudarc, which runs every driver call, will use that same file.
///
/// Errors: [`SessionError::NoDriver`] when no name loads; [`SessionError::ShadowedDriver`]
/// when `libcuda.so.1` loads but a name cudarc tries before it (`libcuda.so`) is another
/// file, such as a toolkit's link stub.
pub fn probe_driver() -> Result<(), SessionError> {
    match libcuda::found() {
        libcuda::Found::Loaded { .. } => Ok(()),
        libcuda::Found::Absent => Err(SessionError::NoDriver {
            searched: libcuda::candidates(),
        }),
        libcuda::Found::Shadowed {
            driver,
            name,
            other,
        } => Err(SessionError::ShadowedDriver {
            driver: driver.clone(),
            name: name.clone(),
            other: other.clone(),
        }),
    }
}

/// The CUDA version the driver supports, `(major, minor)` (`cuDriverGetVersion`: 13.0
/// for driver 580). Needs no device and no `cuInit`; [`SessionError::NoDriver`] without
/// `libcuda`. The NVRTC search uses it to avoid an NVRTC newer than the driver.
pub fn driver_version() -> Result<(u32, u32), SessionError> {
    probe_driver()?;
    libcuda::version()
        .expect("probe_driver found the driver")
        .map_err(|e| SessionError::driver("cuDriverGetVersion", e))
}

/// The `libcuda` file this process loaded (links resolved: `libcuda.so.580.65.06`), from
/// the dynamic loader; `None` without a usable driver or where it cannot say. Results files record it next to the
/// NVRTC library ([`super::nvrtc::library`]), so a measurement says which driver ran it.
pub fn driver_library() -> Option<PathBuf> {
    libcuda::mapped_file()
}

fn init() -> Result<(), SessionError> {
    probe_driver()?;
    result::init().map_err(|e| SessionError::driver("cuInit", e))
}

/// Number of CUDA devices: `Ok(0)` when the driver is installed but finds no GPU
/// (`CUDA_ERROR_NO_DEVICE`), [`SessionError::NoDriver`] when there is no driver at all.
pub fn device_count() -> Result<usize, SessionError> {
    match init() {
        Ok(()) => {}
        Err(e) if e.is_no_device() => return Ok(0),
        Err(e) => return Err(e),
    }
    let n = result::device::get_count().map_err(|e| SessionError::driver("cuDeviceGetCount", e))?;
    Ok(n.max(0) as usize)
}

/// Opens device `ordinal` (its primary context), checking for the driver first.
///
/// Errors: [`SessionError::NoDriver`] without `libcuda`; [`SessionError::Driver`] with
/// `CUDA_ERROR_NO_DEVICE` when the driver sees no GPU; [`SessionError::NoSuchDevice`]
/// when `ordinal` is out of range.
pub fn open_device(ordinal: usize) -> Result<Arc<CudaContext>, SessionError> {
    init()?;
    let count =
        result::device::get_count().map_err(|e| SessionError::driver("cuDeviceGetCount", e))?;
    let count = count.max(0) as usize;
    if ordinal >= count {
        return Err(SessionError::NoSuchDevice { ordinal, count });
    }
    CudaContext::new(ordinal)
        .map_err(|e| SessionError::driver("CudaContext::new (retaining the primary context)", e))
}

impl Arch {
    /// The architecture of the device behind `ctx`.
    pub fn of_device(ctx: &CudaContext) -> Result<Arch, SessionError> {
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| SessionError::driver("cuDeviceGetAttribute (compute capability)", e))?;
        Ok(Arch::new(major as u32, minor as u32))
    }
}

impl Compiled {
    /// Loads the image as a module into `ctx`.
    pub fn load(&self, ctx: &Arc<CudaContext>) -> Result<Arc<CudaModule>, SessionError> {
        ctx.load_module(self.to_cudarc())
            .map_err(|e| SessionError::driver("cuModuleLoadData", e))
    }
}
