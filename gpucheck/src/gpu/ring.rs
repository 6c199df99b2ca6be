//! `ring`: lanes of an 8-slot ring record 3 to 29 instants; each keeps exactly its newest
//! records, oldest first from `(written + overwritten) % capacity`, and counts the rest as
//! overwritten. `record-cost`: every lane of that launch measured its record cost at init
//! (the CALIB word): not zero, and below [`CALIB_BOUND`] cycles.

use ikp_device::wire::{self, lane as seg, lane_flags, Kind};
use ikp_device::{Layout, Overflow};
use ikp_host::cuda::cudarc::driver::PushKernelArg;

use super::words::{counts, header, read, verdict};
use super::{median, Error, Gpu};
use crate::results::Check;

/// Ring capacity (a power of two).
pub const RING_CAP: u32 = 8;
/// Blocks of the ring launch (two lanes each).
pub const RING_BLOCKS: u32 = 4;
/// A record costs tens of cycles; a CALIB word past this is not a record's cost.
pub const CALIB_BOUND: u64 = 2_000;

/// Instants lane (block, group) of the ring launch attempts: lane 0 fits, the others wrap
/// up to 3 times.
pub fn ring_attempts(block: u32, group: u32) -> u32 {
    3 + 5 * block + 11 * group
}

/// The ring launch's layout.
pub fn ring_layout() -> Layout {
    Layout {
        grid: [RING_BLOCKS, 1, 1],
        groups_per_block: 2,
        records_per_lane: RING_CAP,
        regions: vec!["mark".into()],
        overflow: Overflow::Ring,
        ..Layout::default()
    }
}

/// A ring segment's records, oldest first.
pub fn ring_order(seg_words: &[u64], cap: u32) -> Vec<wire::Record> {
    let (written, over, _) = counts(seg_words, cap);
    let events = &seg_words[seg::EVENTS as usize..][..cap as usize];
    let oldest = if over > 0 {
        ((written as u64 + over as u64) % cap as u64) as usize
    } else {
        0
    };
    (0..(written.min(cap)) as usize)
        .map(|i| wire::unpack_record(events[(oldest + i) % cap as usize]))
        .collect()
}

/// Every difference between the ring launch's buffer and what its lanes did.
pub fn ring_differences(words: &[u64]) -> Vec<String> {
    let h = match header(words) {
        Ok(h) => h,
        Err(e) => return e,
    };
    let mut bad = Vec::new();
    for l in 0..h.layout.lane_count() {
        let (b, g) = ((l / 2) as u32, (l % 2) as u32);
        let n = ring_attempts(b, g);
        let s = &words[h.lane_range(l)];
        let who = format!("lane {l} (block {b} group {g})");
        match wire::unpack_ids(s[seg::IDS as usize]) {
            Some(ids) if ids.flags & lane_flags::RING != 0 => {}
            other => bad.push(format!("{who}: IDS {other:?}, no RING flag")),
        }
        let (written, over, fin) = counts(s, RING_CAP);
        let want = n.min(RING_CAP);
        if !fin || (written, over) != (want, n - want) {
            bad.push(format!(
                "{who}: finalized {fin}, {written} present and {over} overwritten, \
                 expected {want} and {}",
                n - want
            ));
            continue;
        }
        let got: Vec<(Kind, u32)> = ring_order(s, RING_CAP)
            .iter()
            .map(|r| (r.kind, r.payload))
            .collect();
        let expect: Vec<(Kind, u32)> = (n - want..n).map(|i| (Kind::Instant, i)).collect();
        if got != expect {
            bad.push(format!(
                "{who}: records oldest first {got:?}, expected {expect:?}"
            ));
        }
    }
    bad
}

