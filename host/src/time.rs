//! Time as the model holds it, and every conversion of it to other units.
//!
//! The model keeps integer nanoseconds from decode to the writers: a [`Timestamp`] is a
//! point on one launch's time axis (the GPU's `%globaltimer` epoch for native buffers),
//! a [`DurationNs`] the length between two of them. Both are `u64` so that the model's
//! columns stay plain arrays the decoder fills and the writers stream; the two names say
//! which one a value is. Units other than ns (µs in the Chrome trace, ms in the workbook,
//! a user's `--scale`) and the human form of a duration are made here, not in each
//! writer.

/// A point in time: integer ns on a launch's axis (see
/// [`Source::time_base`](crate::Source::time_base) for its origin).
pub type Timestamp = u64;

/// A length of time in integer ns: the difference of two [`Timestamp`]s.
pub type DurationNs = u64;

/// Nanoseconds per microsecond.
pub const NS_PER_US: f64 = 1e3;
/// Nanoseconds per millisecond.
pub const NS_PER_MS: f64 = 1e6;
/// Nanoseconds per second.
pub const NS_PER_S: f64 = 1e9;

/// `ns` in microseconds.
pub fn us(ns: f64) -> f64 {
    ns / NS_PER_US
}

/// `ns` in milliseconds.
pub fn ms(ns: f64) -> f64 {
    ns / NS_PER_MS
}

/// `ns` multiplied by a writer's `scale` (ns to the user's unit).
pub fn scaled(ns: DurationNs, scale: f64) -> f64 {
    ns as f64 * scale
}

/// A duration (ns) as people read it, in the largest unit below it: `950 ns`,
/// `12.35 µs`, `4.56 ms`, `1.234 s`. Every output that shows durations to a person (the
/// terminal table, the HTML report, the charts) formats them here, so one figure reads
/// the same everywhere.
pub fn format_duration(ns: f64) -> String {
    let a = ns.abs();
    if a < NS_PER_US {
        format!("{ns:.0} ns")
    } else if a < NS_PER_MS {
        format!("{:.2} µs", us(ns))
    } else if a < NS_PER_S {
        format!("{:.2} ms", ms(ns))
    } else {
        format!("{:.3} s", ns / NS_PER_S)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_the_largest_unit_below_them() {
        assert_eq!(format_duration(0.0), "0 ns");
        assert_eq!(format_duration(999.0), "999 ns");
        assert_eq!(format_duration(12_345.0), "12.35 µs");
        assert_eq!(format_duration(4_560_000.0), "4.56 ms");
        assert_eq!(format_duration(1_234_000_000.0), "1.234 s");
        assert_eq!(format_duration(-1500.0), "-1.50 µs");
        assert_eq!(scaled(1500, 1e-3), 1.5);
        assert_eq!(us(1500.0), 1.5);
        assert_eq!(ms(1_500_000.0), 1.5);
    }
}
