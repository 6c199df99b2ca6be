//! `async-ranges`: in each block warp 0 begins ranges that warp 1 ends; every token begun
//! is ended in the other lane, no earlier than it began.

use ikp_device::wire::{self, lane as seg, Kind};
use ikp_device::Layout;
use ikp_host::cuda::cudarc::driver::PushKernelArg;

use super::words::{counts, header, read, verdict};
use super::{Error, Gpu};
use crate::results::Check;

/// Blocks (two lanes each) of the async-range launch.
pub const BLOCKS: u32 = 4;
/// Ranges each producer warp begins.
pub const RANGES: u32 = 6;

/// The async-range launch's layout: region 0 is async.
pub fn ranges_layout() -> Layout {
    Layout {
        grid: [BLOCKS, 1, 1],
        groups_per_block: 2,
        records_per_lane: 2 * RANGES,
        regions: vec!["copy".into()],
        async_regions: vec![0],
        ..Layout::default()
    }
}

/// Every difference between the async-range launch's buffer and what its warps did; also
/// the shortest range in ns.
pub fn ranges_differences(words: &[u64]) -> (Vec<String>, Option<u64>) {
    let h = match header(words) {
        Ok(h) => h,
        Err(e) => return (e, None),
    };
    let mut bad = Vec::new();
    let mut shortest: Option<u64> = None;
    if !h.layout.is_async(0) {
        bad.push("region 0 is not marked async in the header".into());
    }
    let cap = h.layout.records_per_lane;
    // (token, kind) -> globaltimer, unwrapped against the lane start (ranges are short).
    let records = |l: u64| -> Vec<(Kind, u32, u64)> {
        let s = &words[h.lane_range(l)];
        let (written, _, _) = counts(s, cap);
        let start = s[seg::START_GT as usize];
        s[seg::EVENTS as usize..][..written.min(cap) as usize]
            .iter()
            .map(|&w| {
                let r = wire::unpack_record(w);
                let t = start + r.time_lo.wrapping_sub(start as u32) as u64;
                (r.kind, r.payload, t)
            })
            .collect()
    };
    for b in 0..BLOCKS as u64 {
        let (producer, consumer) = (records(2 * b), records(2 * b + 1));
        let tokens = |v: &[(Kind, u32, u64)], kind| -> Vec<u32> {
            let mut t: Vec<u32> = v.iter().filter(|r| r.0 == kind).map(|r| r.1).collect();
            t.sort_unstable();
            t
        };
        let expect: Vec<u32> = (0..RANGES).map(|k| (b as u32) << 8 | k).collect();
        let (begun, ended) = (tokens(&producer, Kind::Begin), tokens(&consumer, Kind::End));
        if begun != expect || ended != expect {
            bad.push(format!(
                "block {b}: tokens begun {begun:?} in warp 0, ended {ended:?} in warp 1, \
                 expected {expect:?} in both"
            ));
            continue;
        }
        for &(_, token, began) in producer.iter().filter(|r| r.0 == Kind::Begin) {
            let &(_, _, ended) = consumer
                .iter()
                .find(|r| r.0 == Kind::End && r.1 == token)
                .expect("checked above");
            if ended < began {
                bad.push(format!(
                    "block {b} token {token:#x}: ends at {ended} ns, before it began ({began})"
                ));
            }
            let d = ended.saturating_sub(began);
            shortest = Some(shortest.map_or(d, |s| s.min(d)));
        }
    }
    (bad, shortest)
}

/// The `async-ranges` check.
pub fn check(gpu: &Gpu) -> Result<Check, Error> {
    let mut session = gpu.session(ranges_layout())?;
    let arg = session.kernel_arg();
    // SAFETY: async_ranges(unsigned n, ikp::Arg).
    unsafe { launch!(gpu, "async_ranges", BLOCKS, 64; &RANGES, &arg) }?;
    let words = read(&mut session)?;
    let (bad, shortest) = ranges_differences(&words);
    let pass = format!(
        "{} ranges begun in warp 0 and ended in warp 1 of their block, each ended after it \
         began (shortest {} ns)",
        BLOCKS * RANGES,
        shortest.unwrap_or(0)
    );
    Ok(verdict("async-ranges", bad, pass).figure("ranges", BLOCKS * RANGES))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ikp_device::encoder::BufferWriter;

    #[test]
    fn ranges_across_lanes_pass_and_a_lost_end_is_caught() {
        let build = |lose: bool| {
            let mut w = BufferWriter::new(ranges_layout()).unwrap();
            for b in 0..BLOCKS {
                {
                    let mut p = w.lane(2 * b as u64);
                    p.init(0, 0, 0, 1_000, 0);
                    for k in 0..RANGES {
                        p.range_begin(0, b << 8 | k, 1_100 + k as u64);
                    }
                    p.finalize(2_000, 0);
                }
                let mut c = w.lane(2 * b as u64 + 1);
                c.init(0, 1, 0, 1_000, 0);
                for k in (0..RANGES).rev() {
                    if !(lose && b == 2 && k == 3) {
                        c.range_end(0, b << 8 | k, 1_500 + k as u64);
                    }
                }
                c.finalize(2_000, 0);
            }
            w.into_words()
        };
        let (bad, shortest) = ranges_differences(&build(false));
        assert_eq!(bad, Vec::<String>::new());
        assert_eq!(shortest, Some(400));
        let (bad, _) = ranges_differences(&build(true));
        assert!(bad.len() == 1 && bad[0].starts_with("block 2"), "{bad:?}");
    }
}
