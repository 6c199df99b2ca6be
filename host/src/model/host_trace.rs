//! A host-side trace (the PyTorch profiler's export, say), as read by
//! [`crate::decode::chrome_host`] to be placed beside ikp launches on one time axis
//! ([`crate::write::perfetto::write_merged`]).

use serde_json::{Map, Value};
use std::collections::BTreeMap;

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
