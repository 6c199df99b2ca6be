//! Reads a host-side Chrome trace (the PyTorch profiler's export, say) into a
//! [`HostTrace`], to be merged with ikp launches on the host's clock
//! ([`write_merged`](crate::write::perfetto::write_merged), `ikp merge`).
//!
//! # Format (input)
//!
//! A Chrome Trace Event JSON file: an object with a `traceEvents` array, or the array
//! alone. Per the Trace Event Format, `ts` and `dur` are µs (`displayTimeUnit` only sets
//! how viewers display them). **Kineto** (the PyTorch profiler's trace writer) writes
//! `"baseTimeNanoseconds": B` in the object and every `ts` relative to it (µs with three
//! decimals: `ts = (t - B) / 1000`), `B` being `std::chrono::system_clock::now()`
//! floored to a 3-month interval, so that `ts` keeps its ns as a JSON double
//! (pytorch/kineto `libkineto/src/output_json.cpp`, `transToRelativeTime` and
//! `ChromeTraceBaseTime`); its CPU-op times are converted to Unix ns of the same
//! `system_clock` (PyTorch `c10/util/ApproximateClock.cpp`,
//! `ApproximateClockToUnixTimeConverter`), i.e. `CLOCK_REALTIME` on Linux. So a host event
//! is at `B + round(ts * 1000)` ns (`B` = 0 when absent: older Kineto and most other
//! writers give µs since the Unix epoch), on the clock [`ChromeReadOptions::clock`] says
//! (realtime by default, as Kineto's; monotonic for writers that use `CLOCK_MONOTONIC`).
//! A `ts` that is a JSON integer is converted exactly; one with decimals is read as a
//! double, exact to the ns while `|ts|` is below 2^53 ns (104 days: Kineto's relative
//! times always are), within a fraction of a µs for absolute Unix µs.
//!
//! Events read: `ph` `X` (complete, `dur`), `B` / `E` (an `E` closes the latest open `B`
//! of its thread), `i` / `I` (instants), and `M` metadata `process_name`,
//! `thread_name` (`args.name`), `process_sort_index`, `thread_sort_index`
//! (`args.sort_index`). `pid` and `tid` may be numbers or strings (Kineto writes both).
//! Any other phase (flows, counters, async events, ...) is skipped and counted by phase
//! ([`HostTrace::skipped`]); so are a `B` never closed and an `E` with no open `B`.
//!
//! A thread whose events cannot belong to the trace (one `ts` thrown decades away by a
//! damaged file: from its earliest begin to its latest end more than 2^44 ns, more than
//! 2^40 ns from the other threads, or past 2^63 ns) is set aside with its events, by the
//! rules every format's lanes follow ([`super::set_aside`], `# Lanes set aside`), and
//! named in [`HostTrace::set_aside`]; `ikp merge` warns of it.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Number, Value};

use crate::clock_sync::HostClock;
use crate::model::{HostEvent, HostThread, HostTrace, SetAsideThread};

/// How a Chrome trace is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChromeReadOptions {
    /// The host clock its times are on (Kineto's and the PyTorch profiler's: realtime).
    pub clock: HostClock,
}

/// Why a host trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HostTraceError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The problem.
        source: io::Error,
    },
    /// Not Chrome trace JSON.
    #[error("{} is not a Chrome trace JSON file: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        source: serde_json::Error,
    },
    /// An event that cannot be placed.
    #[error("{}: traceEvents[{index}]: {why}", path.display())]
    BadEvent {
        /// The file.
        path: PathBuf,
        /// The event's index in `traceEvents`.
        index: usize,
        /// The problem.
        why: String,
    },
}

#[derive(Deserialize)]
#[allow(non_snake_case)]
struct Doc {
    #[serde(default)]
    traceEvents: Vec<RawEvent>,
    baseTimeNanoseconds: Option<u64>,
}

/// An event's fields ikp reads (a field missing is `None`).
#[derive(Deserialize, Default)]
struct RawEvent {
    ph: Option<String>,
    name: Option<String>,
    cat: Option<String>,
    ts: Option<Number>,
    dur: Option<Number>,
    pid: Option<Value>,
    tid: Option<Value>,
    args: Option<Map<String, Value>>,
}

