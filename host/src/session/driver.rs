//! Finding the CUDA driver and a device without letting cudarc panic.
//!
//! cudarc loads `libcuda` on first use and panics when it cannot; [`probe_driver`] asks
//! first. With the library present but no GPU (or no kernel module), `cuInit` answers
//! `CUDA_ERROR_NO_DEVICE`, which [`open_device`] reports as a [`SessionError::Driver`]
//! carrying that code.

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
pub(crate) fn lib_candidates(lib: &str) -> Vec<String> {
    let mut seen = Vec::new();
    for name in cudarc::get_lib_name_candidates(lib) {
        if !seen.contains(&name) {
            seen.push(name);
        }
    }
    seen
}
