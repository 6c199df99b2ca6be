//! `overhead-correction`: does `DecodeOptions::correct_overhead` remove what recording
//! costs? In each block, warp 0 records [`INNER`] instants inside a region around a busy
//! wait of [`SPIN_CYCLES`]; warp 1 records the same region around the same wait with
//! nothing inside. Warp 1's span is the duration without the inner records (the truth);
//! warp 0's raw span exceeds it by the inner records' cost, the *excess*. The check decodes
//! the buffer with the correction and passes when, in the median over blocks, the
//! correction removes between [`REMOVED_MIN`] and [`REMOVED_MAX`] of the excess (clock
//! stamps, so one record's cost is resolved).
//!
//! Why that window: the correction subtracts the cost each lane measured at init for
//! records back to back (the CALIB word), while records inside a region share the issue
//! slots with the code around them, so the removed share is near 1 but not exactly 1.
//! The errors this check exists for are factors: a calibration that times other
//! instructions than a record's (an H100 run of an earlier calibration removed 0.65),
//! cycles taken for ns or the reverse (2x at 2 GHz), a record counted twice or not at all.
//! A window of ±50 % around 1 catches each of them and leaves room for the schedule.

use ikp_device::{Layout, TimerMode};
use ikp_host::cuda::cudarc::driver::PushKernelArg;
use ikp_host::decode::{decode, DecodeOptions};
use ikp_host::Trace;

use super::{median, Error, Gpu};
use crate::results::{Check, Status};

/// Instants recorded inside warp 0's region (`CORRECTION_INNER` in kernels.cu).
pub const INNER: u64 = 16;
/// Cycles of the busy wait inside both regions.
pub const SPIN_CYCLES: u32 = 20_000;
/// Blocks of the launch (two lanes each: with and without the inner records).
pub const BLOCKS: u32 = 16;
/// Least share of the excess the correction must remove.
pub const REMOVED_MIN: f64 = 0.5;
/// Largest share of the excess the correction may remove.
pub const REMOVED_MAX: f64 = 1.5;

/// The launch's layout: region 0 holds the wait, region 1 the inner instants.
pub fn layout() -> Layout {
    Layout {
        grid: [BLOCKS, 1, 1],
        groups_per_block: 2,
        records_per_lane: 32,
        timer: TimerMode::Clock,
        regions: vec!["wait".into(), "inner".into()],
        ..Layout::default()
    }
}

/// Per block: (truth, raw, corrected) durations in ns of the region with the inner records
/// (warp 0) and without (warp 1), from the same buffer decoded without and with the
/// correction.
pub fn durations(raw: &Trace, corrected: &Trace) -> Result<Vec<(u64, u64, u64)>, String> {
    let span = |t: &Trace, lane: u32| -> Result<u64, String> {
        let l = t
            .lanes
            .iter()
            .find(|l| l.id == lane)
            .ok_or(format!("lane {lane} did not run"))?;
        let s = t
            .spans
            .region
            .get(l.spans.clone())
            .and_then(|r| r.iter().position(|&r| r == 0))
            .ok_or(format!("lane {lane} has no region 0 span"))?;
        let i = l.spans.start + s;
        Ok(t.spans.end[i] - t.spans.begin[i])
    };
    (0..BLOCKS)
        .map(|b| {
            let (with, without) = (2 * b, 2 * b + 1);
            Ok((
                span(raw, without)?,
                span(raw, with)?,
                span(corrected, with)?,
            ))
        })
        .collect()
}

/// The verdict on per-block durations: the median share of the excess removed.
pub fn judge(d: &[(u64, u64, u64)]) -> (Status, f64, f64, f64) {
    let mut excess: Vec<f64> = d.iter().map(|&(t, r, _)| r as f64 - t as f64).collect();
    let mut removed: Vec<f64> = d.iter().map(|&(_, r, c)| r as f64 - c as f64).collect();
    let mut residual: Vec<f64> = d.iter().map(|&(t, _, c)| c as f64 - t as f64).collect();
    let (e, r, res) = (
        median(&mut excess),
        median(&mut removed),
        median(&mut residual),
    );
    let share = if e > 0.0 { r / e } else { f64::NAN };
    let ok = (REMOVED_MIN..=REMOVED_MAX).contains(&share);
    (Status::of(ok), e, r, res)
}

