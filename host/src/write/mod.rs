//! Writers: one module per output format, one convention for all of them.
//!
//! Every writer takes its sink first (`out: impl Write`), then what it writes (a
//! [`Trace`], or [`Launch`]es for the formats that hold several), then its options, and
//! returns [`WriteError`]. Writing to a file atomically, alone or together with other
//! outputs, is [`atomic`]'s business: `atomic::write_file(path, |w| write_csv(w, &trace))`.
//!
//! - [`chrome`]: Chrome Trace Event JSON (chrome://tracing, Perfetto UI);
//! - [`summary`]: summary JSON of region statistics;
//! - [`block_dists`]: the per-block region distribution directory;
//! - [`csv`]: one row per span, for pandas / DuckDB;
//! - [`mod@parquet`] (feature `parquet`): spans, instants and counter samples of one or
//!   many launches as Parquet tables, for DuckDB, Polars, Spark;
//! - [`table`]: the terminal table of `ikp summary`;
//! - [`perfetto`]: native Perfetto protobuf;
//! - [`analysis_text`]: `ikp analyze`'s text and `ikp diff`'s table;
//! - [`atomic`]: all-or-nothing files and directories, one or several at a time.
//!
//! Each output has its own options ([`ChromeOptions`], [`SummaryOptions`],
//! [`BlockDistOptions`], [`TableOptions`], ...); [`TraceWriteOptions`] gathers those of
//! [`write_trace`]. The statistics the summary, the distributions and the table show are
//! computed once per trace, in [`TraceStats`], which the writers only format.
pub mod analysis_text;
pub mod atomic;
pub mod block_dists;
pub mod chrome;
pub mod csv;
mod error;
mod json;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod perfetto;
pub mod summary;
pub mod table;

pub use block_dists::BlockDistOptions;
pub use chrome::ChromeOptions;
pub use error::{WriteError, WriteErrorKind};
pub use summary::SummaryOptions;
pub use table::TableOptions;

use crate::model::{Lane, Trace};
use crate::stats::TraceStats;
use std::path::Path;

/// One decoded launch and the label it is shown under (usually its buffer's file name),
/// for the writers that put several launches in one output (Perfetto, the HTML report,
/// the workbook, the Parquet tables).
#[derive(Clone, Copy, Debug)]
pub struct Launch<'a> {
    /// Shown in the output's launch heading (the Perfetto root track, the report section).
    pub label: &'a str,
    /// The decoded trace.
    pub trace: &'a Trace,
}

impl<'a> Launch<'a> {
    /// A launch labelled `label`.
    pub fn new(label: &'a str, trace: &'a Trace) -> Self {
        Launch { label, trace }
    }
}

/// Options of [`write_trace`]: the Chrome trace and, beside it, the outputs asked for.
///
/// Named after the in-kernel profiler whose `write_trace` this reproduces
/// (yao-jz/intra-kernel-profiler's `TraceWriteOptions`; see the repository's
/// `docs/references.md`); each output has its own options, with that profiler's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceWriteOptions {
    /// The Chrome trace.
    pub chrome: ChromeOptions,
    /// The summary JSON at [`summary_path`]; `None`: not written. Default: written.
    pub summary: Option<SummaryOptions>,
    /// The distribution directory at [`dists_path`]; `None` (default): not written.
    pub block_dists: Option<BlockDistOptions>,
}

impl Default for TraceWriteOptions {
    fn default() -> Self {
        TraceWriteOptions {
            chrome: ChromeOptions::default(),
            summary: Some(SummaryOptions::default()),
            block_dists: None,
        }
    }
}

/// `foo.json` → `foo_summary.json`, the summary's path beside a trace.
pub fn summary_path(trace_path: &Path) -> std::path::PathBuf {
    sibling(trace_path, "_summary.json")
}

/// `foo.json` → `foo_block_region_dists`, the distribution directory beside a trace.
pub fn dists_path(trace_path: &Path) -> std::path::PathBuf {
    sibling(trace_path, "_block_region_dists")
}

