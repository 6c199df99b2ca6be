//! Per-lane record walk shared by both formats: stamp unwrapping, stack pairing, output.
//!
//! Stamps unwrap as the parent module's `# Unwrapping` says.
//!
//! A [`LaneWalk`] sees one lane's records in order. It writes spans, instants and samples
//! into slices that [`super::assemble`] sized beforehand, so the hot loop does no
//! allocation. Each begin takes the next span slot and its end completes that row, so
//! spans come out in begin order (parents before the spans nested in them) without a
//! sort; the slot of a begin that is never closed is marked with [`HOLE`] and removed by
//! the compaction.
//!
//! # Pairing
//! An end closes the innermost open begin of its region (`ikp.cuh`: "closes the innermost
//! open region with the same id"); the begins opened after that one and still open stay
//! open (the regions overlap rather than nest) and are closed by their own ends. An end
//! with no open begin of its region is unmatched; so is a begin still open when the lane
//! ends. When regions nest, the begin an end closes is always the innermost open one (the
//! top of the stack), which the hot path pairs; only overlapping regions and unmatched
//! ends take the cold path ([`end_cold`]).
//!
//! A span's depth is 0 when no begin of its lane was open at its begin, else one more than
//! the depth of the innermost open one (so every region open at a span's begin has a
//! smaller depth). With nested regions that is the span's position in the stack; a
//! region that began inside one that has closed since keeps its depth, and the regions
//! begun inside it are deeper still.

use super::async_ranges::{AsyncMask, AsyncRecord};
use crate::model::Unpaired;
use crate::time::Timestamp;

/// Converts a lane's unwrapped 64-bit ticks to ns. A type parameter of [`LaneWalk`] rather
/// than an enum, so the globaltimer walk (the common case) carries no conversion at all.
pub trait Clock: Copy {
    /// The time of `ticks`.
    fn ns(self, ticks: u64) -> Timestamp;
}

/// Ticks are already ns (globaltimer).
#[derive(Clone, Copy, Debug)]
pub struct Globaltimer;

impl Clock for Globaltimer {
    #[inline(always)]
    fn ns(self, ticks: u64) -> Timestamp {
        ticks
    }
}

/// Clock cycles: `ns = gt0 + (ticks - clk0) * num / den`, from the lane's (clock64,
/// globaltimer) pair at start and a ratio: its own or the pooled one (see `native`,
/// `# Clock mode`).
#[derive(Clone, Copy, Debug)]
pub struct Cycles {
    /// clock64 at lane start.
    pub clk0: u64,
    /// globaltimer at lane start.
    pub gt0: u64,
    /// Elapsed ns over the calibration interval(s).
    pub num: u64,
    /// Elapsed cycles over the calibration interval(s) (non-zero).
    pub den: u64,
}

