//! Decoder of the TVM family of formats: TVM / warpscope, FlashInfer with SM ids, Mirage
//! MPK.
//!
//! They share one slot layout (slot 0, a column of slots per lane), specified in
//! [`ikp_device::tvm`], `# Format`; each packs the record's tag its own way
//! ([`ikp_device::flashinfer`], [`ikp_device::mirage`]). The decoder is generic over the
//! tag layout (where a format keeps the field naming the slot, the SM and the payload, and
//! whether type 3 finalizes: the `Family` trait of `packing`), so each format's
//! hot loops are compiled for its own fields. Names come from a names file; the Chrome
//! "warp" of a lane is its group.
//!
//! # Decoding rules
//! - Every record must sit in its own lane's column: a record whose slot field (TVM's and
//!   Mirage's lane, FlashInfer's block) differs from what the layout puts in its slot
//!   (including ids past the layout's) is an error, so a wrong stride, a wrong format or
//!   garbage is never decoded into plausible nonsense. So is a record of type 3 in a
//!   format without finalize (FlashInfer, Mirage).
//! - FlashInfer: a lane's SM is the SM field of its first record, and every later record
//!   of the lane must carry the same (the device reads `%smid` once, when the lane
//!   starts): a lane whose records disagree is an error naming the record, not a lane
//!   split over two SMs.
//! - Mirage: the event number is each span's and instant's payload.
//! - All lanes share one base: the lanes' first stamps are placed on the 2^32 circle and
//!   the base is the first stamp after the largest gap, so lanes that start on both sides
//!   of a wrap keep their true order. A lane starts at its first stamp, read forward from
//!   the base whatever the distance (`base + (first - base) mod 2^32`). Times are
//!   `base + offset`, with `base < 2^32`.
//! - Within a lane, each later stamp is read relative to the one before it: less than 2^31
//!   ticks ahead is a step forward (a stamp numerically below its predecessor means the
//!   32-bit timer wrapped), anything else a small backward step of the timer. A backward
//!   step is clamped (the record gets the lane's latest time: times never go backwards
//!   within a lane) and counted in `backward_steps`, never an error (`lane`'s
//!   `# Unwrapping`). So a lane's consecutive records must be less than 2^31 ns (2.1 s)
//!   apart.
//! - TVM: records after a lane's finalize are counted in `after_finalize` and not
//!   decoded, and a lane without one is counted in `unfinalized_lanes`. The other formats
//!   have no finalize record: their lanes end at their last record and are not counted.
//! - A lane whose stamps cannot belong to the launch (from its first record to its end
//!   more than 2^44 ns, or more than 2^40 ns from the other lanes) is set aside, named in
//!   the diagnostics, and the buffer decodes as if it had never run: its records are
//!   checked as above, but neither walked nor part of the shared base
//!   ([`super::set_aside`], `# Lanes set aside`). With 32-bit stamps one corrupted stamp
//!   moves a lane by less than 2^32 ns, within those bounds: such a lane is decoded, and
//!   its records after a stamp thrown forward are backward steps, clamped and counted.

pub(crate) mod packing;

pub(crate) use packing::{fits, FlashInfer, Mirage, Tvm};

use super::assemble::{self, Caps, ChunkDone, Recycled};
use super::lane::{ChunkOut, Cursor, Globaltimer, LaneWalk, Run};
use super::set_aside::{self, Skip};
use super::{DecodeError, DecodeOptions};
use crate::model::{Lane, Source, Trace};
use packing::{allowed, Family};
use rayon::prelude::*;
use std::ops::Range;

/// What the records of each lane must carry in the bits its format checks: what the
/// layout puts in its slot and, in a format with SM ids, the SM of its first record.
#[derive(Clone, Copy, Debug)]
struct Expect<'a> {
    groups: usize,
    /// Each lane's first record (0 for an empty lane).
    firsts: &'a [u64],
}

impl Expect<'_> {
    /// The first record of `lane` as far as the checks need it (nothing without SM ids).
    #[inline(always)]
    fn first<L: Family>(&self, lane: usize) -> u64 {
        if L::SM_MASK != 0 {
            self.firsts[lane]
        } else {
            0
        }
    }

    /// The bits under `L::SLOT_MASK | L::SM_MASK` every record of `lane` carries.
    #[inline(always)]
    fn bits<L: Family>(&self, lane: usize) -> u64 {
        L::slot_bits(lane, self.groups) | (self.first::<L>(lane) & L::SM_MASK)
    }
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

/// Lanes gathered into one [`Strip`]. A strip holds all rows of its lanes, so it has to
/// stay small enough for L2 (the walk reads it from there): 32 lanes of the 2,040-row
/// benchmark buffer are 0.5 MiB. Measured on that buffer: 32 lanes are about 15 % faster
/// than 64 or 128, which read longer runs of each row but overflow L2.
const STRIP_LANES: usize = 32;

/// Rows ahead of the gather that [`Strip::gather`] prefetches. Rows are `blocks * groups`
/// slots apart (often more than a page), which the hardware prefetcher does not follow;
/// asking for the strip's slots this many rows ahead halves the time of a strided walk
/// (measured on the 5 M-record benchmark buffer; 12, 16 or 24 rows were no faster).
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

