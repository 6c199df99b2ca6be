//! `ikp decode BUF`: decode a buffer and write any of the Chrome trace, summary JSON,
//! per-block distributions, CSV and Perfetto outputs (each atomically).
use anyhow::Context;
use ikp_host::decode::{self, DecodeOptions, FormatChoice};
use ikp_host::model::Trace;
use ikp_host::write::{self, atomic, BlockFilter, TraceWriteOptions};
use std::path::{Path, PathBuf};

/// Wire format choice on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    /// Detect from the first word.
    Auto,
    /// ikp native format.
    Ikp,
    /// TVM / FlashInfer / warpscope format.
    Tvm,
}

/// Chrome pid/tid grouping.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum GroupBy {
    /// pid = SM, tid = block << 6 | warp.
    Sm,
    /// pid = block, tid = warp * 32.
    Block,
}

/// How to read a buffer (shared by `decode` and `summary`).
#[derive(Debug, clap::Args)]
pub struct Input {
    /// The buffer file (ikp native or TVM format).
    pub buf: PathBuf,
    /// Region names: one per line, or a JSON object {"id": "name"}. Required to name the
    /// regions of TVM-format buffers; overrides the buffer's own names.
    #[arg(long)]
    pub names: Option<PathBuf>,
    /// Wire format of the buffer.
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    pub format: Format,
    /// Only these blocks, e.g. "0,1,8-15" (default: all).
    #[arg(long, value_name = "LIST")]
    pub block_filter: Option<String>,
}

impl Input {
    /// Reads and decodes the buffer.
    pub fn load(&self) -> anyhow::Result<Trace> {
        let names = match &self.names {
            Some(p) => Some(decode::names::read(p)?),
            None => None,
        };
        let opts = DecodeOptions {
            format: match self.format {
                Format::Auto => FormatChoice::Auto,
                Format::Ikp => FormatChoice::Ikp,
                Format::Tvm => FormatChoice::Tvm,
            },
            names,
            single_threaded: false,
        };
        Ok(decode::load(&self.buf, &opts)?)
    }

    /// The block filter.
    pub fn filter(&self) -> anyhow::Result<BlockFilter> {
        match &self.block_filter {
            Some(s) => BlockFilter::parse(s).map_err(|e| anyhow::anyhow!("--block-filter: {e}")),
            None => Ok(BlockFilter::default()),
        }
    }
}

/// Arguments of `ikp decode`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub input: Input,
    /// Write a Chrome Trace Event JSON file (chrome://tracing, ui.perfetto.dev).
    #[arg(long, value_name = "OUT")]
    pub chrome: Option<PathBuf>,
    /// Write the summary JSON (region statistics).
    #[arg(long, value_name = "OUT")]
    pub summary: Option<PathBuf>,
    /// Write the spans as CSV.
    #[arg(long, value_name = "OUT")]
    pub csv: Option<PathBuf>,
    /// Write a native Perfetto protobuf trace.
    #[arg(long, value_name = "OUT")]
    pub perfetto: Option<PathBuf>,
    /// Write the per-block region distribution directory (index.json, block_N.json).
    #[arg(long, value_name = "DIR")]
    pub block_dists: Option<PathBuf>,
    /// Chrome / Perfetto grouping: by SM (pid = SM) or by block (pid = block).
    #[arg(long, value_enum, default_value_t = GroupBy::Sm)]
    pub group_by: GroupBy,
    /// Chrome: complete "X" events instead of B/E pairs.
    #[arg(long)]
    pub complete_events: bool,
    /// Multiplier from ns to the reported unit.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Histogram bins of the summary (and of the block distributions).
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub hist_bins: u32,
    /// Keep the K (block, warp) entries with the most time per region (0 = all).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub topk: u32,
    /// Block distributions: only the K blocks with the most time (0 = all).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub topk_blocks: u32,
    /// Block distributions: only each block's K regions with the most time (0 = all).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub topk_regions: u32,
    /// Leave the per-(block, warp) breakdown out of the summary.
    #[arg(long)]
    pub no_by_block_warp: bool,
}

