//! Async ranges: begin and end records of the regions a native buffer's header marks async
//! (`ikp_device::wire`, `# Format`, "Async ranges"), paired across the whole launch.
//!
//! The lane walk (`decode::lane`) does not pair them: it sets each one aside as an
//! [`AsyncRecord`] (time, lane, region, token, begin or end) and goes on, so the regions
//! of the other lanes pair as before. [`pair`] then pairs the launch's records.
//!
//! # Pairing
//! Records are taken in time order; an end closes the **earliest** begin still open with
//! the same region and token (first in, first out), whichever lane wrote either. So a
//! token reused for one transfer after another pairs each end with the oldest
//! outstanding begin, as a queue of transfers completes in issue order.
//!
//! - **Ties**: at equal times, begins come before ends (whatever the lanes or their record
//!   order), so a range that begins and ends within one tick of the timer is a range of
//!   0 ns rather than an end without a begin followed by a begin that never ends. Among
//!   records of one kind at one time, lanes ascending, then record order.
//! - **Unmatched**: an end with no open begin of its region and token (its begin was
//!   dropped or overwritten, or never written) is counted in
//!   [`Diagnostics::async_unmatched_end`](crate::Diagnostics::async_unmatched_end); a
//!   begin still open when the launch's records run out (a token that never ends) in
//!   [`Diagnostics::async_unmatched_begin`](crate::Diagnostics::async_unmatched_begin).
//!   Neither is ever turned into a range.
//! - A region the header does not mark async pairs inside its lane as always, whatever
//!   its payloads; one that it marks is never paired inside its lane: the two never mix.
//!
//! The lane walk's counting pass still gives async begins a span slot each, left unused
//! (and closed by the compaction): async regions cost the walk nothing when a buffer has
//! none. The pairing costs a sort of the launch's async records and a hash map of the
//! open (region, token) queues.

use crate::model::{AsyncRanges, Unpaired};
use crate::time::Timestamp;
use std::collections::{HashMap, VecDeque};

/// Words of an [`AsyncMask`]: one bit per region id the wire format allows.
const MASK_WORDS: usize = (ikp_device::wire::REGION_MASK as usize + 1).div_ceil(64);

/// The set of async region ids, as a bitmap the lane walk tests per record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AsyncMask([u64; MASK_WORDS]);

impl AsyncMask {
    /// No async region.
    pub const EMPTY: AsyncMask = AsyncMask([0; MASK_WORDS]);

    /// The mask of `regions` (ids past the wire format's region range are ignored: the
    /// header's check refuses them).
    pub fn of(regions: &[u32]) -> AsyncMask {
        let mut m = [0u64; MASK_WORDS];
        for &r in regions {
            if let Some(w) = m.get_mut(r as usize / 64) {
                *w |= 1 << (r % 64);
            }
        }
        AsyncMask(m)
    }

    /// Whether no region is async.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// Whether `region` is async.
    #[inline(always)]
    pub fn contains(&self, region: u16) -> bool {
        let r = region as usize;
        self.0.get(r / 64).is_some_and(|&w| w >> (r % 64) & 1 != 0)
    }
}

/// One begin or end record of an async region, as the lane walk read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsyncRecord {
    /// Time (ns).
    pub ts: Timestamp,
    /// Lane index.
    pub lane: u32,
    /// Region id.
    pub region: u16,
    /// The record's payload: the token.
    pub token: u32,
    /// An end (else a begin).
    pub end: bool,
}

/// What [`pair`] made of a launch's async records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Paired {
    /// The ranges, sorted by begin.
    pub ranges: AsyncRanges,
    /// Begins never ended, by time.
    pub unmatched_begin: Vec<Unpaired>,
    /// Ends with no open begin, by time.
    pub unmatched_end: Vec<Unpaired>,
}

/// Pairs a launch's async records (module docs, `# Pairing`). `records` must hold each
/// lane's records in record order, lanes ascending (as the walk emits them).
pub fn pair(mut records: Vec<AsyncRecord>) -> Paired {
    // Stable: lanes ascending and record order are kept among equal keys.
    records.sort_by_key(|r| (r.ts, r.end));
    let mut open: HashMap<(u16, u32), VecDeque<usize>> = HashMap::new();
    let mut out = Paired::default();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for (k, r) in records.iter().enumerate() {
        let key = (r.region, r.token);
        if !r.end {
            open.entry(key).or_default().push_back(k);
            continue;
        }
        match open.get_mut(&key).and_then(VecDeque::pop_front) {
            Some(b) => ranges.push((b, k)),
            None => out.unmatched_end.push(unpaired(r)),
        }
    }
    let mut never: Vec<usize> = open.into_values().flatten().collect();
    never.sort_unstable();
    out.unmatched_begin = never.into_iter().map(|k| unpaired(&records[k])).collect();
    // Begins are indices in time order: sorting by them sorts by begin time.
    ranges.sort_unstable();
    let a = &mut out.ranges;
    for (b, e) in ranges {
        let (b, e) = (&records[b], &records[e]);
        a.push(b.region, b.token, b.ts, e.ts, b.lane, e.lane);
    }
    out
}

