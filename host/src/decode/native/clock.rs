//! Clock mode's calibration (module docs of [`super`], `# Clock mode`): the cycles-to-ns
//! ratio each lane converts with, its own or the pool's, and a record's cost in ns.

use super::super::set_aside::{Judged, OWN_RATIO_MIN_NS};
use super::super::NoCalibration;
use super::{LaneInfo, Prepared};
use crate::model::ClockCalibration;

/// `(ns, cycles)` elapsed between a decoded finalized lane's start and end, if both
/// advanced (ns may be 0: a lane shorter than one globaltimer tick).
pub(super) fn pair(i: &LaneInfo) -> Option<(u64, u64)> {
    if !i.live() || !i.finalized || i.end_backward || i.end_clk <= i.start_clk {
        return None;
    }
    Some((i.end_gt - i.start_gt, i.end_clk - i.start_clk))
}

/// The lane's own `(ns, cycles)`, if it spans at least [`OWN_RATIO_MIN_NS`].
pub(super) fn own_ratio(i: &LaneInfo) -> Option<(u64, u64)> {
    pair(i).filter(|&(ns, _)| ns >= OWN_RATIO_MIN_NS)
}

/// The pooled calibration of the lanes `infos`, and how many lanes use which ratio.
pub(super) fn calibration(infos: &[LaneInfo]) -> Result<ClockCalibration, NoCalibration> {
    let (mut ns, mut cycles, mut lanes) = (0u128, 0u128, 0u64);
    for (n, c) in infos.iter().filter_map(pair) {
        (ns, cycles, lanes) = (ns + n as u128, cycles + c as u128, lanes + 1);
    }
    if lanes == 0 {
        return Err(NoCalibration::NoPair);
    }
    if ns == 0 {
        let cycles = u64::try_from(cycles).unwrap_or(u64::MAX);
        return Err(NoCalibration::WithinOneTick { lanes, cycles });
    }
    // `Cycles::ns` multiplies in 128 bits by a 64-bit numerator: halve both sums until
    // they fit (the ratio keeps at least 63 significant bits).
    while ns > u64::MAX as u128 || cycles > u64::MAX as u128 {
        (ns, cycles) = (ns >> 1, cycles >> 1);
    }
    let used = infos.iter().filter(|i| i.live());
    let own = used.clone().filter(|i| own_ratio(i).is_some()).count() as u64;
    Ok(ClockCalibration {
        pooled_ns: ns as u64,
        // Non-zero: at least one cycle per pooled lane, unless halved away by an absurd
        // ns sum (garbage); one cycle then keeps the division defined.
        pooled_cycles: (cycles as u64).max(1),
        pool_lanes: lanes,
        own_ratio_lanes: own,
        pooled_ratio_lanes: used.count() as u64 - own,
    })
}

impl Prepared {
    /// A lane's cost of one record as `(cycles, ns, per cycles)`: its `CALIB` cycles and
    /// the ratio its stamps convert with (module docs, `# Overhead correction`); `None`
    /// when the cost was not measured or no ratio is known.
    pub(super) fn record_cost(&self, i: &LaneInfo) -> Option<(u64, u64, u64)> {
        let c = self.cost_clock.filter(|_| i.calib > 0)?;
        let (num, den) = match self.clock.filter(|_| i.clock()) {
            Some(_) => own_ratio(i).unwrap_or((c.pooled_ns, c.pooled_cycles)),
            None => (c.pooled_ns, c.pooled_cycles),
        };
        Some((i.calib as u64, num, den))
    }
}
