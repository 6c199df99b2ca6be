//! Per-lane record walk shared by both formats: stamp unwrapping, stack pairing, output.
//!
//! A [`LaneWalk`] sees one lane's records in order. It writes spans, instants and samples
//! into slices that [`super::assemble`] sized beforehand, so the hot loop does no
//! allocation except for the pairing stack. Each begin reserves the next span slot and its
//! span is written there when the end arrives, so spans come out in begin order (parents
//! before the spans nested in them) without a sort; the slot of a begin that is never
//! closed is marked with [`HOLE`] and removed by the compaction.

use crate::model::{Ns, Unpaired};

/// Converts the lane's unwrapped 64-bit ticks to ns.
#[derive(Clone, Copy, Debug)]
pub enum TickToNs {
    /// Ticks are already ns (globaltimer).
    Identity,
    /// Clock cycles: `ns = gt0 + (ticks - clk0) * num / den`, from the lane's own
    /// (clock64, globaltimer) pairs at start and end (or another lane's, see `native`).
    Linear {
        /// clock64 at lane start.
        clk0: u64,
        /// globaltimer at lane start.
        gt0: u64,
        /// Elapsed ns over the calibration interval.
        num: u64,
        /// Elapsed cycles over the calibration interval (non-zero).
        den: u64,
    },
}

impl TickToNs {
    #[inline]
    fn apply(self, ticks: u64) -> Ns {
        match self {
            TickToNs::Identity => ticks,
            TickToNs::Linear {
                clk0,
                gt0,
                num,
                den,
            } => {
                let d = ticks.wrapping_sub(clk0) as u128;
                gt0.wrapping_add((d * num as u128 / den as u128) as u64)
            }
        }
    }
}

/// Spans, instants and samples output columns of one chunk of lanes.
#[derive(Debug, Default)]
pub struct ChunkOut<'a> {
    /// Span lane ids.
    pub s_lane: &'a mut [u32],
    /// Span region ids.
    pub s_region: &'a mut [u16],
    /// Span depths.
    pub s_depth: &'a mut [u16],
    /// Span payloads.
    pub s_payload: &'a mut [u32],
    /// Span begins.
    pub s_begin: &'a mut [Ns],
    /// Span ends.
    pub s_end: &'a mut [Ns],
    /// Instant lane ids.
    pub i_lane: &'a mut [u32],
    /// Instant regions.
    pub i_region: &'a mut [u16],
    /// Instant payloads.
    pub i_payload: &'a mut [u32],
    /// Instant times.
    pub i_ts: &'a mut [Ns],
    /// Sample lane ids.
    pub c_lane: &'a mut [u32],
    /// Sample counter ids.
    pub c_counter: &'a mut [u16],
    /// Sample times.
    pub c_ts: &'a mut [Ns],
    /// Sample values.
    pub c_value: &'a mut [u32],
    /// Begins never closed.
    pub unmatched_begin: Vec<Unpaired>,
    /// Ends with no open begin.
    pub unmatched_end: Vec<Unpaired>,
}

/// Where a lane's output goes inside its chunk's slices (relative indices).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    /// Next span slot.
    pub span: usize,
    /// Next instant slot.
    pub inst: usize,
    /// Next sample slot.
    pub samp: usize,
}

/// Depth value marking the slot of a begin that was never closed.
pub const HOLE: u16 = u16::MAX;

#[derive(Clone, Copy, Debug)]
struct Open {
    t: Ns,
    slot: usize,
    payload: u32,
    region: u16,
}

/// One lane being walked.
#[derive(Debug)]
pub struct LaneWalk {
    /// Lane id.
    pub lane: u32,
    prev_ticks: u64,
    prev_lo: u32,
    conv: TickToNs,
    /// Time of the last timed record (the lane start before any).
    pub last_ns: Ns,
    /// Time of the first timed record, if any.
    pub first_ns: Option<Ns>,
    /// Output cursor (relative to the chunk).
    pub cur: Cursor,
    /// Records seen (timed or meta).
    pub records: u64,
    stack: Vec<Open>,
}

impl LaneWalk {
    /// A walk whose 32-bit stamps unwrap forward from the 64-bit `anchor_ticks`.
    pub fn new(lane: u32, anchor_ticks: u64, conv: TickToNs, cur: Cursor) -> LaneWalk {
        LaneWalk {
            lane,
            prev_ticks: anchor_ticks,
            prev_lo: anchor_ticks as u32,
            conv,
            last_ns: conv.apply(anchor_ticks),
            first_ns: None,
            cur,
            records: 0,
            stack: Vec::new(),
        }
    }