impl Clock for Cycles {
    #[inline]
    fn ns(self, ticks: u64) -> Timestamp {
        let d = ticks.wrapping_sub(self.clk0) as u128;
        self.gt0
            .wrapping_add((d * self.num as u128 / self.den as u128) as u64)
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
    pub s_begin: &'a mut [Timestamp],
    /// Span ends.
    pub s_end: &'a mut [Timestamp],
    /// Instant lane ids.
    pub i_lane: &'a mut [u32],
    /// Instant regions.
    pub i_region: &'a mut [u16],
    /// Instant payloads.
    pub i_payload: &'a mut [u32],
    /// Instant times.
    pub i_ts: &'a mut [Timestamp],
    /// Sample lane ids.
    pub c_lane: &'a mut [u32],
    /// Sample counter ids.
    pub c_counter: &'a mut [u16],
    /// Sample times.
    pub c_ts: &'a mut [Timestamp],
    /// Sample values.
    pub c_value: &'a mut [u32],
    /// Begins never closed.
    pub unmatched_begin: Vec<Unpaired>,
    /// Ends with no open begin.
    pub unmatched_end: Vec<Unpaired>,
    /// Begin and end records of async regions, left unpaired ([`LaneWalk::run_async`]).
    pub async_records: Vec<AsyncRecord>,
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

/// Set in the region cell of an open begin whose end must take the cold path, because the
/// hot path's `depth -= 1` would give the next begin a wrong depth there: its link (see
/// [`LaneWalk`]) no longer names the begin that was innermost when it began, which was
/// closed from under it, or (beyond the depth a `u16` records) its depth is not known
/// exactly. [`end_cold`] sets the next begin's depth from the begin it links to. Region
/// ids have 10 bits, so a flagged cell never equals a record's region.
const COLD_END: u16 = 0x8000;
const _: () = assert!(ikp_device::wire::REGION_MASK < COLD_END as u32);

/// The span columns of a chunk, resliced to one common length.
struct SpanCols<'o> {
    lane: &'o mut [u32],
    region: &'o mut [u16],
    depth: &'o mut [u16],
    payload: &'o mut [u32],
    begin: &'o mut [Timestamp],
    end: &'o mut [Timestamp],
}

/// [`SpanCols`] of a [`ChunkOut`], borrowing only its span fields (a macro, so that the
/// caller can borrow the other fields at the same time).
macro_rules! span_cols {
    ($out:expr) => {{
        let n = $out.s_lane.len();
        SpanCols {
            lane: &mut $out.s_lane[..n],
            region: &mut $out.s_region[..n],
            depth: &mut $out.s_depth[..n],
            payload: &mut $out.s_payload[..n],
            begin: &mut $out.s_begin[..n],
            end: &mut $out.s_end[..n],
        }
    }};
}

/// `top` of a lane with no open begin.
const NONE: usize = usize::MAX;

/// What ended a [`LaneWalk::run`] early, and what it skipped.
#[derive(Clone, Copy, Debug, Default)]
pub struct Run {
    /// TVM format: index (in the words given) and time of the lane's finalize record.
    pub finalize: Option<(usize, Timestamp)>,
    /// ikp format: meta records of an unknown kind or counter id.
    pub unknown: u64,
    /// Timed records whose stamp was behind the lane's latest one (see the module's
    /// `# Unwrapping`): each got the lane's latest time.
    pub backward: u64,
}

/// One lane being walked.
///
/// The pairing stack lives in the span columns themselves: a begin writes its row at once
/// (region, depth, payload, begin; the lane column, and the TVM format's payloads, which
/// are all 0, are filled for a whole run afterwards) and parks the slot of the enclosing
/// open begin in its `end` cell; the matching end reads that link back and overwrites it
/// with its time. So a begin / end pair costs six stores (five in the TVM format) and two
/// loads, with no stack to grow. The open begins form a list linked through those cells,
/// innermost first, so closing a begin below the innermost one (overlapping regions, the
/// module's `# Pairing`) only relinks the begin above it ([`end_cold`]).
///
/// `depth` is the depth of the next begin: one more than the innermost open begin's. The
/// hot path's end decrements it, which is right as long as every open begin links to the
/// begin that was innermost when it began (one level up); a begin relinked by
/// [`end_cold`] is marked [`COLD_END`] so that its end recomputes the depth instead.
#[derive(Debug)]
pub struct LaneWalk<C> {
    /// Lane id.
    pub lane: u32,
    /// Unwrapped ticks of the last stamp (its low 32 bits are that stamp).
    prev_ticks: u64,
    clock: C,
    /// Time of the last timed record (the lane start before any).
    pub last_ns: Timestamp,
    /// Output cursor (relative to the chunk).
    pub cur: Cursor,
    /// Slot of the innermost open begin, or [`NONE`].
    top: usize,
    /// Depth of the next begin (0 with none open; see the struct's docs).
    depth: usize,
}

impl<C: Clock> LaneWalk<C> {
    /// A walk whose 32-bit stamps unwrap forward from the 64-bit `anchor_ticks`.
    pub fn new(lane: u32, anchor_ticks: u64, clock: C, cur: Cursor) -> Self {
        LaneWalk {
            lane,
            prev_ticks: anchor_ticks,
            clock,
            last_ns: clock.ns(anchor_ticks),
            cur,
            top: NONE,
            depth: 0,
        }
    }

