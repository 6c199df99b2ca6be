//! The host side of a stream launch: empties the lanes' rings into a stream file while the
//! kernel runs.
//!
//! A stream launch ([`ikp_device::stream`]) gives each lane a small ring in memory both the
//! GPU and the host can reach. The device publishes how far it has written (HEAD, release at
//! system scope, after its record stores); [`Drain::poll`] reads each lane's HEAD with
//! acquire semantics, copies the new records into the [`crate::stream_file`], then tells
//! the lane how far it has read (TAIL, release), so the lane may reuse those slots. The
//! drain never writes anything else, so in drop mode a drain that falls behind costs the
//! kernel nothing but drops, and it holds at most one ring of records at a time whatever
//! the kernel's length.
//!
//! The buffer is seen as `&[AtomicU64]`: the device (or, in the tests, threads running
//! `ikp.cuh` under host emulation) writes it concurrently, and atomics are how Rust reads
//! memory that changes under it. Loads of records are relaxed: the acquire load of HEAD
//! orders them.

use crate::stream_file::{lane_state_words, DrainStats, StreamFileWriter};
use ikp_device::wire::{hdr, lane, HDR_HI_SHIFT};
use ikp_device::{stream, Header, LayoutError};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Why a drain stopped.
#[derive(Debug, thiserror::Error)]
pub enum DrainError {
    /// The buffer's header is not a stream buffer's.
    #[error("stream buffer header: {0}")]
    Header(#[source] LayoutError),
    /// The buffer is not as long as its header says.
    #[error("stream buffer has {have} words, its header declares {need}")]
    Length {
        /// Words the header declares.
        need: u64,
        /// Words given.
        have: u64,
    },
    /// A lane published more records than its ring holds past what the drain consumed:
    /// something other than an ikp stream lane wrote its control words.
    #[error(
        "lane {lane} published {stored} stored records with {consumed} consumed, more than \
         its ring of {cap}: the lane is not an ikp stream lane, or its words were overwritten"
    )]
    Protocol {
        /// Lane index.
        lane: u32,
        /// HEAD's stored count.
        stored: u32,
        /// Records the drain consumed.
        consumed: u32,
        /// Ring capacity.
        cap: u32,
    },
    /// Writing the stream file failed.
    #[error("writing the stream file: {0}")]
    Io(#[from] io::Error),
    /// The stream file could not be created or put in place ([`DrainThread`]).
    #[error(transparent)]
    File(Box<crate::WriteError>),
}

/// Empties the rings of one stream launch into a stream file.
#[derive(Debug)]
pub struct Drain<'b, W: Write> {
    words: &'b [AtomicU64],
    lane_base: usize,
    stride: usize,
    cap: u32,
    n_counters: u32,
    consumed: Vec<u32>,
    scratch: Vec<u64>,
    out: StreamFileWriter<W>,
    stats: DrainStats,
    started: Instant,
    /// The first error: from then on the drain only hands slots back (see
    /// [`Drain::run_until`]).
    failed: Option<DrainError>,
}

impl<'b, W: Write> Drain<'b, W> {
    /// A drain of the stream buffer `words` (its header written, the rest zero, as before
    /// launch) into `out`; writes the file's header.
    pub fn new(words: &'b [AtomicU64], out: W) -> Result<Self, DrainError> {
        let load = |i: usize| words.get(i).map_or(0, |w| w.load(Ordering::Relaxed));
        let header_len = ((load(hdr::VERSION) >> HDR_HI_SHIFT) as usize).min(words.len());
        let header_words: Vec<u64> = (0..header_len).map(load).collect();
        let header = Header::parse_stream_header(&header_words).map_err(DrainError::Header)?;
        let need = header.layout.buffer_words();
        if need != words.len() as u64 {
            return Err(DrainError::Length {
                need,
                have: words.len() as u64,
            });
        }
        let cap = header.layout.records_per_lane;
        Ok(Drain {
            words,
            lane_base: header.lane_base as usize,
            stride: header.lane_stride as usize,
            cap,
            n_counters: header.layout.counters.len() as u32,
            consumed: vec![0; header.layout.lane_count() as usize],
            scratch: Vec::with_capacity(cap as usize),
            out: StreamFileWriter::new(out, &header_words)?,
            stats: DrainStats::default(),
            started: Instant::now(),
            failed: None,
        })
    }

    /// One pass over the lanes: copies every record published since the last pass and
    /// hands the slots back. Returns the records copied.
    pub fn poll(&mut self) -> Result<u64, DrainError> {
        let mask = self.cap - 1;
        let mut copied = 0u64;
        for l in 0..self.consumed.len() {
            let ctrl = self.ctrl(l);
            let ring = ctrl + stream::CTRL_WORDS as usize;
            let stored = self.stored(l);
            let consumed = self.consumed[l];
            let n = stored.wrapping_sub(consumed);
            if n == 0 {
                continue;
            }
            if n > self.cap {
                return Err(DrainError::Protocol {
                    lane: l as u32,
                    stored,
                    consumed,
                    cap: self.cap,
                });
            }
            self.scratch.clear();
            self.scratch.extend((0..n).map(|i| {
                let slot = (consumed.wrapping_add(i) & mask) as usize;
                self.words[ring + slot].load(Ordering::Relaxed)
            }));
            self.out.records(l as u32, consumed, &self.scratch)?;
            self.hand_back(l, stored);
            self.stats.max_backlog = self.stats.max_backlog.max(n as u64);
            copied += n as u64;
        }
        self.stats.records += copied;
        self.stats.polls += 1;
        Ok(copied)
    }

