//! The CUDA driver library itself: whether it loads, which CUDA it supports, which file
//! it is. The bottom of the CUDA room: it knows no ikp error type, so the NVRTC search
//! (which prefers an NVRTC the driver can run) and the device functions of
//! [`super::driver`] can both build on it.
//!
//! cudarc loads `libcuda` on first use and panics when it cannot; [`present`] asks first,
//! and everything here that calls the driver does so only after it.

use std::path::PathBuf;
use std::sync::OnceLock;

use cudarc::driver::{sys, DriverError};

/// Whether the CUDA driver library (`libcuda.so.1` on Linux) loads (asked once).
pub(crate) fn present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: loading NVIDIA's driver library runs its initialisers, which have no
    // preconditions; cudarc marks every dlopen unsafe for that reason.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

/// The CUDA version the driver supports, `(major, minor)`, or `None` without a driver.
pub(crate) fn version() -> Option<Result<(u32, u32), DriverError>> {
    if !present() {
        return None;
    }
    let mut v: std::ffi::c_int = 0;
    // SAFETY: `present` found libcuda, so cudarc's loader (same names, same order) loads
    // it instead of panicking; `v` is valid for one write.
    let r = unsafe { sys::cuDriverGetVersion(&mut v) }.result();
    Some(r.map(|()| {
        let v = v.max(0) as u32;
        (v / 1000, v % 1000 / 10)
    }))
}

/// The `libcuda` file this process loaded, from `/proc/self/maps`.
pub(crate) fn mapped_file() -> Option<PathBuf> {
    // `present` only checks that libcuda loads (and unloads it again); asking the driver
    // something keeps cudarc's copy loaded, so the mapping is there to read.
    version()?.ok()?;
    super::proc_maps::mapped_library("libcuda.so")
}

/// The file names cudarc tries for the driver library, in its order, without repeats.
pub(crate) fn candidates() -> Vec<String> {
    let mut seen = Vec::new();
    for name in cudarc::get_lib_name_candidates("cuda") {
        if !seen.contains(&name) {
            seen.push(name);
        }
    }
    seen
}