/// A transposed copy of up to [`STRIP_LANES`] lanes, all rows, each lane's slots in row
/// order.
///
/// Walking a lane's records one after the other (as in a native buffer) lets the branch
/// predictor learn the lane's pattern; walking them in memory order, lane after lane
/// within each row, mispredicts most record kinds (measured: the walk took twice as
/// long). Gathering whole lanes at once lets one read of the buffer serve both the
/// tallies that size the lanes' output and their walk, which then reads the strip from
/// cache. (Counting the lanes before gathering them read the buffer from memory twice:
/// a quarter of a decode; see BENCHMARKS.md.)
struct Strip {
    words: Vec<u64>,
    /// Slots per lane: the rows of the buffer.
    rows: usize,
    /// Words from one lane's slots to the next lane's: `rows` rounded up to an odd number
    /// of cache lines, so that the slots of a row in consecutive lanes do not all fall
    /// into the same few cache sets.
    stride: usize,
    /// Per lane of the last gather: its records (non-empty slots).
    records: Vec<usize>,
    /// Begins and instants of all lanes of the last gather.
    begins: usize,
    insts: usize,
    /// Whether the last gather saw a record its slot does not allow
    /// ([`packing::allowed`]).
    misplaced: bool,
    /// Per lane of the last [`Strip::scan`]: slots up to its last record.
    ends: Vec<usize>,
    /// Per lane of the last [`Strip::scan`]: whether an empty slot lies before its end.
    holes: Vec<bool>,
}

impl Strip {
    /// A strip for `lanes` lanes (at most [`STRIP_LANES`]) of `rows` rows.
    fn new(rows: usize, lanes: usize) -> Strip {
        let stride = (rows.div_ceil(8) | 1) * 8;
        Strip {
            words: vec![0; lanes.min(STRIP_LANES) * stride],
            rows,
            stride,
            records: Vec::new(),
            begins: 0,
            insts: 0,
            misplaced: false,
            ends: Vec::new(),
            holes: Vec::new(),
        }
    }