fn sibling(p: &Path, suffix: &str) -> std::path::PathBuf {
    let stem = p
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    p.with_file_name(format!("{stem}{suffix}"))
}

/// Writes the Chrome trace at `path` and, as the options ask, the summary JSON at
/// [`summary_path`] and the distribution directory at [`dists_path`] (from one
/// [`TraceStats`]): all of them or, on error, none. Returns the paths written.
pub fn write_trace(
    path: &Path,
    trace: &Trace,
    opt: &TraceWriteOptions,
) -> Result<Vec<std::path::PathBuf>, WriteError> {
    let mut outs = atomic::Outputs::new();
    outs.file(path, |w| chrome::write_chrome(w, trace, &opt.chrome))?;
    let name = file_name(path);
    if opt.summary.is_some() || opt.block_dists.is_some() {
        let stats = TraceStats::of(trace);
        if let Some(o) = &opt.summary {
            let doc = summary::summarize(&stats, o, &name);
            outs.file(&summary_path(path), |w| summary::write_summary(w, &doc))?;
        }
        if let Some(o) = &opt.block_dists {
            block_dists::write_block_dists(&mut outs, &dists_path(path), &stats, o, &name)?;
        }
    }
    let written = outs.paths().map(Path::to_path_buf).collect();
    outs.commit()?;
    Ok(written)
}

/// `f` of the name of every region id up to the largest one the spans and instants of `t`
/// use, and of every counter id up to the largest one sampled: the writers' tables by id.
fn name_tables<T>(t: &Trace, f: impl Fn(&str) -> T) -> (Vec<T>, Vec<T>) {
    // A plain fold (no `Option` per element), which the compiler vectorizes.
    let len = |ids: &[u16]| match ids {
        [] => 0,
        _ => ids.iter().fold(0, |m, &id| m.max(id)) as usize + 1,
    };
    let regions = len(&t.spans.region).max(len(&t.instants.region));
    let counters = len(&t.samples.counter);
    (
        (0..regions).map(|r| f(&t.names.region(r as u16))).collect(),
        (0..counters)
            .map(|c| f(&t.names.counter(c as u16)))
            .collect(),
    )
}

/// The row of each span of `lane` (0 = the lane's own track, `n` = overlap row `n`), or `None`
/// when its spans nest (all on the lane's row). A span goes to the first row where it
/// nests: after the spans ending at or before its begin are done, the row's innermost
/// open span ends no earlier than it.
fn span_rows(trace: &Trace, lane: &Lane) -> Option<Vec<u32>> {
    let s = &trace.spans;
    let r = lane.spans.clone();
    let mut open: Vec<u64> = Vec::new();
    let nested = (s.begin[r.clone()].iter().zip(&s.end[r.clone()])).all(|(&b, &e)| {
        while open.last().is_some_and(|&top| top <= b) {
            open.pop();
        }
        let fits = open.last().is_none_or(|&top| top >= e);
        open.push(e);
        fits
    });
    if nested {
        return None;
    }
    let mut rows: Vec<Vec<u64>> = Vec::new();
    let out = r
        .map(|i| {
            let (b, e) = (s.begin[i], s.end[i]);
            for st in rows.iter_mut() {
                while st.last().is_some_and(|&top| top <= b) {
                    st.pop();
                }
            }
            let k = match rows
                .iter()
                .position(|st| st.last().is_none_or(|&top| top >= e))
            {
                Some(k) => k,
                None => {
                    rows.push(Vec::new());
                    rows.len() - 1
                }
            };
            rows[k].push(e);
            k as u32
        })
        .collect();
    Some(out)
}

/// The rows [`span_rows`] uses (at least 1).
fn rows_used(rows: Option<&[u32]>) -> u32 {
    rows.and_then(|r| r.iter().max()).map_or(1, |m| m + 1)
}

/// The file name of `p` as a string (for the `trace` fields of the JSON outputs).
pub fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
