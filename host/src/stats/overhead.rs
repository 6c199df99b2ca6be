//! How much instrumentation slows a kernel down: per-repetition slowdowns against an
//! uninstrumented baseline and their mean, standard deviation, median, and the 95 %
//! confidence interval of the mean.
//!
//! The method is the one the tt-metal counter proposal uses to compare profiler zones with
//! wait counters: run baseline and instrumented builds the same number of times, pair
//! repetition `i` of one with repetition `i` of the other, take each pair's slowdown
//! `(instrumented - baseline) / baseline * 100` and report the distribution of those
//! percentages, per kernel and pooled over all kernels. The median matters as much as the
//! mean: a few noisy repetitions move the mean, and the spread says whether a small mean is
//! a real cost or noise. Pairing by repetition (rather than against the baseline's mean)
//! keeps slow drifts of the machine, which hit both builds of a pair, out of the figure
//! when the builds are run interleaved.

use std::fmt;

/// Why slowdowns could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OverheadError {
    /// No measurements.
    #[error("no measurements")]
    Empty,
    /// Baseline and instrumented runs must pair up one to one.
    #[error("{baseline} baseline measurements but {instrumented} instrumented ones; they pair by repetition")]
    LengthMismatch {
        /// Baseline measurements.
        baseline: usize,
        /// Instrumented measurements.
        instrumented: usize,
    },
    /// A baseline time of zero or less cannot be divided by.
    #[error("baseline measurement {index} is {value}, not a positive time")]
    NonPositiveBaseline {
        /// Repetition.
        index: usize,
        /// The value.
        value: f64,
    },
    /// NaN or infinity among the inputs.
    #[error("{which} measurement {index} is not finite")]
    NotFinite {
        /// `baseline`, `instrumented` or `slowdown`.
        which: &'static str,
        /// Repetition.
        index: usize,
    },
}

/// Per-repetition slowdowns in percent: `(instrumented[i] - baseline[i]) / baseline[i] *
/// 100`. Negative values (the instrumented run was faster) are kept: they are noise, and
/// dropping them would bias the mean upwards.
pub fn slowdowns(baseline: &[f64], instrumented: &[f64]) -> Result<Vec<f64>, OverheadError> {
    if baseline.len() != instrumented.len() {
        return Err(OverheadError::LengthMismatch {
            baseline: baseline.len(),
            instrumented: instrumented.len(),
        });
    }
    if baseline.is_empty() {
        return Err(OverheadError::Empty);
    }
    baseline
        .iter()
        .zip(instrumented)
        .enumerate()
        .map(|(index, (&b, &t))| {
            for (which, v) in [("baseline", b), ("instrumented", t)] {
                if !v.is_finite() {
                    return Err(OverheadError::NotFinite { which, index });
                }
            }
            if b <= 0.0 {
                return Err(OverheadError::NonPositiveBaseline { index, value: b });
            }
            Ok((t - b) / b * 100.0)
        })
        .collect()
}

/// Summary of a set of slowdowns, in percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowdownStats {
    /// Number of slowdowns summarized.
    pub n: usize,
    /// Mean slowdown.
    pub mean: f64,
    /// Sample standard deviation of the slowdowns around their mean (n - 1 in the
    /// denominator; 0 for a single value).
    pub std: f64,
    /// Median slowdown (mean of the two middle values for an even count).
    pub median: f64,
    /// Two-sided 95 % confidence interval of the mean, `mean -/+ t * std / sqrt(n)` with
    /// Student's t for `n - 1` degrees of freedom (the slowdowns of paired repetitions
    /// are taken as independent draws); `(mean, mean)` for a single value. "Within 1 % of
    /// the baseline" is then a statement with a stated confidence, where a bare mean or
    /// median would trip on noise alone.
    pub ci95: (f64, f64),
}

/// Student's t quantile for a two-sided 95 % interval with `df` degrees of freedom: the
/// exact values (to 3 decimals) up to 10, then the Cornish-Fisher expansion around the
/// normal quantile to its second term (within 0.1 % of the exact value from 11 on).
pub fn t95(df: usize) -> f64 {
    const TABLE: [f64; 10] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    ];
    if df == 0 {
        return f64::INFINITY;
    }
    if df <= TABLE.len() {
        return TABLE[df - 1];
    }
    let (z, v) = (1.959_964_f64, df as f64);
    z + (z.powi(3) + z) / (4.0 * v)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * v * v)
}

