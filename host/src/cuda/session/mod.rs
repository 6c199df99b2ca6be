//! `HostSession`: the host side of one instrumented launch, on a cudarc stream.
//!
//! A session owns the device buffer a kernel records into. [`HostSession::new`] allocates
//! it zeroed and writes the header (the launch [`Layout`]: grid, groups per block, records
//! per lane, region and counter names); [`HostSession::kernel_arg`] is the `ikp::Arg` to
//! pass to the kernel; [`HostSession::read_back`] waits for the kernel and copies the
//! buffer to the host. Then [`HostSession::save_buffer`] writes the raw file `ikp decode`
//! reads, [`HostSession::decode`] gives the [`Trace`], [`HostSession::write_perfetto`]
//! writes the Perfetto trace, and [`HostSession::write_trace`] writes the Chrome trace,
//! its `_summary.json` and, when asked, the per-block region distributions.
//!
//! **Host clock sync.** [`HostSession::new`] and [`HostSession::reset`] also map the GPU's
//! `%globaltimer` onto the host's clocks ([`crate::clock_sync`], by a probe kernel on the
//! session's stream) and store the mapping in the buffer header ([`Layout::clock_sync`]),
//! so that `ikp decode --host-clock` and `ikp merge` can place the launch on the host's
//! timeline (the PyTorch profiler's, for one); at every reset, so the single offset stays
//! fresh in a loop of launches. It costs a PTX JIT (about a millisecond) per session and
//! 5 to 20 µs per reading, about 0.1 to 0.3 ms per `new` or `reset`:
//! [`SessionOptions::clock_sync_samples`] = 0 skips it.
//!
//! ```no_run
//! use ikp_device::{Layout, TimerMode};
//! use ikp_host::cuda::cudarc::driver::{LaunchConfig, PushKernelArg};
//! use ikp_host::cuda::nvrtc::Compiler;
//! use ikp_host::cuda::{open_device, HostSession};
//! use ikp_host::{Arch, PerfettoOptions, TraceWriteOptions};
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
//!     ..Layout::default()
//! };
//! let mut session = HostSession::new(&stream, layout)?;
//! let arg = session.kernel_arg();
//! let cfg = LaunchConfig { grid_dim: (4, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
//! // SAFETY: the kernel takes one ikp::Arg.
//! unsafe { stream.launch_builder(&kernel).arg(&arg).launch(cfg) }?;
//! session.read_back()?;
//! session.save_buffer("k.ikp")?;
//! session.write_perfetto("k.trace", &PerfettoOptions::default())?;
//! session.write_trace("k.json", &TraceWriteOptions::default())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod arg;
mod clock;
mod stream;

pub use stream::StreamSession;

use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cudarc::driver::{CudaModule, CudaSlice, CudaStream, DevicePtr};
use ikp_device::{ClockSync, Layout};

use super::error::SessionError;
use crate::decode::{decode, decode_into, DecodeOptions};
use crate::model::Trace;
use crate::write::perfetto::{write_perfetto, PerfettoOptions, PerfettoStats};
use crate::write::{atomic, Launch, TraceWriteOptions};

pub use arg::IkpArg;
use clock::ClockProbe;

/// How a [`HostSession`] is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionOptions {
    /// Readings of the host clock sync taken at [`HostSession::new`] and at every
    /// [`HostSession::reset`] (16 by default; the tightest wins). 0: no clock sync, the
    /// header keeps `layout.clock_sync` as given.
    pub clock_sync_samples: u32,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            clock_sync_samples: 16,
        }
    }
}