/// Reads the Chrome trace JSON file at `path` (see the module's `# Format (input)`).
pub fn read_chrome_trace(
    path: &Path,
    opts: &ChromeReadOptions,
) -> Result<HostTrace, HostTraceError> {
    let bytes = std::fs::read(path).map_err(|source| HostTraceError::Io {
        path: path.to_owned(),
        source,
    })?;
    parse_chrome_trace(&bytes, path, opts)
}

/// [`read_chrome_trace`] of the bytes of a file named `path` (for messages).
pub fn parse_chrome_trace(
    bytes: &[u8],
    path: &Path,
    opts: &ChromeReadOptions,
) -> Result<HostTrace, HostTraceError> {
    let json = |source| HostTraceError::Json {
        path: path.to_owned(),
        source,
    };
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    let doc: Doc = if first == Some(&b'[') {
        Doc {
            traceEvents: serde_json::from_slice(bytes).map_err(json)?,
            baseTimeNanoseconds: None,
        }
    } else {
        serde_json::from_slice(bytes).map_err(json)?
    };
    let base = doc.baseTimeNanoseconds.unwrap_or(0);
    let bad = |index: usize, why: String| HostTraceError::BadEvent {
        path: path.to_owned(),
        index,
        why,
    };
    let mut t = HostTrace {
        clock: opts.clock,
        ..HostTrace::default()
    };
    let mut thread_ix: HashMap<(String, String), usize> = HashMap::new();
    let mut process_meta: HashMap<String, (Option<String>, Option<i64>)> = HashMap::new();
    // Open B events per thread: (event index, begin ns).
    let mut open: HashMap<usize, Vec<(usize, u64)>> = HashMap::new();
    let mut pending: Vec<Option<HostEvent>> = Vec::new();
    for (index, e) in doc.traceEvents.into_iter().enumerate() {
        let ph = e.ph.clone().unwrap_or_default();
        let pid = id_text(e.pid.as_ref());
        let tid = id_text(e.tid.as_ref());
        let arg = |k: &str| e.args.as_ref().and_then(|a| a.get(k));
        if ph == "M" {
            let name = arg("name").and_then(Value::as_str).map(str::to_owned);
            let sort = arg("sort_index").and_then(Value::as_i64);
            match e.name.as_deref() {
                Some("process_name") => process_meta.entry(pid).or_default().0 = name,
                Some("process_sort_index") => process_meta.entry(pid).or_default().1 = sort,
                Some("thread_name") => {
                    let i = thread(&mut t, &mut thread_ix, pid, tid);
                    t.threads[i].thread_name = name;
                }
                Some("thread_sort_index") => {
                    let i = thread(&mut t, &mut thread_ix, pid, tid);
                    t.threads[i].thread_sort = sort;
                }
                _ => *t.skipped.entry("M".into()).or_default() += 1,
            }
            continue;
        }
        if !matches!(ph.as_str(), "X" | "B" | "E" | "i" | "I") {
            *t.skipped.entry(ph).or_default() += 1;
            continue;
        }
        let ts_us =
            e.ts.as_ref()
                .ok_or_else(|| bad(index, format!("a \"{ph}\" event without ts")))?;
        let rel = us_to_ns(ts_us).ok_or_else(|| bad(index, format!("ts {ts_us} is not a time")))?;
        let ts = u64::try_from(base as i128 + rel as i128)
            .map_err(|_| bad(index, format!("ts {ts_us} µs is before the clock's origin")))?;
        let i = thread(&mut t, &mut thread_ix, pid, tid);
        let event = |dur| HostEvent {
            thread: i,
            ts,
            dur,
            name: e.name.clone().unwrap_or_default(),
            category: e.cat.clone().unwrap_or_else(|| "host".into()),
            args: e.args.clone().unwrap_or_default(),
        };
        match ph.as_str() {
            "X" => {
                let dur = match &e.dur {
                    None => 0,
                    Some(d) => us_to_ns(d)
                        .and_then(|d| u64::try_from(d).ok())
                        .ok_or_else(|| bad(index, format!("dur {d} is not a duration")))?,
                };
                pending.push(Some(event(Some(dur))));
            }
            "B" => {
                open.entry(i).or_default().push((pending.len(), ts));
                pending.push(Some(event(Some(0))));
            }
            "E" => match open.get_mut(&i).and_then(Vec::pop) {
                Some((k, begin)) => {
                    let ev = pending[k].as_mut().expect("an open B is pending");
                    ev.dur = Some(ts.saturating_sub(begin));
                    // An E's args add to its B's, as in the Trace Event Format.
                    if let Some(a) = &e.args {
                        ev.args.extend(a.clone());
                    }
                }
                None => *t.skipped.entry("E (unopened)".into()).or_default() += 1,
            },
            _ => pending.push(Some(event(None))),
        }
    }
    for (_, stack) in open {
        for (k, _) in stack {
            pending[k] = None;
            *t.skipped.entry("B (unclosed)".into()).or_default() += 1;
        }
    }
    t.events = pending.into_iter().flatten().collect();
    for th in &mut t.threads {
        if let Some((name, sort)) = process_meta.get(&th.pid) {
            th.process_name = name.clone();
            th.process_sort = *sort;
        }
    }
    let aside = set_aside_threads(&mut t);
    // Order the threads kept by process then thread; renumber the events' thread indices.
    let mut order: Vec<usize> = (0..t.threads.len()).filter(|&i| !aside[i]).collect();
    order.sort_by(|&a, &b| thread_key(&t.threads[a]).cmp(&thread_key(&t.threads[b])));
    let mut new_ix = vec![0; t.threads.len()];
    for (n, &o) in order.iter().enumerate() {
        new_ix[o] = n;
    }
    t.threads = order.iter().map(|&o| t.threads[o].clone()).collect();
    for e in &mut t.events {
        e.thread = new_ix[e.thread];
    }
    Ok(t)
}

