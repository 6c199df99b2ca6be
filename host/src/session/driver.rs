//! Finding the CUDA driver and a device without letting cudarc panic.
//!
//! cudarc loads `libcuda` on first use and panics when it cannot; [`probe_driver`] asks
//! first. With the library present but no GPU (or no kernel module), `cuInit` answers
//! `CUDA_ERROR_NO_DEVICE`, which [`open_device`] reports as a [`SessionError::Driver`]
//! carrying that code. [`driver_version`] and [`driver_library`] say which CUDA the
//! driver supports and which `libcuda` file was loaded, for results files and for the
//! NVRTC search.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use cudarc::driver::{result, sys, CudaContext};

use super::SessionError;

/// Checks that the CUDA driver library (`libcuda.so.1` on Linux) can be loaded.
pub fn probe_driver() -> Result<(), SessionError> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: loading NVIDIA's driver library runs its initialisers, which have no
    // preconditions; cudarc marks every dlopen unsafe for that reason.
    let present = *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() });
    if present {
        Ok(())
    } else {
        Err(SessionError::NoDriver {
            searched: lib_candidates("cuda"),
        })
    }
}

/// The CUDA version the driver supports, `(major, minor)` (`cuDriverGetVersion`: 13.0
/// for driver 580). Needs no device and no `cuInit`; [`SessionError::NoDriver`] without
/// `libcuda`. The NVRTC loader uses it to avoid an NVRTC newer than the driver.
pub fn driver_version() -> Result<(u32, u32), SessionError> {
    probe_driver()?;
    let mut v: std::ffi::c_int = 0;
    // SAFETY: probe_driver found libcuda, so cudarc's loader (same names, same order)
    // loads it instead of panicking; `v` is valid for one write.
    unsafe { sys::cuDriverGetVersion(&mut v) }
        .result()
        .map_err(|e| SessionError::driver("cuDriverGetVersion", e))?;
    let v = v.max(0) as u32;
    Ok((v / 1000, v % 1000 / 10))
}

/// The `libcuda` file this process loaded, from `/proc/self/maps`; `None` without a
/// driver or where the mappings cannot be read. Results files record it next to the
/// NVRTC library ([`crate::nvrtc::library`]), so a measurement says which driver ran it.
pub fn driver_library() -> Option<PathBuf> {
    probe_driver().ok()?;
    // probe_driver only checks that libcuda loads (and unloads it again); asking the
    // driver something keeps cudarc's copy loaded, so the mapping is there to read.
    driver_version().ok()?;
    crate::proc_maps::mapped_library("libcuda.so")
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

/// The file names cudarc tries for `lib`, in its order, without repeats.
fn lib_candidates(lib: &str) -> Vec<String> {
    let mut seen = Vec::new();
    for name in cudarc::get_lib_name_candidates(lib) {
        if !seen.contains(&name) {
            seen.push(name);
        }
    }
    seen
}