    /// Gathers every slot of lanes `lanes` (at most [`STRIP_LANES`]), empty slots
    /// included, prefetching [`PREFETCH_ROWS`] rows ahead, and tallies each lane's
    /// records, all lanes' begins and instants, and whether every record is allowed in
    /// its slot (with AVX2, while the slots are in registers). Out of line, like the walk,
    /// so neither loop shares its registers with the other.
    #[inline(never)]
    fn gather<L: Family>(
        &mut self,
        body: &[u64],
        stride: usize,
        lanes: Range<usize>,
        exp: &Expect<'_>,
    ) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { self.gather_avx2::<L>(body, stride, lanes, exp) };
        }
        self.gather_any::<L>(body, stride, lanes, exp)
    }

    /// Prefetches the `n` slots at `lo` (a row's slots of a strip) in the four rows that
    /// start [`PREFETCH_ROWS`] rows below it.
    #[inline(always)]
    fn prefetch_ahead(body: &[u64], stride: usize, lo: usize, n: usize) {
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
    }

    /// Rows whose slots of all `lanes` are in the body, in whole groups of four.
    fn full_rows(&self, body: &[u64], stride: usize, lanes: &Range<usize>) -> usize {
        let full = (body.len().checked_sub(lanes.end)).map_or(0, |spare| spare / stride + 1);
        full.min(self.rows) / 4 * 4
    }

    /// The portable body of [`Strip::gather`]. Slots move in 4 x 4 blocks (four rows of
    /// four lanes in, four lanes of four rows out); ragged edges go one slot at a time.
    /// The tallies are taken from the strip afterwards.
    fn gather_any<L: Family>(
        &mut self,
        body: &[u64],
        stride: usize,
        lanes: Range<usize>,
        exp: &Expect<'_>,
    ) {
        let (n, st) = (lanes.len(), self.stride);
        let full = self.full_rows(body, stride, &lanes);
        let t = &mut self.words[..n * st];
        for r in (0..full).step_by(4) {
            let lo = r * stride + lanes.start;
            Self::prefetch_ahead(body, stride, lo, n);
            let src: [&[u64]; 4] = std::array::from_fn(|q| &body[lo + q * stride..][..n]);
            let mut i = 0;
            while i + 4 <= n {
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
        }
        self.gather_rest(body, stride, &lanes, full);
        (self.records, self.begins, self.insts) = (vec![0; n], 0, 0);
        self.misplaced = false;
        self.tally::<L>(lanes.start, 0..n, 0..self.rows, exp);
    }

    /// [`Strip::gather`] with AVX2 intrinsics: a 4 x 4 block is four loads, eight
    /// shuffles and four stores, and the tallies are vector sums of the loaded rows.
    /// Lanes past the last whole group of four and rows past the last whole group of
    /// four go through [`Strip::gather_rest`] and [`Strip::tally`].
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn gather_avx2<L: Family>(
        &mut self,
        body: &[u64],
        stride: usize,
        lanes: Range<usize>,
        exp: &Expect<'_>,
    ) {
        use std::arch::x86_64::*;
        let (n, st) = (lanes.len(), self.stride);
        let (n4, full) = (n / 4 * 4, self.full_rows(body, stride, &lanes));
        let lane_field = _mm256_set1_epi64x((L::SLOT_MASK | L::SM_MASK) as i64);
        // Per group of four lanes: the bits its records carry, and its empty slots (as
        // sums of -1).
        let want: Vec<__m256i> = (0..n4 / 4)
            .map(|b| {
                let l = |j: usize| exp.bits::<L>(lanes.start + 4 * b + j) as i64;
                _mm256_setr_epi64x(l(0), l(1), l(2), l(3))
            })
            .collect();
        let mut empty = vec![_mm256_setzero_si256(); n4 / 4];
        let (mut wrong, mut begins, mut insts) = (
            _mm256_setzero_si256(),
            _mm256_setzero_si256(),
            _mm256_setzero_si256(),
        );
        let (kind, inst) = (_mm256_set1_epi64x(3), _mm256_set1_epi64x(2));
        let t = &mut self.words[..n * st];
        for r in (0..full).step_by(4) {
            let lo = r * stride + lanes.start;
            Self::prefetch_ahead(body, stride, lo, n);
            let src: [&[u64]; 4] = std::array::from_fn(|q| &body[lo + q * stride..][..n]);
            for b in 0..n4 / 4 {
                let i = 4 * b;
                // SAFETY: each slice is four u64 long (bounds-checked), and the loads
                // are unaligned ones.
                let x: [__m256i; 4] = std::array::from_fn(|q| unsafe {
                    _mm256_loadu_si256(src[q][i..i + 4].as_ptr().cast())
                });
                let mut e = empty[b];
                for &v in &x {
                    let z = _mm256_cmpeq_epi64(v, _mm256_setzero_si256());
                    e = _mm256_add_epi64(e, z);
                    // Sums of -1 again: a begin is a record of kind 0.
                    let k = _mm256_and_si256(v, kind);
                    let k0 = _mm256_cmpeq_epi64(k, _mm256_setzero_si256());
                    begins = _mm256_add_epi64(begins, _mm256_andnot_si256(z, k0));
                    insts = _mm256_add_epi64(insts, _mm256_cmpeq_epi64(k, inst));
                    let off = _mm256_and_si256(_mm256_xor_si256(v, want[b]), lane_field);
                    wrong = _mm256_or_si256(wrong, _mm256_andnot_si256(z, off));
                    if !L::FINALIZE {
                        // A record of type 3 (an empty slot's type is 0).
                        wrong = _mm256_or_si256(wrong, _mm256_cmpeq_epi64(k, kind));
                    }
                }
                empty[b] = e;
                let lo01 = _mm256_unpacklo_epi64(x[0], x[1]);
                let hi01 = _mm256_unpackhi_epi64(x[0], x[1]);
                let lo23 = _mm256_unpacklo_epi64(x[2], x[3]);
                let hi23 = _mm256_unpackhi_epi64(x[2], x[3]);
                let out = [
                    _mm256_permute2x128_si256::<0x20>(lo01, lo23),
                    _mm256_permute2x128_si256::<0x20>(hi01, hi23),
                    _mm256_permute2x128_si256::<0x31>(lo01, lo23),
                    _mm256_permute2x128_si256::<0x31>(hi01, hi23),
                ];
                for (j, &o) in out.iter().enumerate() {
                    let dst = &mut t[(i + j) * st + r..][..4];
                    // SAFETY: `dst` is four u64 long (bounds-checked), and the store is
                    // an unaligned one.
                    unsafe { _mm256_storeu_si256(dst.as_mut_ptr().cast(), o) };
                }
            }
            for i in n4..n {
                for q in 0..4 {
                    t[i * st + r + q] = src[q][i];
                }
            }
        }
        self.gather_rest(body, stride, &lanes, full);
        let minus = |v: __m256i| {
            let mut a = [0i64; 4];
            // SAFETY: `a` is four i64 long, and the store is an unaligned one.
            unsafe { _mm256_storeu_si256(a.as_mut_ptr().cast(), v) };
            a.map(|x| x.unsigned_abs() as usize)
        };
        self.records = vec![0; n];
        for (b, &e) in empty.iter().enumerate() {
            for (r, e) in self.records[4 * b..4 * b + 4].iter_mut().zip(minus(e)) {
                // `e` is the lane's empty slots among the `full` rows.
                *r = full - e;
            }
        }
        self.begins = minus(begins).iter().sum();
        self.insts = minus(insts).iter().sum();
        self.misplaced = _mm256_testz_si256(wrong, wrong) == 0;
        self.tally::<L>(lanes.start, 0..n4, full..self.rows, exp);
        self.tally::<L>(lanes.start, n4..n, 0..self.rows, exp);
    }

    /// Gathers rows `full..` of `lanes` one slot at a time (a slot past the body's end
    /// reads as empty).
    fn gather_rest(&mut self, body: &[u64], stride: usize, lanes: &Range<usize>, full: usize) {
        let (n, st) = (lanes.len(), self.stride);
        for r in full..self.rows {
            let lo = r * stride + lanes.start;
            for i in 0..n {
                self.words[i * st + r] = body.get(lo + i).copied().unwrap_or(0);
            }
        }
    }

    /// Adds the records, begins and instants in rows `rows` of the gathered lanes at
    /// indices `lanes` (lane ids from `first`) to the tallies, and notes records their
    /// slot does not allow. Branch-free per slot, so that it vectorizes.
    #[inline(always)]
    fn tally<L: Family>(
        &mut self,
        first: usize,
        lanes: Range<usize>,
        rows: Range<usize>,
        exp: &Expect<'_>,
    ) {
        let (mut wrong, mut begins, mut insts) = (0usize, 0usize, 0usize);
        let mask = L::SLOT_MASK | L::SM_MASK;
        for i in lanes {
            let want = exp.bits::<L>(first + i);
            let mut used = 0;
            for &w in &self.words[i * self.stride..][rows.clone()] {
                let u = usize::from(w != 0);
                used += u;
                begins += u & usize::from(w & 3 == 0);
                insts += usize::from(w & 3 == 2);
                wrong |= u & usize::from((w ^ want) & mask != 0);
                if !L::FINALIZE {
                    wrong |= usize::from(w & 3 == 3);
                }
            }
            self.records[i] += used;
        }
        (self.begins, self.insts) = (self.begins + begins, self.insts + insts);
        self.misplaced |= wrong != 0;
    }

    /// Checks that each record of the gathered lanes (`lanes`, as given to the last
    /// [`Strip::gather`]) is allowed in its slot, and notes where each lane's records end
    /// and whether it has holes, for [`Strip::lane`].
    fn scan<L: Family>(
        &mut self,
        lanes: Range<usize>,
        stride: usize,
        exp: &Expect<'_>,
    ) -> Result<(), DecodeError> {
        self.ends.clear();
        self.holes.clear();
        for i in 0..lanes.len() {
            let col = &self.words[i * self.stride..][..self.rows];
            let end = used_len(col);
            self.ends.push(end);
            self.holes.push(self.records[i] < end);
        }
        if !self.misplaced {
            return Ok(());
        }
        // The first misplaced record in memory order.
        let ok = |w: u64, lane: usize| allowed::<L>(w, lane, exp.first::<L>(lane), exp.groups);
        let (r, lane) = (lanes.clone().enumerate())
            .filter_map(|(i, lane)| {
                let col = &self.words[i * self.stride..][..self.rows];
                let r = col.iter().position(|&w| w != 0 && !ok(w, lane))?;
                Some((r, lane))
            })
            .min()
            .expect("the strip holds a misplaced record");
        let w = self.words[(lane - lanes.start) * self.stride + r];
        let first = exp.first::<L>(lane);
        Err(L::bad_record(
            r * stride + lane,
            w,
            first,
            exp.groups,
            stride,
        ))
    }

    /// Rows of each table that the lanes of the last gather fill at most: a begin
    /// takes a span row (an unmatched one is dropped later), an instant an instant row.
    fn room(&self) -> Cursor {
        Cursor {
            span: self.begins,
            inst: self.insts,
            samp: 0,
        }
    }

    /// The records of the `i`-th lane of the last [`Strip::scan`]: its gathered slots
    /// up to its last record, without the empty ones (compacted in place, only when the
    /// lane has any: they are rare between records).
    fn lane(&mut self, i: usize) -> &mut [u64] {
        let col = &mut self.words[i * self.stride..][..self.ends[i]];
        if !self.holes[i] {
            return col;
        }
        let mut k = 0;
        for j in 0..col.len() {
            let w = col[j];
            col[k] = w;
            k += usize::from(w != 0);
        }
        &mut col[..k]
    }
}

