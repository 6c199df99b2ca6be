//! The decoded launch: the tables of a trace and the queries every writer uses.

use super::{
    AsyncRanges, BlockFilter, CounterSamples, DiagnosticCounts, Diagnostics, Instants, Lane, Names,
    SetAsideReason, Source, Spans, Timestamp, Unpaired,
};

/// A decoded launch (the default is an empty trace with no lanes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// Where it came from.
    pub source: Source,
    /// Region and counter names.
    pub names: Names,
    /// Lanes that recorded anything (ran init, or wrote a record), ascending by id; not
    /// those set aside ([`Diagnostics::set_aside`]).
    pub lanes: Vec<Lane>,
    /// Paired regions.
    pub spans: Spans,
    /// Point events.
    pub instants: Instants,
    /// Wait-counter samples.
    pub samples: CounterSamples,
    /// Async ranges of the launch, paired across lanes (not per lane: no
    /// [`Lane`] range indexes them).
    pub async_ranges: AsyncRanges,
    /// Wait-counter totals per lane: `counter_totals[lane_pos * n_counters + counter]`,
    /// where `lane_pos` indexes [`Trace::lanes`].
    pub counter_totals: Vec<u64>,
    /// Unpaired and unknown records.
    pub diagnostics: Diagnostics,
}

impl Trace {
    /// Number of wait counters.
    pub fn n_counters(&self) -> usize {
        self.names.counters.len()
    }

    /// The lane with id `id`, if it is in [`Trace::lanes`].
    pub fn lane(&self, id: u32) -> Option<&Lane> {
        let k = self.lanes.binary_search_by_key(&id, |l| l.id).ok()?;
        Some(&self.lanes[k])
    }

    /// Totals of every counter for the lane at position `lane_pos` of [`Trace::lanes`].
    pub fn lane_counters(&self, lane_pos: usize) -> &[u64] {
        let n = self.n_counters();
        &self.counter_totals[lane_pos * n..(lane_pos + 1) * n]
    }

    /// Records dropped by full lanes, summed.
    pub fn dropped(&self) -> u64 {
        self.lanes.iter().map(|l| l.dropped).sum()
    }

    /// Records overwritten in ring lanes, summed.
    pub fn overwritten(&self) -> u64 {
        self.lanes.iter().map(|l| l.overwritten).sum()
    }

    /// The diagnostics as counts.
    pub fn diagnostic_counts(&self) -> DiagnosticCounts {
        let d = &self.diagnostics;
        DiagnosticCounts {
            unmatched_begin: d.unmatched_begin.len() as u64,
            unmatched_end: d.unmatched_end.len() as u64,
            after_finalize: d.after_finalize,
            unknown_records: d.unknown_records,
            backward_steps: d.backward_steps,
            dropped: self.dropped(),
            lanes: self.lanes.len() as u64,
            set_aside: d.set_aside.len() as u64,
            set_aside_named: (d.set_aside.iter())
                .take(DiagnosticCounts::NAMED)
                .map(|s| s.track)
                .collect(),
            overwritten: self.overwritten(),
            ends_of_overwritten_begins: d.ends_of_overwritten_begins,
            set_aside_unordered_rings: (d.set_aside.iter())
                .filter(|s| s.reason == SetAsideReason::UnorderedRing)
                .count() as u64,
            async_unmatched_begin: d.async_unmatched_begin.len() as u64,
            async_unmatched_end: d.async_unmatched_end.len() as u64,
        }
    }

    /// The earliest and latest time of the lanes' bounds and of their events (`None`
    /// without lanes). The time base is left out, so the extents of traces holding
    /// different lanes of one launch combine (min of the starts, max of the ends) into
    /// the extent of the trace holding them all.
    pub(crate) fn time_extent(&self) -> Option<(Timestamp, Timestamp)> {
        let mut lo = u64::MAX;
        let mut hi = 0u64;
        for lane in &self.lanes {
            lo = lo.min(lane.start);
            hi = hi.max(lane.end).max(lane.start);
            if let Some(&b) = self.spans.begin.get(lane.spans.start) {
                // Spans are sorted by begin within a lane: the first one is the earliest.
                if !lane.spans.is_empty() {
                    lo = lo.min(b);
                }
            }
            for (rows, ts) in [
                (&lane.instants, &self.instants.ts),
                (&lane.samples, &self.samples.ts),
            ] {
                for i in [rows.start, rows.end.wrapping_sub(1)] {
                    if rows.contains(&i) {
                        lo = lo.min(ts[i]);
                        hi = hi.max(ts[i]);
                    }
                }
            }
        }
        hi = self.spans.end.iter().fold(hi, |m, &e| m.max(e));
        (lo != u64::MAX).then_some((lo, hi))
    }

    /// A trace with the source, names and whole-launch diagnostics of `self` and no
    /// lanes: what [`Trace::extend_lanes`] fills.
    pub(crate) fn empty_like(&self) -> Trace {
        Trace {
            source: self.source.clone(),
            names: self.names.clone(),
            diagnostics: Diagnostics {
                unmatched_begin: Vec::new(),
                unmatched_end: Vec::new(),
                set_aside: Vec::new(),
                async_unmatched_begin: Vec::new(),
                async_unmatched_end: Vec::new(),
                ..self.diagnostics.clone()
            },
            ..Trace::default()
        }
    }

