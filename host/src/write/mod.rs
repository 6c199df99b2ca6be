//! Writers: one module per output format, one convention for all of them.
//!
//! Every writer takes its sink first (`out: impl Write`), then what it writes (a
//! [`Trace`], or [`Launch`]es for the formats that hold several), then its options, and
//! returns [`WriteError`]. Writing to a file atomically, alone or together with other
//! outputs, is [`atomic`]'s business: `atomic::write_file(path, |w| write_csv(w, &trace))`.
//!
//! - [`chrome`]: Chrome Trace Event JSON (chrome://tracing, Perfetto UI);
//! - [`summary`]: summary JSON of region statistics, and the per-block distribution
//!   directory;
//! - [`csv`]: one row per span, for pandas / DuckDB;
//! - [`mod@parquet`] (feature `parquet`): spans, instants and counter samples of one or
//!   many launches as Parquet tables, for DuckDB, Polars, Spark;
//! - [`table`]: the terminal table of `ikp summary`;
//! - [`perfetto`]: native Perfetto protobuf;
//! - [`analysis_text`]: `ikp analyze`'s text and `ikp diff`'s table;
//! - [`atomic`]: all-or-nothing files and directories, one or several at a time.
//!
//! [`TraceWriteOptions`] carries every option of the Chrome, summary and table writers,
//! with the defaults of the in-kernel profiler this layout comes from, except where noted
//! on the field.
pub mod analysis_text;
pub mod atomic;
pub mod chrome;
pub mod csv;
mod error;
mod json;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod perfetto;
pub mod summary;
pub mod table;

pub use error::{WriteError, WriteErrorKind};

use crate::model::Trace;
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

/// Options of the Chrome trace and summary writers.
///
/// Field names and defaults follow the in-kernel profiler whose output layout these
/// writers reproduce (yao-jz/intra-kernel-profiler's `TraceWriteOptions`; see the
/// repository's `docs/references.md`).
#[derive(Clone, Debug, PartialEq)]
pub struct TraceWriteOptions {
    /// Multiplier from ns to the reported unit (times in the Chrome trace, durations in the
    /// summary). Default 1.0.
    pub scale: f64,
    /// Pair each span into one `X` (complete) event (default `true`): a fifth smaller and
    /// faster to load than the `B`/`E` pairs written when `false`.
    pub emit_complete_events: bool,
    /// `pid` = SM and `tid` = `block << 6 | warp` (true, default), or `pid` = block and
    /// `tid` = `warp * 32` (false). Lanes without an SM (TVM, Mirage formats): `pid` is
    /// the block.
    pub group_by_smid: bool,
    /// Whether [`write_trace`] writes the summary JSON beside the trace. Default true.
    pub emit_summary_json: bool,
    /// Histogram bins of each region in the summary. Default 128.
    pub summary_hist_bins: u32,
    /// Include per-(block, warp) statistics of every region. Default true.
    pub summary_dump_by_block_warp: bool,
    /// Write the per-block region distribution directory. Default false.
    pub emit_block_region_distributions: bool,
    /// Histogram bins of the per-block distributions. Default 128.
    pub block_region_hist_bins: u32,
    /// Keep only the K (block, warp) entries with the largest total time per region
    /// (0 = all). Default 0.
    pub summary_topk_block_warp_per_region: u32,
    /// Write distributions of only the K blocks with the largest total span time (0 = all).
    pub block_region_topk_blocks: u32,
    /// Keep only the K regions with the largest total time per block file (0 = all).
    pub block_region_topk_regions_per_block: u32,
}

impl Default for TraceWriteOptions {
    fn default() -> Self {
        TraceWriteOptions {
            scale: 1.0,
            emit_complete_events: true,
            group_by_smid: true,
            emit_summary_json: true,
            summary_hist_bins: 128,
            summary_dump_by_block_warp: true,
            emit_block_region_distributions: false,
            block_region_hist_bins: 128,
            summary_topk_block_warp_per_region: 0,
            block_region_topk_blocks: 0,
            block_region_topk_regions_per_block: 0,
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
/// [`summary_path`] and the distribution directory at [`dists_path`]: all of them or, on
/// error, none. Returns the paths written.
pub fn write_trace(
    path: &Path,
    trace: &Trace,
    opt: &TraceWriteOptions,
) -> Result<Vec<std::path::PathBuf>, WriteError> {
    let mut outs = atomic::Outputs::new();
    outs.file(path, |w| chrome::write_chrome(w, trace, opt))?;
    let name = file_name(path);
    if opt.emit_summary_json {
        let doc = summary::summarize(trace, opt, &name);
        outs.file(&summary_path(path), |w| summary::write_summary(w, &doc))?;
        if opt.emit_block_region_distributions {
            summary::write_block_dists(&mut outs, &dists_path(path), trace, opt, &name)?;
        }
    }
    let written = outs.paths().map(Path::to_path_buf).collect();
    outs.commit()?;
    Ok(written)
}

/// The file name of `p` as a string (for the `trace` fields of the JSON outputs).
pub fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
