//! [`StreamSession`]: a stream launch, its rings drained into a stream file while the
//! kernel runs.
//!
//! The buffer lives in page-locked host memory mapped into the device's address space
//! (`cuMemHostAlloc` with `DEVICEMAP`, not write-combined, so the drain's reads are cached):
//! the lanes' record stores and HEAD publications go over the bus into host memory, where
//! the drain thread ([`crate::drain::Drain`]) reads them as they land, with no copy engine
//! and no second stream to schedule; the lanes read TAIL back across the bus once per
//! publish interval. The host memory a launch needs is the rings, a few KiB per lane,
//! whatever the kernel's length. The alternative, rings in device memory drained by
//! strided copies on a second stream, moves every ring over the bus at each poll whether
//! or not it holds new records; the GPU bundle measures both at the same record rate
//! (`stream/drop` and `stream/device-ring`, BENCHMARKS.md).

use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use cudarc::driver::{sys, CudaStream, PinnedHostSlice};
use ikp_device::Layout;

use super::clock::ClockProbe;
use super::{IkpArg, SessionOptions};
use crate::cuda::error::SessionError;
use crate::drain::{Drain, IDLE};
use crate::stream_file::DrainStats;

/// One stream launch (`Layout::overflow` = `Overflow::Stream` or `Overflow::StreamWait`):
/// the mapped host buffer, and [`StreamSession::record`], which runs the launch with a
/// drain beside it.
pub struct StreamSession {
    stream: Arc<CudaStream>,
    layout: Layout,
    buf: PinnedHostSlice<u64>,
    host: *mut u64,
    device: u64,
    probe: Option<ClockProbe>,
}

// SAFETY: the raw pointers address the pinned allocation `buf` owns; the session hands out
// no reference to it across threads except the drain's atomic view inside `record`.
unsafe impl Send for StreamSession {}

impl std::fmt::Debug for StreamSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamSession")
            .field("layout", &self.layout)
            .field("words", &self.buf.len())
            .finish()
    }
}

impl StreamSession {
    /// Allocates the mapped host buffer for `layout` (a stream layout), takes the host
    /// clock sync as [`super::HostSession`] does, unless `opts` says not to.
    pub fn new(
        stream: &Arc<CudaStream>,
        layout: Layout,
        opts: SessionOptions,
    ) -> Result<StreamSession, SessionError> {
        if !layout.overflow.is_stream() {
            return Err(SessionError::NotStream);
        }
        layout.validate()?;
        let len = super::buffer_len(&layout)?;
        let ctx = stream.context();
        // SAFETY: the memory is zeroed below before anything reads it.
        let buf =
            unsafe { ctx.alloc_pinned_with_flags::<u64>(len, sys::CU_MEMHOSTALLOC_DEVICEMAP) }
                .map_err(|e| SessionError::driver("cuMemHostAlloc (ikp stream buffer)", e))?;
        let host = buf
            .as_ptr()
            .map_err(|e| SessionError::driver("cuEventSynchronize (ikp stream buffer)", e))?
            as *mut u64;
        let mut device: sys::CUdeviceptr = 0;
        // SAFETY: `host` is a live DEVICEMAP allocation of this context; flags must be 0.
        let rc = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host.cast(), 0) };
        rc.result().map_err(|e| {
            SessionError::driver("cuMemHostGetDevicePointer (ikp stream buffer)", e)
        })?;
        let n = opts.clock_sync_samples;
        let probe = (n > 0).then(|| ClockProbe::new(stream, n)).transpose()?;
        Ok(StreamSession {
            stream: stream.clone(),
            layout,
            buf,
            host,
            device,
            probe,
        })
    }

    /// The launch layout (with the clock sync of the last [`StreamSession::record`]).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The kernel argument (`ikp::Arg`) to pass to the launch `record` runs.
    pub fn kernel_arg(&self) -> IkpArg {
        IkpArg(self.layout.kernel_arg(self.device))
    }

    /// The buffer as the drain sees it.
    fn words(&self) -> &[AtomicU64] {
        // SAFETY: `host` points to `buf.len()` u64 words owned by `buf`, alive as long as
        // `self`; AtomicU64 has u64's size and alignment, and every concurrent access (the
        // device's, the drain's) goes through atomics or the device's own ordering.
        unsafe { std::slice::from_raw_parts(self.host as *const AtomicU64, self.buf.len()) }
    }

    /// Zeroes the buffer, takes the clock sync, writes the header, then runs `launch` (it
    /// launches the instrumented kernel on the session's stream, with
    /// [`StreamSession::kernel_arg`]) while a drain thread writes the lanes' records to
    /// `path`; waits for the stream, finishes the file, and returns the drain's figures.
    /// The file is written whole or not at all ([`crate::atomic::write_file`]).
    pub fn record<F>(&mut self, path: &Path, launch: F) -> Result<DrainStats, SessionError>
    where
        F: FnOnce(&Arc<CudaStream>) -> Result<(), SessionError>,
    {
        if let Some(p) = &mut self.probe {
            self.layout.clock_sync = Some(p.sync(&self.stream)?);
        }
        let header = self.layout.header_words()?;
        for (i, w) in self.words().iter().enumerate() {
            w.store(header.get(i).copied().unwrap_or(0), Ordering::Relaxed);
        }
        // The header and zeros are in place before the launch reads them.
        std::sync::atomic::fence(Ordering::SeqCst);
        let mut failure = None;
        let written = crate::write::atomic::write_file(path, |out| {
            self.drain_beside(out, launch).map_err(|e| {
                failure = Some(e);
                io::Error::other("the stream launch failed")
            })
        });
        // The launch's own error first: the write only failed because of it.
        failure.map_or_else(|| Ok(written?), Err)
    }

    /// Runs `launch` with a drain thread writing to `out`, until the stream is idle.
    fn drain_beside<W, F>(&self, out: W, launch: F) -> Result<DrainStats, SessionError>
    where
        W: Write + Send,
        F: FnOnce(&Arc<CudaStream>) -> Result<(), SessionError>,
    {
        let done = AtomicBool::new(false);
        let words = self.words();
        std::thread::scope(|s| {
            let drainer = s.spawn(|| -> Result<_, SessionError> {
                let mut drain = Drain::new(words, out)?;
                drain.run_until(&done, IDLE)?;
                Ok(drain)
            });
            let ran = launch(&self.stream).and_then(|()| {
                self.stream
                    .synchronize()
                    .map_err(|e| SessionError::driver("cuStreamSynchronize (stream launch)", e))
            });
            done.store(true, Ordering::Release);
            let drain = drainer.join().expect("the drain thread does not panic")?;
            ran?;
            Ok(drain.finish()?.1)
        })
    }
}
