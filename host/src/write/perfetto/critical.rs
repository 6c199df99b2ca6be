//! The critical path of a launch's slowest block as a track of its own
//! ([`PerfettoOptions::critical_path`](super::PerfettoOptions::critical_path)), so the path
//! is found at a glance instead of by following flow arrows across lanes.
//!
//! Steps of the path overlap in time (a wait begins before the load that releases it), and
//! one track's slices must nest, so each step is drawn over the part of it that holds the
//! path up: from the later of its begin and the previous step's end, to its end. Those
//! parts follow one another without overlapping (the path is ordered by end time). The
//! step's full span, its track and its signal are debug annotations of the slice.

use std::io;

use super::enc::cold::{self, Value};
use super::enc::ty;
use super::{LaunchPlace, Writer, META_SEQ};
use crate::analysis::blocks::slowest_block;
use crate::analysis::links::{critical_path_links, links};

impl<W: io::Write> Writer<W> {
    /// Writes the track `critical path · block B (slowest)` under `root` (first among its
    /// children), with one slice per step; nothing when the launch has no leaf region.
    pub(super) fn critical_path_track(
        &mut self,
        at: &LaunchPlace<'_>,
        root: u64,
    ) -> io::Result<()> {
        let (trace, clock) = (at.trace, at.clock);
        let Some(block) = slowest_block(trace) else {
            return Ok(());
        };
        let all = links(trace);
        let path = critical_path_links(trace, block.id, &all);
        if path.is_empty() {
            return Ok(());
        }
        let track_of = |id: u32| trace.lane(id).map(|l| l.track().name()).unwrap_or_default();
        let name = format!("critical path · block {} (slowest)", block.id);
        let track = self.track(root, &name, -1, false, false)?;
        let s = &trace.spans;
        let mut prev_end = 0;
        for (k, &(i, link)) in path.iter().enumerate() {
            let begin = s.begin[i].max(prev_end);
            prev_end = s.end[i].max(begin);
            let mut annotations = vec![
                ("step", Value::Uint(k as u64 + 1)),
                ("track", Value::Str(track_of(s.lane[i]).into())),
                ("dur_ns", Value::Uint(s.dur(i))),
            ];
            if let Some(l) = link {
                let region = l.from.region(trace);
                let from = track_of(l.from_lane);
                let waited_on = format!("{} from {from}", trace.names.region(region));
                annotations.push(("waited_on", Value::Str(waited_on.into())));
            }
            let step = cold::Event {
                ty: ty::SLICE_BEGIN,
                track,
                name: &trace.names.region(s.region[i]),
                category: "critical_path",
                annotations: &annotations,
                flow: None,
            };
            self.event(clock.map(begin), &step)?;
            self.slice_end(clock.map(prev_end), track)?;
        }
        self.stats.critical_path_steps += path.len() as u64;
        Ok(())
    }

    /// Writes `e` at absolute time `ts` on the metadata sequence.
    pub(super) fn event(&mut self, ts: u64, e: &cold::Event<'_>) -> io::Result<()> {
        self.packet(|out| cold::event(out, META_SEQ, ts, e))
    }

    /// Writes the end of a slice of `track` at absolute time `ts` on the metadata sequence.
    pub(super) fn slice_end(&mut self, ts: u64, track: u64) -> io::Result<()> {
        self.packet(|out| cold::slice_end(out, META_SEQ, ts, track))
    }
}
