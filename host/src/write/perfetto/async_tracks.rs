//! A launch's async ranges as slices on tracks of their own (the module's `# Format`,
//! item 6): one track per async region, and overlap tracks where ranges of a region
//! overlap (transfers in flight together), each row holding ranges that do not overlap.

use std::io;

use super::enc::cold::{self, Value};
use super::enc::ty;
use super::{LaunchPlace, Writer};
use crate::analysis::links::SignalEvent;
use crate::model::AsyncRanges;

/// First flow id of async ranges: above every wait span's flow id (`base + w + 1`, which
/// counts spans), so the two never meet.
pub(super) const ASYNC_FLOW_IDS: u64 = 1 << 62;

/// The row of each range of `idx` (indices of one region's ranges, by begin): the first
/// row whose last range ended at or before its begin.
fn rows(a: &AsyncRanges, idx: &[usize]) -> (Vec<usize>, usize) {
    let mut ends: Vec<u64> = Vec::new();
    let rows = idx
        .iter()
        .map(|&i| match ends.iter().position(|&e| e <= a.begin[i]) {
            Some(r) => {
                ends[r] = a.end[i];
                r
            }
            None => {
                ends.push(a.end[i]);
                ends.len() - 1
            }
        })
        .collect();
    (rows, ends.len())
}

impl<W: io::Write> Writer<W> {
    /// Writes the async-range tracks of a launch under `root`, ranked from `first_rank`
    /// on: ranges `a` of `trace` (whose lanes name the annotations). With `flow_base`, a
    /// range whose link to a wait is drawn ([`super::flows::drawn_links`]) starts flow
    /// `flow_base + k + 1` at its begin.
    pub(super) fn async_tracks(
        &mut self,
        at: &LaunchPlace<'_>,
        a: &AsyncRanges,
        root: u64,
        first_rank: usize,
        flow_base: Option<u64>,
    ) -> io::Result<()> {
        let (trace, clock) = (at.trace, at.clock);
        if a.is_empty() {
            return Ok(());
        }
        let mut linked = vec![false; a.len()];
        if flow_base.is_some() {
            for l in super::flows::drawn_links(trace) {
                if let SignalEvent::Async(k) = l.from {
                    linked[k] = true;
                }
            }
        }
        let track_of = |id: u32| trace.lane(id).map(|l| l.track().name());
        let mut regions: Vec<u16> = a.region.clone();
        regions.sort_unstable();
        regions.dedup();
        let mut r = first_rank;
        for region in regions {
            let idx: Vec<usize> = (0..a.len()).filter(|&i| a.region[i] == region).collect();
            let (row_of, n_rows) = rows(a, &idx);
            let region_name = trace.names.region(region);
            let name = format!("async · {region_name}");
            let mut tracks = Vec::with_capacity(n_rows);
            for n in 0..n_rows {
                let t = if n == 0 {
                    name.clone()
                } else {
                    format!("{name} (overlap {n})")
                };
                tracks.push(self.track(root, &t, super::rank(r), false, false)?);
                r += 1;
            }
            for (&i, &row) in idx.iter().zip(&row_of) {
                let mut annotations = vec![("token", Value::Uint(a.token[i] as u64))];
                if let Some(t) = track_of(a.begin_lane[i]) {
                    annotations.push(("from", Value::Str(t.into())));
                }
                if let Some(t) = track_of(a.end_lane[i]) {
                    annotations.push(("to", Value::Str(t.into())));
                }
                let flow = match (flow_base, linked[i]) {
                    (Some(base), true) => Some(base + i as u64 + 1),
                    _ => None,
                };
                self.stats.flows += flow.is_some() as u64;
                let begin = cold::Event {
                    ty: ty::SLICE_BEGIN,
                    track: tracks[row],
                    name: &region_name,
                    category: "async",
                    annotations: &annotations,
                    flow,
                };
                self.event(clock.map(a.begin[i]), &begin)?;
                self.slice_end(clock.map(a.end[i]), tracks[row])?;
                self.stats.async_slices += 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::rows;
    use crate::model::AsyncRanges;

    #[test]
    fn overlapping_ranges_take_the_first_free_row() {
        let mut a = AsyncRanges::default();
        for (b, e) in [(0, 10), (5, 8), (8, 20), (10, 12), (11, 30)] {
            a.push(0, 0, b, e, 0, 1);
        }
        let (r, n) = rows(&a, &[0, 1, 2, 3, 4]);
        assert_eq!((r, n), (vec![0, 1, 1, 0, 2], 3));
    }
}
