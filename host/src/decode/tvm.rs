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

/// Per-lane tallies of a band of rows, one array per quantity (so that the counting loop
/// adds whole rows of lanes at once, which vectorizes).
#[derive(Clone, Debug, Default)]
struct Tally {
    begins: Vec<u32>,
    insts: Vec<u32>,
    records: Vec<u32>,
}

/// Rows counted by one [`count_rows`] call at most, so that its [`Tally`] cannot overflow.
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
/// With the block gather, 128 x 512 is still the best: 64 x 512 is as fast, 128 x 1024 is
/// 6 % slower, 128 x 256 and 256 x 512 are about 15 % slower.
const TILE_ROWS: usize = 512;

/// Padding between two lanes of a [`Tile`]: one cache line, so that the lanes' rows (a
/// power of two apart otherwise) do not all fall into the same few cache sets, which made
/// tall tiles slower than L1-sized ones.
const TILE_PAD: usize = 8;

/// A blocked transpose of the buffer: [`TILE_ROWS`] rows of up to [`SWEEP_LANES`] lanes,
/// each lane's slots in row order. Walking a lane's records one after the other (as in a
/// native buffer) lets the branch predictor learn the lane's pattern; walking them in
/// memory order, lane after lane within each row, mispredicts most record kinds
/// (measured: the walk took twice as long).
struct Tile {
    words: Vec<u64>,
    /// Rows gathered at a time.
    rows: usize,
    /// Words from one lane's slots to the next lane's.
    stride: usize,
    /// Rows of the last gather.
    len: usize,
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
            len: 0,
        }
    }

    /// Gathers the slots of lanes `lanes` (at most [`SWEEP_LANES`]) in rows
    /// `rows` (at most `self.rows` of them), empty slots included, prefetching
    /// [`PREFETCH_ROWS`] rows ahead. Out of line, like the walk, so neither loop shares
    /// its registers with the other.
    #[inline(never)]
    fn gather(&mut self, body: &[u64], stride: usize, lanes: Range<usize>, rows: Range<usize>) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { self.gather_avx2(body, stride, lanes, rows) };
        }
        self.gather_any(body, stride, lanes, rows)
    }

    /// [`Tile::gather_any`] compiled for AVX2 (its 4 x 4 blocks become register
    /// shuffles).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn gather_avx2(
        &mut self,
        body: &[u64],
        stride: usize,
        lanes: Range<usize>,
        rows: Range<usize>,
    ) {
        self.gather_any(body, stride, lanes, rows)
    }

    /// The portable body of [`Tile::gather`]. Slots move in 4 x 4 blocks (four rows of
    /// four lanes in, four lanes of four rows out), which the compiler turns into
    /// shuffles where the target has them; ragged edges go one slot at a time.
    #[inline(always)]
    fn gather_any(&mut self, body: &[u64], stride: usize, lanes: Range<usize>, rows: Range<usize>) {
        let (n, row0) = (lanes.len(), rows.start);
        let rows = (body.len().saturating_sub(row0 * stride + lanes.start))
            .div_ceil(stride)
            .min(self.rows)
            .min(rows.len());
        self.len = rows;
        let st = self.stride;
        let t = &mut self.words[..n * st];
        // Rows whose slots of all `lanes` are in the body.
        let full = (body.len().checked_sub(lanes.end))
            .map_or(0, |spare| (spare / stride + 1).saturating_sub(row0))
            .min(rows);
        let mut r = 0;
        while r + 4 <= full {
            let lo = (row0 + r) * stride + lanes.start;
            let ahead = lo + PREFETCH_ROWS * stride;
            for q in 0..4 {
                let a = ahead + q * stride;
                if a < body.len() {
                    body[a..(a + n).min(body.len())]
                        .iter()
                        .step_by(8)
                        .for_each(prefetch);
                }
            }
            let src: [&[u64]; 4] = std::array::from_fn(|q| &body[lo + q * stride..][..n]);
            let mut i = 0;
            while i + 4 <= n {
                // A 4 x 4 block: four slots of four rows in, four rows of four lanes out.
                let b: [[u64; 4]; 4] =
                    std::array::from_fn(|q| src[q][i..i + 4].try_into().unwrap());
                for j in 0..4 {
                    t[(i + j) * st + r..][..4]
                        .copy_from_slice(&[b[0][j], b[1][j], b[2][j], b[3][j]]);
                }
                i += 4;
            }
            for i in i..n {
                for q in 0..4 {
                    t[i * st + r + q] = src[q][i];
                }
            }
            r += 4;
        }
        // The last rows, one slot at a time (a slot past the body's end reads as empty).
        for r in r..rows {
            let lo = (row0 + r) * stride + lanes.start;
            for i in 0..n {
                t[i * st + r] = body.get(lo + i).copied().unwrap_or(0);
            }
        }
    }

    /// The records of the `i`-th lane of the tile: its gathered slots without the empty
    /// ones (compacted in place: empty slots are rare between records, and a lane that
    /// records less than others ends in a run of them).
    fn lane(&mut self, i: usize) -> &[u64] {
        let col = &mut self.words[i * self.stride..][..self.len];
        let end = col.iter().rposition(|&w| w != 0).map_or(0, |j| j + 1);
        let col = &mut col[..end];
        // A fold, not `contains`: with no early exit, it vectorizes.
        if !col.iter().fold(false, |z, &w| z | (w == 0)) {
            return col;
        }
        let mut k = 0;
        for j in 0..end {
            let w = col[j];
            col[k] = w;
            k += usize::from(w != 0);
        }
        &col[..k]
    }
}