/// Pairs `records` (as [`pair`]) into `t`'s async ranges and diagnostics.
pub(crate) fn pair_into(t: &mut crate::model::Trace, records: Vec<AsyncRecord>) {
    let p = pair(records);
    t.async_ranges = p.ranges;
    t.diagnostics.async_unmatched_begin = p.unmatched_begin;
    t.diagnostics.async_unmatched_end = p.unmatched_end;
}

fn unpaired(r: &AsyncRecord) -> Unpaired {
    Unpaired {
        lane: r.lane,
        region: r.region,
        payload: r.token,
        ts: r.ts,
    }
}

#[cfg(test)]
mod tests {
    use super::{pair, AsyncMask, AsyncRecord};

    fn b(ts: u64, lane: u32, region: u16, token: u32) -> AsyncRecord {
        AsyncRecord {
            ts,
            lane,
            region,
            token,
            end: false,
        }
    }

    fn e(ts: u64, lane: u32, region: u16, token: u32) -> AsyncRecord {
        AsyncRecord {
            end: true,
            ..b(ts, lane, region, token)
        }
    }

    /// `(region, token, begin, end, begin lane, end lane)` of every range.
    fn rows(p: &super::Paired) -> Vec<(u16, u32, u64, u64, u32, u32)> {
        let r = &p.ranges;
        (0..r.len())
            .map(|i| {
                let row = (r.region[i], r.token[i], r.begin[i], r.end[i]);
                (row.0, row.1, row.2, row.3, r.begin_lane[i], r.end_lane[i])
            })
            .collect()
    }

    #[test]
    fn an_end_closes_the_earliest_open_begin_of_its_token_in_any_lane() {
        // Lane 0 issues token 7 twice and token 8 once; lane 1 completes them, the
        // second token 7 first (FIFO pairs it with the first begin anyway), and lane 2
        // completes token 8. Lane order in the input, as the walk emits records.
        let p = pair(vec![
            b(10, 0, 3, 7),
            b(20, 0, 3, 7),
            b(25, 0, 3, 8),
            e(30, 1, 3, 7),
            e(50, 1, 3, 7),
            e(40, 2, 3, 8),
        ]);
        assert_eq!(
            rows(&p),
            [
                (3, 7, 10, 30, 0, 1),
                (3, 7, 20, 50, 0, 1),
                (3, 8, 25, 40, 0, 2)
            ]
        );
        assert!(p.unmatched_begin.is_empty() && p.unmatched_end.is_empty());
    }

    #[test]
    fn tokens_and_regions_pair_separately_and_leftovers_are_unmatched() {
        // Token 1 of region 3 never ends; region 4's end of token 2 has no begin of
        // region 4 (only region 3 began token 2); an end before its begin is unmatched
        // and leaves the begin open.
        let p = pair(vec![
            b(5, 0, 3, 1),
            b(6, 0, 3, 2),
            e(7, 1, 4, 2),
            e(8, 1, 3, 2),
            e(9, 1, 3, 9),
            b(12, 2, 3, 9),
        ]);
        assert_eq!(rows(&p), [(3, 2, 6, 8, 0, 1)]);
        let un = |v: &[crate::model::Unpaired]| -> Vec<(u32, u16, u32, u64)> {
            v.iter()
                .map(|u| (u.lane, u.region, u.payload, u.ts))
                .collect()
        };
        assert_eq!(un(&p.unmatched_begin), [(0, 3, 1, 5), (2, 3, 9, 12)]);
        assert_eq!(un(&p.unmatched_end), [(1, 4, 2, 7), (1, 3, 9, 9)]);
    }

    #[test]
    fn at_equal_times_begins_come_first_and_ranges_sort_by_begin() {
        // The end (lane 0) is stamped at the begin's time (lane 1): a 0 ns range, not an
        // unmatched pair, although lane 0 comes first. A range in one lane pairs too.
        let p = pair(vec![
            b(40, 0, 2, 5),
            e(60, 0, 2, 5),
            e(100, 0, 2, 4),
            b(100, 1, 2, 4),
        ]);
        assert_eq!(rows(&p), [(2, 5, 40, 60, 0, 0), (2, 4, 100, 100, 1, 0)]);
        assert!(p.unmatched_begin.is_empty() && p.unmatched_end.is_empty());
    }

    #[test]
    fn the_mask_holds_exactly_its_regions() {
        let m = AsyncMask::of(&[0, 63, 64, 1023]);
        let set: Vec<u16> = (0..1024).filter(|&r| m.contains(r)).collect();
        assert_eq!(set, [0, 63, 64, 1023]);
        assert!(!m.contains(5000) && !m.is_empty());
        assert!(AsyncMask::of(&[]).is_empty());
    }
}
