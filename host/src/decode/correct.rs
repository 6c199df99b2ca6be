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
/// wrapped). Lanes are corrected on the rayon pool when `parallel`.
pub(crate) fn apply<'w>(
    trace: &mut Trace,
    cost: impl Fn(u32) -> Option<(u64, u64, u64)> + Sync,
    records: impl Fn(u32) -> (&'w [u64], &'w [u64]) + Sync,
    parallel: bool,
) -> OverheadCorrection {
    // Each lane's rows of the end column, split off so that lanes correct independently
    // (a decoded trace's lanes hold ascending, disjoint ranges of spans).
    let s = &mut trace.spans;
    let (begin, depth) = (&s.begin[..], &s.depth[..]);
    let mut rest = &mut s.end[..];
    let mut at = 0;
    let mut work = Vec::with_capacity(trace.lanes.len());
    for lane in &trace.lanes {
        let r = lane.spans.clone();
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(r.start - at);
        let (ends, tail) = tail.split_at_mut(r.len());
        (rest, at) = (tail, r.end);
        work.push((lane.id, r.start, ends));
    }
    let one = |scratch: &mut Scratch, (id, first, ends): (u32, usize, &mut [u64])| {
        let (cycles, num, den) = cost(id).filter(|&(_, _, den)| den > 0)?;
        let rows = Rows {
            begin: &begin[first..first + ends.len()],
            depth: &depth[first..first + ends.len()],
            end: ends,
        };
        Some(correct_lane(rows, records(id), (cycles, num, den), scratch))
    };
    let done: Vec<Option<LaneDone>> = if parallel {
        use rayon::prelude::*;
        (work.into_par_iter())
            .map_init(Scratch::default, |sc, w| one(sc, w))
            .collect()
    } else {
        let mut sc = Scratch::default();
        work.into_iter().map(|w| one(&mut sc, w)).collect()
    };
    let mut c = OverheadCorrection::default();
    let mut per_record_ps = Vec::new();
    for d in done {
        let Some(d) = d else {
            c.lanes_unmeasured += 1;
            continue;
        };
        c.lanes_corrected += 1;
        per_record_ps.push(d.per_record_ps);
        c.spans_corrected += d.spans;
        c.total_ns_removed = c.total_ns_removed.saturating_add(d.ns);
    }
    if !per_record_ps.is_empty() {
        let mid = (per_record_ps.len() - 1) / 2;
        c.per_record_ps_median = *per_record_ps.select_nth_unstable(mid).1;
    }
    c
}

/// One lane's span rows.
struct Rows<'a> {
    begin: &'a [u64],
    depth: &'a [u16],
    end: &'a mut [u64],
}

/// Scratch reused from lane to lane.
#[derive(Default)]
struct Scratch {
    between: Vec<u32>,
    open: Vec<(u16, u32, usize)>,
    /// Per depth, the last span begun at it: (row, its end as recorded).
    last_at_depth: Vec<(usize, u64)>,
}

/// What correcting one lane did.
struct LaneDone {
    per_record_ps: u64,
    spans: u64,
    ns: u64,
}

