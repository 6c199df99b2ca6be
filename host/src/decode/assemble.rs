//! Builds the [`Trace`](crate::model::Trace) tables: allocation, a (parallel) walk over
//! chunks of lanes, then compaction and ordering.
//!
//! [`run`]: the formats' counting passes give, per lane, an upper bound on its spans (one
//! slot per begin), instants and samples. Every column is allocated once at the summed
//! bound and split into disjoint per-chunk slices, so chunks can be walked on the rayon
//! pool without locks or per-chunk vectors. Peak memory is therefore the bound, not twice
//! the model.
//!
//! [`Stream`]: one thread, no counting pass; each chunk's rows go right after the
//! previous chunk's, in columns grown as needed (in practice, those of a trace decoded
//! before, which are long enough already).
//!
//! Either way, unmatched records leave holes, which one sequential pass closes.

use super::async_ranges::AsyncRecord;
use super::lane::{ChunkOut, Cursor, HOLE};
use super::DecodeError;
use crate::model::{CounterSamples, Diagnostics, Instants, Lane, Spans};
use rayon::prelude::*;
use std::ops::Range;

/// Upper bounds of one lane's output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caps {
    /// Span slots: one per begin record.
    pub spans: usize,
    /// Instants.
    pub insts: usize,
    /// Counter samples.
    pub samps: usize,
    /// Records of any kind (to balance chunks).
    pub records: usize,
}

/// What a chunk's walk returns.
#[derive(Debug, Default)]
pub struct ChunkDone {
    /// Lanes that recorded anything, ascending, with `spans` / `instants` / `samples`
    /// ranges in absolute indices of the uncompacted columns.
    pub lanes: Vec<Lane>,
    /// Counters of this chunk (`unmatched_*` are taken from the [`ChunkOut`]).
    pub diag: Diagnostics,
    /// Async records of the chunk's lanes (taken from the [`ChunkOut`]).
    pub async_records: Vec<AsyncRecord>,
}

/// A chunk to walk: its lanes and where its output slices start.
#[derive(Debug)]
pub struct Chunk<'a> {
    /// Lane universe indices.
    pub lanes: Range<usize>,
    /// Absolute index of the chunk's first span / instant / sample slot.
    pub base: Cursor,
    /// Relative start cursor of every lane of the chunk.
    pub starts: Vec<Cursor>,
    /// Output slices.
    pub out: ChunkOut<'a>,
}

/// Buffers with fewer records than this are walked on the calling thread.
pub const PARALLEL_MIN_RECORDS: usize = 1 << 20;

/// Splits lanes into contiguous chunks of similar record counts.
fn chunk_ranges(caps: &[Caps], parallel: bool) -> Vec<Range<usize>> {
    let total: usize = caps.iter().map(|c| c.records).sum();
    if !parallel || total < PARALLEL_MIN_RECORDS || caps.len() < 2 {
        let all = 0..caps.len();
        return vec![all];
    }
    let n_chunks = (rayon::current_num_threads() * 4).min(caps.len()).max(1);
    let target = total.div_ceil(n_chunks).max(1);
    let mut out = Vec::with_capacity(n_chunks + 1);
    let (mut start, mut acc) = (0, 0);
    for (i, c) in caps.iter().enumerate() {
        acc += c.records;
        if acc >= target {
            out.push(start..i + 1);
            start = i + 1;
            acc = 0;
        }
    }
    if start < caps.len() {
        out.push(start..caps.len());
    }
    out
}

/// Output columns of an earlier decode whose memory a decode may reuse
/// ([`super::decode_into`]): writing into pages that are already mapped saves
/// the kernel's first-touch fault of every fresh page, which costs more than the walk
/// itself on some machines (BENCHMARKS.md).
#[derive(Debug, Default)]
pub struct Recycled {
    /// Span columns.
    pub spans: Spans,
    /// Instant columns.
    pub instants: Instants,
    /// Sample columns.
    pub samples: CounterSamples,
}

impl Recycled {
    /// The columns of `t` (the rest of it is dropped).
    pub fn of(t: crate::model::Trace) -> Recycled {
        Recycled {
            spans: t.spans,
            instants: t.instants,
            samples: t.samples,
        }
    }

    /// Whether there is no memory to reuse (a fresh decode).
    pub fn is_empty(&self) -> bool {
        self.spans.begin.capacity() == 0 && self.instants.ts.capacity() == 0
    }
}

/// The assembled tables.
#[derive(Debug)]
pub struct Assembled {
    /// Lanes that recorded anything.
    pub lanes: Vec<Lane>,
    /// Spans.
    pub spans: Spans,
    /// Instants.
    pub instants: Instants,
    /// Samples.
    pub samples: CounterSamples,
    /// Diagnostics.
    pub diag: Diagnostics,
    /// Async records, lane by lane (not yet paired: [`super::async_ranges::pair`]).
    pub async_records: Vec<AsyncRecord>,
}