/// Where a thread sorts: by process (sort index, then pid), then thread (likewise).
fn thread_key(t: &HostThread) -> impl Ord + '_ {
    (
        t.process_sort,
        id_key(&t.pid),
        t.thread_sort,
        id_key(&t.tid),
    )
}

/// Sets aside, with their events, the threads whose stamps cannot belong to the trace,
/// each judged by its earliest begin and latest end as a launch's lane is
/// ([`super::set_aside`]; threads without events are not judged); which threads, by index.
fn set_aside_threads(t: &mut HostTrace) -> Vec<bool> {
    let n = t.threads.len();
    let mut span = vec![(u64::MAX, 0u64, 0u64); n];
    for e in &t.events {
        let s = &mut span[e.thread];
        let end = e.ts.saturating_add(e.dur.unwrap_or(0));
        *s = (s.0.min(e.ts), s.1.max(end), s.2 + 1);
    }
    let judged: Vec<usize> = (0..n).filter(|&i| span[i].2 > 0).collect();
    let intervals = judged.iter().map(|&i| (span[i].0, span[i].1));
    let mut aside = vec![false; n];
    for (&i, why) in judged
        .iter()
        .zip(super::set_aside::judge_intervals(intervals).unwrap_or_default())
    {
        if let Some(reason) = why {
            aside[i] = true;
            t.set_aside.push(SetAsideThread {
                thread: t.threads[i].clone(),
                start: span[i].0,
                end: span[i].1,
                events: span[i].2,
                reason,
            });
        }
    }
    t.events.retain(|e| !aside[e.thread]);
    t.set_aside
        .sort_by(|a, b| thread_key(&a.thread).cmp(&thread_key(&b.thread)));
    aside
}

/// A `pid` / `tid` as text: a number's decimal form, a string as is.
fn id_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Numbers before strings, numerically.
fn id_key(s: &str) -> (u8, i64, &str) {
    match s.parse::<i64>() {
        Ok(n) => (0, n, ""),
        Err(_) => (1, 0, s),
    }
}

