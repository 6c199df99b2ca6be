//! `stream/device-ring`: the ring placement ikp did not choose, measured, so that the
//! choice (mapped pinned host memory, `StreamSession`) rests on figures of both.
//!
//! The same persistent kernel as `stream/drop`, in drop mode at the same record rate, with
//! its stream buffer in device memory (`cuMemAlloc`). A host thread drains it by copies on
//! a second, non-blocking stream: each poll copies every lane's HEAD, then every lane's ring
//! (two strided copies, in order on that stream, so the records up to each HEAD copied are
//! in the ring copy: the lane published HEAD after storing them), waits for them, runs
//! ikp's [`Drain`] over the host copy, and copies the TAILs it wrote back (a third strided
//! copy, before the next poll's). After the kernel, the whole buffer is copied and the
//! drain finished as usual. The device code is the same: only where its words live differs.
//!
//! Passes when the counts add up in every lane (the copy drain is correct); its figures
//! are the kernel's slowdown against the uninstrumented kernel, the records dropped, the
//! drain's records/s, its polls and the bytes its copies moved over the bus per record
//! drained. `stream/drop` has the same figures for mapped host memory.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ikp_device::wire::lane;
use ikp_device::{stream, Overflow};
use ikp_host::cuda::cudarc::driver::{sys, CudaStream};
use ikp_host::cuda::{IkpArg, SessionError};
use ikp_host::drain::{Drain, DrainError};

use super::stream::{calibrate, kernel, layout, pairs, tally, Tally, RING};
use super::words::verdict;
use super::{Error, Gpu};
use crate::results::Check;

/// A device allocation freed on drop.
struct DeviceWords {
    ptr: sys::CUdeviceptr,
}

impl DeviceWords {
    fn zeroed(words: usize) -> Result<DeviceWords, Error> {
        let mut ptr = 0;
        // SAFETY: plain allocation and memset of `words` u64s in the current context.
        unsafe {
            call(
                sys::cuMemAlloc_v2(&mut ptr, 8 * words),
                "cuMemAlloc (device ring)",
            )?;
            let d = DeviceWords { ptr };
            call(
                sys::cuMemsetD8_v2(ptr, 0, 8 * words),
                "cuMemset (device ring)",
            )?;
            Ok(d)
        }
    }
}

impl Drop for DeviceWords {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemAlloc above; nothing uses it after the check.
        unsafe { sys::cuMemFree_v2(self.ptr) };
    }
}

fn call(rc: sys::CUresult, what: &'static str) -> Result<(), Error> {
    rc.result()
        .map_err(|e| SessionError::driver(what, e).to_string())
}

/// Words `first..first + width` of every lane segment: one row per lane of a strided copy.
#[derive(Clone, Copy)]
struct Rows {
    first: usize,
    width: usize,
}

/// The drain's side of the device ring: the buffer's two copies and the copy stream.
struct Copier {
    dev: sys::CUdeviceptr,
    host: *mut u64,
    words: usize,
    lane_base: usize,
    stride: usize,
    lanes: usize,
    stream: Arc<CudaStream>,
    /// Bytes moved by the copies.
    moved: AtomicU64,
}

// SAFETY: `host` addresses pinned memory that outlives the check; the copier is used by
// one thread at a time (the drain thread while the kernel runs, then the main thread).
unsafe impl Send for Copier {}
unsafe impl Sync for Copier {}

