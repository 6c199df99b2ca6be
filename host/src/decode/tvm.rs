//! Decoder of the TVM / FlashInfer / warpscope v1 wire format.
//!
//! # Format
//!
//! An array of little-endian `u64` slots, zeroed before launch.
//!
//! ```text
//! slot 0                  groups << 32 | blocks        (written by block 0, thread 0)
//! slot 1 + lane + k * S   record k of lane `lane`      S = blocks * groups
//! record                  globaltimer_lo << 32 | lane << 12 | event << 2 | type
//! ```
//! - `lane = block * groups + group` (20 bits), `event` a 10-bit id, `type` 0 = begin,
//!   1 = end, 2 = instant, 3 = finalize. A zero slot is empty and skipped.
//! - There are no names, no payload, no SM / warp ids and no drop counts in this format:
//!   names come from a names file, the Chrome "warp" of a lane is its group.
//!
//! # Decoding rules
//! - Every record must sit in its own lane's column: a record whose lane field differs
//!   from the lane its slot belongs to (including lane ids past `blocks * groups`) is an
//!   error, so a wrong stride or garbage is never decoded into plausible nonsense.
//! - Stamps unwrap monotonically within a lane (a stamp below its predecessor means the
//!   32-bit timer wrapped). All lanes share one base: the lanes' first stamps are placed on
//!   the 2^32 circle and the base is the first stamp after the largest gap, so lanes that
//!   start on both sides of a wrap keep their true order. Times are `base + offset`, with
//!   `base < 2^32`.
//! - Records after a lane's finalize are counted in `after_finalize` and not decoded.

use super::assemble::{self, Caps, ChunkDone, Recycled};
use super::lane::{ChunkOut, Cursor, Globaltimer, LaneWalk, Run};
use super::{DecodeError, DecodeOptions};
use crate::model::{Lane, Names, Source, Trace, WireFormat};
use rayon::prelude::*;
use std::ops::Range;

/// Bits of the lane field of a tag.
pub const LANE_BITS: u32 = 20;
/// Shift of the lane field.
pub const LANE_SHIFT: u32 = 12;

/// `groups, blocks` of slot 0 if they make a usable layout.
fn header(w0: u64) -> Result<(u64, u64), &'static str> {
    let (groups, blocks) = (w0 >> 32, w0 & 0xFFFF_FFFF);
    if groups == 0 || blocks == 0 {
        return Err("groups and blocks must both be at least 1");
    }
    if groups * blocks > 1 << LANE_BITS {
        return Err("blocks x groups exceeds the 2^20 lanes the 20-bit lane field can name");
    }
    Ok((groups, blocks))
}

/// Whether slot 0 reads as a TVM-format header (used by auto-detection).
pub fn plausible_header(words: &[u64]) -> bool {
    words.first().is_some_and(|&w| header(w).is_ok())
}

/// Packs a TVM-format record (for tests, samples and benchmarks).
pub const fn pack(time_lo: u32, lane: u32, event: u32, kind: u32) -> u64 {
    ((time_lo as u64) << 32)
        | ((lane as u64) << LANE_SHIFT)
        | ((event as u64 & 0x3FF) << 2)
        | (kind as u64 & 3)
}

/// What the counting pass learned about one lane.
#[derive(Clone, Copy, Debug, Default)]
struct Count {
    begins: usize,
    insts: usize,
    records: usize,
    first_lo: Option<u32>,
}

/// Records of one lane by kind (begin, end, instant, finalize) within a band of rows.
type Kinds = [u32; 4];

/// Rows counted by one [`count_rows`] call at most, so that its [`Kinds`] cannot overflow.
const BAND_ROWS_MAX: usize = u32::MAX as usize;

/// Lanes gathered into one [`Tile`]: their slots of one row are 1 KiB of contiguous memory.
const SWEEP_LANES: usize = 128;

/// Rows ahead of the gather that [`Tile::gather`] prefetches. Rows are `blocks * groups` slots
/// apart (often more than a page), which the hardware prefetcher does not follow; asking
/// for the group's slots this many rows ahead halves the time of a strided walk
/// (measured on the 5 M-record benchmark buffer).
const PREFETCH_ROWS: usize = 8;