    /// Walks `words`, the lane's next records in order. Both formats put the kind in bits
    /// 0..2 of the tag, the region (event) id in bits 2..12 and the stamp in the high half;
    /// they differ in the rest, chosen by `TVM`:
    /// - ikp: bits 12..32 are the payload; kind 3 is a meta record with no stamp, a counter
    ///   sample if it names one of the buffer's `counters`, else counted as unknown.
    /// - TVM: there is no payload (bits 12..32 are the lane, checked by the counting pass);
    ///   kind 3 finalizes the lane and ends the walk.
    ///
    /// A stamp less than 2^31 ticks after the previous one moves the lane's time forward;
    /// one behind it is a backward step (module docs, `# Unwrapping`).
    #[inline(always)]
    pub fn run<const TVM: bool>(
        &mut self,
        words: &[u64],
        counters: u32,
        out: &mut ChunkOut<'_>,
    ) -> Run {
        self.run_with::<TVM, false>(words, counters, &AsyncMask::EMPTY, out)
    }

    /// [`LaneWalk::run`] (ikp format) setting aside the begin and end records of the
    /// regions of `mask` into [`ChunkOut::async_records`] rather than pairing them (see
    /// [`super::async_ranges`]); they still move the lane's time. Another instance of the
    /// loop: the plain walk's loop stays as it was, with no test (the caller keeps the two
    /// apart: `native::walk_lane`).
    #[inline(always)]
    pub fn run_async(
        &mut self,
        words: &[u64],
        counters: u32,
        mask: &AsyncMask,
        out: &mut ChunkOut<'_>,
    ) -> Run {
        self.run_with::<false, true>(words, counters, mask, out)
    }

