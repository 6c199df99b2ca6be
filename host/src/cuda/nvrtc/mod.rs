//! Compiling instrumented kernels at run time with NVRTC.
//!
//! [`Compiler`] turns a kernel's CUDA C++ source into PTX or a cubin for one [`Arch`](crate::Arch), with
//! the ikp device header available as `#include "ikp.cuh"` (handed to NVRTC in memory, so
//! nothing is written to disk) and the compile-out switch `IKP_ENABLED` set from
//! [`Compiler::profiling`]. Cubins let a kernel load for the exact architecture of the
//! device even when the driver is older than NVRTC (a driver cannot JIT PTX of a newer ISA
//! version, but it loads a cubin for its own architecture).
//!
//! # Finding NVRTC
//!
//! NVRTC is loaded at run time, and ikp finds it itself rather than through cudarc:
//! cudarc's loader tries `libnvrtc.so`, `libnvrtc.so.12`, `.so.11`, ... by bare name, but
//! never `libnvrtc.so.13`, the only name CUDA 13's pip package (`nvidia-cuda-nvrtc`)
//! installs, and it panics when nothing loads. ikp opens the library by full path
//! ([`library`] says which file, which version, and which rule found it) and returns
//! [`NvrtcError::NotFound`] or [`NvrtcError::BadOverride`] instead of panicking.
//!
//! The places, in order (the first file that loads wins):
//!
//! 1. `IKP_NVRTC`: a library file, or a directory holding one. When it is set, nothing
//!    else is searched: if nothing loads there, that is [`NvrtcError::BadOverride`].
//! 2. The directories of `LD_LIBRARY_PATH`.
//! 3. `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64`, `/usr/local/cuda/lib64`,
//!    `/usr/local/cuda-*/lib64` (newest version first), `/usr/lib/x86_64-linux-gnu`,
//!    `/usr/lib64`, `/usr/lib`.
//! 4. NVIDIA's pip packages, `nvidia/cu13/lib`, `nvidia/cuda_nvrtc/lib`, then any other
//!    `nvidia/*/lib`, in the active Python environment: the site-packages of
//!    `$VIRTUAL_ENV`, then of `$CONDA_PREFIX` (`lib/python3*/site-packages`, newest Python
//!    first). Other interpreters on the machine are not guessed at, as NVIDIA's
//!    `cuda.pathfinder` does not: `IKP_NVRTC` or `LD_LIBRARY_PATH` name their NVRTC.
//! 5. Last, the bare names through the dynamic loader (its cache and default directories).
//!
//! In each directory the names are `libnvrtc.so.13`, `libnvrtc.so.12`, `libnvrtc.so`
//! (whose major is read from the file it links to). Among the files of places 2 to 4 (or
//! of an `IKP_NVRTC` directory), the CUDA major version decides before the order of the
//! places: first the majors not newer than the driver's (`cuDriverGetVersion`, asked only
//! after [`probe_driver`](crate::cuda::probe_driver) found a driver), highest first; then the newer
//! majors, highest first; files of unknown major last. The order above breaks ties. The
//! reason: a cubin (or PTX of a newer ISA) from an NVRTC newer than the driver may not
//! load, so the newest NVRTC the driver can run beats an even newer one. Without a driver
//! (compiling only) the newest NVRTC wins. The search runs once per process, at the first
//! call that needs NVRTC.
//!
//! # NVRTC's builtins library
//!
//! NVRTC opens `libnvrtc-builtins.so.<major>.<minor>` by bare name at its first compile.
//! Some NVRTC builds carry an RPATH of `$ORIGIN` (CUDA 12.9's and 13.5's pip wheels) and
//! find it beside themselves; CUDA 13.0's `libnvrtc.so.13` (the toolkit's 13.0.88 and the
//! wheel of that version) carries none, so unless its directory is on `LD_LIBRARY_PATH` or
//! in the loader's cache every compile fails with `NVRTC_ERROR_BUILTIN_OPERATION_FAILURE`.
//! So once the search has chosen a library, ikp opens the builtins library from that
//! library's directory (then from the directory of the file a link resolves to) by full
//! path, `RTLD_NOW | RTLD_GLOBAL`, and keeps it for the life of the process: glibc then
//! answers NVRTC's own `dlopen` by soname with the library already loaded.
//! [`NvrtcLibrary::builtins`] names the file (`None` when there is none: NVRTC is left to
//! find it, and a failure is [`NvrtcError::BuiltinsFailed`]); a builtins file that is
//! there but does not load is [`NvrtcError::Builtins`].
//!
//! ```no_run
//! use ikp_host::cuda::nvrtc::{self, Compiler};
//! use ikp_host::Arch;
//! let src = r#"
//!     #include "ikp.cuh"
//!     extern "C" __global__ void k(ikp::Arg prof) { }
//! "#;
//! println!("{}", nvrtc::library()?); // NVRTC 13.5 at /.../libnvrtc.so.13 (...; builtins ...)
//! let cubin = Compiler::new(Arch::new(8, 0)).cubin("k.cu", src)?;
//! assert!(!cubin.bytes().is_empty());
//! # Ok::<(), ikp_host::cuda::nvrtc::NvrtcError>(())
//! ```

mod api;
mod compile;
mod error;
mod loader;
mod search;

pub use compile::{Compiled, Compiler, Target};
pub use error::{NvrtcError, NvrtcStatus};
pub use loader::{library, NvrtcLibrary};
pub use search::{FoundBy, ENV_VAR};

/// Name under which the ikp device header is visible to kernels compiled here.
pub fn header_name() -> &'static str {
    ikp_device::cuh::FILE_NAME
}

/// Checks that an NVRTC library can be loaded, without panicking when it cannot.
pub fn probe() -> Result<(), NvrtcError> {
    library().map(|_| ())
}

/// NVRTC's version `(major, minor)`.
pub fn version() -> Result<(u32, u32), NvrtcError> {
    Ok(library()?.version())
}

/// The real architectures this NVRTC can compile for, as `major * 10 + minor` ascending
/// (e.g. `[75, 80, ..., 120]` for CUDA 13: each CUDA major drops the oldest ones, so the
/// first entry is the oldest architecture a kernel can target with this library).
pub fn supported_archs() -> Result<Vec<u32>, NvrtcError> {
    library()?.api.supported_archs()
}