/// The counting pass over rows `rows` (all lanes, in memory order): per lane, its begins,
/// instants and records. Checks that every record sits in its own lane's column and has
/// a type its format writes.
fn count_rows<L: Family>(
    body: &[u64],
    stride: usize,
    groups: usize,
    rows: Range<usize>,
) -> Result<Tally, DecodeError> {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { count_rows_avx2::<L>(body, stride, groups, rows) };
    }
    count_rows_any::<L>(body, stride, groups, rows)
}

/// [`count_rows_any`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn count_rows_avx2<L: Family>(
    body: &[u64],
    stride: usize,
    groups: usize,
    rows: Range<usize>,
) -> Result<Tally, DecodeError> {
    count_rows_any::<L>(body, stride, groups, rows)
}

/// The portable body of [`count_rows`].
#[inline(always)]
fn count_rows_any<L: Family>(
    body: &[u64],
    stride: usize,
    groups: usize,
    rows: Range<usize>,
) -> Result<Tally, DecodeError> {
    // Lanes past the end of a short body have no slot: a header may claim up to 2^20 lanes
    // over a few words, and the counts are sized by what the body can hold.
    let n = stride.min(body.len());
    let mut t = Tally {
        begins: vec![0; n],
        insts: vec![0; n],
        records: vec![0; n],
    };
    // Slot bits that depend on the block are read from a table: a division per slot
    // would not vectorize.
    let table: Vec<u64> = if L::BY_BLOCK {
        (0..n).map(|l| L::slot_bits(l, groups)).collect()
    } else {
        Vec::new()
    };
    let first = rows.start * stride;
    let end = (rows.end * stride).min(body.len());
    for (r, row) in body[first..end].chunks(stride).enumerate() {
        // Branch-free per slot, so that it vectorizes; a misplaced record is looked for
        // only in a row known to hold one.
        let m = row.len();
        let (b, i, c) = (&mut t.begins[..m], &mut t.insts[..m], &mut t.records[..m]);
        let tab = if L::BY_BLOCK { &table[..m] } else { &[][..] };
        let mut wrong = 0u64;
        for l in 0..m {
            let w = row[l];
            let used = u64::from(w != 0);
            let kind = w & 3;
            let want = if L::BY_BLOCK {
                tab[l]
            } else {
                L::slot_bits(l, groups)
            };
            wrong |= used & u64::from((w ^ want) & L::SLOT_MASK != 0);
            if !L::FINALIZE {
                wrong |= u64::from(kind == 3);
            }
            b[l] += (used & u64::from(kind == 0)) as u32;
            i[l] += u32::from(kind == 2);
            c[l] += used as u32;
        }
        if wrong != 0 {
            // The slot bits and the type (the SM is checked by the gather).
            let l = (0..m)
                .find(|&l| row[l] != 0 && !allowed::<L>(row[l], l, row[l], groups))
                .expect("the row holds a misplaced record");
            let at = first + r * stride + l;
            return Err(L::bad_record(at, body[at], body[at], groups, stride));
        }
    }
    Ok(t)
}

