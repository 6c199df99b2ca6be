//! The GPU side of the host (cargo feature `cuda`, on by default): the CUDA driver,
//! [`HostSession`] (the device buffer of one instrumented launch), and [`nvrtc`] (compiling
//! instrumented kernels at run time).
//!
//! Everything here goes through cudarc, which loads `libcuda` on first use and panics
//! when it cannot: the functions of this module check first and return
//! [`SessionError::NoDriver`] instead. Without a GPU the driver answers
//! `CUDA_ERROR_NO_DEVICE`, a [`SessionError::Driver`] for which
//! [`SessionError::is_no_device`] holds.
//!
//! Inside, the layers point one way: `libcuda` (is the driver there, which version)
//! under [`nvrtc`] (which prefers an NVRTC the driver can run) under the error type under
//! the device functions under [`HostSession`].

mod driver;
mod error;
mod libcuda;
pub mod nvrtc;
mod proc_maps;
mod session;

pub use driver::{device_count, driver_library, driver_version, open_device, probe_driver};
pub use error::SessionError;
pub use session::{HostSession, IkpArg, SessionOptions, StreamSession, WrittenTrace};

/// The cudarc this crate is built against, for launchers that have no direct dependency.
pub use cudarc;