/// Hints that the cache line holding `w` will be read soon.
#[inline(always)]
fn prefetch(w: &u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults and reads nothing into the
    // program, and `w` is a valid reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(w as *const u64 as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = w;
}

/// Rows of one [`Tile`] at most: with [`SWEEP_LANES`] lanes, about 0.5 MiB, which stays in
/// L2 and gives each lane's walk long runs. The tile sizes were chosen by measurement on
/// the 5 M-record benchmark buffer (BENCHMARKS.md): 64 x 64 (L1-sized) ran at 86 M
/// records/s, 128 x 512 at 114 M records/s, and tiles of 1 MiB or more were slower again.
const TILE_ROWS: usize = 512;

/// Padding between two lanes of a [`Tile`]: one cache line, so that the lanes' rows (a
/// power of two apart otherwise) do not all fall into the same few cache sets, which made
/// tall tiles slower than L1-sized ones.
const TILE_PAD: usize = 8;

/// A blocked transpose of the buffer: [`TILE_ROWS`] rows of up to [`SWEEP_LANES`] lanes,
/// each lane's non-zero slots gathered contiguously. Walking a lane's records one after
/// the other (as in a native buffer) lets the branch predictor learn the lane's pattern;
/// walking them in memory order, lane after lane within each row, mispredicts most record
/// kinds (measured: the walk took twice as long).
struct Tile {
    words: Vec<u64>,
    /// Rows gathered at a time.
    rows: usize,
    /// Words from one lane's slots to the next lane's.
    stride: usize,
    len: [usize; SWEEP_LANES],
}

impl Tile {
    /// A tile for `lanes` lanes of `rows` rows (smaller than the largest for small
    /// buffers).
    fn new(rows: usize, lanes: usize) -> Tile {
        let rows = rows.clamp(1, TILE_ROWS);
        let stride = rows + TILE_PAD;
        Tile {
            words: vec![0; lanes.clamp(1, SWEEP_LANES) * stride],
            rows,
            stride,
            len: [0; SWEEP_LANES],
        }
    }

    /// Gathers the slots of lanes `lanes` (at most [`SWEEP_LANES`]) in rows
    /// `row0..row0 + self.rows`, prefetching [`PREFETCH_ROWS`] rows ahead. Out of line,
    /// like the walk, so neither loop shares its registers with the other.
    #[inline(never)]
    fn gather(&mut self, body: &[u64], stride: usize, lanes: Range<usize>, row0: usize) {
        let n = lanes.len();
        self.len[..n].fill(0);
        for row in row0..row0 + self.rows {
            let lo = row * stride + lanes.start;
            if lo >= body.len() {
                break;
            }
            let ahead = lo + PREFETCH_ROWS * stride;
            if ahead < body.len() {
                let end = (ahead + n).min(body.len());
                body[ahead..end].iter().step_by(8).for_each(prefetch);
            }
            let hi = (lo + n).min(body.len());
            for (i, &w) in body[lo..hi].iter().enumerate() {
                // Branch-free: a zero slot is written and not counted.
                let k = self.len[i];
                self.words[i * self.stride + k] = w;
                self.len[i] = k + usize::from(w != 0);
            }
        }
    }

    /// The gathered records of the `i`-th lane of the tile.
    fn lane(&self, i: usize) -> &[u64] {
        &self.words[i * self.stride..i * self.stride + self.len[i]]
    }
}