/// Counts every lane, in memory order (on the rayon pool for large buffers, by bands of
/// rows whose counts are then added up): the lanes' output bounds, a span slot per begin.
fn count<L: Family>(
    body: &[u64],
    stride: usize,
    groups: usize,
    parallel: bool,
) -> Result<Vec<Caps>, DecodeError> {
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
    let band = |r0: usize| count_rows::<L>(body, stride, groups, r0..(r0 + step).min(rows));
    let parts: Vec<Tally> = if parallel {
        starts.into_par_iter().map(band).collect::<Result<_, _>>()?
    } else {
        starts.into_iter().map(band).collect::<Result<_, _>>()?
    };
    let mut total = vec![Caps::default(); stride.min(body.len())];
    for part in parts {
        for (l, t) in total.iter_mut().enumerate() {
            t.spans += part.begins[l] as usize;
            t.insts += part.insts[l] as usize;
            t.records += part.records[l] as usize;
        }
    }
    Ok(total)
}

/// The length of `words` without its trailing empty slots. Whole blocks of slots are
/// tested at once (which vectorizes), from the end.
fn used_len(words: &[u64]) -> usize {
    const BLOCK: usize = 64;
    let mut end = words.len();
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let block = &words[start..end];
        if block.iter().fold(0, |a, &w| a | w) != 0 {
            return start + block.iter().rposition(|&w| w != 0).map_or(0, |j| j + 1);
        }
        end = start;
    }
    0
}

/// The first record of each of the first `n` lanes (0 for an empty lane), looking only
/// for the lanes for which `maybe` holds (the others are known to be empty). Rows are
/// read in memory order until every lane looked for has shown a record: row 0 alone,
/// unless some lanes start late or are empty.
fn first_records(body: &[u64], stride: usize, n: usize, maybe: impl Fn(usize) -> bool) -> Vec<u64> {
    let mut first = vec![0; n];
    let mut missing: Vec<usize> = (0..n).filter(|&l| maybe(l)).collect();
    for row in body.chunks(stride) {
        if missing.is_empty() {
            break;
        }
        missing.retain(|&l| match row.get(l) {
            Some(&w) if w != 0 => {
                first[l] = w;
                false
            }
            _ => true,
        });
    }
    first
}

/// A buffer's body and what every lane's walk needs to know about it.
#[derive(Clone, Copy, Debug)]
struct Body<'w> {
    words: &'w [u64],
    groups: usize,
    /// Rows of slots (the last one may be cut short).
    rows: usize,
    /// The shared base the lanes' stamps unwrap from.
    base: u64,
    /// Lanes left out (set aside: [`super::set_aside`]).
    skip: Skip<'w>,
}

/// Decodes a buffer of format `L`, reusing the memory of `reuse`'s columns.
///
/// Lanes are gathered 32 at a time into a strip of all their rows and walked from there.
/// On one thread into a used trace, each lane's output goes right after the previous
/// lane's ([`assemble::Stream`], which grows the columns when they are too short), so
/// nothing is counted first and the buffer is read from memory once. Otherwise every
/// lane is counted first: on the rayon pool, so that chunks of lanes know where their
/// output goes and can be walked at once; into fresh columns, so that they are allocated
/// at their exact size (growing them would copy them, and the kernel's mapping of their
/// new pages costs more than the counting).
///
/// Lanes whose stamps cannot belong to the launch are set aside ([`super::set_aside`]).
pub(crate) fn decode<L: Family>(
    words: &[u64],
    opts: &DecodeOptions,
    reuse: Recycled,
) -> Result<Trace, DecodeError> {
    set_aside::without_lanes_set_aside(reuse, |skip, reuse| {
        decode_skipping::<L>(words, opts, reuse, skip)
    })
}

