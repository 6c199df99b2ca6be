//! What can go wrong on the GPU side of the host: [`SessionError`], for the driver, the
//! device buffer and a session's outputs.

use cudarc::driver::{sys, DriverError};
use ikp_device::LayoutError;

use super::libcuda;
use super::nvrtc::NvrtcError;
use crate::decode::DecodeError;
use crate::write::WriteError;

/// What went wrong on the GPU side of the host.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The CUDA driver library could not be loaded.
    #[error(
        "no CUDA driver found: libcuda could not be loaded (tried {}); install the NVIDIA \
         driver, or put the directory holding libcuda.so.1 on LD_LIBRARY_PATH",
        searched.join(", ")
    )]
    NoDriver {
        /// Library names that were tried.
        searched: Vec<String>,
    },
    /// The driver's `libcuda.so.1` loads, but cudarc (which runs every driver call) looks
    /// for `name` first and that is another file: a CUDA toolkit's link stub on the
    /// library path, or another driver's library. Nothing is run through either.
    #[error(
        "the CUDA driver library libcuda.so.1 is {}, but cudarc loads {name} first and that \
         is another file, {}; take its directory off LD_LIBRARY_PATH (a toolkit's \
         lib64/stubs does not belong there at run time)",
        driver.display(),
        other.display()
    )]
    ShadowedDriver {
        /// The file behind `libcuda.so.1`.
        driver: std::path::PathBuf,
        /// The name cudarc would load first (`libcuda.so`).
        name: String,
        /// The file behind `name`.
        other: std::path::PathBuf,
    },
    /// A CUDA driver call failed; `name` is the CUresult name, e.g. `CUDA_ERROR_NO_DEVICE`.
    #[error("CUDA driver call {call} failed with {name}: {description}")]
    Driver {
        /// The driver call (or cudarc operation) that failed.
        call: &'static str,
        /// The status code.
        code: sys::CUresult,
        /// The code's name.
        name: String,
        /// The driver's description of it.
        description: String,
    },
    /// The requested device ordinal does not exist.
    #[error("CUDA device {ordinal} requested but the driver reports {count} device(s)")]
    NoSuchDevice {
        /// Requested ordinal.
        ordinal: usize,
        /// Devices present.
        count: usize,
    },
    /// The layout breaks a limit of the wire format.
    #[error("invalid ikp layout: {0}")]
    Layout(#[from] LayoutError),
    /// The buffer is larger than this host can address.
    #[error("ikp buffer of {words} words does not fit in this host's address space")]
    TooLarge {
        /// Words the layout needs.
        words: u64,
    },
    /// A host copy of the buffer was needed before [`HostSession::read_back`](super::HostSession::read_back) made one.
    #[error("the ikp buffer has not been read back: call read_back() after the launch")]
    NotReadBack,
    /// A stream session was given a layout that is not a stream launch's.
    #[error(
        "a stream session needs a stream layout (overflow Stream or StreamWait); use \
         HostSession for the other overflow policies"
    )]
    NotStream,
    /// An instrumented module's buffer symbol is not the block `ikp instrument` declares
    /// ([`crate::instrument::SYMBOL_WORDS`] 64-bit words).
    #[error("the ikp buffer symbol {symbol} is {bytes} bytes, not the {} of this ikp's probes: was the module instrumented by this ikp?", crate::instrument::SYMBOL_WORDS * 8)]
    ProbeSymbol {
        /// The symbol.
        symbol: String,
        /// Its size in the module.
        bytes: usize,
    },
    /// The drain of a stream launch failed.
    #[error(transparent)]
    Drain(#[from] crate::drain::DrainError),
    /// Kernel compilation failed.
    #[error(transparent)]
    Nvrtc(#[from] NvrtcError),
    /// The read-back buffer did not decode (a kernel that wrote outside its lane, or
    /// never ran).
    #[error("decoding the read-back ikp buffer: {0}")]
    Decode(#[from] DecodeError),
    /// An output file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// No reading of the host-clock sync was usable (the host clocks stepped back during
    /// every one, or the GPU timer read 0): open the session without a clock sync
    /// ([`SessionOptions::clock_sync_samples`](super::SessionOptions) = 0).
    #[error(
        "host clock sync failed: none of its {samples} readings was usable (a host clock \
         stepped back, or %globaltimer read 0)"
    )]
    ClockSync {
        /// Readings taken.
        samples: u32,
    },
}

impl SessionError {
    /// Wraps a cudarc driver error with the call that produced it.
    pub fn driver(call: &'static str, e: DriverError) -> SessionError {
        SessionError::Driver {
            call,
            code: e.0,
            name: format!("{:?}", e.0),
            // cuGetErrorString lives in libcuda: ask only if it loads (cudarc panics if not).
            description: libcuda::present()
                .then(|| e.error_string().ok())
                .flatten()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "no description (cuGetErrorString unavailable)".into()),
        }
    }

    /// The CUDA status code, for driver errors.
    pub fn driver_code(&self) -> Option<sys::CUresult> {
        match self {
            SessionError::Driver { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether the driver answered `CUDA_ERROR_NO_DEVICE`.
    pub fn is_no_device(&self) -> bool {
        self.driver_code() == Some(sys::CUresult::CUDA_ERROR_NO_DEVICE)
    }
}