/// The counting pass over rows `rows` (all lanes, in memory order): per lane, its begins,
/// instants and records. Checks that every record sits in its own lane's column.
fn count_rows(body: &[u64], stride: usize, rows: Range<usize>) -> Result<Tally, DecodeError> {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { count_rows_avx2(body, stride, rows) };
    }
    count_rows_any(body, stride, rows)
}

/// [`count_rows_any`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn count_rows_avx2(body: &[u64], stride: usize, rows: Range<usize>) -> Result<Tally, DecodeError> {
    count_rows_any(body, stride, rows)
}

/// The portable body of [`count_rows`].
#[inline(always)]
fn count_rows_any(body: &[u64], stride: usize, rows: Range<usize>) -> Result<Tally, DecodeError> {
    // Lanes past the end of a short body have no slot: a header may claim up to 2^20 lanes
    // over a few words, and the counts are sized by what the body can hold.
    let n = stride.min(body.len());
    let mut t = Tally {
        begins: vec![0; n],
        insts: vec![0; n],
        records: vec![0; n],
    };
    let first = rows.start * stride;
    let end = (rows.end * stride).min(body.len());
    for (r, row) in body[first..end].chunks(stride).enumerate() {
        // Branch-free per slot, so that it vectorizes; a misplaced record is looked for
        // only in a row known to hold one.
        let m = row.len();
        let (b, i, c) = (&mut t.begins[..m], &mut t.insts[..m], &mut t.records[..m]);
        let mut misplaced = 0u64;
        for l in 0..m {
            let w = row[l];
            let used = u64::from(w != 0);
            let kind = w & 3;
            misplaced |= used & u64::from((w >> LANE_SHIFT) & ((1 << LANE_BITS) - 1) != l as u64);
            b[l] += (used & u64::from(kind == 0)) as u32;
            i[l] += u32::from(kind == 2);
            c[l] += used as u32;
        }
        if misplaced != 0 {
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
    Ok(t)
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
    let parts: Vec<Tally> = if parallel {
        starts.into_par_iter().map(band).collect::<Result<_, _>>()?
    } else {
        starts.into_iter().map(band).collect::<Result<_, _>>()?
    };
    let mut total = vec![Count::default(); stride.min(body.len())];
    for part in parts {
        for (l, t) in total.iter_mut().enumerate() {
            t.begins += part.begins[l] as usize;
            t.insts += part.insts[l] as usize;
            t.records += part.records[l] as usize;
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
        // Records of each lane not yet walked: a lane with none left is skipped, and so
        // are the rows below a group's last record (buffers are often sized for more
        // records than the kernel wrote).
        let mut left: Vec<usize> = counts[r.clone()].iter().map(|c| c.records).collect();
        let mut done = ChunkDone::default();
        let out = &mut chunk.out;
        let rows = body.len().div_ceil(stride);
        let mut tile = Tile::new(rows, r.len());
        for g in r.clone().step_by(SWEEP_LANES) {
            let ge = (g + SWEEP_LANES).min(r.end);
            for row0 in (0..rows).step_by(tile.rows) {
                if left[g - r.start..ge - r.start].iter().all(|&n| n == 0) {
                    break;
                }
                tile.gather(body, stride, g..ge, row0..rows);
                for l in g..ge {
                    let k = l - r.start;
                    if left[k] == 0 {
                        continue;
                    }
                    let recs = tile.lane(l - g);
                    left[k] -= recs.len();
                    if let Some((j, t)) = walk_run(&mut walks[k], recs, out).finalize {
                        fin[k] = Some(t);
                        // Everything after the finalize record, in this tile and below.
                        done.diag.after_finalize += (recs.len() - j - 1 + left[k]) as u64;
                        left[k] = 0;
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
    use super::{count_rows, count_rows_any, pack, shared_base, Tile};

    /// A body of `lanes` lanes (some records missing, some lanes ending early) cut off
    /// `short` slots before the end of its last row.
    fn ragged(lanes: usize, rows: usize, short: usize) -> Vec<u64> {
        let mut body = vec![0u64; lanes * rows - short];
        for (k, w) in body.iter_mut().enumerate() {
            let (row, lane) = (k / lanes, k % lanes);
            let hole = (row * 7 + lane * 3) % 11 == 0 || row + lane % 4 * 2 > rows;
            if !hole {
                *w = pack(
                    1000 + row as u32,
                    lane as u32,
                    (row % 5) as u32,
                    (row % 3) as u32,
                );
            }
        }
        body
    }

    #[test]
    fn gathered_lanes_hold_their_records_in_order() {
        // Odd lane counts and row counts exercise the 4 x 4 blocks' edges and the slots
        // past the body's end; both the dispatching and the portable gather are checked.
        for (lanes, rows, short) in [(7, 9, 3), (4, 4, 0), (130, 13, 5), (1, 6, 0), (9, 1, 2)] {
            let body = ragged(lanes, rows, short);
            for portable in [false, true] {
                for g in (0..lanes).step_by(super::SWEEP_LANES) {
                    let ge = (g + super::SWEEP_LANES).min(lanes);
                    let mut tile = Tile::new(5, ge - g);
                    for row0 in (0..rows).step_by(tile.rows) {
                        if portable {
                            tile.gather_any(&body, lanes, g..ge, row0..rows);
                        } else {
                            tile.gather(&body, lanes, g..ge, row0..rows);
                        }
                        for l in g..ge {
                            let want: Vec<u64> = (row0..(row0 + tile.rows).min(rows))
                                .filter_map(|r| body.get(r * lanes + l).copied())
                                .filter(|&w| w != 0)
                                .collect();
                            assert_eq!(tile.lane(l - g), want, "lane {l} rows {row0}..");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn counting_tallies_kinds_per_lane_and_finds_misplaced_records() {
        for (lanes, rows, short) in [(7, 9, 3), (130, 13, 5), (1, 6, 0)] {
            let mut body = ragged(lanes, rows, short);
            let all = 0..rows;
            let t = count_rows(&body, lanes, all.clone()).unwrap();
            let p = count_rows_any(&body, lanes, all.clone()).unwrap();
            for l in 0..lanes {
                let recs: Vec<u64> = body[l..].iter().step_by(lanes).copied().collect();
                let of = |k: u64| recs.iter().filter(|&&w| w != 0 && w & 3 == k).count() as u32;
                let used = recs.iter().filter(|&&w| w != 0).count() as u32;
                assert_eq!(
                    (t.begins[l], t.insts[l], t.records[l]),
                    (of(0), of(2), used)
                );
                assert_eq!(
                    (p.begins[l], p.insts[l], p.records[l]),
                    (of(0), of(2), used)
                );
            }
            // A record in the next lane's column.
            let k = body.len() - 1 - (body.len() - 1) % lanes;
            body[k] = pack(5, (lanes as u32 + 1) % (1 << 20), 0, 0);
            assert!(count_rows(&body, lanes, all.clone()).is_err());
            assert!(count_rows_any(&body, lanes, all).is_err());
        }
    }

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