/// [`decode`], leaving out the lanes `skip` names (as if they had never run: they are
/// checked, but neither walked nor part of the shared base).
fn decode_skipping<L: Family>(
    words: &[u64],
    opts: &DecodeOptions,
    reuse: Recycled,
    skip: Skip<'_>,
) -> Result<Trace, DecodeError> {
    let w0 = words.first().copied().unwrap_or(0);
    let (groups, blocks) = packing::header::<L>(w0)?;
    let stride = (groups * blocks) as usize;
    // Rows below the last record are left out: buffers are often sized for more records
    // than the kernel wrote, and reading them backwards until a record is faster than
    // gathering them.
    let used = &words[1..1 + used_len(&words[1..])];
    let mut body = Body {
        words: used,
        groups: groups as usize,
        rows: used.len().div_ceil(stride),
        base: 0,
        skip,
    };
    let n_lanes = stride.min(body.words.len());
    let strips = |lanes: Range<usize>| {
        (lanes.clone().step_by(STRIP_LANES)).map(move |g| g..(g + STRIP_LANES).min(lanes.end))
    };

    let parallel = !opts.single_threaded;
    // One thread into a used trace: one pass, nothing counted first.
    let counts = if parallel || reuse.is_empty() {
        Some(count::<L>(body.words, stride, body.groups, parallel)?)
    } else {
        None
    };
    let firsts = first_records(body.words, stride, n_lanes, |l| {
        counts.as_ref().is_none_or(|c| c[l].records > 0)
    });
    let starts = (firsts.iter().enumerate())
        .filter(|&(l, &w)| w != 0 && !skip.skips(l as u32))
        .map(|(_, &w)| (w >> 32) as u32);
    body.base = shared_base(starts);
    let exp = Expect {
        groups: body.groups,
        firsts: &firsts,
    };
    let asm = match counts {
        None => {
            let mut out = assemble::Stream::new(reuse);
            let mut strip = Strip::new(body.rows, n_lanes);
            for lanes in strips(0..n_lanes) {
                strip.gather::<L>(body.words, stride, lanes.clone(), &exp);
                strip.scan::<L>(lanes.clone(), stride, &exp)?;
                out.chunk(strip.room(), |at, out| {
                    let mut w = Walked::new(at);
                    walk_strip::<L>(&body, &mut strip, lanes, out, &mut w);
                    Ok((w.cur, w.done))
                })?;
            }
            out.finish()
        }
        Some(counts) => assemble::run(&counts, parallel, reuse, |chunk| {
            let mut strip = Strip::new(body.rows, chunk.lanes.len());
            let mut w = Walked::new(chunk.base);
            for lanes in strips(chunk.lanes.clone()) {
                strip.gather::<L>(body.words, stride, lanes.clone(), &exp);
                strip.scan::<L>(lanes.clone(), stride, &exp)?;
                walk_strip::<L>(&body, &mut strip, lanes, &mut chunk.out, &mut w);
            }
            Ok(w.done)
        })?,
    };

    let time_base = asm.lanes.iter().map(|l| l.start).min().unwrap_or(0);
    Ok(Trace {
        source: Source {
            format: L::FORMAT,
            version: 1,
            grid: [blocks as u32, 1, 1],
            groups_per_block: groups as u32,
            records_per_lane: ((words.len() - 1) / stride) as u32,
            time_base,
            ..Default::default()
        },
        lanes: asm.lanes,
        spans: asm.spans,
        instants: asm.instants,
        diagnostics: asm.diag,
        ..Default::default()
    })
}

/// Where the walk of a chunk of lanes stands.
#[derive(Debug, Default)]
struct Walked {
    /// Absolute index of the chunk's first row of each table.
    at: Cursor,
    /// Where the next lane's output goes (relative to the chunk).
    cur: Cursor,
    done: ChunkDone,
}

impl Walked {
    fn new(at: Cursor) -> Walked {
        Walked {
            at,
            ..Default::default()
        }
    }
}