impl SlowdownStats {
    /// Summarizes `slowdowns` (percentages, e.g. from [`slowdowns`]).
    pub fn of(slowdowns: &[f64]) -> Result<SlowdownStats, OverheadError> {
        if slowdowns.is_empty() {
            return Err(OverheadError::Empty);
        }
        if let Some(index) = slowdowns.iter().position(|v| !v.is_finite()) {
            return Err(OverheadError::NotFinite {
                which: "slowdown",
                index,
            });
        }
        let n = slowdowns.len();
        let mean = slowdowns.iter().sum::<f64>() / n as f64;
        let std = if n > 1 {
            let ss: f64 = slowdowns.iter().map(|v| (v - mean) * (v - mean)).sum();
            (ss / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let mut sorted = slowdowns.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let half = if n > 1 {
            t95(n - 1) * std / (n as f64).sqrt()
        } else {
            0.0
        };
        Ok(SlowdownStats {
            n,
            mean,
            std,
            median,
            ci95: (mean - half, mean + half),
        })
    }

    /// Pairs `baseline` and `instrumented` by repetition and summarizes the slowdowns.
    pub fn paired(baseline: &[f64], instrumented: &[f64]) -> Result<SlowdownStats, OverheadError> {
        SlowdownStats::of(&slowdowns(baseline, instrumented)?)
    }
}

impl fmt::Display for SlowdownStats {
    /// `mean +1.234%  std 0.567%  median +0.890%  (n = 30)`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "mean {:+.3}%  std {:.3}%  median {:+.3}%  (n = {})",
            self.mean, self.std, self.median, self.n
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn slowdowns_pair_by_repetition() {
        let s = slowdowns(&[100.0, 200.0, 50.0], &[110.0, 190.0, 50.0]).unwrap();
        assert!(
            close(s[0], 10.0) && close(s[1], -5.0) && close(s[2], 0.0),
            "{s:?}"
        );
    }

    #[test]
    fn mean_sample_std_and_median() {
        // Slowdowns 1, 2, 3, 4, 10: mean 4, sample variance (9+4+1+0+36)/4 = 12.5.
        let st = SlowdownStats::of(&[4.0, 1.0, 10.0, 3.0, 2.0]).unwrap();
        assert_eq!(st.n, 5);
        assert!(close(st.mean, 4.0));
        assert!(close(st.std, 12.5f64.sqrt()));
        assert!(close(st.median, 3.0));
        // Even count: mean of the middle two; one value: no spread.
        assert!(close(
            SlowdownStats::of(&[1.0, 5.0, 2.0, 9.0]).unwrap().median,
            3.5
        ));
        let one = SlowdownStats::of(&[-2.0]).unwrap();
        assert!(close(one.std, 0.0) && close(one.median, -2.0));
        assert_eq!(one.ci95, (-2.0, -2.0));
        // n = 5: mean 4 -/+ 2.776 * sqrt(12.5) / sqrt(5).
        let half = 2.776 * 12.5f64.sqrt() / 5f64.sqrt();
        assert!(close(st.ci95.0, 4.0 - half) && close(st.ci95.1, 4.0 + half));
    }

    #[test]
    fn t_quantiles_match_the_tables() {
        // Two-sided 95 % quantiles from the standard tables.
        for (df, t) in [
            (1, 12.706),
            (10, 2.228),
            (11, 2.201),
            (20, 2.086),
            (29, 2.045),
            (60, 2.000),
            (149, 1.976),
        ] {
            assert!(
                (t95(df) - t).abs() < 0.002 * t,
                "df {df}: {} vs {t}",
                t95(df)
            );
        }
        assert!(t95(100_000) > 1.959 && t95(100_000) < 1.961);
        assert!(t95(0).is_infinite());
    }

    #[test]
    fn paired_is_the_summary_of_the_slowdowns() {
        let base = [10.0, 10.0, 10.0, 10.0];
        let inst = [10.5, 11.0, 10.0, 12.0];
        let st = SlowdownStats::paired(&base, &inst).unwrap();
        assert!(close(st.mean, 8.75) && close(st.median, 7.5), "{st:?}");
        assert_eq!(
            st.to_string(),
            format!("mean +8.750%  std {:.3}%  median +7.500%  (n = 4)", st.std)
        );
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        assert_eq!(slowdowns(&[], &[]), Err(OverheadError::Empty));
        assert_eq!(SlowdownStats::of(&[]), Err(OverheadError::Empty));
        assert_eq!(
            slowdowns(&[1.0], &[1.0, 2.0]),
            Err(OverheadError::LengthMismatch {
                baseline: 1,
                instrumented: 2
            })
        );
        assert_eq!(
            slowdowns(&[1.0, 0.0], &[1.0, 1.0]),
            Err(OverheadError::NonPositiveBaseline {
                index: 1,
                value: 0.0
            })
        );
        assert!(matches!(
            slowdowns(&[1.0], &[f64::NAN]),
            Err(OverheadError::NotFinite {
                which: "instrumented",
                ..
            })
        ));
        assert!(matches!(
            SlowdownStats::of(&[1.0, f64::INFINITY]),
            Err(OverheadError::NotFinite { index: 1, .. })
        ));
    }
}