impl Copier {
    /// Queues the strided copy of rows `r` of every lane segment, to the host copy or
    /// back to the device.
    fn rows(&self, r: Rows, to_host: bool) -> Result<(), Error> {
        use sys::CUmemorytype::{CU_MEMORYTYPE_DEVICE as DEVICE, CU_MEMORYTYPE_HOST as HOST};
        let pitch = 8 * self.stride;
        let off = 8 * (self.lane_base + r.first);
        // SAFETY: `off` is inside the host copy of `words` words.
        let host = unsafe { self.host.cast::<u8>().add(off) };
        let device = self.dev + off as u64;
        let (src_type, dst_type) = if to_host {
            (DEVICE, HOST)
        } else {
            (HOST, DEVICE)
        };
        let c = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: src_type,
            srcHost: host.cast_const().cast(),
            srcDevice: device,
            srcArray: std::ptr::null_mut(),
            srcPitch: pitch,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: dst_type,
            dstHost: host.cast(),
            dstDevice: device,
            dstArray: std::ptr::null_mut(),
            dstPitch: pitch,
            WidthInBytes: 8 * r.width,
            Height: self.lanes,
        };
        self.moved
            .fetch_add((8 * r.width * self.lanes) as u64, Ordering::Relaxed);
        // SAFETY: both ranges lie inside the two buffers of `words` words.
        call(
            unsafe { sys::cuMemcpy2DAsync_v2(&c, self.stream.cu_stream()) },
            "cuMemcpy2DAsync (device ring)",
        )
    }

    fn sync(&self) -> Result<(), Error> {
        self.stream
            .synchronize()
            .map_err(|e| SessionError::driver("cuStreamSynchronize (copies)", e).to_string())
    }

    /// The host copy as the drain reads it.
    fn view(&self) -> &[AtomicU64] {
        // SAFETY: `words` u64s of pinned memory, alive for the check; AtomicU64 has u64's
        // layout, and the copies into it are waited for before the drain reads.
        unsafe { std::slice::from_raw_parts(self.host as *const AtomicU64, self.words) }
    }

    /// One poll: HEADs, then rings, waited for; the drain's pass; its TAILs copied back.
    fn poll<W: std::io::Write>(&self, drain: &mut Drain<'_, W>) -> Result<u64, Error> {
        let ctrl = lane::EVENTS as usize;
        let head = Rows {
            first: ctrl + stream::ctrl::HEAD as usize,
            width: 1,
        };
        let ring = Rows {
            first: ctrl + stream::CTRL_WORDS as usize,
            width: RING as usize,
        };
        self.rows(head, true)?;
        self.rows(ring, true)?;
        self.sync()?;
        let n = drain.poll().map_err(|e| e.to_string())?;
        let tail = Rows {
            first: ctrl + stream::ctrl::TAIL as usize,
            width: 1,
        };
        self.rows(tail, false)?;
        Ok(n)
    }
}