/// Corrects one lane's spans `rows` from its `records` at `(cycles, num, den)`: a record
/// costs `cycles * num / den` ns.
fn correct_lane(
    rows: Rows<'_>,
    records: (&[u64], &[u64]),
    (cycles, num, den): (u64, u64, u64),
    sc: &mut Scratch,
) -> LaneDone {
    let mut d = LaneDone {
        per_record_ps: sat(cycles as u128 * num as u128 * 1000 / den as u128),
        spans: 0,
        ns: 0,
    };
    pair_records(records, &mut sc.open, &mut sc.between);
    if sc.between.len() != rows.end.len() {
        // Cannot happen (the walk paired the same records the same way); left as
        // recorded rather than corrected against the wrong records.
        debug_assert!(false, "replayed pairing disagrees with the walk");
        return d;
    }
    let last_at_depth = &mut sc.last_at_depth;
    last_at_depth.clear();
    for (k, &n) in sc.between.iter().enumerate() {
        let (b, e) = (rows.begin[k], rows.end[k]);
        let cut = sat(n as u128 * cycles as u128 * num as u128 / den as u128);
        let mut end = e.saturating_sub(cut).max(b);
        let dep = rows.depth[k] as usize;
        if let Some(&(p, p_end)) = dep.checked_sub(1).and_then(|u| last_at_depth.get(u)) {
            // Nested in the span open at its begin (which ends no earlier): never past
            // that span's corrected end.
            if p != usize::MAX && p_end >= e {
                end = end.min(rows.end[p]).max(b);
            }
        }
        last_at_depth.truncate(dep);
        last_at_depth.resize(dep, (usize::MAX, 0));
        last_at_depth.push((k, e));
        if end != e {
            d.spans += 1;
            d.ns = d.ns.saturating_add(e - end);
            rows.end[k] = end;
        }
    }
    d
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
    between.clear();
    // A slot per begin (UNPAIRED until its end comes), then only the paired ones kept.
    const UNPAIRED: u32 = u32::MAX;
    for (i, &w) in first.iter().chain(then).enumerate() {
        let r = wire::unpack_record(w);
        match r.kind {
            Kind::Begin => {
                open.push((r.region as u16, i as u32, between.len()));
                between.push(UNPAIRED);
            }
            Kind::End => {
                if let Some(j) = open.iter().rposition(|&(g, _, _)| g == r.region as u16) {
                    let (_, at, slot) = open.remove(j);
                    between[slot] = i as u32 - at - 1;
                }
            }
            Kind::Instant | Kind::Meta => {}
        }
    }
    // Records between a pair are fewer than a lane holds (2^28): never UNPAIRED.
    between.retain(|&n| n != UNPAIRED);
}

#[cfg(test)]
mod tests {
    use super::{correct_lane, pair_records, Rows, Scratch};
    use ikp_device::wire::{pack_record, pack_tag, Kind};

    fn rec(kind: Kind, region: u32) -> u64 {
        pack_record(1, pack_tag(kind, region, 0))
    }

    #[test]
    fn pairing_replay_counts_the_records_inside_each_paired_begin_in_begin_order() {
        use Kind::{Begin as B, End as E, Instant as I, Meta as M};
        // a( b( i m )b  c( a) )c: a and c overlap; a stray end of d; b( left open.
        let recs: Vec<u64> = [
            (B, 0),
            (B, 1),
            (I, 2),
            (M, 0),
            (E, 1),
            (B, 2),
            (E, 0),
            (E, 3),
            (E, 2),
            (B, 1),
        ]
        .iter()
        .map(|&(k, r)| rec(k, r))
        .collect();
        let (mut open, mut between) = (Vec::new(), Vec::new());
        // Split in two runs, as a wrapped ring is: the same answer.
        for cut in [recs.len(), 4] {
            pair_records((&recs[..cut], &recs[cut..]), &mut open, &mut between);
            // a: 5 records inside; b: 2; c: 2 (a's end and d's stray end).
            assert_eq!(between, [5, 2, 2], "cut at {cut}");
        }
    }

    #[test]
    fn an_overlapping_span_is_not_clamped_to_the_one_open_at_its_begin() {
        // a [100, 300) with 2 records inside, b [200, 400) at depth 1 with 3 inside, at 10
        // ns per record: a ends at 280; b, which outlives a, at 370 (not clamped to 280).
        let recs: Vec<u64> = [(Kind::Begin, 0), (Kind::Begin, 1)]
            .into_iter()
            .chain([(Kind::Instant, 2), (Kind::End, 0), (Kind::Instant, 2)])
            .chain([(Kind::End, 1)])
            .map(|(k, r)| rec(k, r))
            .collect();
        let (begin, depth, mut end) = ([100, 200], [0, 1], [300, 400]);
        let rows = Rows {
            begin: &begin,
            depth: &depth,
            end: &mut end,
        };
        let d = correct_lane(rows, (&recs, &[]), (5, 2, 1), &mut Scratch::default());
        assert_eq!(end, [280, 370]);
        assert_eq!((d.per_record_ps, d.spans, d.ns), (10_000, 2, 50));
    }
}
