//! The host events of a merged trace (`ikp merge`): a track per host thread under a
//! `host` root, slices and instants at absolute times on sequence 1 (see
//! [`crate::merge`], `# Format (output)`).

use std::cmp::Reverse;
use std::io;

use perfetto_protos::debug_annotation::DebugAnnotation;
use perfetto_protos::track_event::{track_event::Type, TrackEvent};
use serde_json::{Map, Value};

use super::{rank, Writer};
use crate::merge::{HostEvent, HostThread, HostTrace, MergeStats};

fn annotations(args: &Map<String, Value>) -> Vec<DebugAnnotation> {
    args.iter()
        .map(|(k, v)| {
            let mut a = DebugAnnotation::new();
            a.set_name(k.clone());
            match v {
                Value::String(s) => a.set_string_value(s.clone()),
                Value::Bool(b) => a.set_bool_value(*b),
                Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                    (Some(i), _, _) => a.set_int_value(i),
                    (None, Some(u), _) => a.set_uint_value(u),
                    (_, _, Some(f)) => a.set_double_value(f),
                    _ => a.set_string_value(n.to_string()),
                },
                other => a.set_string_value(other.to_string()),
            }
            a
        })
        .collect()
}

fn process_name(t: &HostThread) -> String {
    match &t.process_name {
        Some(n) => format!("{n} (pid {})", t.pid),
        None => format!("pid {}", t.pid),
    }
}

fn thread_name(t: &HostThread) -> String {
    match &t.thread_name {
        Some(n) => format!("{n} (tid {})", t.tid),
        None => format!("tid {}", t.tid),
    }
}

impl<W: io::Write> Writer<W> {
    /// Writes the host trace's tracks and events; returns the host counts.
    pub(super) fn host_trace(&mut self, host: &HostTrace, label: &str) -> io::Result<MergeStats> {
        let mut stats = MergeStats::default();
        let root = self.track(0, format!("host: {label}"), Some(-1), true, None)?;
        let mut by_thread: Vec<Vec<&HostEvent>> = vec![Vec::new(); host.threads.len()];
        for e in &host.events {
            by_thread[e.thread].push(e);
        }
        let mut process: Option<(&str, u64)> = None;
        let (mut prank, mut trank) = (0, 0);
        for (th, events) in host.threads.iter().zip(&mut by_thread) {
            let puuid = match process {
                Some((pid, uuid)) if pid == th.pid => uuid,
                _ => {
                    let uuid = self.track(root, process_name(th), Some(rank(prank)), true, None)?;
                    prank += 1;
                    trank = 0;
                    process = Some((&th.pid, uuid));
                    uuid
                }
            };
            let track = self.track(puuid, thread_name(th), Some(rank(trank)), false, None)?;
            trank += 1;
            // Nesting order: by begin, slices before instants, longer slices first.
            events.sort_by_key(|e| (e.ts, e.dur.is_none(), Reverse(e.dur)));
            let mut open: Vec<u64> = Vec::new();
            for e in events.iter() {
                while let Some(&end) = open.last().filter(|&&end| end <= e.ts) {
                    self.host_end(end, track)?;
                    open.pop();
                }
                let mut te = TrackEvent::new();
                te.set_track_uuid(track);
                te.set_name(e.name.clone());
                te.categories.push(e.category.clone());
                te.debug_annotations = annotations(&e.args);
                match e.dur {
                    None => {
                        te.set_type(Type::TYPE_INSTANT);
                        self.event(e.ts, te)?;
                        stats.host_instants += 1;
                    }
                    Some(d) => {
                        let mut end = e.ts.saturating_add(d);
                        if let Some(&outer) = open.last().filter(|&&o| end > o) {
                            end = outer;
                            stats.clipped += 1;
                        }
                        te.set_type(Type::TYPE_SLICE_BEGIN);
                        self.event(e.ts, te)?;
                        open.push(end);
                        stats.host_slices += 1;
                    }
                }
            }
            while let Some(end) = open.pop() {
                self.host_end(end, track)?;
            }
        }
        self.stats.slices += stats.host_slices;
        self.stats.instants += stats.host_instants;
        Ok(stats)
    }

    fn host_end(&mut self, ts: u64, track: u64) -> io::Result<()> {
        let mut te = TrackEvent::new();
        te.set_type(Type::TYPE_SLICE_END);
        te.set_track_uuid(track);
        self.event(ts, te)
    }
}
