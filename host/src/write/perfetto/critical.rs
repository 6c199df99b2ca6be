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

use perfetto_protos::debug_annotation::DebugAnnotation;
use perfetto_protos::trace_packet::TracePacket;
use perfetto_protos::track_event::{track_event::Type, TrackEvent};

use super::{LaunchPlace, Writer, META_SEQ};
use crate::analysis::blocks::slowest_block;
use crate::analysis::links::{critical_path_links, links};

pub(super) fn uint(name: &str, v: u64) -> DebugAnnotation {
    let mut a = DebugAnnotation::new();
    a.set_name(name.into());
    a.set_uint_value(v);
    a
}

pub(super) fn string(name: &str, v: String) -> DebugAnnotation {
    let mut a = DebugAnnotation::new();
    a.set_name(name.into());
    a.set_string_value(v);
    a
}

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
        let track = self.track(
            root,
            format!("critical path · block {} (slowest)", block.id),
            -1,
            false,
            None,
        )?;
        let s = &trace.spans;
        let mut prev_end = 0;
        for (k, &(i, link)) in path.iter().enumerate() {
            let begin = s.begin[i].max(prev_end);
            prev_end = s.end[i].max(begin);
            let mut te = TrackEvent::new();
            te.set_type(Type::TYPE_SLICE_BEGIN);
            te.set_track_uuid(track);
            te.set_name(trace.names.region(s.region[i]).into_owned());
            te.categories.push("critical_path".into());
            te.debug_annotations.push(uint("step", k as u64 + 1));
            te.debug_annotations
                .push(string("track", track_of(s.lane[i])));
            te.debug_annotations.push(uint("dur_ns", s.dur(i)));
            if let Some(l) = link {
                let region = l.from.region(trace);
                te.debug_annotations.push(string(
                    "waited_on",
                    format!(
                        "{} from {}",
                        trace.names.region(region),
                        track_of(l.from_lane)
                    ),
                ));
            }
            self.event(clock.map(begin), te)?;
            self.slice_end(clock.map(prev_end), track)?;
        }
        self.stats.critical_path_steps += path.len() as u64;
        Ok(())
    }

    /// Writes `te` at absolute time `ts` on the metadata sequence.
    pub(super) fn event(&mut self, ts: u64, te: TrackEvent) -> io::Result<()> {
        let mut p = TracePacket::new();
        p.set_timestamp(ts);
        p.set_trusted_packet_sequence_id(META_SEQ);
        p.set_track_event(te);
        self.packet(&p)
    }

    /// Writes the end of a slice of `track` at absolute time `ts` on the metadata sequence.
    pub(super) fn slice_end(&mut self, ts: u64, track: u64) -> io::Result<()> {
        let mut te = TrackEvent::new();
        te.set_type(Type::TYPE_SLICE_END);
        te.set_track_uuid(track);
        self.event(ts, te)
    }
}