    /// Unwraps a 32-bit stamp: each stamp is at most 2^32 - 1 ticks after the previous one.
    #[inline]
    pub fn time(&mut self, lo: u32) -> Ns {
        self.prev_ticks = self
            .prev_ticks
            .wrapping_add(lo.wrapping_sub(self.prev_lo) as u64);
        self.prev_lo = lo;
        let t = self.conv.apply(self.prev_ticks);
        self.last_ns = t;
        if self.first_ns.is_none() {
            self.first_ns = Some(t);
        }
        t
    }

    /// A begin record.
    #[inline]
    pub fn begin(&mut self, region: u16, payload: u32, lo: u32) {
        self.records += 1;
        let t = self.time(lo);
        let slot = self.cur.span;
        self.cur.span = slot + 1;
        self.stack.push(Open {
            t,
            slot,
            payload,
            region,
        });
    }

    /// An end record: closes the innermost open begin of `region`; begins opened inside it
    /// and still open are reported as unmatched.
    #[inline]
    pub fn end(&mut self, region: u16, payload: u32, lo: u32, out: &mut ChunkOut<'_>) {
        self.records += 1;
        let t = self.time(lo);
        // The common case, an end closing the innermost begin, stays inline; mismatches
        // take the out-of-line path.
        match self.stack.last() {
            Some(o) if o.region == region => {
                let o = *o;
                self.stack.pop();
                let depth = self.stack.len();
                self.close(o, depth, t, out);
            }
            _ => self.end_unmatched(region, payload, t, out),
        }
    }

    #[inline]
    fn close(&self, o: Open, depth: usize, t: Ns, out: &mut ChunkOut<'_>) {
        let k = o.slot;
        out.s_lane[k] = self.lane;
        out.s_region[k] = o.region;
        out.s_depth[k] = depth.min(HOLE as usize - 1) as u16;
        out.s_payload[k] = o.payload;
        out.s_begin[k] = o.t;
        out.s_end[k] = t;
    }

    /// An end whose region is not the innermost open one: it closes a deeper begin of its
    /// region (the begins above it become unmatched) or, with none open, is unmatched.
    #[cold]
    #[inline(never)]
    fn end_unmatched(&mut self, region: u16, payload: u32, t: Ns, out: &mut ChunkOut<'_>) {
        let Some(i) = self.stack.iter().rposition(|o| o.region == region) else {
            out.unmatched_end.push(Unpaired {
                lane: self.lane,
                region,
                payload,
                ts: t,
            });
            return;
        };
        for o in self.stack.drain(i + 1..) {
            out.s_depth[o.slot] = HOLE;
            out.unmatched_begin.push(Unpaired {
                lane: self.lane,
                region: o.region,
                payload: o.payload,
                ts: o.t,
            });
        }
        let o = self.stack.pop().expect("index i exists");
        self.close(o, i, t, out);
    }

    /// An instant record.
    #[inline]
    pub fn instant(&mut self, region: u16, payload: u32, lo: u32, out: &mut ChunkOut<'_>) {
        self.records += 1;
        let t = self.time(lo);
        let k = self.cur.inst;
        out.i_lane[k] = self.lane;
        out.i_region[k] = region;
        out.i_payload[k] = payload;
        out.i_ts[k] = t;
        self.cur.inst = k + 1;
    }

    /// A counter sample: it has no stamp of its own and takes the last record's time.
    #[inline]
    pub fn sample(&mut self, counter: u16, value: u32, out: &mut ChunkOut<'_>) {
        self.records += 1;
        let k = self.cur.samp;
        out.c_lane[k] = self.lane;
        out.c_counter[k] = counter;
        out.c_ts[k] = self.last_ns;
        out.c_value[k] = value;
        self.cur.samp = k + 1;
    }

    /// Ends the walk: begins still open are unmatched.
    pub fn finish(&mut self, out: &mut ChunkOut<'_>) {
        for o in self.stack.drain(..) {
            out.s_depth[o.slot] = HOLE;
            out.unmatched_begin.push(Unpaired {
                lane: self.lane,
                region: o.region,
                payload: o.payload,
                ts: o.t,
            });
        }
    }
}