/// Every lane's CALIB word, and what is wrong with them.
pub fn calib_differences(words: &[u64]) -> (Vec<u64>, Vec<String>) {
    let h = match header(words) {
        Ok(h) => h,
        Err(e) => return (Vec::new(), e),
    };
    let calib: Vec<u64> = (0..h.layout.lane_count())
        .map(|l| words[h.lane_range(l).start + seg::CALIB as usize])
        .collect();
    let bad = calib
        .iter()
        .enumerate()
        .filter(|(_, &c)| c == 0 || c >= CALIB_BOUND)
        .map(|(l, c)| format!("lane {l}: CALIB {c} cycles, expected 1..{CALIB_BOUND}"))
        .collect();
    (calib, bad)
}

/// Launches `ring_wrap` and returns the buffer.
fn ring_launch(gpu: &Gpu) -> Result<Vec<u64>, Error> {
    let mut session = gpu.session(ring_layout())?;
    let table: Vec<u32> = (0..RING_BLOCKS * 2)
        .map(|l| ring_attempts(l / 2, l % 2))
        .collect();
    let dev = gpu.upload(&table)?;
    let arg = session.kernel_arg();
    // SAFETY: ring_wrap(const unsigned* attempts, ikp::Arg) with one entry per lane.
    unsafe { launch!(gpu, "ring_wrap", RING_BLOCKS, 64; &dev, &arg) }?;
    read(&mut session)
}

/// The `ring` check.
pub fn check(gpu: &Gpu) -> Result<Check, Error> {
    let words = ring_launch(gpu)?;
    let wraps: u32 = (0..RING_BLOCKS * 2)
        .map(|l| ring_attempts(l / 2, l % 2) / RING_CAP)
        .max()
        .unwrap_or(0);
    let pass = format!(
        "{} ring lanes of {RING_CAP} slots, up to {wraps} wraps: each kept exactly its newest \
         records, oldest first, and counted the overwritten",
        RING_BLOCKS * 2
    );
    Ok(verdict("ring", ring_differences(&words), pass).figure("max_wraps", wraps))
}

/// The `record-cost` check.
pub fn calib_check(gpu: &Gpu) -> Result<Check, Error> {
    let words = ring_launch(gpu)?;
    let (calib, bad) = calib_differences(&words);
    let mut v: Vec<f64> = calib.iter().map(|&c| c as f64).collect();
    let lo = calib.iter().min().copied().unwrap_or(0);
    let hi = calib.iter().max().copied().unwrap_or(0);
    let med = median(&mut v);
    let pass =
        format!("every lane measured its record cost at init: {lo}..{hi} cycles, median {med}");
    Ok(verdict("record-cost", bad, pass)
        .figure("calib_min_cycles", lo)
        .figure("calib_median_cycles", med)
        .figure("calib_max_cycles", hi))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ikp_device::encoder::BufferWriter;
    use ikp_device::Header;

    fn ring_buffer() -> Vec<u64> {
        let mut w = BufferWriter::new(ring_layout()).unwrap();
        for l in 0..RING_BLOCKS * 2 {
            let mut lw = w.lane(l as u64);
            lw.init(l, l % 2, lane_flags::RING, 1_000, 0)
                .calibrate(40 + l);
            for i in 0..ring_attempts(l / 2, l % 2) {
                lw.instant(0, i, 2_000 + i as u64);
            }
            lw.finalize(9_000, 0);
        }
        w.into_words()
    }

    #[test]
    fn the_expected_ring_buffer_has_no_differences_and_a_swap_is_caught() {
        let mut words = ring_buffer();
        assert_eq!(ring_differences(&words), Vec::<String>::new());
        let (calib, bad) = calib_differences(&words);
        assert!(bad.is_empty() && calib == (40..48).collect::<Vec<u64>>());
        // Two slots of lane 7 swapped: the order is wrong.
        let h = Header::parse(&words).unwrap();
        let at = h.lane_range(7).start + seg::EVENTS as usize;
        words.swap(at, at + 1);
        let d = ring_differences(&words);
        assert!(d.iter().any(|m| m.starts_with("lane 7")), "{d:?}");
        // A zero CALIB word.
        words[h.lane_range(2).start + seg::CALIB as usize] = 0;
        assert!(calib_differences(&words).1[0].starts_with("lane 2: CALIB 0"));
    }
}