/// The counting pass over rows `rows` (all lanes, in memory order): per lane, its records
/// by kind. Checks that every record sits in its own lane's column.
fn count_rows(body: &[u64], stride: usize, rows: Range<usize>) -> Result<Vec<Kinds>, DecodeError> {
    // Lanes past the end of a short body have no slot: a header may claim up to 2^20 lanes
    // over a few words, and the counts are sized by what the body can hold.
    let mut c = vec![[0u32; 4]; stride.min(body.len())];
    let first = rows.start * stride;
    let end = (rows.end * stride).min(body.len());
    for (r, row) in body[first..end].chunks(stride).enumerate() {
        // Branch-free per slot (record kinds follow no pattern a predictor could learn
        // here, and zero slots are counted as nothing); a misplaced record is looked for
        // only in a row known to hold one.
        let mut misplaced = false;
        for (l, (&w, c)) in row.iter().zip(c.iter_mut()).enumerate() {
            let (tag, used) = (w as u32, w != 0);
            misplaced |= used & ((tag >> LANE_SHIFT) as usize != l);
            c[(tag & 3) as usize] += u32::from(used);
        }
        if misplaced {
            let (l, &w) = (row.iter().enumerate())
                .find(|&(l, &w)| w != 0 && (w as u32 >> LANE_SHIFT) as usize != l)
                .expect("the row holds a misplaced record");
            return Err(DecodeError::TvmLane {
                slot: (first + r * stride + l) as u64 + 1,
                word: w,
                found: (w as u32 >> LANE_SHIFT) as u64,
                expected: l as u64,
                stride: stride as u64,
            });
        }
    }
    Ok(c)
}

/// Counts every lane, in memory order (on the rayon pool for large buffers, by bands of
/// rows whose counts are then added up), and finds each lane's first stamp.
fn count(body: &[u64], stride: usize, parallel: bool) -> Result<Vec<Count>, DecodeError> {
    let rows = body.len().div_ceil(stride);
    let parallel = parallel && body.len() >= assemble::PARALLEL_MIN_RECORDS && rows >= 2;
    let bands = if parallel {
        rayon::current_num_threads() * 2
    } else {
        1
    };
    let step = rows
        .div_ceil(bands.min(rows).max(1))
        .clamp(1, BAND_ROWS_MAX);
    let starts: Vec<usize> = (0..rows).step_by(step).collect();
    let band = |r0: usize| count_rows(body, stride, r0..(r0 + step).min(rows));
    let parts: Vec<Vec<Kinds>> = if parallel {
        starts.into_par_iter().map(band).collect::<Result<_, _>>()?
    } else {
        starts.into_iter().map(band).collect::<Result<_, _>>()?
    };
    let mut total = vec![Count::default(); stride.min(body.len())];
    for part in parts {
        for (t, k) in total.iter_mut().zip(part) {
            t.begins += k[0] as usize;
            t.insts += k[2] as usize;
            t.records += k.iter().map(|&n| n as usize).sum::<usize>();
        }
    }
    // A lane's first record is in row 0 unless the lane is empty or has gaps.
    for (l, t) in total.iter_mut().enumerate() {
        if t.records > 0 {
            let w = body[l..].iter().step_by(stride).find(|&&w| w != 0);
            t.first_lo = w.map(|&w| (w >> 32) as u32);
        }
    }
    Ok(total)
}