/// `stream/device-ring`.
pub fn check(gpu: &Gpu) -> Result<Check, Error> {
    let name = "stream/device-ring";
    let text = |e: SessionError| e.to_string();
    let pairs = pairs(gpu);
    let work = calibrate(gpu, pairs)?;
    let off_k = kernel(gpu, "persistent_off")?;
    let off_arg = IkpArg::default();
    let off = (0..2)
        .map(|_| off_k(pairs, work, &off_arg))
        .collect::<Result<Vec<_>, _>>()
        .map_err(text)?
        .into_iter()
        .min()
        .unwrap_or_default();
    let layout = layout(gpu, Overflow::Stream, RING);
    let header = layout.header_words().map_err(|e| e.to_string())?;
    let words = layout.buffer_words() as usize;
    let dev = DeviceWords::zeroed(words)?;
    // SAFETY: a synchronous copy of the header into the zeroed device buffer.
    call(
        unsafe { sys::cuMemcpyHtoD_v2(dev.ptr, header.as_ptr().cast(), 8 * header.len()) },
        "cuMemcpyHtoD (device ring header)",
    )?;
    // SAFETY: zeroed and given the header below, before anything reads it.
    let staging = unsafe { gpu.ctx.alloc_pinned::<u64>(words) }
        .map_err(|e| SessionError::driver("cuMemHostAlloc (staging)", e).to_string())?;
    let host = staging
        .as_ptr()
        .map_err(|e| SessionError::driver("cuEventSynchronize (staging)", e).to_string())?
        as *mut u64;
    // SAFETY: `words` u64s of the allocation above, not yet shared.
    let slice = unsafe { std::slice::from_raw_parts_mut(host, words) };
    slice.fill(0);
    slice[..header.len()].copy_from_slice(&header);
    let copier = Copier {
        dev: dev.ptr,
        host,
        words,
        lane_base: layout.lane_base() as usize,
        stride: layout.lane_stride() as usize,
        lanes: layout.lane_count() as usize,
        stream: gpu
            .ctx
            .new_stream()
            .map_err(|e| SessionError::driver("cuStreamCreate (copies)", e).to_string())?,
        moved: AtomicU64::new(0),
    };
    let arg = IkpArg(layout.kernel_arg(dev.ptr));
    let launch = kernel(gpu, "persistent_stream")?;
    let done = AtomicBool::new(false);
    let (ran, file, stats) = std::thread::scope(|s| -> Result<_, Error> {
        let drainer = s.spawn(|| -> Result<_, Error> {
            gpu.ctx
                .bind_to_thread()
                .map_err(|e| SessionError::driver("cuCtxSetCurrent (drain)", e).to_string())?;
            let mut drain =
                Drain::new(copier.view(), Vec::new()).map_err(|e: DrainError| e.to_string())?;
            while !done.load(Ordering::Acquire) {
                if copier.poll(&mut drain)? == 0 {
                    std::thread::sleep(Duration::from_micros(20));
                }
            }
            copier.sync()?;
            Ok(drain)
        });
        let ran = launch(pairs, work, &arg);
        done.store(true, Ordering::Release);
        let drain = drainer.join().expect("the drain thread does not panic")?;
        let ran = ran.map_err(text)?;
        // The kernel ended: everything it wrote, then the drain's last pass and the lanes'
        // final states from the host copy.
        // SAFETY: a synchronous copy of the whole buffer into the staging copy.
        call(
            unsafe { sys::cuMemcpyDtoH_v2(host.cast(), dev.ptr, 8 * words) },
            "cuMemcpyDtoH (device ring, final)",
        )?;
        copier.moved.fetch_add(8 * words as u64, Ordering::Relaxed);
        let (file, stats) = drain.finish().map_err(|e| e.to_string())?;
        Ok((ran, file, stats))
    })?;
    let Tally {
        lanes,
        attempted,
        dropped,
        sums,
        bad,
    } = tally(&file, pairs)?;
    let vs_off = 100.0 * (ran.as_secs_f64() / off.as_secs_f64() - 1.0);
    let rate = attempted as f64 / ran.as_secs_f64();
    let wall_s = stats.wall_ns as f64 / 1e9;
    let moved = copier.moved.load(Ordering::Relaxed);
    let summary = format!(
        "rings in device memory drained by copies: {lanes} lanes, {attempted} records attempted \
         at {:.0} M/s, {} arrived + {dropped} dropped add up; slowdown {vs_off:.2} % vs \
         uninstrumented; {:.1} bytes copied per record drained",
        rate / 1e6,
        sums[0],
        moved as f64 / stats.records.max(1) as f64
    );
    Ok(verdict(name, bad, summary)
        .figure("lanes", lanes as u64)
        .figure("ring_records", RING)
        .figure("records_attempted", attempted)
        .figure("records_arrived", sums[0])
        .figure("records_dropped", dropped)
        .figure("work_per_pair", work)
        .figure("kernel_off_s", off.as_secs_f64())
        .figure("kernel_stream_s", ran.as_secs_f64())
        .figure("records_per_s", rate)
        .figure("slowdown_vs_off_pct", vs_off)
        .figure("drain_records_per_s", stats.records as f64 / wall_s)
        .figure("drain_polls", stats.polls)
        .figure("drain_max_backlog", stats.max_backlog)
        .figure("copied_bytes", moved)
        .figure(
            "copied_bytes_per_record",
            moved as f64 / stats.records.max(1) as f64,
        ))
}