/// Runs `ikp decode`.
pub fn run(a: Args) -> anyhow::Result<()> {
    anyhow::ensure!(
        a.scale.is_finite() && a.scale > 0.0,
        "--scale must be a positive number, got {}",
        a.scale
    );
    anyhow::ensure!(a.hist_bins >= 1, "--hist-bins must be at least 1");
    let opt = TraceWriteOptions {
        scale: a.scale,
        emit_complete_events: a.complete_events,
        group_by_smid: matches!(a.group_by, GroupBy::Sm),
        emit_summary_json: a.summary.is_some(),
        summary_hist_bins: a.hist_bins,
        summary_dump_by_block_warp: !a.no_by_block_warp,
        emit_block_region_distributions: a.block_dists.is_some(),
        block_region_hist_bins: a.hist_bins,
        summary_topk_block_warp_per_region: a.topk,
        block_region_topk_blocks: a.topk_blocks,
        block_region_topk_regions_per_block: a.topk_regions,
        block_filter: a.input.filter()?,
    };
    let trace = a.input.load()?;
    for p in [&a.chrome, &a.summary, &a.csv, &a.perfetto, &a.block_dists]
        .into_iter()
        .flatten()
    {
        create_parent(p)?;
    }
    // The `trace` field of the JSON outputs names the Chrome trace when there is one.
    let trace_name = write::file_name(a.chrome.as_deref().unwrap_or(&a.input.buf));
    let any = a.chrome.is_some()
        || a.summary.is_some()
        || a.csv.is_some()
        || a.perfetto.is_some()
        || a.block_dists.is_some();
    if let Some(p) = &a.chrome {
        atomic::write_file(p, |w| write::chrome::write_chrome(&trace, &opt, w))?;
    }
    if let Some(p) = &a.summary {
        atomic::write_file(p, |w| {
            write::summary::write_summary(&trace, &opt, &trace_name, w)
        })?;
    }
    if let Some(p) = &a.block_dists {
        write::summary::write_block_dists(&trace, &opt, &trace_name, p)?;
    }
    if let Some(p) = &a.csv {
        atomic::write_file(p, |w| write::csv::write_csv(&trace, &opt, w))?;
    }
    if let Some(p) = &a.perfetto {
        write_perfetto(&trace, &a, p)?;
    }
    if !any {
        let mut out = std::io::stdout().lock();
        write::table::write_table(&trace, &opt, &mut out).context("writing to stdout")?;
        eprintln!("ikp decode: no output asked for (--chrome, --summary, --csv, --perfetto, --block-dists); printed the summary table");
    }
    report(&trace);
    Ok(())
}

/// Creates the missing directories above an output path (`out/attention.json` works in a
/// fresh checkout).
fn create_parent(p: &Path) -> anyhow::Result<()> {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() && !d.exists() => std::fs::create_dir_all(d)
            .with_context(|| format!("cannot create the directory of {}", p.display())),
        _ => Ok(()),
    }
}

fn write_perfetto(trace: &Trace, a: &Args, p: &Path) -> anyhow::Result<()> {
    use write::perfetto::{write_perfetto, GroupBy as G, Launch, PerfettoOptions};
    let label = write::file_name(&a.input.buf);
    let opts = PerfettoOptions {
        group_by: match a.group_by {
            GroupBy::Sm => G::Sm,
            GroupBy::Block => G::Block,
        },
        ..Default::default()
    };
    atomic::write_file(p, |w| {
        write_perfetto(w, &[Launch::new(&label, trace)], &opts)
            .map(|_| ())
            .map_err(std::io::Error::other)
    })?;
    Ok(())
}

/// One stderr line when the buffer has problems worth knowing about.
fn report(t: &Trace) {
    let d = &t.diagnostics;
    let dropped = t.dropped();
    if d.unmatched_begin.is_empty()
        && d.unmatched_end.is_empty()
        && d.after_finalize == 0
        && d.unknown_records == 0
        && dropped == 0
    {
        return;
    }
    eprintln!(
        "ikp: warning: {} unmatched begins, {} unmatched ends, {} records after finalize, {} unknown records, {} dropped records (see the summary for which regions and lanes)",
        d.unmatched_begin.len(),
        d.unmatched_end.len(),
        d.after_finalize,
        d.unknown_records,
        dropped
    );
}