/// Walks lanes `lanes`, gathered and scanned in `strip`, each in one run, laying each
/// lane's output in `out` right after the previous lane's.
fn walk_strip<L: Family>(
    body: &Body<'_>,
    strip: &mut Strip,
    lanes: Range<usize>,
    out: &mut ChunkOut<'_>,
    w: &mut Walked,
) {
    let base = body.base;
    for (i, l) in lanes.enumerate() {
        if body.skip.skips(l as u32) {
            continue;
        }
        let recs = strip.lane(i);
        // An empty lane has no row in the trace.
        let Some(&first) = recs.first() else {
            continue;
        };
        // The lane's first stamp unwrapped forward from the shared base (which may be
        // more than 2^31 ns before it); the walk unwraps the rest from there.
        let t0 = base + ((first >> 32) as u32).wrapping_sub(base as u32) as u64;
        let sm = L::sm(first);
        if L::PAYLOAD {
            recs.iter_mut().for_each(|r| *r = L::walk_word(*r));
        }
        let mut walk = LaneWalk::new(l as u32, t0, Globaltimer, w.cur);
        let run = walk_run::<L>(&mut walk, recs, out);
        let fin = run.finalize;
        if let Some((j, _)) = fin {
            w.done.diag.after_finalize += (recs.len() - j - 1) as u64;
        }
        w.done.diag.backward_steps += run.backward;
        walk.finish(out);
        if L::FINALIZE {
            w.done.diag.unfinalized_lanes += u64::from(fin.is_none());
        }
        let (at, start) = (w.at, w.cur);
        w.done.lanes.push(Lane {
            id: l as u32,
            block: (l / body.groups) as u32,
            group: (l % body.groups) as u32,
            sm,
            start: t0,
            end: fin.map_or(walk.last_ns, |(_, t)| t),
            finalized: fin.is_some(),
            written: recs.len() as u64,
            spans: at.span + start.span..at.span + walk.cur.span,
            instants: at.inst + start.inst..at.inst + walk.cur.inst,
            samples: at.samp..at.samp,
            ..Default::default()
        });
        w.cur = walk.cur;
    }
}

