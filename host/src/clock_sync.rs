//! One time base with the host: reading the host's clocks, choosing the clock sync of a
//! launch from several readings, and mapping device time onto a host clock.
//!
//! A **reading** is the host's `CLOCK_REALTIME` and `CLOCK_MONOTONIC` read just before a
//! tiny kernel that stores `%globaltimer`, the device time it stored, and both host clocks
//! read again once the kernel finished ([`HostSession`](crate::cuda::HostSession) takes
//! them). The device read its timer somewhere inside the host interval, so pairing it
//! with the interval's midpoint is wrong by at most half the interval (the round trip).
//! [`select`] keeps the reading with the shortest round trip as the launch's
//! [`ClockSync`] (header words 8..=11, see [`ikp_device::wire`]); its error bound is
//! `round_trip_ns / 2`, plus one tick of `%globaltimer` (1 µs on some GPUs, 32 ns on
//! recent ones) and the drift of the two clocks between the sync and the event
//! (a single offset, no rate: resync on [`HostSession::reset`](crate::cuda::HostSession::reset)
//! for long runs).

pub use ikp_device::ClockSync;

/// A host clock device time can be mapped onto.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum HostClock {
    /// CLOCK_REALTIME: Unix ns (the PyTorch profiler's and Kineto's clock).
    ///
    /// What wall-clock logs use too. Steps when the system time is set.
    #[default]
    Realtime,
    /// CLOCK_MONOTONIC.
    ///
    /// ns since an unspecified point (usually boot), never steps.
    Monotonic,
}

impl HostClock {
    /// Host time on this clock of device `%globaltimer` ns `g`, by `sync`.
    pub fn map(self, sync: &ClockSync, g: u64) -> u64 {
        match self {
            HostClock::Realtime => sync.device_to_realtime(g),
            HostClock::Monotonic => sync.device_to_monotonic(g),
        }
    }

    /// This clock's reading in `at`.
    pub fn of(self, at: HostInstant) -> u64 {
        match self {
            HostClock::Realtime => at.realtime_ns,
            HostClock::Monotonic => at.monotonic_ns,
        }
    }

    /// `realtime` or `monotonic`, as in the CLI flags and the summary JSON.
    pub fn name(self) -> &'static str {
        match self {
            HostClock::Realtime => "realtime",
            HostClock::Monotonic => "monotonic",
        }
    }
}

/// The host's two clocks read together (realtime first, then monotonic: a few ns apart).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostInstant {
    /// `CLOCK_REALTIME`, ns since the Unix epoch.
    pub realtime_ns: u64,
    /// `CLOCK_MONOTONIC`, ns.
    pub monotonic_ns: u64,
}

/// Reads the host's `CLOCK_REALTIME` and `CLOCK_MONOTONIC` (Unix only; 0 where a clock
/// cannot be read).
pub fn host_now() -> HostInstant {
    HostInstant {
        realtime_ns: read_clock(libc::CLOCK_REALTIME),
        monotonic_ns: read_clock(libc::CLOCK_MONOTONIC),
    }
}

fn read_clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime writes only into it.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    if rc != 0 || ts.tv_sec < 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// One reading: host clocks before the probe kernel's launch, the `%globaltimer` it
/// stored, host clocks after its stream synchronized.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncReading {
    /// Host clocks read before the launch.
    pub before: HostInstant,
    /// The device's `%globaltimer`, ns (0: not read).
    pub device_ns: u64,
    /// Host clocks read after the synchronize.
    pub after: HostInstant,
}

impl SyncReading {
    /// The round trip (monotonic ns, the clock that never steps), or `None` when the
    /// reading is unusable: no device time, no realtime, a host clock that went back
    /// (realtime set during the reading), or a round trip beyond the header's 32 bits.
    pub fn round_trip(&self) -> Option<u32> {
        let (b, a) = (self.before, self.after);
        if self.device_ns == 0
            || b.realtime_ns == 0
            || a.realtime_ns < b.realtime_ns
            || a.monotonic_ns < b.monotonic_ns
        {
            return None;
        }
        u32::try_from(a.monotonic_ns - b.monotonic_ns).ok()
    }
}