/// µs (integer or decimal) to ns, rounded to the nearest ns.
fn us_to_ns(n: &Number) -> Option<i64> {
    if let Some(i) = n.as_i64() {
        return i.checked_mul(1000);
    }
    if let Some(u) = n.as_u64() {
        return i64::try_from(u).ok()?.checked_mul(1000);
    }
    let f = n.as_f64()? * 1000.0;
    (f.is_finite() && f.abs() < 9.2e18).then(|| f.round() as i64)
}

fn thread(
    t: &mut HostTrace,
    ix: &mut HashMap<(String, String), usize>,
    pid: String,
    tid: String,
) -> usize {
    *ix.entry((pid.clone(), tid.clone())).or_insert_with(|| {
        t.threads.push(HostThread {
            pid,
            tid,
            ..HostThread::default()
        });
        t.threads.len() - 1
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<HostTrace, HostTraceError> {
        parse_chrome_trace(s.as_bytes(), Path::new("h.json"), &Default::default())
    }

    #[test]
    fn kineto_relative_times_add_the_base() {
        let t = parse(
            r#"{"displayTimeUnit":"ms","baseTimeNanoseconds":1700000000000000000,
            "traceEvents":[
              {"ph":"X","name":"aten::mm","cat":"cpu_op","pid":7,"tid":9,"ts":1000.123,"dur":2.5,
               "args":{"External id":3}},
              {"ph":"i","name":"mark","pid":7,"tid":9,"ts":5},
              {"ph":"M","name":"thread_name","pid":7,"tid":9,"args":{"name":"python"}},
              {"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"train"}},
              {"ph":"s","name":"flow","pid":7,"tid":9,"ts":5}
            ]}"#,
        )
        .unwrap();
        assert_eq!(t.events.len(), 2);
        assert_eq!(t.events[0].ts, 1_700_000_000_001_000_123);
        assert_eq!(t.events[0].dur, Some(2_500));
        assert_eq!(t.events[0].category, "cpu_op");
        assert_eq!(t.events[1].ts, 1_700_000_000_000_005_000);
        assert_eq!(t.events[1].dur, None);
        assert_eq!(t.skipped.get("s"), Some(&1));
        let th = &t.threads[t.events[0].thread];
        assert_eq!(th.thread_name.as_deref(), Some("python"));
        assert_eq!(th.process_name.as_deref(), Some("train"));
    }

    #[test]
    fn begin_end_pairs_close_latest_and_unpaired_are_counted() {
        let t = parse(
            r#"[{"ph":"B","name":"outer","pid":1,"tid":1,"ts":10},
               {"ph":"B","name":"inner","pid":1,"tid":1,"ts":11},
               {"ph":"E","pid":1,"tid":1,"ts":12},
               {"ph":"E","pid":1,"tid":1,"ts":20},
               {"ph":"E","pid":1,"tid":1,"ts":21},
               {"ph":"B","name":"never","pid":"a","tid":"b","ts":22}]"#,
        )
        .unwrap();
        let got: Vec<(&str, u64, Option<u64>)> = (t.events.iter())
            .map(|e| (e.name.as_str(), e.ts, e.dur))
            .collect();
        assert_eq!(
            got,
            [
                ("outer", 10_000, Some(10_000)),
                ("inner", 11_000, Some(1_000))
            ]
        );
        assert_eq!(t.skipped.get("E (unopened)"), Some(&1));
        assert_eq!(t.skipped.get("B (unclosed)"), Some(&1));
        // Numeric pids sort before string ones.
        assert_eq!(t.threads[0].pid, "1");
        assert_eq!(t.threads[1].pid, "a");
    }

    #[test]
    fn bad_inputs_name_the_file_and_event() {
        let e = parse(r#"{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1}]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("h.json") && e.contains("traceEvents[0]"), "{e}");
        let e = parse(r#"{"traceEvents":[{"ph":"X","ts":-5,"pid":1,"tid":1}]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("before the clock's origin"), "{e}");
        let e = parse("not json").unwrap_err().to_string();
        assert!(e.contains("h.json is not a Chrome trace JSON file"), "{e}");
        let e = parse(r#"[{"ph":"X","ts":1,"dur":-1}]"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("dur -1"), "{e}");
    }
}
