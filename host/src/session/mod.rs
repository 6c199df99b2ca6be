//! `HostSession`: the host side of one instrumented launch, on a cudarc stream.
//!
//! A session owns the device buffer a kernel records into. [`HostSession::new`] allocates
//! it zeroed and writes the header (the launch [`Layout`]: grid, groups per block, records
//! per lane, region and counter names); [`HostSession::kernel_arg`] is the `ikp::Arg` to
//! pass to the kernel; [`HostSession::read_back`] waits for the kernel and copies the
//! buffer to the host. Then [`HostSession::save_buffer`] writes the raw file `ikp decode`
//! reads, [`HostSession::decode`] gives the [`Trace`], and [`HostSession::write_trace`]
//! writes the Chrome trace, its `_summary.json` and, when asked, the per-block region
//! distributions.
//!
//! cudarc panics when `libcuda` is missing; [`open_device`] (and [`device_count`],
//! [`probe_driver`]) check first and return [`SessionError::NoDriver`]. Without a GPU the
//! driver answers `CUDA_ERROR_NO_DEVICE`, a [`SessionError::Driver`] for which
//! [`SessionError::is_no_device`] holds.
//!
//! ```no_run
//! use ikp_device::{Layout, TimerMode};
//! use ikp_host::nvrtc::{Arch, Compiler};
//! use ikp_host::session::cudarc::driver::{LaunchConfig, PushKernelArg};
//! use ikp_host::session::{open_device, HostSession, TraceWriteOptions};
//!
//! const SRC: &str = r#"
//!     #include "ikp.cuh"
//!     extern "C" __global__ void k(ikp::Arg prof) {
//!         ikp::Lane<> lane(prof, 0, threadIdx.x == 0);
//!         { IKP_SCOPE(lane, 0); /* work */ }
//!         lane.finalize();
//!     }
//! "#;
//! let ctx = open_device(0)?;
//! let stream = ctx.default_stream();
//! let kernel = Compiler::new(Arch::of_device(&ctx)?)
//!     .cubin("k.cu", SRC)?
//!     .load(&ctx)?
//!     .load_function("k")?;
//! let layout = Layout {
//!     grid: [4, 1, 1],
//!     groups_per_block: 1,
//!     records_per_lane: 2,
//!     timer: TimerMode::Globaltimer,
//!     regions: vec!["work".into()],
//!     counters: vec![],
//! };
//! let mut session = HostSession::new(&stream, layout)?;
//! let arg = session.kernel_arg();
//! let cfg = LaunchConfig { grid_dim: (4, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
//! // SAFETY: the kernel takes one ikp::Arg.
//! unsafe { stream.launch_builder(&kernel).arg(&arg).launch(cfg) }?;
//! session.read_back()?;
//! session.save_buffer("k.ikp")?;
//! session.write_trace("k.json", &TraceWriteOptions::default())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod arg;
mod driver;

use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cudarc::driver::{sys, CudaSlice, CudaStream, DevicePtr, DriverError};
use ikp_device::{Layout, LayoutError};

use crate::decode::{decode_words, decode_words_into, DecodeError, DecodeOptions};
use crate::model::Trace;
use crate::write::atomic::{self, WriteError};
pub use crate::write::TraceWriteOptions;

pub use arg::IkpArg;
pub use driver::{device_count, driver_library, driver_version, open_device, probe_driver};

