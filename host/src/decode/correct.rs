//! The cost-of-recording correction of native spans (rules in [`super::native`],
//! `# Overhead correction`).
//!
//! Each span's duration is reduced by its lane's per-record cost times the records of its
//! lane strictly between its begin and end records (Proton's rule): the begin stays, the
//! end moves earlier, never before the begin, and a span nested in another never ends
//! after its (corrected) parent. It is a pass of its own, taken only when asked for, so
//! the decode's hot walk does not carry record indices: it replays each lane's pairing
//! over its records (an end closes the innermost open begin of its region, as the walk
//! pairs), which gives each paired begin's records in between, in begin order, the order
//! of the lane's spans.

use crate::model::{OverheadCorrection, Trace};
use ikp_device::wire::{self, Kind};

/// Corrects the spans of `trace` in place and says what was done. `cost(lane id)` is the
/// lane's `(cycles per record, ns, per cycles)`, or `None` when the lane is not corrected;
/// `records(lane id)` its records in the order written (two runs, for a ring that
/// wrapped).
pub(crate) fn apply<'w>(
    trace: &mut Trace,
    cost: impl Fn(u32) -> Option<(u64, u64, u64)>,
    records: impl Fn(u32) -> (&'w [u64], &'w [u64]),
) -> OverheadCorrection {
    let mut c = OverheadCorrection::default();
    let mut per_record_ps = Vec::new();
    let mut between = Vec::new();
    let mut open: Vec<(u16, u32, usize)> = Vec::new();
    // Per depth, the last span begun at it: (row, its end as recorded).
    let mut last_at_depth: Vec<(usize, u64)> = Vec::new();
    for lane in &trace.lanes {
        let Some((cycles, num, den)) = cost(lane.id).filter(|&(_, _, den)| den > 0) else {
            c.lanes_unmeasured += 1;
            continue;
        };
        c.lanes_corrected += 1;
        per_record_ps.push(sat(cycles as u128 * num as u128 * 1000 / den as u128));
        pair_records(records(lane.id), &mut open, &mut between);
        let spans = lane.spans.clone();
        if between.len() != spans.len() {
            // Cannot happen (the walk paired the same records the same way); left as
            // recorded rather than corrected against the wrong records.
            debug_assert!(false, "replayed pairing disagrees with the walk");
            continue;
        }
        let s = &mut trace.spans;
        last_at_depth.clear();
        for (k, &n) in spans.zip(&between) {
            let (b, e) = (s.begin[k], s.end[k]);
            let cut = sat(n as u128 * cycles as u128 * num as u128 / den as u128);
            let mut end = e.saturating_sub(cut).max(b);
            let d = s.depth[k] as usize;
            if let Some(&(p, p_end)) = d.checked_sub(1).and_then(|u| last_at_depth.get(u)) {
                // Nested in the span open at its begin (which ends no earlier): never
                // past that span's corrected end.
                if p_end >= e {
                    end = end.min(s.end[p]).max(b);
                }
            }
            last_at_depth.truncate(d);
            last_at_depth.resize(d, (usize::MAX, 0));
            last_at_depth.push((k, e));
            if end != e {
                c.spans_corrected += 1;
                c.total_ns_removed += e - end;
                s.end[k] = end;
            }
        }
    }
    if !per_record_ps.is_empty() {
        let mid = (per_record_ps.len() - 1) / 2;
        c.per_record_ps_median = *per_record_ps.select_nth_unstable(mid).1;
    }
    c
}

/// `v`, or `u64::MAX` if it does not fit (a garbage cost word: the clamps then hold).
fn sat(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

/// Replays a lane's pairing over `records` (in the order written): `between` gets, for
/// each begin that an end closes, in begin order, the records strictly between the two.
/// `open` is scratch.
fn pair_records(
    (first, then): (&[u64], &[u64]),
    open: &mut Vec<(u16, u32, usize)>,
    between: &mut Vec<u32>,
) {
    open.clear();
    // Every begin's slot, then only the paired ones kept.
    let mut slots: Vec<Option<u32>> = Vec::new();
    for (i, &w) in first.iter().chain(then).enumerate() {
        let r = wire::unpack_record(w);
        match r.kind {
            Kind::Begin => {
                open.push((r.region as u16, i as u32, slots.len()));
                slots.push(None);
            }
            Kind::End => {
                if let Some(j) = open.iter().rposition(|&(g, _, _)| g == r.region as u16) {
                    let (_, at, slot) = open.remove(j);
                    slots[slot] = Some(i as u32 - at - 1);
                }
            }
            Kind::Instant | Kind::Meta => {}
        }
    }
    between.clear();
    between.extend(slots.into_iter().flatten());
}