/// The output columns of a decode, before compaction.
#[derive(Debug)]
struct Columns {
    spans: Spans,
    instants: Instants,
    samples: CounterSamples,
}

impl Columns {
    /// `reuse`'s columns, each `n` rows long ([`Spans::recycled`]).
    fn sized(reuse: Recycled, n: Cursor) -> Columns {
        Columns {
            spans: reuse.spans.recycled(n.span),
            instants: reuse.instants.recycled(n.inst),
            samples: reuse.samples.recycled(n.samp),
        }
    }

    /// Lengthens the columns shorter than `n` rows (keeping their rows).
    fn grow(&mut self, n: Cursor) {
        self.spans.grow(n.span);
        self.instants.grow(n.inst);
        self.samples.grow(n.samp);
    }

    /// Every row from `from` on, as output slices.
    fn out_from(&mut self, from: Cursor) -> ChunkOut<'_> {
        let (s, i, c) = (&mut self.spans, &mut self.instants, &mut self.samples);
        let mut out = ChunkOut::default();
        macro_rules! from {
            ($t:ident.$at:ident: $($col:ident $out:ident)+) => {
                $(out.$out = &mut $t.$col[from.$at..];)+
            };
        }
        from!(s.span: lane s_lane region s_region depth s_depth payload s_payload begin s_begin end s_end);
        from!(i.inst: lane i_lane region i_region payload i_payload ts i_ts);
        from!(c.samp: lane c_lane counter c_counter ts c_ts value c_value);
        out
    }

    /// Joins the chunks' lanes and diagnostics (in chunk order) and closes the holes.
    fn assemble(mut self, dones: Vec<ChunkDone>) -> Assembled {
        let mut lanes = Vec::new();
        let mut diag = Diagnostics::default();
        let mut async_records = Vec::new();
        for d in dones {
            lanes.extend(d.lanes);
            async_records.extend(d.async_records);
            diag.unmatched_begin.extend(d.diag.unmatched_begin);
            diag.unmatched_end.extend(d.diag.unmatched_end);
            diag.after_finalize += d.diag.after_finalize;
            diag.unfinalized_lanes += d.diag.unfinalized_lanes;
            diag.unknown_records += d.diag.unknown_records;
            diag.backward_steps += d.diag.backward_steps;
            diag.ends_of_overwritten_begins += d.diag.ends_of_overwritten_begins;
        }
        let (s, i, c) = (&mut self.spans, &mut self.instants, &mut self.samples);
        // Holes are the slots of unmatched begins; with none, no lane has to be searched.
        let holes = !diag.unmatched_begin.is_empty();
        compact(&mut lanes, s, i, c, holes);
        Assembled {
            lanes,
            spans: self.spans,
            instants: self.instants,
            samples: self.samples,
            diag,
            async_records,
        }
    }
}

/// The rows of each table that a lane with bounds `c` may fill.
fn rows(c: &Caps) -> Cursor {
    Cursor {
        span: c.spans,
        inst: c.insts,
        samp: c.samps,
    }
}

/// Where each lane of `caps` starts relative to the first, and their total.
fn starts(caps: &[Caps]) -> (Vec<Cursor>, Cursor) {
    let mut starts = Vec::with_capacity(caps.len());
    let mut n = Cursor::default();
    for c in caps {
        starts.push(n);
        n = plus(n, rows(c));
    }
    (starts, n)
}

/// `a + b`, row counts of each table.
fn plus(a: Cursor, b: Cursor) -> Cursor {
    Cursor {
        span: a.span + b.span,
        inst: a.inst + b.inst,
        samp: a.samp + b.samp,
    }
}

/// `done` with the unmatched records that its walk left in `out`.
fn with_unmatched(mut done: ChunkDone, out: &mut ChunkOut<'_>) -> ChunkDone {
    done.diag.unmatched_begin = std::mem::take(&mut out.unmatched_begin);
    done.diag.unmatched_end = std::mem::take(&mut out.unmatched_end);
    done.async_records = std::mem::take(&mut out.async_records);
    done
}

