//! A host-side trace (the PyTorch profiler's export, say), as read by
//! [`crate::decode::chrome_host`] to be placed beside ikp launches on one time axis
//! ([`crate::write::perfetto::write_merged`]).

use serde_json::{Map, Value};
use std::collections::BTreeMap;

use super::SetAsideReason;
use crate::clock_sync::HostClock;

/// A host trace read from Chrome JSON, times in ns on [`HostTrace::clock`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostTrace {
    /// The clock of the times.
    pub clock: HostClock,
    /// Threads, by process then thread (sort index, then id).
    pub threads: Vec<HostThread>,
    /// Slices and instants, in file order (B / E pairs closed into slices).
    pub events: Vec<HostEvent>,
    /// Events not read, by `ph` (`"B (unclosed)"` and `"E (unopened)"` for unpaired B / E).
    pub skipped: BTreeMap<String, u64>,
    /// Threads whose stamps cannot belong to the trace, by the rules every format's lanes
    /// follow ([`crate::decode::set_aside`]): neither they nor their events are in
    /// [`HostTrace::threads`] or [`HostTrace::events`]. In thread order.
    pub set_aside: Vec<SetAsideThread>,
}

/// A host thread set aside with its events: its stamps cannot belong to the trace (one
/// event's `ts` thrown decades away, say).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetAsideThread {
    /// The thread.
    pub thread: HostThread,
    /// Its earliest event's begin, ns.
    pub start: u64,
    /// Its latest event's end, ns.
    pub end: u64,
    /// Its events.
    pub events: u64,
    /// Which rule set it aside.
    pub reason: SetAsideReason,
}

impl HostThread {
    /// `pid 7 · tid 9`, as user-facing text names it.
    pub fn name(&self) -> String {
        format!("pid {} · tid {}", self.pid, self.tid)
    }
}

impl HostTrace {
    /// Threads named in [`HostTrace::set_aside_phrase`].
    pub const NAMED: usize = 3;

    /// `1 thread set aside, its stamps not of this trace: pid 7 · tid 9 (its end stamp is
    /// implausibly far from its start)`, naming the first [`HostTrace::NAMED`] (`None`
    /// when none was set aside): the words of a launch's lanes set aside.
    pub fn set_aside_phrase(&self) -> Option<String> {
        let names: Vec<String> = (self.set_aside.iter().take(Self::NAMED))
            .map(|s| format!("{} ({})", s.thread.name(), s.reason.describe()))
            .collect();
        let n = self.set_aside.len() as u64;
        (n > 0).then(|| {
            super::diagnostics::set_aside_phrase(n, "thread", &names, |their| {
                format!("{their} stamps not of this trace")
            })
        })
    }
}

/// A thread of the host trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostThread {
    /// `pid` as written (a number's decimal text, or the string).
    pub pid: String,
    /// `tid` as written.
    pub tid: String,
    /// From `process_name` metadata.
    pub process_name: Option<String>,
    /// From `thread_name` metadata.
    pub thread_name: Option<String>,
    /// From `process_sort_index` metadata.
    pub process_sort: Option<i64>,
    /// From `thread_sort_index` metadata.
    pub thread_sort: Option<i64>,
}

/// A host event.
#[derive(Clone, Debug, PartialEq)]
pub struct HostEvent {
    /// Index into [`HostTrace::threads`].
    pub thread: usize,
    /// Begin, ns on the trace's clock.
    pub ts: u64,
    /// Duration, ns (`None`: an instant).
    pub dur: Option<u64>,
    /// `name`.
    pub name: String,
    /// `cat` (`host` when absent).
    pub category: String,
    /// `args`, as written.
    pub args: Map<String, Value>,
}