    /// [`LaneWalk::run`], with the test for async records when `ASYNC`.
    #[inline(always)]
    fn run_with<const TVM: bool, const ASYNC: bool>(
        &mut self,
        words: &[u64],
        counters: u32,
        async_mask: &AsyncMask,
        out: &mut ChunkOut<'_>,
    ) -> Run {
        use ikp_device::wire::{MetaKind, KIND_MASK, PAYLOAD_SHIFT, REGION_MASK, REGION_SHIFT};
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        let (lane, clock) = (self.lane, self.clock);
        let (mut ticks, mut last) = (self.prev_ticks, self.last_ns);
        let (mut top, mut depth, mut cur) = (self.top, self.depth, self.cur);
        let mut run = Run::default();
        // Backward steps are counted in an atomic only so that the count lives in memory
        // and its test stays a branch, taken only by a step: as a plain local it became
        // arithmetic on every record and pushed the open depth to the stack, and as an
        // out-of-line call in the branch it clobbered registers, which cost the native
        // walk about 5 % (BENCHMARKS.md).
        let backward = AtomicU64::new(0);
        let first = cur;
        let mut tvm_filled = first.span;
        let n = out.i_lane.len();
        let (i_lane, i_region, i_payload, i_ts) = (
            &mut out.i_lane[..n],
            &mut out.i_region[..n],
            &mut out.i_payload[..n],
            &mut out.i_ts[..n],
        );
        let n = out.c_lane.len();
        let (c_lane, c_counter, c_ts, c_value) = (
            &mut out.c_lane[..n],
            &mut out.c_counter[..n],
            &mut out.c_ts[..n],
            &mut out.c_value[..n],
        );
        let unmatched_end = &mut out.unmatched_end;
        let async_out = &mut out.async_records;
        // The span columns as locals, not fields of a struct whose address the cold path
        // takes: that would keep every pointer and length in memory, reloaded per record.
        let SpanCols {
            lane: s_lane,
            region: s_region,
            depth: s_depth,
            payload: s_payload,
            begin: s_begin,
            end: s_end,
        } = span_cols!(out);
        for (j, &w) in words.iter().enumerate() {
            let (tag, hi) = (w as u32, (w >> 32) as u32);
            let kind = tag & KIND_MASK;
            let region = ((tag >> REGION_SHIFT) & REGION_MASK) as u16;
            let payload = if TVM { 0 } else { tag >> PAYLOAD_SHIFT };
            if !TVM && kind == 3 {
                if region == MetaKind::CounterSample as u16 && payload < counters {
                    let k = cur.samp;
                    c_counter[k] = payload as u16;
                    c_ts[k] = last;
                    c_value[k] = hi;
                    cur.samp = k + 1;
                } else {
                    run.unknown += 1;
                }
                continue;
            }
            // A step of 2^31 ticks or more is a backward step: the lane's time stays. The
            // branch is predicted not taken and its sign comes with the subtraction; the
            // count stays in memory (see `backward`).
            let d = hi.wrapping_sub(ticks as u32);
            if (d as i32) < 0 {
                backward.fetch_add(1, Relaxed);
            } else {
                ticks = ticks.wrapping_add(d as u64);
            }
            let t = clock.ns(ticks);
            last = t;
            if ASYNC && tag & 2 == 0 && async_mask.contains(region) {
                async_out.push(AsyncRecord {
                    ts: t,
                    lane,
                    region,
                    token: payload,
                    end: tag & 1 != 0,
                });
                continue;
            }
            // Kind 3 is handled here (TVM) or above (ikp); 0 begins, 1 ends, 2 is an
            // instant. They are told apart by testing bits: LLVM turns a `match` on the
            // kind, or a chain of `kind ==` tests, into an indirect jump through a
            // table, which costs more instructions per record for the same prediction
            // (measured on the walk; see BENCHMARKS.md).
            if TVM && kind == 3 {
                run.finalize = Some((j, t));
                break;
            }
            if tag & 2 == 0 && tag & 1 == 0 {
                let k = cur.span;
                s_region[k] = region;
                s_depth[k] = depth.min(HOLE as usize - 1) as u16;
                if !TVM {
                    s_payload[k] = payload;
                }
                s_begin[k] = t;
                s_end[k] = top as u64;
                top = k;
                depth += 1;
                cur.span = k + 1;
            } else if tag & 2 == 0 {
                // `top` is NONE (out of bounds) when no begin is open; a COLD_END top
                // never matches.
                if s_region.get(top) == Some(&region) {
                    let parent = s_end[top] as usize;
                    s_end[top] = t;
                    top = parent;
                    depth -= 1;
                } else {
                    if TVM {
                        // The run's payloads (all 0) are filled after the loop; nothing
                        // reads them sooner. Filling those so far here as well keeps LLVM's
                        // register allocation of the hot loop: without it the TVM walk
                        // runs one more instruction per record (callgrind, the decode
                        // bench's buffers). `tvm_filled` keeps the work linear.
                        s_payload[tvm_filled..cur.span].fill(0);
                        tvm_filled = cur.span;
                    }
                    let s = &mut SpanCols {
                        lane: &mut *s_lane,
                        region: &mut *s_region,
                        depth: &mut *s_depth,
                        payload: &mut *s_payload,
                        begin: &mut *s_begin,
                        end: &mut *s_end,
                    };
                    let end = (region, payload, t);
                    (top, depth) = end_cold(lane, s, top, depth, end, unmatched_end);
                }
            } else {
                let k = cur.inst;
                i_region[k] = region;
                if !TVM {
                    i_payload[k] = payload;
                }
                i_ts[k] = t;
                cur.inst = k + 1;
            }
        }
        // Columns that are the same on every row of the run are filled afterwards, while
        // the rows are still in cache: fewer stores and live pointers in the loop.
        s_lane[first.span..cur.span].fill(lane);
        i_lane[first.inst..cur.inst].fill(lane);
        c_lane[first.samp..cur.samp].fill(lane);
        if TVM {
            s_payload[tvm_filled..cur.span].fill(0);
            i_payload[first.inst..cur.inst].fill(0);
        }
        (self.prev_ticks, self.last_ns) = (ticks, last);
        (self.top, self.depth, self.cur) = (top, depth, cur);
        run.backward = backward.into_inner();
        run
    }

