//! Lanes over time: when each lane ran (its lifetime, init to finalize where the format
//! records both), how the lanes came in waves, and the tail at the end of the launch when
//! fewer of them ran than at the busiest moment.
//!
//! - A lane **runs** over `[start, end)` ([`Lane::start`], [`Lane::end`]); at equal times
//!   the lanes that end are counted out before those that start come in, as the Perfetto
//!   trace's active-lanes counters count them.
//! - **Peak**: the most lanes running at once.
//! - **Waves**: lanes by start time (then id); a lane joins the current wave when it starts
//!   before the earliest end among the wave's lanes so far, and opens the next wave
//!   otherwise. The blocks of a grid larger
//!   than the GPU holds at once come in waves as earlier blocks finish; a persistent
//!   kernel's lanes are one wave.
//! - **Tail**: from the moment the number of running lanes last fell below the peak to the
//!   last lane's end: the time the launch ran with the GPU no longer as full as it was at
//!   its busiest (a partial last wave, or lanes that straggle). 0 when the lanes that ran
//!   at the peak all ended together at the end.

use crate::model::{Lane, Trace};
use crate::time::{DurationNs, Timestamp};

/// One wave of lanes (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wave {
    /// Lanes in it.
    pub lanes: u64,
    /// Its first lane's start, ns.
    pub start: Timestamp,
    /// Its last lane's end, ns.
    pub end: Timestamp,
}

/// How a trace's lanes ran over time (see the module docs). Times are the model's (ns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneWaves {
    /// Whether the lanes' bounds are their recorded init and finalize (the native format)
    /// rather than their first and last records.
    pub init_finalize: bool,
    /// The earliest lane start.
    pub start: Timestamp,
    /// The latest lane end.
    pub end: Timestamp,
    /// The most lanes running at once.
    pub peak: u64,
    /// The waves, in time order.
    pub waves: Vec<Wave>,
    /// The wave of each lane, indexed like [`Trace::lanes`].
    pub wave_of: Vec<u32>,
    /// When the running lanes last fell below [`LaneWaves::peak`] (`end` when they never
    /// did before the end).
    pub tail_start: Timestamp,
}

impl LaneWaves {
    /// The lanes of `trace` over time; `None` without lanes.
    pub fn of(trace: &Trace) -> Option<LaneWaves> {
        let lanes = &trace.lanes;
        let end_of = |l: &Lane| l.end.max(l.start);
        let start = lanes.iter().map(|l| l.start).min()?;
        let end = lanes.iter().map(end_of).max()?;

        // Peak and tail: the running count after all edges at each distinct time.
        let mut edges: Vec<(Timestamp, i64)> = (lanes.iter())
            .flat_map(|l| [(l.start, 1), (end_of(l), -1)])
            .collect();
        edges.sort_unstable();
        let mut steps: Vec<(Timestamp, i64)> = Vec::new();
        let mut running = 0;
        for (i, &(t, d)) in edges.iter().enumerate() {
            running += d;
            if edges.get(i + 1).is_none_or(|n| n.0 != t) {
                steps.push((t, running));
            }
        }
        let peak = steps.iter().map(|s| s.1).max().unwrap_or(0);
        let last_at_peak = steps.iter().rposition(|s| s.1 == peak).unwrap_or(0);
        let tail_start = steps.get(last_at_peak + 1).map_or(end, |s| s.0);

        // Waves, lanes by start.
        let mut order: Vec<usize> = (0..lanes.len()).collect();
        order.sort_unstable_by_key(|&p| (lanes[p].start, lanes[p].id));
        let mut waves: Vec<Wave> = Vec::new();
        let mut wave_of = vec![0u32; lanes.len()];
        let mut first_end = Timestamp::MAX;
        for p in order {
            let l = &lanes[p];
            match waves.last_mut() {
                Some(w) if l.start < first_end => {
                    w.lanes += 1;
                    w.end = w.end.max(end_of(l));
                    first_end = first_end.min(end_of(l));
                }
                _ => {
                    waves.push(Wave {
                        lanes: 1,
                        start: l.start,
                        end: end_of(l),
                    });
                    first_end = end_of(l);
                }
            }
            wave_of[p] = waves.len() as u32 - 1;
        }
        Some(LaneWaves {
            init_finalize: trace.source.format.records_lane_lifetimes(),
            start,
            end,
            peak: peak as u64,
            waves,
            wave_of,
            tail_start,
        })
    }

    /// The tail's length: from [`LaneWaves::tail_start`] to the end.
    pub fn tail(&self) -> DurationNs {
        self.end - self.tail_start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(lanes: &[(u64, u64)]) -> Trace {
        let lanes = (lanes.iter().enumerate())
            .map(|(i, &(start, end))| Lane {
                id: i as u32,
                block: i as u32,
                start,
                end,
                finalized: true,
                ..Lane::default()
            })
            .collect();
        Trace {
            lanes,
            ..Trace::default()
        }
    }

    #[test]
    fn two_waves_and_a_partial_last_one_make_a_tail() {
        // Two lanes run at once (the peak), the next two start as they end, the last one
        // runs alone: the tail is from 210 (when two running fell to one) to 300.
        let t = trace(&[(0, 100), (0, 110), (100, 200), (110, 210), (200, 300)]);
        let w = LaneWaves::of(&t).unwrap();
        assert_eq!((w.start, w.end, w.peak), (0, 300, 2));
        let waves: Vec<(u64, u64, u64)> =
            w.waves.iter().map(|v| (v.lanes, v.start, v.end)).collect();
        assert_eq!(waves, [(2, 0, 110), (2, 100, 210), (1, 200, 300)]);
        assert_eq!(w.wave_of, [0, 0, 1, 1, 2]);
        assert_eq!((w.tail_start, w.tail()), (210, 90));
        assert!(w.init_finalize);
    }

    #[test]
    fn lanes_that_end_together_have_no_tail_and_one_wave() {
        let t = trace(&[(0, 500), (10, 500), (20, 500)]);
        let w = LaneWaves::of(&t).unwrap();
        assert_eq!((w.peak, w.waves.len(), w.tail()), (3, 1, 0));
        assert!(LaneWaves::of(&Trace::default()).is_none());
    }

    #[test]
    fn a_lane_that_ends_as_another_starts_is_not_running_beside_it() {
        // Ends before starts at equal times: one lane running at a time, two waves.
        let t = trace(&[(0, 100), (100, 200)]);
        let w = LaneWaves::of(&t).unwrap();
        assert_eq!((w.peak, w.waves.len(), w.tail()), (1, 2, 0));
    }
}