/// The `overhead-correction` check.
pub fn check(gpu: &Gpu) -> Result<Check, Error> {
    let mut session = gpu.session(layout())?;
    let arg = session.kernel_arg();
    // SAFETY: correction_probe(unsigned spin, ikp::Arg).
    unsafe { launch!(gpu, "correction_probe", BLOCKS, 64; &SPIN_CYCLES, &arg) }?;
    let words = session.read_back().map_err(|e| e.to_string())?.to_vec();
    let plain = decode(&words, &DecodeOptions::default()).map_err(|e| e.to_string())?;
    let opts = DecodeOptions {
        correct_overhead: true,
        ..DecodeOptions::default()
    };
    let fixed = decode(&words, &opts).map_err(|e| e.to_string())?;
    let d = durations(&plain, &fixed)?;
    let (status, excess, removed, residual) = judge(&d);
    let per_record = fixed
        .source
        .overhead_correction
        .map_or(0.0, |c| c.per_record_ns_median());
    let detail = format!(
        "{INNER} records inside a region add {excess:.0} ns (median of {BLOCKS} blocks, \
         {:.2} ns per record); the correction ({per_record:.2} ns per record, calibrated at \
         init) removes {removed:.0} ns, {:.2} of it, leaving {residual:.0} ns against the \
         region without them (pass: {REMOVED_MIN}..{REMOVED_MAX} of the excess removed)",
        excess / INNER as f64,
        if excess > 0.0 {
            removed / excess
        } else {
            f64::NAN
        }
    );
    Ok(Check::new("overhead-correction", status, true, detail)
        .figure("excess_ns", excess)
        .figure("removed_ns", removed)
        .figure("residual_ns", residual)
        .figure("per_record_ns", per_record)
        .figure("in_situ_per_record_ns", excess / INNER as f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ikp_device::encoder::BufferWriter;
    use ikp_device::wire::lane_flags;

    /// The launch as the kernel writes it: 1 cycle = 1 ns (clock64 = globaltimer pairs),
    /// each inner record 10 cycles, measured as 9 by the calibration.
    fn buffer() -> Vec<u64> {
        let mut w = BufferWriter::new(layout()).unwrap();
        for b in 0..BLOCKS as u64 {
            for g in 0..2u64 {
                let t0 = 1_000_000 + b * 50_000;
                let mut l = w.lane(2 * b + g);
                l.init(b as u32, g as u32, lane_flags::CLOCK, t0, t0)
                    .calibrate(9);
                let mut t = t0 + 5;
                l.begin(0, 0, t);
                if g == 0 {
                    for i in 0..INNER as u32 {
                        t += 10;
                        l.instant(1, i, t);
                    }
                }
                t += 20_000;
                l.end(0, 0, t);
                l.finalize(t + 5, t + 5);
            }
        }
        w.into_words()
    }

    #[test]
    fn durations_pair_each_block_s_lanes_and_the_correction_shows() {
        let words = buffer();
        let plain = decode(&words, &DecodeOptions::default()).unwrap();
        let opts = DecodeOptions {
            correct_overhead: true,
            ..DecodeOptions::default()
        };
        let fixed = decode(&words, &opts).unwrap();
        let d = durations(&plain, &fixed).unwrap();
        assert_eq!(d.len(), BLOCKS as usize);
        // Truth 20000; raw 20160; 16 records x 9 ns removed.
        assert!(
            d.iter().all(|&x| x == (20_000, 20_160, 20_160 - 16 * 9)),
            "{d:?}"
        );
        assert_eq!(judge(&d).0, Status::Pass);
    }

    #[test]
    fn a_correction_removing_the_excess_passes_and_none_or_double_fails() {
        // truth 1000, raw 1160 (excess 160): removed 150 passes, 0 and 330 fail.
        let ok = vec![(1000, 1160, 1010); 5];
        assert_eq!(judge(&ok).0, Status::Pass);
        let none = vec![(1000, 1160, 1160); 5];
        assert_eq!(judge(&none).0, Status::Fail);
        let double = vec![(1000, 1160, 830); 5];
        assert_eq!(judge(&double).0, Status::Fail);
        let (_, e, r, res) = judge(&ok);
        assert_eq!((e, r, res), (160.0, 150.0, 10.0));
    }
}