/// The clock sync from `readings`: the usable reading with the shortest round trip (the
/// first of equals), the device time paired with the midpoint of each host clock's
/// interval; `samples` counts every reading taken, usable or not. `None` when no reading
/// is usable.
pub fn select(readings: &[SyncReading]) -> Option<ClockSync> {
    let (best, rt) = readings
        .iter()
        .filter_map(|r| r.round_trip().map(|rt| (r, rt)))
        .min_by_key(|&(_, rt)| rt)?;
    let mid = |b: u64, a: u64| b + (a - b) / 2;
    Some(ClockSync {
        host_realtime_ns: mid(best.before.realtime_ns, best.after.realtime_ns),
        host_monotonic_ns: mid(best.before.monotonic_ns, best.after.monotonic_ns),
        device_globaltimer_ns: best.device_ns,
        round_trip_ns: rt,
        samples: u32::try_from(readings.len()).unwrap_or(u32::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(b: (u64, u64), g: u64, a: (u64, u64)) -> SyncReading {
        SyncReading {
            before: HostInstant {
                realtime_ns: b.0,
                monotonic_ns: b.1,
            },
            device_ns: g,
            after: HostInstant {
                realtime_ns: a.0,
                monotonic_ns: a.1,
            },
        }
    }

    #[test]
    fn keeps_the_shortest_round_trip_paired_with_its_midpoints() {
        let rs = [
            reading((1_000, 500), 9_000, (1_400, 900)),      // 400
            reading((2_000, 1_500), 10_050, (2_101, 1_601)), // 101: the best
            reading((3_000, 2_500), 11_000, (3_200, 2_700)), // 200
        ];
        let s = select(&rs).unwrap();
        assert_eq!(s.round_trip_ns, 101);
        assert_eq!(s.host_realtime_ns, 2_050);
        assert_eq!(s.host_monotonic_ns, 1_550);
        assert_eq!(s.device_globaltimer_ns, 10_050);
        assert_eq!(s.samples, 3);
        // Device time 10_050 + 7 is realtime 2_057 and monotonic 1_557.
        assert_eq!(HostClock::Realtime.map(&s, 10_057), 2_057);
        assert_eq!(HostClock::Monotonic.map(&s, 10_043), 1_543);
    }

    #[test]
    fn first_of_equal_round_trips_wins() {
        let rs = [
            reading((1_000, 100), 5, (1_010, 110)),
            reading((2_000, 200), 6, (2_010, 210)),
        ];
        assert_eq!(select(&rs).unwrap().device_globaltimer_ns, 5);
    }

    #[test]
    fn unusable_readings_are_skipped_but_counted() {
        let rs = [
            reading((1_000, 100), 0, (1_001, 101)),       // no device time
            reading((5_000, 100), 7, (4_000, 102)),       // realtime stepped back
            reading((1_000, 300), 8, (1_002, 299)),       // monotonic went back
            reading((0, 100), 9, (3, 103)),               // no realtime
            reading((1_000, 0), 10, (1_000, 1u64 << 33)), // round trip over 32 bits
            reading((7_000, 700), 11, (7_050, 750)),      // the only usable one
        ];
        let s = select(&rs).unwrap();
        assert_eq!(s.device_globaltimer_ns, 11);
        assert_eq!(s.round_trip_ns, 50);
        assert_eq!(s.samples, 6);
        assert_eq!(select(&rs[..5]), None);
        assert_eq!(select(&[]), None);
    }

    #[test]
    fn host_clocks_are_read_and_advance() {
        let a = host_now();
        let b = host_now();
        // 2020-01-01 in Unix ns: any host running this has a later realtime.
        assert!(a.realtime_ns > 1_577_836_800_000_000_000);
        assert!(a.monotonic_ns > 0);
        assert!(b.monotonic_ns >= a.monotonic_ns);
    }
}