    /// Appends the lanes of `src` at `positions` (ascending positions of
    /// [`Trace::lanes`]), with their events, counter totals and unpaired records, as the
    /// next lanes of `self`; `src` must have the same names (so the same counters). The
    /// earlier of the two time bases is kept.
    pub(crate) fn extend_lanes(&mut self, src: &Trace, positions: impl IntoIterator<Item = usize>) {
        let (s, i, c) = (&src.spans, &src.instants, &src.samples);
        let first_new = self.lanes.len();
        for pos in positions {
            let l = &src.lanes[pos];
            let (s0, i0, c0) = (self.spans.len(), self.instants.len(), self.samples.len());
            self.spans.extend_rows(s, l.spans.clone());
            self.instants.extend_rows(i, l.instants.clone());
            self.samples.extend_rows(c, l.samples.clone());
            self.lanes.push(Lane {
                spans: s0..self.spans.len(),
                instants: i0..self.instants.len(),
                samples: c0..self.samples.len(),
                ..l.clone()
            });
            if src.counter_totals.len() == src.lanes.len() * src.n_counters() {
                self.counter_totals
                    .extend_from_slice(src.lane_counters(pos));
            }
        }
        let added: std::collections::HashSet<u32> =
            self.lanes[first_new..].iter().map(|l| l.id).collect();
        let d = &mut self.diagnostics;
        for (to, from) in [
            (&mut d.unmatched_begin, &src.diagnostics.unmatched_begin),
            (&mut d.unmatched_end, &src.diagnostics.unmatched_end),
        ] {
            to.extend(from.iter().filter(|u| added.contains(&u.lane)));
        }
        self.source.time_base = self.source.time_base.min(src.source.time_base);
    }

    /// A copy holding only the lanes of the blocks `filter` keeps (`self` itself when it
    /// keeps every block); [`Source::block_filter`] records the filter. Times, names and
    /// the rest of [`Source`] (its `time_base` included, so the kept events stay where they
    /// were on the launch's axis) are unchanged; unpaired records are kept with their
    /// lanes, and so are the lanes set aside of those blocks; the counts that are not per
    /// lane (`after_finalize`, `unfinalized_lanes`, `unknown_records`, `backward_steps`,
    /// `ends_of_overwritten_begins`, [`Source::clock`] and
    /// [`Source::overhead_correction`]) stay those of the whole launch. An async range is
    /// kept when either of its lanes is (a transfer issued or completed in a kept block
    /// concerns it), as it was paired over the whole launch; its other lane may then be
    /// absent from [`Trace::lanes`]. Unmatched async records are kept with their lanes.
    pub fn filter_blocks(&self, filter: &BlockFilter) -> Trace {
        if filter.keeps_all() {
            return self.clone();
        }
        let mut out = self.empty_like();
        let kept = (self.lanes.iter().enumerate())
            .filter(|(_, l)| filter.contains(l.block))
            .map(|(pos, _)| pos);
        out.extend_lanes(self, kept);
        out.diagnostics.set_aside = (self.diagnostics.set_aside.iter())
            .filter(|s| filter.contains(s.track.block))
            .copied()
            .collect();
        let kept: std::collections::HashSet<u32> = out.lanes.iter().map(|l| l.id).collect();
        let a = &self.async_ranges;
        out.async_ranges =
            a.retain(|i| kept.contains(&a.begin_lane[i]) || kept.contains(&a.end_lane[i]));
        let kept_of = |v: &[Unpaired]| -> Vec<Unpaired> {
            v.iter()
                .filter(|u| kept.contains(&u.lane))
                .copied()
                .collect()
        };
        let (d, o) = (&self.diagnostics, &mut out.diagnostics);
        o.async_unmatched_begin = kept_of(&d.async_unmatched_begin);
        o.async_unmatched_end = kept_of(&d.async_unmatched_end);
        out.source.time_base = self.source.time_base;
        out.source.block_filter = filter.clone();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{BlockFilter, Source};
    use crate::decode::{decode as decode_words, DecodeOptions};

    #[test]
    fn filter_blocks_keeps_exactly_the_lanes_of_those_blocks() {
        let words = ikp_device::sample::attention().unwrap().into_words();
        let t = decode_words(&words, &DecodeOptions::default()).unwrap();
        // Keeping every block is the identity.
        assert_eq!(t.filter_blocks(&BlockFilter::default()), t);
        let f = t.filter_blocks(&BlockFilter::new(vec![5, 1]));
        assert_eq!(f.lanes.len(), 2 * t.source.groups_per_block as usize);
        for l in &f.lanes {
            assert!(l.block == 1 || l.block == 5);
            let (pos, o) = t
                .lanes
                .iter()
                .enumerate()
                .find(|(_, o)| o.id == l.id)
                .unwrap();
            assert_eq!(
                f.spans.begin[l.spans.clone()],
                t.spans.begin[o.spans.clone()]
            );
            assert_eq!(
                f.spans.region[l.spans.clone()],
                t.spans.region[o.spans.clone()]
            );
            assert_eq!(
                f.instants.ts[l.instants.clone()],
                t.instants.ts[o.instants.clone()]
            );
            assert_eq!(
                f.samples.value[l.samples.clone()],
                t.samples.value[o.samples.clone()]
            );
            let fpos = f.lanes.iter().position(|x| x.id == l.id).unwrap();
            assert_eq!(f.lane_counters(fpos), t.lane_counters(pos));
        }
        let want: usize = (t.lanes.iter())
            .filter(|l| l.block == 1 || l.block == 5)
            .map(|l| l.spans.len())
            .sum();
        assert_eq!(f.spans.len(), want);
        assert_eq!(f.source.block_filter.blocks(), [1, 5]);
        assert_eq!(
            f.source,
            Source {
                block_filter: BlockFilter::new(vec![1, 5]),
                epoch: None,
                overhead_correction: None,
                ..t.source.clone()
            }
        );
        assert!(t
            .filter_blocks(&BlockFilter::new(vec![9999]))
            .lanes
            .is_empty());
    }
}