    /// Ends the walk: begins still open are unmatched (reported outermost first), their
    /// slots marked as holes.
    pub fn finish(&mut self, out: &mut ChunkOut<'_>) {
        let s = span_cols!(out);
        let mut open = Vec::new();
        let mut k = self.top;
        while k != NONE {
            open.push(k);
            s.depth[k] = HOLE;
            k = s.end[k] as usize;
        }
        out.unmatched_begin
            .extend(open.iter().rev().map(|&k| Unpaired {
                lane: self.lane,
                region: s.region[k] & !COLD_END,
                payload: s.payload[k],
                ts: s.begin[k],
            }));
        (self.top, self.depth) = (NONE, 0);
    }
}

/// An end that the hot path did not pair, because the innermost open begin is not of its
/// region or is marked [`COLD_END`]. `end` is its `(region, payload, time)`. It closes the
/// innermost open begin of its region, if any: one below the innermost open begin is
/// unlinked, and the begin above it now links to its parent and is marked [`COLD_END`];
/// an innermost begin is closed as the hot path does, but the depth of the next begin is
/// recomputed from its parent's. With no open begin of its region the end is unmatched.
/// Returns the new `(top, depth)`.
#[cold]
#[inline(never)]
fn end_cold(
    lane: u32,
    s: &mut SpanCols<'_>,
    top: usize,
    depth: usize,
    end: (u16, u32, Timestamp),
    unmatched_end: &mut Vec<Unpaired>,
) -> (usize, usize) {
    let (region, payload, t) = end;
    let (mut above, mut k) = (NONE, top);
    while k != NONE && s.region[k] & !COLD_END != region {
        above = k;
        k = s.end[k] as usize;
    }
    if k == NONE {
        unmatched_end.push(Unpaired {
            lane,
            region,
            payload,
            ts: t,
        });
        return (top, depth);
    }
    let parent = s.end[k] as usize;
    s.region[k] = region;
    s.end[k] = t;
    if above != NONE {
        s.end[above] = parent as u64;
        s.region[above] |= COLD_END;
        return (top, depth);
    }
    // `k` was the innermost: the next begin goes one level below its parent. A parent's
    // depth at the cap may be smaller than its true depth: the next begin then takes
    // `k`'s, also beyond the cap (so recorded the same), and the parent's end comes here
    // too, until a parent below the cap gives the exact depth again.
    let next = match parent {
        NONE => 0,
        p if s.depth[p] < HOLE - 1 => s.depth[p] as usize + 1,
        p => {
            s.region[p] |= COLD_END;
            depth - 1
        }
    };
    (parent, next)
}

#[cfg(test)]
mod tests {
    use super::{ChunkOut, Cursor, Globaltimer, LaneWalk, Run};
    use ikp_device::wire::{pack_record, pack_tag, Kind};

    /// Output columns with room for `n` rows of each table.
    struct Cols {
        s: [Vec<u64>; 2],
        s16: [Vec<u16>; 2],
        s32: [Vec<u32>; 2],
        i: (Vec<u32>, Vec<u16>, Vec<u32>, Vec<u64>),
        c: (Vec<u32>, Vec<u16>, Vec<u64>, Vec<u32>),
    }

    impl Cols {
        fn new(n: usize) -> Cols {
            Cols {
                s: [vec![0; n], vec![0; n]],
                s16: [vec![0; n], vec![0; n]],
                s32: [vec![0; n], vec![0; n]],
                i: (vec![0; n], vec![0; n], vec![0; n], vec![0; n]),
                c: (vec![0; n], vec![0; n], vec![0; n], vec![0; n]),
            }
        }

        fn out(&mut self) -> ChunkOut<'_> {
            let [begin, end] = &mut self.s;
            let [region, depth] = &mut self.s16;
            let [lane, payload] = &mut self.s32;
            ChunkOut {
                s_lane: lane,
                s_region: region,
                s_depth: depth,
                s_payload: payload,
                s_begin: begin,
                s_end: end,
                i_lane: &mut self.i.0,
                i_region: &mut self.i.1,
                i_payload: &mut self.i.2,
                i_ts: &mut self.i.3,
                c_lane: &mut self.c.0,
                c_counter: &mut self.c.1,
                c_ts: &mut self.c.2,
                c_value: &mut self.c.3,
                ..Default::default()
            }
        }
    }

    fn rec(kind: Kind, region: u32, lo: u32) -> u64 {
        pack_record(lo, pack_tag(kind, region, 0))
    }

    /// Walks `words` (ikp format) from `anchor`: the run, the span rows `(begin, end)`,
    /// the instant times and the lane's last time.
    fn walk(anchor: u64, words: &[u64]) -> (Run, Vec<(u64, u64)>, Vec<u64>, u64) {
        let mut cols = Cols::new(words.len());
        let mut out = cols.out();
        let mut w = LaneWalk::new(0, anchor, Globaltimer, Cursor::default());
        let run = w.run::<false>(words, 0, &mut out);
        w.finish(&mut out);
        let (cur, last) = (w.cur, w.last_ns);
        let spans = (0..cur.span)
            .map(|k| (out.s_begin[k], out.s_end[k]))
            .collect();
        (run, spans, out.i_ts[..cur.inst].to_vec(), last)
    }