    /// Polls until `done` is set (the kernel finished), sleeping `idle` after a pass that
    /// found nothing. Call [`Drain::finish`] after it, once the kernel's writes are visible.
    ///
    /// After an error (the file cannot be written, a lane breaks the protocol) it goes on
    /// handing every lane's slots back without copying them, until `done`: a lane waiting
    /// for room (`Overflow::StreamWait`) must never wait for a drain that stopped, or the
    /// kernel would never end. The error is returned then.
    pub fn run_until(&mut self, done: &AtomicBool, idle: Duration) -> Result<(), DrainError> {
        while !done.load(Ordering::Acquire) {
            let copied = match self.failed {
                None => self.poll().unwrap_or_else(|e| {
                    self.failed = Some(e);
                    0
                }),
                Some(_) => self.release_all(),
            };
            if copied == 0 {
                std::thread::sleep(idle);
            }
        }
        self.failed.take().map_or(Ok(()), Err)
    }

    /// Hands every lane's published slots back without copying them; returns how many.
    fn release_all(&mut self) -> u64 {
        let mut released = 0u64;
        for l in 0..self.consumed.len() {
            let stored = self.stored(l);
            released += stored.wrapping_sub(self.consumed[l]) as u64;
            self.hand_back(l, stored);
        }
        released
    }

    /// Word index of lane `l`'s control words.
    fn ctrl(&self, l: usize) -> usize {
        self.lane_base + l * self.stride + lane::EVENTS as usize
    }

    /// Records lane `l` published (HEAD, read with acquire: its records are visible).
    fn stored(&self, l: usize) -> u32 {
        let head = self.words[self.ctrl(l) + stream::ctrl::HEAD as usize].load(Ordering::Acquire);
        stream::unpack_head(head).0
    }

    /// Tells lane `l` the drain has consumed up to `stored` (TAIL, release: the copies
    /// are done before the lane may reuse the slots).
    fn hand_back(&mut self, l: usize, stored: u32) {
        self.consumed[l] = stored;
        let tail = self.ctrl(l) + stream::ctrl::TAIL as usize;
        self.words[tail].store(stored as u64, Ordering::Release);
    }

    /// After the kernel: copies what is left, writes every lane's final state and the end
    /// block. Returns the sink and the drain's figures.
    pub fn finish(mut self) -> Result<(W, DrainStats), DrainError> {
        self.poll()?;
        let state_len = lane_state_words(self.n_counters) as usize;
        let mut state = Vec::with_capacity(state_len);
        for l in 0..self.consumed.len() {
            let seg = self.lane_base + l * self.stride;
            let trailer = seg + (lane::EVENTS + stream::CTRL_WORDS + self.cap) as usize;
            let ring_start = seg + (lane::EVENTS + stream::CTRL_WORDS) as usize;
            state.clear();
            state.extend(
                (seg..ring_start)
                    .chain(trailer..seg + self.stride)
                    .map(|i| self.words[i].load(Ordering::Acquire)),
            );
            debug_assert_eq!(state.len(), state_len);
            self.out.lane(l as u32, &state)?;
        }
        self.stats.wall_ns = self.started.elapsed().as_nanos() as u64;
        let stats = self.stats;
        Ok((self.out.finish(&stats)?, stats))
    }
}

/// How long a [`DrainThread`] sleeps after a pass that found nothing new.
pub const IDLE: Duration = Duration::from_micros(20);

/// A [`Drain`] on a thread of its own, writing a stream file whole or not at all
/// ([`crate::atomic::write_file`]), for a caller that launches the kernel itself and keeps
/// the buffer alive (the Python package); `StreamSession` runs the launch beside its drain
/// instead. Dropping it unfinished stops the thread as [`DrainThread::finish`] does.
#[derive(Debug)]
pub struct DrainThread {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<DrainStats, DrainError>>>,
}

impl DrainThread {
    /// Starts draining the stream buffer `words` (its header written, the rest zero) into
    /// `path`. Returns once the file is open: a buffer that is not a stream buffer, or a
    /// file that cannot be created, is an error here, before the launch (lanes waiting for
    /// room would otherwise wait for a drain that never started).
    pub fn start(words: &'static [AtomicU64], path: PathBuf) -> Result<DrainThread, DrainError> {
        Drain::new(words, io::sink())?;
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let (opened, is_open) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("ikp-drain".into())
            .spawn(move || {
                let mut failure = None;
                let written = crate::atomic::write_file(&path, |out| {
                    let _ = opened.send(());
                    let drained = Drain::new(words, out).and_then(|mut d| {
                        d.run_until(&stop, IDLE)?;
                        Ok(d.finish()?.1)
                    });
                    drained.map_err(|e| {
                        failure = Some(e);
                        io::Error::other("the drain failed")
                    })
                });
                // The drain's own error first: the write only failed because of it.
                match (failure, written) {
                    (Some(e), _) => Err(e),
                    (None, w) => w.map_err(|e| DrainError::File(Box::new(e))),
                }
            })?;
        let mut t = DrainThread {
            done,
            thread: Some(thread),
        };
        if is_open.recv().is_err() {
            return Err(t
                .join()
                .expect_err("the drain thread ended before opening its file"));
        }
        Ok(t)
    }

    /// Once the kernel has ended and its writes are visible: stops the thread, which copies
    /// what is left, writes every lane's final state and puts the file in place.
    pub fn finish(mut self) -> Result<DrainStats, DrainError> {
        self.done.store(true, Ordering::Release);
        self.join()
    }

    /// The thread's result; its panic (a bug) goes on in the caller.
    fn join(&mut self) -> Result<DrainStats, DrainError> {
        let t = self.thread.take().expect("joined once");
        t.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
    }
}

impl Drop for DrainThread {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.done.store(true, Ordering::Release);
            let _ = t.join();
        }
    }
}