/// The cudarc this crate is built against, for launchers that have no direct dependency.
pub use cudarc;

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
    /// A host copy of the buffer was needed before [`HostSession::read_back`] made one.
    #[error("the ikp buffer has not been read back: call read_back() after the launch")]
    NotReadBack,
    /// Kernel compilation failed.
    #[error(transparent)]
    Nvrtc(#[from] crate::nvrtc::NvrtcError),
    /// The read-back buffer did not decode (a kernel that wrote outside its lane, or
    /// never ran).
    #[error("decoding the read-back ikp buffer: {0}")]
    Decode(#[from] DecodeError),
    /// An output file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

impl SessionError {
    /// Wraps a cudarc driver error with the call that produced it.
    pub fn driver(call: &'static str, e: DriverError) -> SessionError {
        SessionError::Driver {
            call,
            code: e.0,
            name: format!("{:?}", e.0),
            // cuGetErrorString lives in libcuda: ask only if it loads (cudarc panics if not).
            description: probe_driver()
                .ok()
                .and_then(|()| e.error_string().ok())
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

/// One instrumented launch: the device buffer, its layout and, after the launch, its host
/// copy.
///
/// Streams: [`HostSession::new`] and [`HostSession::reset`] zero the buffer and upload its
/// header on the session's stream, then wait for that stream, so when they return the
/// buffer is ready for a launch on *any* stream of the context (an upload still in flight
/// on one stream is not ordered before a launch on another, and the kernel's first records
/// would then be zeroed away). [`HostSession::read_back`] waits for the whole context, so
/// the kernel may run on any stream there too. Keep the session alive until the kernel has
/// finished: the buffer is freed when it drops.
pub struct HostSession {
    stream: Arc<CudaStream>,
    layout: Layout,
    header: Vec<u64>,
    buf: CudaSlice<u64>,
    host: Option<Vec<u64>>,
}

impl fmt::Debug for HostSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostSession")
            .field("ordinal", &self.stream.context().ordinal())
            .field("layout", &self.layout)
            .field("words", &self.buf.len())
            .field("read_back", &self.host.is_some())
            .finish()
    }
}

impl HostSession {
    /// Allocates the zeroed buffer for `layout` on `stream`'s device, writes its header and
    /// waits for both (so the launch may be on any stream of the context).
    pub fn new(stream: &Arc<CudaStream>, layout: Layout) -> Result<HostSession, SessionError> {
        let header = layout.header_words()?;
        let words = layout.buffer_words();
        let len = usize::try_from(words)
            .ok()
            .filter(|&n| n.checked_mul(8).is_some())
            .ok_or(SessionError::TooLarge { words })?;
        let buf = stream
            .alloc_zeros::<u64>(len)
            .map_err(|e| SessionError::driver("cuMemAlloc (ikp buffer)", e))?;
        let mut session = HostSession {
            stream: stream.clone(),
            layout,
            header,
            buf,
            host: None,
        };
        session.write_header()?;
        Ok(session)
    }

    /// Uploads the header, then waits for the session's stream: see the stream rule on
    /// [`HostSession`].
    fn write_header(&mut self) -> Result<(), SessionError> {
        let n = self.header.len();
        let mut head = self.buf.slice_mut(0..n);
        self.stream
            .memcpy_htod(&self.header, &mut head)
            .map_err(|e| SessionError::driver("cuMemcpyHtoDAsync (ikp header)", e))?;
        self.stream
            .synchronize()
            .map_err(|e| SessionError::driver("cuStreamSynchronize (ikp buffer upload)", e))
    }

    /// Zeroes the buffer and rewrites the header, for another launch with the same layout,
    /// and waits for both (so the next launch may be on any stream). Drops the host copy of
    /// the previous launch.
    pub fn reset(&mut self) -> Result<(), SessionError> {
        self.host = None;
        self.stream
            .memset_zeros(&mut self.buf)
            .map_err(|e| SessionError::driver("cuMemsetD8Async (ikp buffer)", e))?;
        self.write_header()
    }

    /// The launch layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The stream the buffer lives on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Length of the buffer in `u64` words.
    pub fn buffer_words(&self) -> usize {
        self.buf.len()
    }

    /// The kernel argument (`ikp::Arg`): push it with `launch_builder(..).arg(&arg)`.
    pub fn kernel_arg(&self) -> IkpArg {
        let (ptr, _record) = self.buf.device_ptr(&self.stream);
        IkpArg(self.layout.kernel_arg(ptr))
    }

    /// Waits for all work on the session's context (the instrumented kernel, whichever
    /// stream it ran on), then copies the buffer to the host and returns it.
    ///
    /// A kernel fault (illegal address, trap) surfaces here as a [`SessionError::Driver`]
    /// from `cuCtxSynchronize`.
    pub fn read_back(&mut self) -> Result<&[u64], SessionError> {
        self.stream
            .context()
            .synchronize()
            .map_err(|e| SessionError::driver("cuCtxSynchronize (waiting for the kernel)", e))?;
        let words = self
            .stream
            .clone_dtoh(&self.buf)
            .map_err(|e| SessionError::driver("cuMemcpyDtoHAsync (ikp buffer)", e))?;
        Ok(self.host.insert(words))
    }

    /// The host copy made by the last [`HostSession::read_back`].
    pub fn words(&self) -> Option<&[u64]> {
        self.host.as_deref()
    }

    /// The host copy as little-endian bytes: the raw buffer file format.
    pub fn buffer_bytes(&self) -> Result<Vec<u8>, SessionError> {
        let words = self.words().ok_or(SessionError::NotReadBack)?;
        Ok(words.iter().flat_map(|w| w.to_le_bytes()).collect())
    }

    /// Writes the read-back buffer to `path` as raw little-endian words, the file
    /// `ikp decode` reads. The file appears whole or not at all.
    pub fn save_buffer(&self, path: impl AsRef<Path>) -> Result<(), SessionError> {
        let bytes = self.buffer_bytes()?;
        atomic::write_file(path.as_ref(), |w| w.write_all(&bytes))?;
        Ok(())
    }

    /// Decodes the read-back buffer into the trace model.
    pub fn decode(&self) -> Result<Trace, SessionError> {
        let words = self.words().ok_or(SessionError::NotReadBack)?;
        Ok(decode_words(words, &DecodeOptions::default())?)
    }

    /// Decodes the read-back buffer into `trace`, reusing its memory: in a loop of
    /// launches (`reset`, launch, `read_back`, `decode_into`) the decoder then writes into
    /// pages it already has (see [`crate::decode::decode_words_into`]).
    pub fn decode_into(&self, trace: &mut Trace) -> Result<(), SessionError> {
        let words = self.words().ok_or(SessionError::NotReadBack)?;
        Ok(decode_words_into(words, &DecodeOptions::default(), trace)?)
    }

    /// Decodes the read-back buffer and writes the Chrome trace at `path` and, as `opts`
    /// asks, the summary JSON beside it (`foo.json` → `foo_summary.json`, on by default)
    /// and the per-block region distribution directory (`foo_block_region_dists/`, off by
    /// default). Returns the paths written and the decoded trace.
    pub fn write_trace(
        &self,
        path: impl AsRef<Path>,
        opts: &TraceWriteOptions,
    ) -> Result<WrittenTrace, SessionError> {
        let path = path.as_ref();
        let trace = self.decode()?;
        crate::write::write_trace(&trace, path, opts)?;
        let summary = opts
            .emit_summary_json
            .then(|| crate::write::summary_path(path));
        let block_dists = (opts.emit_summary_json && opts.emit_block_region_distributions)
            .then(|| crate::write::dists_path(path));
        Ok(WrittenTrace {
            chrome: path.to_owned(),
            summary,
            block_dists,
            trace,
        })
    }
}

/// What [`HostSession::write_trace`] wrote.
#[derive(Debug)]
pub struct WrittenTrace {
    /// The Chrome trace JSON.
    pub chrome: PathBuf,
    /// The summary JSON, if written.
    pub summary: Option<PathBuf>,
    /// The per-block region distribution directory, if written.
    pub block_dists: Option<PathBuf>,
    /// The decoded trace the files were written from.
    pub trace: Trace,
}