    #[test]
    fn a_stamp_behind_the_latest_one_is_clamped_and_counted_never_a_forward_jump() {
        // Around the 32-bit wrap: +8, +12 across the wrap, then 6 back across it again
        // (the latest time stays), 4 behind still, then forward past it.
        let a = 0xFFFF_FFF0u64;
        let words = [
            rec(Kind::Begin, 1, 0xFFFF_FFF8),
            rec(Kind::Instant, 2, 0x0000_0004),
            rec(Kind::Instant, 2, 0xFFFF_FFFE),
            rec(Kind::End, 1, 0x0000_0000),
            rec(Kind::Instant, 2, 0x0000_0010),
        ];
        let (run, spans, inst, last) = walk(a, &words);
        assert_eq!(run.backward, 2);
        let top = 1u64 << 32;
        assert_eq!(spans, [(a + 8, top + 4)]);
        assert_eq!(inst, [top + 4, top + 4, top + 0x10]);
        assert_eq!(last, top + 0x10);
    }

    #[test]
    fn overlapping_ends_beyond_the_depth_cap_keep_depths_capped_and_exact_below_it() {
        // 70 000 nested begins of region 0 (deeper than a u16 records), region 1 begun on
        // top, the innermost region 0 ended under it, then region 1 and every region 0:
        // all pair, and a begin with nothing open is at depth 0 again.
        let n = 70_000u32;
        let mut words: Vec<u64> = (0..n).map(|k| rec(Kind::Begin, 0, k)).collect();
        words.push(rec(Kind::Begin, 1, n));
        words.push(rec(Kind::End, 0, n + 1));
        words.push(rec(Kind::End, 1, n + 2));
        words.extend((0..n - 1).map(|k| rec(Kind::End, 0, n + 3 + k)));
        words.push(rec(Kind::Begin, 2, 2 * n + 2));
        words.push(rec(Kind::End, 2, 2 * n + 3));
        let mut cols = Cols::new(words.len());
        let mut out = cols.out();
        let mut w = LaneWalk::new(0, 0, Globaltimer, Cursor::default());
        w.run::<false>(&words, 0, &mut out);
        w.finish(&mut out);
        assert!(out.unmatched_begin.is_empty() && out.unmatched_end.is_empty());
        let k = n as usize;
        assert_eq!(w.cur.span, k + 2);
        let d = |i: usize| out.s_depth[i];
        let cap = super::HOLE - 1;
        assert_eq!(
            (d(0), d(cap as usize - 1), d(cap as usize)),
            (0, cap - 1, cap)
        );
        assert_eq!((d(k - 1), d(k)), (cap, cap));
        assert_eq!(d(k + 1), 0, "nothing was open at the last begin");
        // The innermost region 0 ended under region 1; the outermost ended last.
        let (b, e) = (&out.s_begin, &out.s_end);
        assert_eq!((b[k - 1], e[k - 1]), (n as u64 - 1, n as u64 + 1));
        assert_eq!((b[k], e[k]), (n as u64, n as u64 + 2));
        assert_eq!(e[0], 2 * n as u64 + 1);
        assert!(
            out.s_region[..k].iter().all(|&r| r == 0),
            "no flag left in a row"
        );
        assert_eq!(out.s_region[k..k + 2], [1, 2]);
    }

    #[test]
    fn the_largest_step_forward_is_2_31_minus_1_ticks() {
        let a = 1000u64;
        let fwd = (1u64 << 31) - 1;
        // 2^31 - 1 ahead is forward; from there, 2^31 ahead (as the 32-bit difference) is
        // a step back of 2^31 and keeps the time.
        let words = [
            rec(Kind::Instant, 0, (a + fwd) as u32),
            rec(Kind::Instant, 0, (a + fwd + (1 << 31)) as u32),
        ];
        let (run, _, inst, _) = walk(a, &words);
        assert_eq!(inst, [a + fwd, a + fwd]);
        assert_eq!(run.backward, 1);
        // A first record behind the anchor is clamped to it.
        let (run, _, inst, last) = walk(a, &[rec(Kind::Instant, 0, 990)]);
        assert_eq!((run.backward, inst, last), (1, vec![a], a));
    }
}
