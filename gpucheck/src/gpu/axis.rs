//! One time axis: lanes on different SMs that stamp the same moment get the same time.
//!
//! A block per SM (all resident at once) meets at a grid-wide rendezvous: each adds itself
//! to a global counter and spins until every block has; then it stamps an instant and
//! reads `%globaltimer` itself. Repeated for several rounds. The instants of one round are
//! released by one store that every SM sees within a poll of global memory, so their
//! spread is the timer's disagreement across SMs plus that release. The allowance,
//! [`allowance_ns`], is two ticks (two stamps of the same moment, each rounded down to its
//! tick, differ by up to one, and a tick boundary between two SMs' reads adds another)
//! plus the release: one global-memory round trip from the farthest SM
//! ([`RELEASE_BASE_NS`]) plus [`RELEASE_PER_SM_NS`] for each spinning SM, whose polls of
//! the one counter the memory system serves one after another. A lane that is off by more
//! (a per-SM offset, or a decoder that shifts lanes) fails it. (An H100's 132 SMs measured
//! spreads of 160 to 192 ns against an allowance of 1.3 us.) Each decoded instant must
//! also match the lane's own raw read right after it within one tick plus 100 ns.

use std::collections::BTreeSet;

use ikp_device::Layout;
use ikp_host::cuda::cudarc::driver::PushKernelArg;
use ikp_host::Trace;
use serde_json::json;

use super::{median, round, timer, Error, Gpu};
use crate::results::{Check, Status, Table};
use crate::verify::clean_and_ordered;

/// Rendezvous rounds.
pub const ROUNDS: u32 = 8;
/// One global-memory round trip from the farthest SM, ns: the least time for the
/// releasing store to reach a spinning SM.
pub const RELEASE_BASE_NS: f64 = 500.0;
/// What each spinning SM adds to the release, ns: its polls of the one counter queue at
/// the memory partition that holds it.
pub const RELEASE_PER_SM_NS: f64 = 5.0;

/// Largest spread of one round's instants that still counts as one time axis, ns: two
/// ticks plus the release across `sms` SMs (module docs).
pub fn allowance_ns(tick_ns: f64, sms: usize) -> f64 {
    2.0 * tick_ns + RELEASE_BASE_NS + RELEASE_PER_SM_NS * sms as f64
}

/// Per round: the decoded instants of every lane, and the raw reads after them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Round {
    /// Decoded instant of each lane, ns.
    pub decoded: Vec<u64>,
    /// Raw `%globaltimer` read right after, per lane.
    pub raw: Vec<u64>,
}

impl Round {
    /// Latest minus earliest decoded instant, ns.
    pub fn spread(&self) -> u64 {
        self.decoded.iter().max().unwrap_or(&0) - self.decoded.iter().min().unwrap_or(&0)
    }

    /// Largest |decoded − raw| over lanes, ns.
    pub fn stamp_error(&self) -> u64 {
        self.decoded
            .iter()
            .zip(&self.raw)
            .map(|(&d, &r)| d.abs_diff(r))
            .max()
            .unwrap_or(0)
    }
}

/// The rounds of a decoded rendezvous trace; `raw[block * rounds + round]`.
pub fn rounds_of(trace: &Trace, raw: &[u64], rounds: u32) -> Result<Vec<Round>, Error> {
    let mut out = vec![Round::default(); rounds as usize];
    for lane in &trace.lanes {
        if lane.instants.len() != rounds as usize {
            return Err(format!(
                "lane {} stamped {} instants, expected {rounds}",
                lane.id,
                lane.instants.len()
            ));
        }
        for i in lane.instants.clone() {
            let r = trace.instants.payload[i];
            let round = out
                .get_mut(r as usize)
                .ok_or_else(|| format!("lane {}: instant with payload {r}", lane.id))?;
            round.decoded.push(trace.instants.ts[i]);
            let at = lane.block as usize * rounds as usize + r as usize;
            round.raw.push(raw[at]);
        }
    }
    Ok(out)
}

/// Whether every round's spread is within [`allowance_ns`] and every stamp within one tick
/// plus 100 ns of its raw read.
pub fn holds(rounds: &[Round], tick_ns: f64) -> bool {
    rounds.iter().all(|r| {
        r.spread() as f64 <= allowance_ns(tick_ns, r.decoded.len())
            && r.stamp_error() as f64 <= tick_ns + 100.0
    })
}