/// Decodes a TVM-format buffer, reusing the memory of `reuse`'s columns.
pub fn decode(words: &[u64], opts: &DecodeOptions, reuse: Recycled) -> Result<Trace, DecodeError> {
    let w0 = words.first().copied().unwrap_or(0);
    let (groups, blocks) = header(w0).map_err(|why| DecodeError::TvmHeader { word: w0, why })?;
    let stride = (groups * blocks) as usize;
    let body = &words[1..];
    let n_lanes = stride.min(body.len());
    let parallel = !opts.single_threaded;

    // Counting pass: per-lane kinds and first stamp; checks every record's lane.
    let mut counts = count(body, stride, parallel)?;
    counts.truncate(n_lanes);
    let base = shared_base(counts.iter().filter_map(|c| c.first_lo));
    let caps: Vec<Caps> = counts
        .iter()
        .map(|c| Caps {
            spans: c.begins,
            insts: c.insts,
            samps: 0,
            records: c.records,
        })
        .collect();

    let asm = assemble::run(&caps, parallel, reuse, |chunk| {
        let r = chunk.lanes.clone();
        let mut walks: Vec<LaneWalk<Globaltimer>> = r
            .clone()
            .map(|l| LaneWalk::new(l as u32, base, Globaltimer, chunk.starts[l - r.start]))
            .collect();
        let mut fin: Vec<Option<u64>> = vec![None; r.len()];
        let mut done = ChunkDone::default();
        let out = &mut chunk.out;
        let rows = body.len().div_ceil(stride);
        let mut tile = Tile::new(rows, r.len());
        for g in r.clone().step_by(SWEEP_LANES) {
            let ge = (g + SWEEP_LANES).min(r.end);
            for row0 in (0..rows).step_by(tile.rows) {
                tile.gather(body, stride, g..ge, row0);
                for l in g..ge {
                    let k = l - r.start;
                    let recs = tile.lane(l - g);
                    if fin[k].is_some() {
                        done.diag.after_finalize += recs.len() as u64;
                        continue;
                    }
                    if let Some((j, t)) = walk_run(&mut walks[k], recs, out).finalize {
                        fin[k] = Some(t);
                        done.diag.after_finalize += (recs.len() - j - 1) as u64;
                    }
                }
            }
        }
        let b = chunk.base;
        for (k, walk) in walks.iter_mut().enumerate() {
            let l = r.start + k;
            // The walk's first time: the lane's first stamp unwrapped from the shared base.
            let Some(first_lo) = counts[l].first_lo else {
                continue;
            };
            let first = base + first_lo.wrapping_sub(base as u32) as u64;
            walk.finish(out);
            let start: Cursor = chunk.starts[k];
            done.diag.unfinalized_lanes += u64::from(fin[k].is_none());
            done.lanes.push(Lane {
                id: l as u32,
                block: (l / groups as usize) as u32,
                group: (l % groups as usize) as u32,
                sm: None,
                warp: None,
                start: first,
                end: fin[k].unwrap_or(walk.last_ns),
                finalized: fin[k].is_some(),
                written: counts[l].records as u64,
                dropped: 0,
                spans: b.span + start.span..b.span + walk.cur.span,
                instants: b.inst + start.inst..b.inst + walk.cur.inst,
                samples: b.samp..b.samp,
            });
        }
        Ok(done)
    })?;

    let time_base = asm.lanes.iter().map(|l| l.start).min().unwrap_or(0);
    Ok(Trace {
        source: Source {
            format: WireFormat::Tvm,
            version: 1,
            timer: ikp_device::TimerMode::Globaltimer,
            grid: [blocks as u32, 1, 1],
            groups_per_block: groups as u32,
            records_per_lane: (body.len() / stride) as u32,
            time_base,
        },
        names: Names::default(),
        lanes: asm.lanes,
        spans: asm.spans,
        instants: asm.instants,
        samples: Default::default(),
        counter_totals: Vec::new(),
        diagnostics: asm.diag,
    })
}

/// One lane's records of a tile (out of line: the walk keeps its state in registers).
#[inline(never)]
fn walk_run(w: &mut LaneWalk<Globaltimer>, recs: &[u64], out: &mut ChunkOut<'_>) -> Run {
    w.run::<true>(recs, 0, out)
}

/// The first stamp after the largest gap between the lanes' first stamps on the 2^32
/// circle (0 if there are none).
fn shared_base(firsts: impl Iterator<Item = u32>) -> u64 {
    let mut v: Vec<u32> = firsts.collect();
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v.dedup();
    // Gap from the last stamp around the wrap to the first one.
    let mut best = (v[0] as u64 + (1u64 << 32) - *v.last().unwrap() as u64, v[0]);
    for p in v.windows(2) {
        let gap = (p[1] - p[0]) as u64;
        if gap > best.0 {
            best = (gap, p[1]);
        }
    }
    best.1 as u64
}

#[cfg(test)]
mod tests {
    use super::shared_base;

    #[test]
    fn shared_base_picks_the_stamp_after_the_largest_gap() {
        assert_eq!(shared_base([10u32, 20, 30].into_iter()), 10);
        // Lanes started on both sides of a wrap: the base is before the wrap.
        assert_eq!(
            shared_base([0xFFFF_FF00u32, 0x10, 0x20].into_iter()),
            0xFFFF_FF00
        );
        assert_eq!(shared_base(std::iter::empty()), 0);
    }
}
