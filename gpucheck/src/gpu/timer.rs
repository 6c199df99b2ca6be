//! The `%globaltimer` resolution of this GPU: how far apart its distinct values are.
//!
//! NVIDIA documents `%globaltimer` as a nanosecond counter but not its update period; it
//! is coarse on some parts (32 ns, 1 us). Every tolerance of the timing checks is stated
//! in ticks of it, so they measure it first: one thread reads it back to back for 200 us
//! and keeps each value that differs from the one before. The tick is the median step
//! between kept values, valid as long as a read takes less than a tick (checked).

use ikp_host::cuda::cudarc::driver::PushKernelArg;
use serde_json::json;

use super::{median, round, Error, Gpu};
use crate::results::{Check, Status};

/// What the reads showed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tick {
    /// Median step between distinct values, ns: the resolution.
    pub ns: f64,
    /// Smallest step seen, ns.
    pub min_ns: u64,
    /// Largest step seen, ns.
    pub max_ns: u64,
    /// Distinct values kept.
    pub changes: usize,
    /// Time one read took, ns (the loop's period).
    pub ns_per_read: f64,
}

/// How long the reads go on, ns.
const DURATION_NS: u64 = 200_000;
/// Distinct values kept at most.
const CAP: u32 = 4096;

/// Measures the tick on `gpu`.
pub fn measure(gpu: &Gpu) -> Result<Tick, Error> {
    let mut changes = gpu.zeros::<u64>(CAP as usize)?;
    let mut stats = gpu.zeros::<u64>(2)?;
    // SAFETY: gt_resolution(u64*, unsigned, u64, u64*); `changes` holds CAP words, `stats`
    // two.
    unsafe { launch!(gpu, "gt_resolution", 1, 1; &mut changes, &CAP, &DURATION_NS, &mut stats) }?;
    let stats = gpu.download(&stats)?;
    let values = gpu.download(&changes)?;
    let kept = (stats[0] as usize).min(values.len());
    from_values(&values[..kept], stats[1], DURATION_NS)
}

/// The tick from the distinct values read, the number of reads and the time they took.
pub fn from_values(values: &[u64], reads: u64, duration_ns: u64) -> Result<Tick, Error> {
    if values.len() < 3 {
        return Err(format!(
            "%globaltimer took only {} distinct values in {} us of reads",
            values.len(),
            duration_ns / 1000
        ));
    }
    let steps: Vec<u64> = values.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
    if let Some(bad) = steps.iter().find(|&&s| s == 0 || s >= 1 << 63) {
        return Err(format!(
            "%globaltimer did not increase between two reads (step {bad})"
        ));
    }
    let mut f: Vec<f64> = steps.iter().map(|&s| s as f64).collect();
    Ok(Tick {
        ns: median(&mut f),
        min_ns: *steps.iter().min().unwrap_or(&0),
        max_ns: *steps.iter().max().unwrap_or(&0),
        changes: values.len(),
        ns_per_read: duration_ns as f64 / reads.max(1) as f64,
    })
}

/// The `timer/resolution` check: the timer advances, and is read faster than it ticks.
pub fn check(gpu: &Gpu) -> Result<Check, Error> {
    let t = measure(gpu)?;
    let holds = t.ns_per_read < t.ns;
    let detail = if holds {
        format!(
            "%globaltimer ticks every {} ns (median of {} steps; a read takes {:.1} ns)",
            t.ns,
            t.changes - 1,
            t.ns_per_read
        )
    } else {
        format!(
            "a read of %globaltimer takes {:.1} ns, not less than the median step {} ns: the \
             step is the read loop's, not the timer's",
            t.ns_per_read, t.ns
        )
    };
    Ok(
        Check::new("timer/resolution", Status::of(holds), true, detail)
            .figure("tick_ns", round(t.ns, 1))
            .figure("min_step_ns", t.min_ns)
            .figure("max_step_ns", t.max_ns)
            .figure("distinct_values", t.changes)
            .figure("ns_per_read", round(t.ns_per_read, 2))
            .figure("read_for_us", json!(DURATION_NS / 1000)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tick_is_the_median_step() {
        let v = [1_000, 1_032, 1_064, 1_096, 1_160, 1_192];
        let t = from_values(&v, 1000, 10_000).unwrap();
        assert_eq!((t.ns, t.min_ns, t.max_ns, t.changes), (32.0, 32, 64, 6));
        assert_eq!(t.ns_per_read, 10.0);
        assert!(from_values(&[5, 6], 10, 100)
            .unwrap_err()
            .contains("only 2"));
        assert!(from_values(&[5, 6, 6, 7], 10, 100)
            .unwrap_err()
            .contains("did not increase"));
        assert!(from_values(&[5, 7, 6], 10, 100)
            .unwrap_err()
            .contains("did not increase"));
    }
}
