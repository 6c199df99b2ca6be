//! The CUDA driver library itself: whether it loads, which CUDA it supports, which file
//! it is. The bottom of the CUDA room: it knows no ikp error type, so the NVRTC search
//! (which prefers an NVRTC the driver can run) and the device functions of
//! [`super::driver`] can both build on it.
//!
//! cudarc loads `libcuda` on first use and panics when it cannot; [`found`] asks first,
//! and everything here that calls the driver does so only after it.
//!
//! # `libcuda.so.1` first
//!
//! The driver installs its library under the soname `libcuda.so.1`. cudarc tries
//! `libcuda.so` first, a development link that is often absent and, where a CUDA toolkit's
//! `lib64/stubs` is on the library path, the toolkit's link stub (every call answers
//! `CUDA_ERROR_STUB_LIBRARY`). So ikp opens `libcuda.so.1` itself first and keeps it
//! loaded; then it runs cudarc's search (same names, same order, same process) and checks
//! that the first name that loads is the same library: glibc returns the object already
//! loaded for a name that resolves to the same file (the `libcuda.so -> libcuda.so.1`
//! link) and for the soname itself. When it is another file, cudarc would run every
//! driver call through that file: [`Found::Shadowed`] names both instead of letting it.

use std::ffi::{c_void, CStr};
use std::os::unix::ffi::OsStrExt as _;
use std::path::PathBuf;
use std::sync::OnceLock;

use cudarc::driver::{sys, DriverError};
use libloading::os::unix::Library;

/// The name the NVIDIA driver installs its library under.
pub(crate) const SONAME: &str = "libcuda.so.1";

/// What the search for the driver library found.
#[derive(Debug)]
pub(crate) enum Found {
    /// Nothing under any of [`candidates`] loads.
    Absent,
    /// The library cudarc will use: `libcuda.so.1` when it loads, else the first of
    /// cudarc's names that does. Kept loaded for the life of the process.
    Loaded {
        /// The file (links resolved), when the dynamic loader can say.
        path: Option<PathBuf>,
        _lib: Library,
    },
    /// `libcuda.so.1` loads, but cudarc's search would load another file first.
    Shadowed {
        /// The file behind `libcuda.so.1`.
        driver: PathBuf,
        /// The name cudarc would load first.
        name: String,
        /// The file behind `name`.
        other: PathBuf,
    },
}

/// The driver library of this process, searched once.
pub(crate) fn found() -> &'static Found {
    static FOUND: OnceLock<Found> = OnceLock::new();
    FOUND.get_or_init(search)
}

/// Whether the CUDA driver library loads and cudarc will use the same one (asked once).
pub(crate) fn present() -> bool {
    matches!(found(), Found::Loaded { .. })
}

/// A library opened here, with its raw handle: glibc gives one handle per loaded object,
/// so two handles are equal exactly when they are the same library.
struct Opened {
    lib: Library,
    handle: usize,
}

/// Opens `name` the way cudarc does (`RTLD_LAZY | RTLD_LOCAL`).
fn open(name: &str) -> Option<Opened> {
    // SAFETY: loading NVIDIA's driver library runs its initialisers, which have no
    // preconditions; cudarc opens the same names the same way.
    let lib = unsafe { Library::open(Some(name), libloading::os::unix::RTLD_LAZY) }.ok()?;
    let raw = lib.into_raw();
    // SAFETY: `raw` came from `into_raw` just above and is owned again at once.
    let lib = unsafe { Library::from_raw(raw) };
    Some(Opened {
        lib,
        handle: raw as usize,
    })
}

fn search() -> Found {
    let primary = open(SONAME);
    // `libcuda.so.1` is the last of cudarc's names: every other one is tried before it.
    for name in candidates().into_iter().filter(|n| n != SONAME) {
        let Some(first) = open(&name) else { continue };
        return match primary {
            None => loaded(first),
            Some(primary) => decide(primary, name, first),
        };
    }
    primary.map_or(Found::Absent, loaded)
}

fn loaded(o: Opened) -> Found {
    Found::Loaded {
        path: file_of(o.handle),
        _lib: o.lib,
    }
}

/// `libcuda.so.1` loaded as `primary`; `first`, under `name`, is what cudarc's search
/// would load before reaching `libcuda.so.1`.
fn decide(primary: Opened, name: String, first: Opened) -> Found {
    if primary.handle == first.handle {
        // The same object: `first` only held one more reference to it.
        drop(first);
        return loaded(primary);
    }
    let other = file_of(first.handle).unwrap_or_else(|| PathBuf::from(&name));
    // Unloaded again: nothing may run through it.
    drop(first);
    Found::Shadowed {
        driver: file_of(primary.handle).unwrap_or_else(|| PathBuf::from(SONAME)),
        name,
        other,
    }
}

/// The file the library of `handle` was loaded from, links resolved (as
/// `/proc/self/maps` names it), from the dynamic loader's link map (`dlinfo`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn file_of(handle: usize) -> Option<PathBuf> {
    /// The head of glibc's `struct link_map` (`<link.h>`), the part it documents.
    #[repr(C)]
    struct LinkMap {
        _l_addr: usize,
        l_name: *const std::ffi::c_char,
    }
    let mut map: *const LinkMap = std::ptr::null();
    // SAFETY: `handle` is a live handle of this process (its `Library` is held by the
    // caller); RTLD_DI_LINKMAP writes one pointer.
    let r = unsafe {
        libc::dlinfo(
            handle as *mut c_void,
            libc::RTLD_DI_LINKMAP,
            (&mut map as *mut *const LinkMap).cast(),
        )
    };
    if r != 0 || map.is_null() {
        return None;
    }
    // SAFETY: glibc's link map of a loaded object, valid while it is loaded; its name is
    // a NUL-terminated string, copied out at once.
    let name = unsafe {
        let name = (*map).l_name;
        if name.is_null() {
            return None;
        }
        CStr::from_ptr(name)
    };
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()));
    (!path.as_os_str().is_empty()).then(|| path.canonicalize().unwrap_or(path))
}

/// Elsewhere the mappings say which file (see [`mapped_file`]).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn file_of(_handle: usize) -> Option<PathBuf> {
    None
}

/// The CUDA version the driver supports, `(major, minor)`, or `None` without a driver.
pub(crate) fn version() -> Option<Result<(u32, u32), DriverError>> {
    present().then(|| {
        let mut v: std::ffi::c_int = 0;
        // SAFETY: `present` found libcuda and checked that cudarc's loader (same names,
        // same order) gets the same library, so it loads it instead of panicking; `v` is
        // valid for one write.
        let r = unsafe { sys::cuDriverGetVersion(&mut v) }.result();
        let v = v.max(0) as u32;
        r.map(|()| (v / 1000, v % 1000 / 10))
    })
}

/// The `libcuda` file this process loaded: from the dynamic loader, else from
/// `/proc/self/maps`.
pub(crate) fn mapped_file() -> Option<PathBuf> {
    match found() {
        Found::Loaded { path: Some(p), .. } => Some(p.clone()),
        Found::Loaded { path: None, .. } => super::proc_maps::mapped_library("libcuda.so"),
        Found::Absent | Found::Shadowed { .. } => None,
    }
}

/// The file names tried for the driver library, in order, without repeats:
/// `libcuda.so.1`, then cudarc's.
pub(crate) fn candidates() -> Vec<String> {
    let mut seen = vec![SONAME.to_owned()];
    for name in cudarc::get_lib_name_candidates("cuda") {
        if !seen.contains(&name) {
            seen.push(name);
        }
    }
    seen
}