/// The `time-axis` check.
pub fn check(gpu: &Gpu) -> Result<Check, Error> {
    let tick = timer::measure(gpu)?;
    let blocks = gpu.sms;
    let mut session = gpu.session(Layout {
        grid: [blocks, 1, 1],
        records_per_lane: ROUNDS,
        regions: vec!["met".into()],
        ..Layout::default()
    })?;
    let mut arrived = gpu.zeros::<u32>(1)?;
    let mut raw = gpu.zeros::<u64>((blocks * ROUNDS) as usize)?;
    let arg = session.kernel_arg();
    // SAFETY: rendezvous(unsigned* arrived, unsigned rounds, ikp::Arg, u64* raw) with `raw`
    // holding blocks * ROUNDS words; one block per SM, so every block is resident and the
    // spin ends.
    unsafe { launch!(gpu, "rendezvous", blocks, 32; &mut arrived, &ROUNDS, &arg, &mut raw) }?;
    let trace = super::decode(&mut session)?;
    clean_and_ordered(&trace)?;
    let raw = gpu.download(&raw)?;
    let rounds = rounds_of(&trace, &raw, ROUNDS)?;
    let sms: BTreeSet<u32> = trace.lanes.iter().filter_map(|l| l.sm).collect();
    let mut table = Table::new(&["round", "spread ns", "worst stamp vs raw ns"]);
    for (i, r) in rounds.iter().enumerate() {
        table.row(vec![json!(i), json!(r.spread()), json!(r.stamp_error())]);
    }
    let mut spreads: Vec<f64> = rounds.iter().map(|r| r.spread() as f64).collect();
    let median_spread = median(&mut spreads);
    let max_spread = spreads.last().copied().unwrap_or(0.0);
    let ok = holds(&rounds, tick.ns);
    let allowed = allowance_ns(tick.ns, trace.lanes.len());
    let detail = format!(
        "{} lanes on {} SMs, {ROUNDS} rendezvous: instants spread {median_spread:.0} ns \
         (median), {max_spread:.0} ns (max); allowed {allowed:.0} ns (two {:.0} ns ticks + \
         {RELEASE_BASE_NS:.0} ns + {RELEASE_PER_SM_NS:.0} ns per spinning SM for the release)",
        trace.lanes.len(),
        sms.len(),
        tick.ns
    );
    Ok(Check::new("time-axis", Status::of(ok), true, detail)
        .figure("tick_ns", round(tick.ns, 1))
        .figure("lanes", trace.lanes.len())
        .figure("distinct_sms", sms.len())
        .figure("spread_ns_median", median_spread)
        .figure("spread_ns_max", max_spread)
        .figure("allowed_spread_ns", round(allowed, 0))
        .figure(
            "stamp_vs_raw_ns_max",
            rounds.iter().map(Round::stamp_error).max().unwrap_or(0),
        )
        .table(table))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ikp_device::{encoder::BufferWriter, TimerMode};
    use ikp_host::decode::{decode, DecodeOptions};

    /// A rendezvous trace of 4 lanes, 2 rounds at 10 us and 20 us; lane `off` is shifted.
    fn trace(offset_lane: u64, offset: u64) -> (Trace, Vec<u64>) {
        let layout = Layout {
            grid: [4, 1, 1],
            groups_per_block: 1,
            records_per_lane: 2,
            timer: TimerMode::Globaltimer,
            regions: vec!["met".into()],
            counters: vec![],
            ..Layout::default()
        };
        let mut w = BufferWriter::new(layout).unwrap();
        let mut raw = vec![0; 8];
        for b in 0..4u64 {
            let shift = if b == offset_lane { offset } else { 0 };
            let mut l = w.lane(b);
            l.init(b as u32, 0, 0, 1_000 + b, 0);
            for r in 0..2u64 {
                let t = 10_000 * (r + 1) + b * 40 + shift;
                l.instant(0, r as u32, t);
                raw[(b * 2 + r) as usize] = t + 30;
            }
            l.finalize(40_000, 0);
        }
        (
            decode(&w.into_words(), &DecodeOptions::default()).unwrap(),
            raw,
        )
    }

    #[test]
    fn agreeing_lanes_hold_and_a_shifted_one_does_not() {
        let (t, raw) = trace(0, 0);
        let rounds = rounds_of(&t, &raw, 2).unwrap();
        assert_eq!(rounds[0].spread(), 120);
        assert_eq!(rounds[1].stamp_error(), 30);
        assert!(holds(&rounds, 32.0));
        let (t, raw) = trace(2, 5_000);
        let rounds = rounds_of(&t, &raw, 2).unwrap();
        assert!(rounds[0].spread() > 4_000);
        assert!(!holds(&rounds, 32.0));
        // 4 lanes, 32 ns ticks: 64 + 500 + 20 ns; a lane 600 ns late is out, 400 ns in.
        assert_eq!(allowance_ns(32.0, 4), 584.0);
        let (t, raw) = trace(1, 400);
        assert!(holds(&rounds_of(&t, &raw, 2).unwrap(), 32.0));
        let (t, raw) = trace(1, 600);
        assert!(!holds(&rounds_of(&t, &raw, 2).unwrap(), 32.0));
        assert!(rounds_of(&t, &raw, 3).unwrap_err().contains("expected 3"));
    }
}
