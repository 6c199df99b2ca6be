//! A pure-Rust reference encoder: writes buffers exactly as a kernel using `ikp.cuh` would.
//!
//! It exists for tests (property tests of the decoder, golden files) and for shipping
//! sample buffers without a GPU. It follows the device's rules: one cursor per lane, records
//! past the lane's capacity are counted, not written (or, in a ring, overwrite the oldest);
//! counters accumulate into the trailer; with several epochs a lane takes its epoch from
//! its launch counter at init.

use crate::layout::{Layout, LayoutError};
use crate::wire::{self, lane, Kind, MetaKind, Overflow};

/// A whole buffer being written.
#[derive(Clone, Debug)]
pub struct BufferWriter {
    layout: Layout,
    lane_base: usize,
    lane_stride: usize,
    words: Vec<u64>,
}

impl BufferWriter {
    /// A zeroed buffer with the header of `layout` written, as the host prepares it.
    pub fn new(layout: Layout) -> Result<Self, LayoutError> {
        let header = layout.header_words()?;
        let mut words = vec![0u64; layout.buffer_words() as usize];
        words[..header.len()].copy_from_slice(&header);
        Ok(BufferWriter {
            lane_base: layout.lane_base() as usize,
            lane_stride: layout.lane_stride() as usize,
            layout,
            words,
        })
    }

    /// The layout this buffer was made for.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// A writer for lane `lane` (`block_linear * groups_per_block + group`) in epoch 0,
    /// the launch of a one-epoch buffer. It does not touch the launch counter, as the
    /// device does not when `epochs == 1`.
    ///
    /// # Panics
    /// If `lane` is not below the layout's lane count (a test bug, not an input error).
    pub fn lane(&mut self, lane: u64) -> LaneWriter<'_> {
        self.segment(0, lane)
    }

    /// A writer for lane `lane` in epoch `epoch`, the launch counter untouched (for
    /// hand-made buffers; [`BufferWriter::launch`] does what the device does).
    ///
    /// # Panics
    /// If `lane` or `epoch` is out of range.
    pub fn segment(&mut self, epoch: u32, lane: u64) -> LaneWriter<'_> {
        let lanes = self.layout.lane_count();
        assert!(lane < lanes, "lane {lane} out of range");
        assert!(epoch < self.layout.epochs, "epoch {epoch} out of range");
        let start = self.lane_base + (epoch as u64 * lanes + lane) as usize * self.lane_stride;
        LaneWriter {
            seg: &mut self.words[start..start + self.lane_stride],
            cap: self.layout.records_per_lane,
            ring: self.layout.overflow == Overflow::Ring,
            cursor: 0,
        }
    }

    /// What a lane's init does with several epochs: takes its epoch by incrementing its
    /// launch counter, and returns the writer of that epoch's segment, or `None` (records
    /// nothing) when the buffer's epochs are used up. With one epoch: [`BufferWriter::lane`].
    ///
    /// # Panics
    /// If `lane` is out of range.
    pub fn launch(&mut self, lane: u64) -> Option<LaneWriter<'_>> {
        if self.layout.epochs == 1 {
            return Some(self.lane(lane));
        }
        assert!(lane < self.layout.lane_count(), "lane {lane} out of range");
        let counter = self.lane_base - self.layout.lane_count() as usize + lane as usize;
        let epoch = self.words[counter];
        self.words[counter] += 1;
        (epoch < self.layout.epochs as u64).then(|| self.segment(epoch as u32, lane))
    }

    /// The finished buffer as words.
    pub fn into_words(self) -> Vec<u64> {
        self.words
    }

    /// The finished buffer as little-endian bytes (the file format).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

/// One lane's writer: the CPU twin of the device's `ikp::Lane`.
#[derive(Debug)]
pub struct LaneWriter<'a> {
    seg: &'a mut [u64],
    cap: u32,
    ring: bool,
    cursor: u32,
}

impl LaneWriter<'_> {
    /// `init`: stamps start times and the lane's SM / warp ids.
    pub fn init(
        &mut self,
        smid: u32,
        warp: u32,
        flags: u32,
        start_gt: u64,
        start_clk: u64,
    ) -> &mut Self {
        self.seg[lane::START_GT as usize] = start_gt;
        self.seg[lane::START_CLK as usize] = start_clk;
        self.seg[lane::IDS as usize] = wire::pack_ids(smid, warp, flags);
        self
    }

    /// The record cost measured at init: `cycles` of one record (the `CALIB` word).
    pub fn calibrate(&mut self, cycles: u32) -> &mut Self {
        self.seg[lane::CALIB as usize] = cycles as u64;
        self
    }

    /// Writes one raw record; when the lane is full, counts it as dropped, or in a ring
    /// overwrites the oldest.
    pub fn record(&mut self, kind: Kind, region: u32, payload: u32, time_lo: u32) -> &mut Self {
        let word = wire::pack_record(time_lo, wire::pack_tag(kind, region, payload));
        if self.ring {
            // The device's `cursor & (cap - 1)`: cap is a power of two.
            self.seg[(lane::EVENTS + (self.cursor & (self.cap - 1))) as usize] = word;
            self.cursor = self.cursor.wrapping_add(1);
        } else {
            if self.cursor < self.cap {
                self.seg[(lane::EVENTS + self.cursor) as usize] = word;
            }
            self.cursor = self.cursor.saturating_add(1);
        }
        self
    }

    /// Opens `region` at `time` (only its low 32 bits are stored, as on the device).
    pub fn begin(&mut self, region: u32, payload: u32, time: u64) -> &mut Self {
        self.record(Kind::Begin, region, payload, time as u32)
    }

    /// Closes `region` at `time`.
    pub fn end(&mut self, region: u32, payload: u32, time: u64) -> &mut Self {
        self.record(Kind::End, region, payload, time as u32)
    }

    /// A point event at `time`.
    pub fn instant(&mut self, region: u32, payload: u32, time: u64) -> &mut Self {
        self.record(Kind::Instant, region, payload, time as u32)
    }

    /// Opens async range `region` with `token` at `time` (a begin record of a region the
    /// layout declares async; its end may come from another lane).
    pub fn range_begin(&mut self, region: u32, token: u32, time: u64) -> &mut Self {
        self.record(Kind::Begin, region, token, time as u32)
    }

    /// Closes the async range `region` / `token` at `time`.
    pub fn range_end(&mut self, region: u32, token: u32, time: u64) -> &mut Self {
        self.record(Kind::End, region, token, time as u32)
    }

    /// A counter sample (meta record) of `value` iterations for counter `id`.
    pub fn counter_sample(&mut self, id: u32, value: u32) -> &mut Self {
        self.record(Kind::Meta, MetaKind::CounterSample as u32, id, value)
    }

    /// Adds `n` to the trailer total of counter `id`.
    pub fn counter_add(&mut self, id: u32, n: u64) -> &mut Self {
        let i = (wire::LANE_FIXED_WORDS + self.cap + id) as usize;
        self.seg[i] = self.seg[i].wrapping_add(n);
        self
    }

    /// `finalize`: stamps end times and the written / dropped counts.
    pub fn finalize(&mut self, end_gt: u64, end_clk: u64) -> &mut Self {
        let t = (lane::EVENTS + self.cap) as usize;
        let written = self.cursor.min(self.cap);
        self.seg[t + lane::T_END_GT as usize] = end_gt;
        self.seg[t + lane::T_END_CLK as usize] = end_clk;
        self.seg[t + lane::T_COUNT as usize] = wire::pack_count(written, self.cursor - written);
        self
    }
}
