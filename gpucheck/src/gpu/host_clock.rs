//! Host-clock alignment: a session's clock sync ([`ikp_host::clock_sync`]) maps device
//! time onto the host's clocks within its error bound.
//!
//! Right after a session took its sync, a one-thread kernel stamps `%globaltimer` between
//! two reads of the host clocks, 32 times. The stamp happened inside the host interval
//! `[t0, t1]`, so its mapped time must lie in `[t0 - bound - tick, t1 + bound + tick]` on
//! both clocks, `bound` being the sync's half round trip and `tick` the timer's resolution
//! (a stamp lags true time by up to a tick, at the sync as here). The figures say how far
//! the mapped stamps fall from the intervals' midpoints, what a sync costs (a
//! `HostSession::reset` with and without one), and how far the mapping has drifted 200 ms
//! later (a figure only: one offset, no rate, so drift is expected).

use std::time::{Duration, Instant};

use ikp_device::{ClockSync, Layout};
use ikp_host::cuda::cudarc::driver::PushKernelArg;
use ikp_host::cuda::HostSession;
use ikp_host::{host_now, HostClock, HostInstant};

use super::{drv, grid, median, round, timer, Error, Gpu};
use crate::results::{Check, Status};

/// Stamps taken right after the sync.
const STAMPS: u32 = 32;

/// One stamp: host clocks around it and the device time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// Host clocks before the launch.
    pub before: HostInstant,
    /// `%globaltimer`, ns.
    pub device_ns: u64,
    /// Host clocks after the synchronize.
    pub after: HostInstant,
}

/// How the stamps compare with their host intervals.
#[derive(Clone, Debug, PartialEq)]
pub struct Alignment {
    /// Stamps outside `[t0 - slack, t1 + slack]` on either clock.
    pub outside: usize,
    /// Largest distance outside the interval, ns (0 when none).
    pub worst_outside_ns: u64,
    /// Median of mapped minus interval midpoint (realtime), ns.
    pub median_offset_ns: f64,
    /// Largest |mapped minus midpoint| (realtime), ns.
    pub max_abs_offset_ns: f64,
    /// Median host interval of the stamps, ns.
    pub median_interval_ns: f64,
}

/// Compares `stamps` mapped by `sync` with their host intervals widened by `slack` ns.
pub fn evaluate(sync: &ClockSync, stamps: &[Stamp], slack: u64) -> Alignment {
    let mut outside = 0;
    let mut worst = 0u64;
    let mut offsets = Vec::new();
    let mut intervals = Vec::new();
    for s in stamps {
        let mut out = false;
        for c in [HostClock::Realtime, HostClock::Monotonic] {
            let m = c.map(sync, s.device_ns);
            let (t0, t1) = (c.of(s.before), c.of(s.after));
            let below = t0.saturating_sub(slack).saturating_sub(m);
            let above = m.saturating_sub(t1.saturating_add(slack));
            if below > 0 || above > 0 {
                out = true;
                worst = worst.max(below.max(above));
            }
        }
        outside += out as usize;
        let (t0, t1) = (s.before.realtime_ns, s.after.realtime_ns);
        // Mapped - midpoint, from integer differences: realtime ns since 1970 are beyond a
        // double's exact integers (it would round them to 256 ns).
        let mapped = HostClock::Realtime.map(sync, s.device_ns);
        offsets.push(super::signed_ns(mapped, t0) - t1.saturating_sub(t0) as f64 / 2.0);
        intervals.push(t1.saturating_sub(t0) as f64);
    }
    let max_abs = offsets.iter().fold(0f64, |a, &o| a.max(o.abs()));
    Alignment {
        outside,
        worst_outside_ns: worst,
        median_offset_ns: median(&mut offsets),
        max_abs_offset_ns: max_abs,
        median_interval_ns: median(&mut intervals),
    }
}

fn stamps(gpu: &Gpu, n: u32) -> Result<Vec<Stamp>, Error> {
    let f = gpu.function("host_clock_stamp")?;
    let mut out = gpu.zeros::<u64>(n as usize)?;
    let mut hosts = Vec::new();
    for i in 0..n {
        let before = host_now();
        let mut b = gpu.stream.launch_builder(&f);
        b.arg(&mut out).arg(&i);
        // SAFETY: host_clock_stamp(u64*, unsigned) writes out[i], i < n.
        unsafe { b.launch(grid(1, 1)) }.map_err(drv("cuLaunchKernel (host_clock_stamp)"))?;
        gpu.stream
            .synchronize()
            .map_err(drv("cuStreamSynchronize"))?;
        hosts.push((before, host_now()));
    }
    let device = gpu.download(&out)?;
    let stamp = |((before, after), device_ns)| Stamp {
        before,
        device_ns,
        after,
    };
    Ok(hosts.into_iter().zip(device).map(stamp).collect())
}