/// Walks `chunk` with `walk` and takes the unmatched records out of its output.
fn walk_chunk<F>(walk: F, chunk: &mut Chunk<'_>) -> Result<ChunkDone, DecodeError>
where
    F: FnOnce(&mut Chunk<'_>) -> Result<ChunkDone, DecodeError>,
{
    let d = walk(chunk)?;
    Ok(with_unmatched(d, &mut chunk.out))
}

/// Allocates, walks every chunk with `walk`, compacts and orders.
pub fn run<F>(
    caps: &[Caps],
    parallel: bool,
    reuse: Recycled,
    walk: F,
) -> Result<Assembled, DecodeError>
where
    F: Fn(&mut Chunk<'_>) -> Result<ChunkDone, DecodeError> + Sync,
{
    let tot = caps.iter().fold(Cursor::default(), |a, c| plus(a, rows(c)));
    let mut cols = Columns::sized(reuse, tot);
    let ranges = chunk_ranges(caps, parallel);
    let dones: Result<Vec<ChunkDone>, DecodeError> = {
        let mut rest = cols.out_from(Cursor::default());
        let mut chunks = Vec::with_capacity(ranges.len());
        let mut base = Cursor::default();
        for r in ranges {
            let (starts, n) = starts(&caps[r.clone()]);
            let (out, tail) = split(rest, n);
            rest = tail;
            chunks.push(Chunk {
                lanes: r,
                base,
                starts,
                out,
            });
            base = plus(base, n);
        }
        if chunks.len() > 1 {
            chunks
                .par_iter_mut()
                .map(|c| walk_chunk(&walk, c))
                .collect()
        } else {
            chunks.iter_mut().map(|c| walk_chunk(&walk, c)).collect()
        }
    };
    Ok(cols.assemble(dones?))
}

/// Output grown chunk by chunk, for a one-thread decode that lays each lane's rows right
/// after the previous lane's as it walks them. Nothing has to be counted first: a chunk
/// asks for room for as many rows as it might use (a bound it can see cheaply) and says
/// how many it used, and the next chunk starts there. (The TVM decoder reads each strip
/// of lanes from memory once this way, instead of once to count and once to walk.)
#[derive(Debug)]
pub struct Stream {
    cols: Columns,
    /// Rows used so far.
    at: Cursor,
    dones: Vec<ChunkDone>,
}

impl Stream {
    /// An empty output that reuses `reuse`'s memory.
    pub fn new(reuse: Recycled) -> Stream {
        Stream {
            // Recycled columns keep their length: rows past it are grown into as chunks
            // need them, and the compaction cuts what is left over.
            cols: Columns {
                spans: reuse.spans,
                instants: reuse.instants,
                samples: reuse.samples,
            },
            at: Cursor::default(),
            dones: Vec::new(),
        }
    }

    /// Walks the next chunk with `walk`, which gets the absolute index of the first row
    /// it may use and output slices with room for `room` rows of each table, and returns
    /// how many it used (from the start of the slices) and its lanes and diagnostics.
    pub fn chunk<F>(&mut self, room: Cursor, walk: F) -> Result<(), DecodeError>
    where
        F: FnOnce(Cursor, &mut ChunkOut<'_>) -> Result<(Cursor, ChunkDone), DecodeError>,
    {
        self.cols.grow(plus(self.at, room));
        let (mut out, _) = split(self.cols.out_from(self.at), room);
        let (used, done) = walk(self.at, &mut out)?;
        self.dones.push(with_unmatched(done, &mut out));
        self.at = plus(self.at, used);
        Ok(())
    }

    /// The assembled tables.
    pub fn finish(self) -> Assembled {
        self.cols.assemble(self.dones)
    }
}

/// `out` cut after `n` rows of each table.
fn split(out: ChunkOut<'_>, n: Cursor) -> (ChunkOut<'_>, ChunkOut<'_>) {
    let (mut head, mut tail) = (ChunkOut::default(), ChunkOut::default());
    macro_rules! cut {
        ($at:ident: $($col:ident)+) => {
            $((head.$col, tail.$col) = out.$col.split_at_mut(n.$at);)+
        };
    }
    cut!(span: s_lane s_region s_depth s_payload s_begin s_end);
    cut!(inst: i_lane i_region i_payload i_ts);
    cut!(samp: c_lane c_counter c_ts c_value);
    (head, tail)
}

/// Moves every lane's used rows down over the holes (if there may be any) and truncates
/// the columns.
fn compact(
    lanes: &mut [Lane],
    s: &mut Spans,
    i: &mut Instants,
    c: &mut CounterSamples,
    holes: bool,
) {
    let (mut ws, mut wi, mut wc) = (0, 0, 0);
    for l in lanes.iter_mut() {
        let r = l.spans.clone();
        let n0 = ws;
        if holes && s.depth[r.clone()].contains(&HOLE) {
            for k in r {
                if s.depth[k] == HOLE {
                    continue;
                }
                s.lane[ws] = s.lane[k];
                s.region[ws] = s.region[k];
                s.depth[ws] = s.depth[k];
                s.payload[ws] = s.payload[k];
                s.begin[ws] = s.begin[k];
                s.end[ws] = s.end[k];
                ws += 1;
            }
        } else {
            if r.start != ws {
                s.copy_within(r.clone(), ws);
            }
            ws += r.len();
        }
        l.spans = n0..ws;
        let r = l.instants.clone();
        if r.start != wi {
            i.copy_within(r.clone(), wi);
        }
        l.instants = wi..wi + r.len();
        wi += r.len();
        let r = l.samples.clone();
        if r.start != wc {
            c.copy_within(r.clone(), wc);
        }
        l.samples = wc..wc + r.len();
        wc += r.len();
    }
    s.truncate(ws);
    i.truncate(wi);
    c.truncate(wc);
}