/// Words of `layout`'s buffer, if this host can address its bytes.
fn buffer_len(layout: &Layout) -> Result<usize, SessionError> {
    let words = layout.buffer_words();
    usize::try_from(words)
        .ok()
        .filter(|&n| n.checked_mul(8).is_some())
        .ok_or(SessionError::TooLarge { words })
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
    probe: Option<ClockProbe>,
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
    /// Allocates the zeroed buffer for `layout` on `stream`'s device, takes the host clock
    /// sync (see the module's **Host clock sync**), writes the header and waits for all
    /// (so the launch may be on any stream of the context).
    pub fn new(stream: &Arc<CudaStream>, layout: Layout) -> Result<HostSession, SessionError> {
        HostSession::with_options(stream, layout, SessionOptions::default())
    }

    /// [`HostSession::new`] with `opts` (e.g. no clock sync).
    pub fn with_options(
        stream: &Arc<CudaStream>,
        layout: Layout,
        opts: SessionOptions,
    ) -> Result<HostSession, SessionError> {
        let header = layout.header_words()?;
        let len = buffer_len(&layout)?;
        let buf = stream
            .alloc_zeros::<u64>(len)
            .map_err(|e| SessionError::driver("cuMemAlloc (ikp buffer)", e))?;
        let n = opts.clock_sync_samples;
        let probe = (n > 0).then(|| ClockProbe::new(stream, n)).transpose()?;
        let mut session = HostSession {
            stream: stream.clone(),
            layout,
            header,
            buf,
            host: None,
            probe,
        };
        session.sync_clocks()?;
        session.write_header()?;
        Ok(session)
    }

    /// Takes a new clock sync into the layout and the header words (not uploaded).
    fn sync_clocks(&mut self) -> Result<(), SessionError> {
        if let Some(p) = &mut self.probe {
            self.layout.clock_sync = Some(p.sync(&self.stream)?);
            self.header = self.layout.header_words()?;
        }
        Ok(())
    }

    /// The host clock sync in the header now (`None` when the session takes none and the
    /// layout gave none).
    pub fn clock_sync(&self) -> Option<ClockSync> {
        self.layout.clock_sync
    }

    /// Uploads the header, then waits for the session's stream: see the stream rule on
    /// [`HostSession`].
    fn write_header(&mut self) -> Result<(), SessionError> {
        let mut head = self.buf.slice_mut(0..self.header.len());
        self.stream
            .memcpy_htod(&self.header, &mut head)
            .map_err(|e| SessionError::driver("cuMemcpyHtoDAsync (ikp header)", e))?;
        self.stream
            .synchronize()
            .map_err(|e| SessionError::driver("cuStreamSynchronize (ikp buffer upload)", e))
    }

    /// Zeroes the buffer, takes a new host clock sync (unless the session takes none) and
    /// rewrites the header, for another launch with the same layout, and waits for all (so
    /// the next launch may be on any stream). Drops the host copy of the previous launch.
    pub fn reset(&mut self) -> Result<(), SessionError> {
        self.host = None;
        self.stream
            .memset_zeros(&mut self.buf)
            .map_err(|e| SessionError::driver("cuMemsetD8Async (ikp buffer)", e))?;
        self.sync_clocks()?;
        self.write_header()
    }

    /// The launch layout (with the clock sync now in the header).
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

    /// Points a kernel instrumented by `ikp instrument` ([`crate::instrument`]) at this
    /// session's buffer: writes the buffer's device address and layout
    /// ([`crate::instrument::symbol_words`]) into the kernel's buffer symbol (`symbol`,
    /// [`crate::instrument::KernelProbes::symbol`]) in `module`, then waits for the
    /// session's stream. The kernel's parameters stay as they are: launch it as before, any
    /// number of times (up to the layout's epochs), captured in a CUDA Graph or not. Lay
    /// the session out with [`crate::instrument::KernelProbes::layout`].
    pub fn attach_probes(
        &self,
        module: &Arc<CudaModule>,
        symbol: &str,
    ) -> Result<(), SessionError> {
        use crate::instrument::{symbol_words, SYMBOL_WORDS};
        let mut global = module
            .get_global(symbol, &self.stream)
            .map_err(|e| SessionError::driver("cuModuleGetGlobal (ikp buffer symbol)", e))?;
        if global.len() != SYMBOL_WORDS * 8 {
            return Err(SessionError::ProbeSymbol {
                symbol: symbol.to_string(),
                bytes: global.len(),
            });
        }
        let (ptr, _record) = self.buf.device_ptr(&self.stream);
        let bytes: Vec<u8> = symbol_words(ptr, &self.header)
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        self.stream
            .memcpy_htod(&bytes, &mut global)
            .map_err(|e| SessionError::driver("cuMemcpyHtoD (ikp buffer symbol)", e))?;
        self.stream
            .synchronize()
            .map_err(|e| SessionError::driver("cuStreamSynchronize", e))
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
        Ok(atomic::write_file(path.as_ref(), |w| w.write_all(&bytes))?)
    }

    /// Decodes the read-back buffer into the trace model.
    pub fn decode(&self) -> Result<Trace, SessionError> {
        let words = self.words().ok_or(SessionError::NotReadBack)?;
        Ok(decode(words, &DecodeOptions::default())?)
    }

    /// Decodes the read-back buffer into `trace`, reusing its memory: in a loop of
    /// launches (`reset`, launch, `read_back`, `decode_into`) the decoder then writes into
    /// pages it already has (see [`crate::decode_into`]).
    pub fn decode_into(&self, trace: &mut Trace) -> Result<(), SessionError> {
        let words = self.words().ok_or(SessionError::NotReadBack)?;
        Ok(decode_into(words, &DecodeOptions::default(), trace)?)
    }

    /// Decodes the read-back buffer and writes it as a Perfetto trace at `path`
    /// (atomically; see [`crate::write_perfetto`]), labelled with the file name. Returns
    /// what was written and the decoded trace.
    pub fn write_perfetto(
        &self,
        path: impl AsRef<Path>,
        opts: &PerfettoOptions,
    ) -> Result<(PerfettoStats, Trace), SessionError> {
        let path = path.as_ref();
        let trace = self.decode()?;
        let label = crate::write::file_name(path);
        let stats = atomic::write_file(path, |w| {
            write_perfetto(w, &[Launch::new(&label, &trace)], opts)
        })?;
        Ok((stats, trace))
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
        crate::write::write_trace(path, &trace, opts)?;
        let summary = (opts.summary.as_ref()).map(|_| crate::write::summary_path(path));
        let block_dists = (opts.block_dists.as_ref()).map(|_| crate::write::dists_path(path));
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