/// Median time of `reps` resets of `session`, µs.
fn reset_us(session: &mut HostSession, reps: u32) -> Result<f64, Error> {
    let mut t = Vec::new();
    for _ in 0..reps {
        let s = Instant::now();
        session.reset().map_err(|e| e.to_string())?;
        t.push(s.elapsed().as_secs_f64() * 1e6);
    }
    Ok(median(&mut t))
}

/// The `host-clock` check.
pub fn check(gpu: &Gpu) -> Result<Check, Error> {
    let tick = timer::measure(gpu)?.ns.ceil() as u64;
    let layout = Layout {
        regions: vec!["r".into()],
        ..Layout::default()
    };
    let mut session = gpu.session(layout.clone())?;
    let sync = session
        .clock_sync()
        .ok_or("HostSession::new took no clock sync")?;
    let now = stamps(gpu, STAMPS)?;
    let bound = (sync.round_trip_ns / 2) as u64;
    let a = evaluate(&sync, &now, bound + tick);
    std::thread::sleep(Duration::from_millis(200));
    let later = evaluate(&sync, &stamps(gpu, 8)?, bound + tick);
    let with_sync = reset_us(&mut session, 20)?;
    let mut plain = HostSession::with_options(&gpu.stream, layout, super::NO_SYNC)
        .map_err(|e| e.to_string())?;
    let without_sync = reset_us(&mut plain, 20)?;
    let detail = format!(
        "{} of {STAMPS} stamps mapped outside their host interval widened by the sync's \
         bound ({bound} ns) and one tick ({tick} ns){}; median mapped - midpoint {:.0} ns",
        a.outside,
        if a.outside > 0 {
            format!(", worst by {} ns", a.worst_outside_ns)
        } else {
            String::new()
        },
        a.median_offset_ns
    );
    Ok(
        Check::new("host-clock", Status::of(a.outside == 0), true, detail)
            .figure("round_trip_ns", sync.round_trip_ns)
            .figure("error_bound_ns", bound)
            .figure("samples", sync.samples)
            .figure("tick_ns", tick)
            .figure("stamps_outside", a.outside)
            .figure("worst_outside_ns", a.worst_outside_ns)
            .figure("median_offset_ns", round(a.median_offset_ns, 0))
            .figure("max_abs_offset_ns", round(a.max_abs_offset_ns, 0))
            .figure("median_stamp_interval_ns", round(a.median_interval_ns, 0))
            .figure(
                "median_offset_after_200ms_ns",
                round(later.median_offset_ns, 0),
            )
            .figure("reset_with_sync_us", round(with_sync, 1))
            .figure("reset_without_sync_us", round(without_sync, 1)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(r: u64, m: u64) -> HostInstant {
        HostInstant {
            realtime_ns: r,
            monotonic_ns: m,
        }
    }

    #[test]
    fn stamps_inside_pass_and_outside_are_measured() {
        // Device g is realtime g + 1_000 and monotonic g + 500.
        let sync = ClockSync {
            host_realtime_ns: 2_000,
            host_monotonic_ns: 1_500,
            device_globaltimer_ns: 1_000,
            round_trip_ns: 100,
            samples: 4,
        };
        let inside = Stamp {
            before: at(10_000, 9_500),
            device_ns: 9_100, // realtime 10_100, monotonic 9_600
            after: at(10_200, 9_700),
        };
        let a = evaluate(&sync, &[inside], 0);
        assert_eq!((a.outside, a.worst_outside_ns), (0, 0));
        assert_eq!(a.median_offset_ns, 0.0);
        assert_eq!(a.median_interval_ns, 200.0);
        let late = Stamp {
            device_ns: 9_350, // realtime 10_350: 150 past t1
            ..inside
        };
        let a = evaluate(&sync, &[inside, late], 100);
        assert_eq!((a.outside, a.worst_outside_ns), (1, 50));
        assert_eq!(a.max_abs_offset_ns, 250.0);
        assert_eq!(evaluate(&sync, &[late], 150).outside, 0);
    }
}