/// One lane's records (out of line: the walk keeps its state in registers). A format
/// with payloads is walked as ikp records ([`Family::walk_word`]); the others as TVM's,
/// whose type 3 finalizes (the gather has rejected type 3 where it is not written).
#[inline(never)]
fn walk_run<L: Family>(w: &mut LaneWalk<Globaltimer>, recs: &[u64], out: &mut ChunkOut<'_>) -> Run {
    if L::PAYLOAD {
        w.run::<false>(recs, 0, out)
    } else {
        w.run::<true>(recs, 0, out)
    }
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
    use super::{count_rows, count_rows_any, shared_base, Expect, Strip};
    use crate::decode::tvm_family::Tvm;
    use ikp_device::tvm::pack;

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
    fn strips_hold_each_lanes_records_in_order_and_find_misplaced_ones() {
        // Odd lane counts and row counts exercise the 4 x 4 blocks' edges and the slots
        // past the body's end; both the dispatching and the portable paths are checked.
        for (lanes, rows, short) in [(7, 9, 3), (4, 4, 0), (130, 13, 5), (1, 6, 0), (9, 1, 2)] {
            let body = ragged(lanes, rows, short);
            let exp = Expect {
                groups: 1,
                firsts: &[],
            };
            for portable in [false, true] {
                let mut strip = Strip::new(rows, lanes);
                for g in (0..lanes).step_by(super::STRIP_LANES) {
                    let ls = g..(g + super::STRIP_LANES).min(lanes);
                    if portable {
                        strip.gather_any::<Tvm>(&body, lanes, ls.clone(), &exp);
                    } else {
                        strip.gather::<Tvm>(&body, lanes, ls.clone(), &exp);
                    }
                    strip.scan::<Tvm>(ls.clone(), lanes, &exp).unwrap();
                    // Room for each begin and instant of the strip.
                    let mut room = (0, 0, 0);
                    for l in ls.clone() {
                        let want: Vec<u64> = (0..rows)
                            .filter_map(|r| body.get(r * lanes + l).copied())
                            .filter(|&w| w != 0)
                            .collect();
                        let of = |k| want.iter().filter(|&&w| w & 3 == k).count();
                        room = (room.0 + of(0), room.1 + of(2), 0);
                        assert_eq!(strip.lane(l - g), want, "lane {l}");
                    }
                    let r = strip.room();
                    assert_eq!((r.span, r.inst, r.samp), room);
                }
                // A record in the next lane's column in the last row, and one naming a
                // lane past the last in the middle row: the first in memory order (of the
                // strip's lanes) is reported.
                let mut bad = body.clone();
                let n = lanes.min(super::STRIP_LANES);
                bad[(rows - 1) * lanes] = pack(5, 1, 0, 0);
                let mid = (rows / 2 * lanes + n - 1).min(bad.len() - 1);
                bad[mid] = pack(6, lanes as u32, 0, 0);
                let k = (0..bad.len())
                    .find(|&k| {
                        k % lanes < n
                            && bad[k] != 0
                            && (bad[k] >> 12) as usize & 0xFFFFF != k % lanes
                    })
                    .unwrap();
                if portable {
                    strip.gather_any::<Tvm>(&bad, lanes, 0..n, &exp);
                } else {
                    strip.gather::<Tvm>(&bad, lanes, 0..n, &exp);
                }
                let e = strip.scan::<Tvm>(0..n, lanes, &exp);
                let e = e.unwrap_err().to_string();
                assert!(
                    e.starts_with(&format!("TVM format: slot {}: ", k + 1)),
                    "{e}"
                );
            }
        }
    }

    #[test]
    fn counting_tallies_kinds_per_lane_and_finds_misplaced_records() {
        for (lanes, rows, short) in [(7, 9, 3), (130, 13, 5), (1, 6, 0)] {
            let mut body = ragged(lanes, rows, short);
            let all = 0..rows;
            let t = count_rows::<Tvm>(&body, lanes, 1, all.clone()).unwrap();
            let p = count_rows_any::<Tvm>(&body, lanes, 1, all.clone()).unwrap();
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
            assert!(count_rows::<Tvm>(&body, lanes, 1, all.clone()).is_err());
            assert!(count_rows_any::<Tvm>(&body, lanes, 1, all).is_err());
        }
    }

    #[test]
    fn flashinfer_gather_and_count_find_a_wrong_block_a_type_3_and_a_second_sm() {
        use crate::decode::tvm_family::FlashInfer;
        use ikp_device::flashinfer::{pack as fpack, BEGIN, END};
        // 11 blocks x 3 groups (lanes past a group of four and a strip's edge), 9 rows.
        let (blocks, groups, rows) = (11usize, 3usize, 9usize);
        let stride = blocks * groups;
        let sm = |l: usize| (l / groups * 7 % 132) as u32;
        let body: Vec<u64> = (0..rows * stride)
            .map(|k| {
                let (r, l) = (k / stride, k % stride);
                let kind = if r % 2 == 0 { BEGIN } else { END };
                fpack(100 + r as u32, sm(l), (l / groups) as u32, 1, kind)
            })
            .collect();
        let firsts: Vec<u64> = body[..stride].to_vec();
        let exp = Expect {
            groups,
            firsts: &firsts,
        };
        let all = 0..rows;
        let counted = count_rows::<FlashInfer>(&body, stride, groups, all.clone()).unwrap();
        assert_eq!(counted.records, vec![rows as u32; stride]);
        let lane = 29; // block 9, group 2: in the strip's last, ragged group of lanes
        let at = 4 * stride + lane;
        for (word, what, counting) in [
            (fpack(104, sm(lane), 8, 1, END), "names block 8", true),
            (fpack(104, sm(lane), 9, 1, 3), "is of type 3", true),
            (fpack(104, sm(lane) + 1, 9, 1, END), "says SM", false),
        ] {
            let mut bad = body.clone();
            bad[at] = word;
            let c = count_rows::<FlashInfer>(&bad, stride, groups, all.clone());
            let p = count_rows_any::<FlashInfer>(&bad, stride, groups, all.clone());
            assert_eq!((c.is_err(), p.is_err()), (counting, counting), "{what}");
            for portable in [false, true] {
                let mut strip = Strip::new(rows, stride);
                let ls = 0..stride.min(super::STRIP_LANES);
                if portable {
                    strip.gather_any::<FlashInfer>(&bad, stride, ls.clone(), &exp);
                } else {
                    strip.gather::<FlashInfer>(&bad, stride, ls.clone(), &exp);
                }
                let e = strip
                    .scan::<FlashInfer>(ls, stride, &exp)
                    .unwrap_err()
                    .to_string();
                let want = format!(
                    "FlashInfer format: slot {}: record {word:#018x} {what}",
                    at + 1
                );
                assert!(e.starts_with(&want), "{e}");
            }
        }
    }

    #[test]
    fn a_lane_starts_forward_of_the_base_however_far_and_then_clamps_steps_back() {
        use crate::decode::{assemble::Recycled, DecodeOptions};
        // Lanes start at 10, 10 + 1.4e9 and 10 + 2.8e9 ns: the largest gap is the one
        // around the wrap, so the base is 10 and lane 2 starts 2.8e9 ns (more than 2^31)
        // after it. Lane 2 then steps back 3 ns.
        let s = |l: u32| 10 + 1_400_000_000 * l;
        let words = [
            3 << 32 | 1,
            pack(s(0), 0, 1, 0),
            pack(s(1), 1, 1, 0),
            pack(s(2), 2, 1, 0),
            pack(s(0) + 50, 0, 1, 1),
            pack(s(1) + 5, 1, 1, 1),
            pack(s(2) - 3, 2, 1, 1),
        ];
        for single_threaded in [true, false] {
            let opts = DecodeOptions {
                single_threaded,
                ..Default::default()
            };
            for reuse in [false, true] {
                // A used trace takes the one-pass path on one thread.
                let mut r = Recycled::default();
                if reuse {
                    r.spans.begin = Vec::with_capacity(4);
                    r.instants.ts = Vec::with_capacity(4);
                }
                let t = super::decode::<Tvm>(&words, &opts, r).unwrap();
                let starts: Vec<u64> = t.lanes.iter().map(|l| l.start).collect();
                assert_eq!(starts, [10, s(1) as u64, s(2) as u64]);
                let spans: Vec<(u64, u64)> =
                    (0..3).map(|k| (t.spans.begin[k], t.spans.end[k])).collect();
                let e = |l: u32, d: u32| (s(l) as u64, (s(l) + d) as u64);
                assert_eq!(spans, [e(0, 50), e(1, 5), e(2, 0)]);
                assert_eq!(t.diagnostics.backward_steps, 1);
            }
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
