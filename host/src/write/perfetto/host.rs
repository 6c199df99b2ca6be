//! A merged trace (`ikp merge`): ikp launches and a host-side trace read by
//! [`crate::decode::chrome_host`] on one time axis, the host's clock ([`write_merged`]).
//!
//! # Format (output)
//!
//! The Perfetto trace of [`crate::write::perfetto`] with `host_clock` set to the host
//! trace's clock (its `# Time` and `# Host clocks`), then the host events on sequence 1
//! with absolute timestamps (the host clock's ns): a root track `host: <label>` (sibling
//! rank -1, so first), a child per process (`<process_name> (pid P)` or `pid P`, ranked by
//! `process_sort_index` then pid), a slice track per thread under it (`<thread_name> (tid
//! T)` or `tid T`, ranked likewise); an `X` event (or a `B` / `E` pair) is a
//! `TYPE_SLICE_BEGIN` / `TYPE_SLICE_END` pair, an instant `TYPE_INSTANT`, each with its
//! plain name, its `cat` as category (`host` when absent) and its scalar `args` as debug
//! annotations (strings, integers, doubles, booleans; other values as JSON text). A
//! thread's events are written in nesting order (by begin, longer first); a slice that
//! ends after its enclosing one is clipped to the enclosing slice's end (Perfetto's
//! slices on one track must nest), counted in [`MergeStats::clipped`]. Threads the reader
//! set aside ([`HostTrace::set_aside`]: stamps that cannot belong to the trace) have no
//! track, as the launches' lanes set aside have none.

use std::cmp::Reverse;
use std::io;

use serde_json::{Map, Value};

use super::enc::{cold, ty};
use super::{
    launch_clocks, launch_times, rank, PerfettoOptions, PerfettoStats, WriteError, Writer,
};
use crate::model::{HostEvent, HostTrace};
use crate::write::Launch;

/// What [`write_merged`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// The Perfetto writer's counts (device and host packets and tracks together).
    pub perfetto: PerfettoStats,
    /// Host slices written.
    pub host_slices: u64,
    /// Host instants written.
    pub host_instants: u64,
    /// Host slices clipped to their enclosing slice's end (see the module's `# Format
    /// (output)`).
    pub clipped: u64,
}

/// Writes `launches` and `host` (labelled `host_label`) as one Perfetto trace on the host
/// trace's clock (see the module's `# Format (output)`); `opts.host_clock` is replaced by
/// it. Every launch needs a clock sync: [`WriteErrorKind::NoClockSync`] names the first
/// that has none, before anything is written.
///
/// [`WriteErrorKind::NoClockSync`]: crate::write::WriteErrorKind::NoClockSync
pub fn write_merged<W: io::Write>(
    out: W,
    launches: &[Launch<'_>],
    host: &HostTrace,
    host_label: &str,
    opts: &PerfettoOptions,
) -> Result<MergeStats, WriteError> {
    let opts = PerfettoOptions {
        host_clock: Some(host.clock),
        ..*opts
    };
    let clocks = launch_clocks(launches.iter().map(launch_times), &opts)?;
    let mut w = Writer::new(out, opts.compression);
    let host_stats = w.host_trace(host, host_label)?;
    w.launches(launches, &clocks, &opts)?;
    Ok(MergeStats {
        perfetto: w.finish()?,
        ..host_stats
    })
}

/// The debug annotations of a host event's `args`: scalars as such, other values as
/// their JSON text.
fn annotations(args: &Map<String, Value>) -> Vec<(&str, cold::Value<'_>)> {
    use cold::Value as V;
    args.iter()
        .map(|(k, v)| {
            let value = match v {
                Value::String(s) => V::Str(s.into()),
                Value::Bool(b) => V::Bool(*b),
                Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                    (Some(i), _, _) => V::Int(i),
                    (None, Some(u), _) => V::Uint(u),
                    (_, _, Some(f)) => V::Double(f),
                    _ => V::Str(n.to_string().into()),
                },
                other => V::Str(other.to_string().into()),
            };
            (k.as_str(), value)
        })
        .collect()
}

/// A process's or thread's track name: `<name> (pid <id>)`, or `pid <id>` without a name.
fn track_name(name: &Option<String>, what: &str, id: &str) -> String {
    match name {
        Some(n) => format!("{n} ({what} {id})"),
        None => format!("{what} {id}"),
    }
}

impl<W: io::Write> Writer<W> {
    /// Writes the host trace's tracks and events; returns the host counts.
    pub(super) fn host_trace(&mut self, host: &HostTrace, label: &str) -> io::Result<MergeStats> {
        let mut stats = MergeStats::default();
        let root = self.track(0, &format!("host: {label}"), -1, true, false)?;
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
                    let name = track_name(&th.process_name, "pid", &th.pid);
                    let uuid = self.track(root, &name, rank(prank), true, false)?;
                    prank += 1;
                    trank = 0;
                    process = Some((&th.pid, uuid));
                    uuid
                }
            };
            let name = track_name(&th.thread_name, "tid", &th.tid);
            let track = self.track(puuid, &name, rank(trank), false, false)?;
            trank += 1;
            // Nesting order: by begin, slices before instants, longer slices first.
            events.sort_by_key(|e| (e.ts, e.dur.is_none(), Reverse(e.dur)));
            let mut open: Vec<u64> = Vec::new();
            for e in events.iter() {
                while let Some(&end) = open.last().filter(|&&end| end <= e.ts) {
                    self.slice_end(end, track)?;
                    open.pop();
                }
                let annotations = annotations(&e.args);
                let mut te = cold::Event {
                    ty: ty::INSTANT,
                    track,
                    name: &e.name,
                    category: &e.category,
                    annotations: &annotations,
                    flow: None,
                };
                match e.dur {
                    None => {
                        self.event(e.ts, &te)?;
                        stats.host_instants += 1;
                    }
                    Some(d) => {
                        let mut end = e.ts.saturating_add(d);
                        if let Some(&outer) = open.last().filter(|&&o| end > o) {
                            end = outer;
                            stats.clipped += 1;
                        }
                        te.ty = ty::SLICE_BEGIN;
                        self.event(e.ts, &te)?;
                        open.push(end);
                        stats.host_slices += 1;
                    }
                }
            }
            while let Some(end) = open.pop() {
                self.slice_end(end, track)?;
            }
        }
        self.stats.slices += stats.host_slices;
        self.stats.instants += stats.host_instants;
        Ok(stats)
    }
}
