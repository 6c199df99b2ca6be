//! Statistics of a decoded trace: duration statistics of paired regions (moments, exact
//! percentiles, histograms) and, in [`Shares`], self and inclusive time per region with
//! the lane time they are shares of, and, in [`LaneWaves`], when the lanes ran (waves, the
//! tail), gathered once per trace in [`TraceStats`]. Reads the
//! model only; the analyses and writers build on it. [`overhead`] is the statistics of run-time slowdowns (the GPU overhead bench's
//! paired repetitions).
//!
//! Percentiles are exact: computed from every duration (sorted), not from a histogram,
//! by linear interpolation between closest ranks (NumPy's default, Hyndman & Fan type
//! 7): `p` maps to rank `h = p/100 * (n - 1)`, and the value is
//! `x[floor h] + (h - floor h) * (x[floor h + 1] - x[floor h])`.

mod lanes;
pub mod overhead;
mod shares;
mod summary;

pub use lanes::{LaneWaves, Wave};
pub use shares::{lane_time, self_intervals, self_times, RegionTime, Row, Shares, OUTSIDE};
pub use summary::{
    AsyncRegionStats, AsyncStats, LaneSetStats, RegionStats, TraceStats, UnmatchedRegion,
};

/// The percentiles every summary reports, with their JSON keys.
pub const PERCENTILES: [(&str, f64); 8] = [
    ("p5", 5.0),
    ("p10", 10.0),
    ("p25", 25.0),
    ("p50", 50.0),
    ("p75", 75.0),
    ("p90", 90.0),
    ("p95", 95.0),
    ("p99", 99.0),
];

/// Statistics of a set of durations, in ns (unscaled).
#[derive(Clone, Debug, PartialEq)]
pub struct DurStats {
    /// Number of durations.
    pub count: u64,
    /// Their sum.
    pub total: u64,
    /// Mean.
    pub mean: f64,
    /// Population variance (divides by n).
    pub var_pop: f64,
    /// Sample variance (divides by n - 1; 0 when n = 1).
    pub var_sample: f64,
    /// Coefficient of variation: population std / mean (0 when the mean is 0).
    pub cv: f64,
    /// Smallest.
    pub min: u64,
    /// Largest.
    pub max: u64,
    /// [`PERCENTILES`], in order.
    pub percentiles: [f64; 8],
}

/// Exact percentile `p` (0..=100) of ascending `sorted` (non-empty).
pub fn percentile(sorted: &[u64], p: f64) -> f64 {
    let h = p / 100.0 * (sorted.len() - 1) as f64;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    let (a, b) = (sorted[lo] as f64, sorted[hi] as f64);
    a + (h - lo as f64) * (b - a)
}

/// Statistics of ascending `sorted` (non-empty).
pub fn dur_stats(sorted: &[u64]) -> DurStats {
    debug_assert!(!sorted.is_empty());
    let n = sorted.len() as f64;
    let total: u64 = sorted.iter().sum();
    let mean = total as f64 / n;
    let ss: f64 = (sorted.iter())
        .map(|&d| (d as f64 - mean) * (d as f64 - mean))
        .sum();
    let var_pop = ss / n;
    let var_sample = if sorted.len() > 1 {
        ss / (n - 1.0)
    } else {
        0.0
    };
    DurStats {
        count: sorted.len() as u64,
        total,
        mean,
        var_pop,
        var_sample,
        cv: if mean > 0.0 {
            var_pop.sqrt() / mean
        } else {
            0.0
        },
        min: sorted[0],
        max: sorted[sorted.len() - 1],
        percentiles: PERCENTILES.map(|(_, p)| percentile(sorted, p)),
    }
}

/// Equal-width histogram of durations over `[min, max]`, as probabilities.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    /// Number of bins.
    pub bins: u32,
    /// Left edge of the first bin (the smallest duration), ns.
    pub min: u64,
    /// Right edge of the last bin (the largest duration), ns.
    pub max: u64,
    /// Fraction of durations per bin; sums to 1. Bin `i` holds
    /// `min + i*w <= d < min + (i+1)*w` with `w = (max - min) / bins`, the last bin also
    /// holds `max`; when `min == max` everything is in bin 0.
    pub prob: Vec<f64>,
}

/// Histogram of ascending `sorted` (non-empty) with `bins` (at least 1) bins.
pub fn histogram(sorted: &[u64], bins: u32) -> Histogram {
    let bins = bins.max(1);
    let (min, max) = (sorted[0], sorted[sorted.len() - 1]);
    let mut counts = vec![0u64; bins as usize];
    let span = (max - min) as u128;
    for &d in sorted {
        // Zero span (all equal): everything in bin 0.
        let i = ((d - min) as u128 * bins as u128)
            .checked_div(span)
            .map_or(0, |i| i.min(bins as u128 - 1) as usize);
        counts[i] += 1;
    }
    let n = sorted.len() as f64;
    Histogram {
        bins,
        min,
        max,
        prob: counts.into_iter().map(|c| c as f64 / n).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_between_closest_ranks() {
        let v = [10, 20, 30, 40];
        assert_eq!(percentile(&v, 0.0), 10.0);
        assert_eq!(percentile(&v, 100.0), 40.0);
        assert_eq!(percentile(&v, 50.0), 25.0);
        assert!((percentile(&v, 5.0) - 11.5).abs() < 1e-9);
        assert_eq!(percentile(&[7], 99.0), 7.0);
    }

    #[test]
    fn moments_match_hand_computation() {
        let s = dur_stats(&[2, 4, 4, 4, 5, 5, 7, 9]);
        assert_eq!((s.count, s.total, s.min, s.max), (8, 40, 2, 9));
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.var_pop, 4.0);
        assert!((s.var_sample - 32.0 / 7.0).abs() < 1e-12);
        assert_eq!(s.cv, 0.4);
        let one = dur_stats(&[3]);
        assert_eq!((one.var_pop, one.var_sample), (0.0, 0.0));
    }

    #[test]
    fn histogram_bins_cover_min_to_max_and_sum_to_one() {
        let h = histogram(&[0, 1, 2, 3, 10], 5);
        assert_eq!(h.prob, [0.4, 0.4, 0.0, 0.0, 0.2]);
        let flat = histogram(&[4, 4], 3);
        assert_eq!(flat.prob, [1.0, 0.0, 0.0]);
        assert!((histogram(&[1, 5, 9, 200], 128).prob.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
