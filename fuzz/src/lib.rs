//! Shared by the fuzz targets: a counting global allocator and the allocation bound.
//!
//! # The bound
//! Every allocation a decode makes is sized from the input: the decoders check the header
//! against the buffer length before sizing anything (`Header::parse` refuses a lane count
//! or capacity the buffer cannot hold, the TVM layout is clamped to the slots present),
//! then allocate per lane and per record. The largest footprints per unit of input are:
//! - per record (8 input bytes): a span slot (28 bytes: lane, region, depth, payload,
//!   begin, end; the pairing stack lives in these slots) and, if never closed, an
//!   `Unpaired` (24 bytes) in a growable vector that may hold up to twice its length:
//!   28 + 2 * 24 = 76 bytes, 9.5 x the record;
//! - per native lane (at least 6 words = 48 bytes): its inspection (`LaneInfo`, ~130
//!   bytes), its `Lane` (~110 bytes) and, during the CLI's streamed Perfetto path, a
//!   skeleton copy: under 8 x the segment.
//! - per Proton event (a JSON object of at least 60 bytes with the fields the decoder
//!   requires): its record (40 bytes), sorted row (32) and span (28), and, for a new scope
//!   name, the name kept twice with its map entry: under 4 x the event, 8 x with the
//!   vectors' growth. A yao-jz event (16 bytes) is at most a pairing row (32 bytes), a span
//!   (28) and an unmatched record (24): with the vectors' growth, under 12 x the event.
//!
//! The two do not add up on the same input bytes beyond 16 x (a byte is either a record
//! or lane overhead), so [`K`] = 24 leaves headroom, and [`C`] covers size-independent
//! allocations (names: at most 1024 + 256 strings, the 1 MiB name table, the TVM
//! decoder's tile of at most 128 lanes x 520 rows, rayon and thread-local setup, error
//! strings). A decoder that ever allocates from a header field
//! without checking it against the input (a 2^26-lane `Vec` from a 64-byte buffer) breaks
//! this by orders of magnitude.
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Peak allocation per input byte allowed.
pub const K: usize = 24;
/// Constant allowance, bytes.
pub const C: usize = 4 << 20;

/// Counts live bytes and their peak.
pub struct Counting;

static CUR: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let c = CUR.fetch_add(l.size(), Relaxed) + l.size();
            PEAK.fetch_max(c, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        CUR.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            let c = CUR.fetch_add(l.size(), Relaxed) + l.size();
            PEAK.fetch_max(c, Relaxed);
        }
        p
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                let c = CUR.fetch_add(new - l.size(), Relaxed) + new - l.size();
                PEAK.fetch_max(c, Relaxed);
            } else {
                CUR.fetch_sub(l.size() - new, Relaxed);
            }
        }
        q
    }
}

/// Runs `f` and returns its result and the peak bytes it had allocated at once (above
/// what was live when it started).
pub fn peak_of<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let base = CUR.load(Relaxed);
    PEAK.store(base, Relaxed);
    let r = f();
    (r, PEAK.load(Relaxed).saturating_sub(base))
}

/// Panics (a fuzz finding) if `peak` exceeds the bound for `input_bytes` of input.
pub fn check_bound(what: &str, input_bytes: usize, peak: usize) {
    let bound = K * input_bytes + C;
    assert!(
        peak <= bound,
        "{what}: peak allocation {peak} bytes for {input_bytes} input bytes exceeds {K} x input + {C}"
    );
}

/// The input as little-endian words (a ragged tail is zero-padded, as the file reader
/// would refuse it; the decoders see whole words).
pub fn words(data: &[u8]) -> Vec<u64> {
    data.chunks(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect()
}

/// The fuzz body of the decoder targets: `data` as words decoded as `format` on one
/// thread must not panic and must stay within the allocation bound.
pub fn decode_within_bound(data: &[u8], format: ikp_host::decode::FormatChoice, what: &str) {
    use ikp_host::decode::{decode, DecodeOptions};
    let w = words(data);
    let opts = DecodeOptions {
        format,
        single_threaded: true,
        ..Default::default()
    };
    let (r, peak) = peak_of(|| decode(&w, &opts));
    check_bound(what, w.len() * 8, peak);
    drop(r);
    if format == ikp_host::decode::FormatChoice::Ikp {
        // Every launch of a buffer of several epochs, with the overhead correction's pass:
        // each launch is bounded by its own segments, as one decode is.
        let opts = DecodeOptions {
            correct_overhead: true,
            ..opts
        };
        let (r, peak) = peak_of(|| ikp_host::decode::decode_launches(&w, &opts));
        check_bound(what, w.len() * 8, peak);
        drop(r);
    }
}
