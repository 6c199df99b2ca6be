//! `ikp decode BUF [BUF]...`: decode a buffer and write any of the Chrome trace, summary
//! JSON, per-block distributions, CSV, Parquet and Perfetto outputs, all of them or none.
//!
//! **Perfetto** (`--perfetto OUT`) is deflate-compressed by default, as in the library
//! (`--perfetto-compression none` for plain packets).
//!
//! **Several buffers** (`ikp decode a.bin b.bin --perfetto out.trace`) go into one Perfetto
//! trace, a launch per buffer in the order given, each decoded with the same `--format`,
//! `--names`, `--block-filter`. A launch's root track is labelled `launch k: <file name>`;
//! buffers whose file names coincide are labelled with the path as given instead (and a
//! path given twice gets a ` (2)` suffix). `--parquet DIR` takes several buffers too: its
//! tables hold every launch, each row labelled with its buffer's label (`buffer`) and
//! its launch's index in the buffer (`launch`). The other outputs take one buffer: asking
//! for them with several is a usage error (exit code 2, nothing written). With no output asked
//! for, each buffer's summary table is printed under a `==> label <==` line.
//!
//! **A buffer of several launches** (epochs: a launch loop, a replayed CUDA Graph) is
//! decoded into a launch per epoch that recorded anything, labelled `<file> · launch k`
//! (k from 0): they go into one Perfetto trace and one set of Parquet tables, or without
//! an output each one's summary table is printed, as for several buffers; the one-buffer
//! outputs are a usage error.
//! Launches that ran past the buffer's room are named in a warning.
//!
//! **Streaming**: a single native buffer of at least 1 GiB (or `--stream`) with `--perfetto`
//! as the only output and no critical-path track is decoded lane by lane from a memory map
//! ([`ikp_host::StreamedBuffer`]), with the same bytes and warnings as in memory (with
//! `--block-filter` too). A buffer of several launches, and `--correct-overhead`, are
//! decoded in memory instead.
//!
//! Every file is written aside and put in place once every output was written (a failure
//! leaves none of them), then named on stderr with its size unless `--quiet`. `-` as an
//! output path is standard output, for one output at a time (not for the directories of
//! `--block-dists` and `--parquet`).
use crate::input::{labels, warn, InputArgs, Launches, Loaded};
use crate::output::{is_stdout, Outputs, UsageError};
use anyhow::Context;
use ikp_host::{
    write_block_dists, write_chrome, write_csv, write_parquet, write_perfetto,
    write_perfetto_streamed, write_summary, write_table, BlockDistOptions, ChromeOptions,
    Compression, GroupBy, HostClock, Launch, LaunchLayout, PerfettoOptions, StreamedBuffer,
    Streaming, SummaryOptions, TableOptions, Trace, TraceStats,
};
use std::cell::LazyCell;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `ikp decode`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The buffers (ikp native, TVM, FlashInfer or Mirage format, a yao-jz ring dump, a
    /// Proton trace). Several go into one --perfetto trace, a launch per buffer, in the
    /// order given, labelled with the file names, and into one set of --parquet tables;
    /// the other outputs take one buffer.
    #[arg(required = true, value_name = "BUF")]
    pub bufs: Vec<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Write a Chrome Trace Event JSON file (chrome://tracing, ui.perfetto.dev).
    #[arg(long, value_name = "OUT")]
    pub chrome: Option<PathBuf>,
    /// Write the summary JSON (region statistics).
    #[arg(long, value_name = "OUT")]
    pub summary: Option<PathBuf>,
    /// Write the spans as CSV.
    #[arg(long, value_name = "OUT")]
    pub csv: Option<PathBuf>,
    /// Write the spans, instants and counter samples as Parquet (DuckDB, Polars, Spark):
    /// DIR/spans.parquet, DIR/instants.parquet, DIR/counters.parquet (other files in DIR
    /// are left alone). With several buffers or launches, one set of tables holding every
    /// launch, each row labelled with its buffer and launch index.
    #[arg(long, value_name = "DIR")]
    pub parquet: Option<PathBuf>,
    /// Write a native Perfetto protobuf trace (ui.perfetto.dev, trace processor); with
    /// several buffers, one trace with a launch per buffer.
    #[arg(long, value_name = "OUT")]
    pub perfetto: Option<PathBuf>,
    /// Perfetto: deflate-compressed packet bundles (several times smaller; the Perfetto UI
    /// and trace processor read them transparently) or plain packets.
    #[arg(long, value_enum, value_name = "HOW", default_value_t = Compression::Deflate)]
    pub perfetto_compression: Compression,
    /// Perfetto with several buffers: launches one after the other, or all starting at 0.
    #[arg(long, value_enum, value_name = "HOW", default_value_t = LaunchLayout::Sequential)]
    pub launch_layout: LaunchLayout,
    /// Write the per-block region distribution directory (index.json, block_N.json).
    #[arg(long, value_name = "DIR")]
    pub block_dists: Option<PathBuf>,
    /// Chrome / Perfetto grouping: by SM (pid = SM) or by block (pid = block).
    #[arg(long, value_enum, default_value_t = GroupBy::Sm)]
    pub group_by: GroupBy,
    /// Chrome: B/E event pairs instead of one complete "X" event per span.
    #[arg(long)]
    pub begin_end: bool,
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
    /// Do not print a line per file written.
    #[arg(long, short)]
    pub quiet: bool,
    /// Perfetto: also draw the critical path of the slowest block (each launch's) on a
    /// track of its own, first under the launch, its slices annotated with the step's
    /// group and what it waited on (`ikp analyze` prints the same path). Decodes in
    /// memory (never the streaming path).
    #[arg(long)]
    pub perfetto_critical_path: bool,
    /// Perfetto: write absolute times on this host clock (by each buffer's host clock
    /// sync, which HostSession records) instead of launch-relative times; a buffer without
    /// a clock sync is then an error.
    #[arg(long, value_enum, value_name = "CLOCK")]
    pub host_clock: Option<HostClock>,
    /// Force the streaming Perfetto path (memory-mapped input, one lane at a time), which
    /// is otherwise taken automatically for native buffers and stream files of at least
    /// 1 GiB when --perfetto is the only output. One buffer only.
    #[arg(long, hide = true)]
    pub stream: bool,
}

impl Args {
    /// The outputs asked for, with their flags.
    fn outputs(&self) -> [(&'static str, Option<&Path>); 6] {
        [
            ("--chrome", self.chrome.as_deref()),
            ("--summary", self.summary.as_deref()),
            ("--csv", self.csv.as_deref()),
            ("--block-dists", self.block_dists.as_deref()),
            ("--parquet", self.parquet.as_deref()),
            ("--perfetto", self.perfetto.as_deref()),
        ]
    }

    fn chrome_options(&self) -> ChromeOptions {
        ChromeOptions {
            scale: self.scale,
            emit_complete_events: !self.begin_end,
            group_by_smid: matches!(self.group_by, GroupBy::Sm),
        }
    }

    fn summary_options(&self) -> SummaryOptions {
        SummaryOptions {
            scale: self.scale,
            summary_hist_bins: self.hist_bins,
            summary_dump_by_block_warp: !self.no_by_block_warp,
            summary_topk_block_warp_per_region: self.topk,
        }
    }

    fn block_dist_options(&self) -> BlockDistOptions {
        BlockDistOptions {
            scale: self.scale,
            block_region_hist_bins: self.hist_bins,
            block_region_topk_blocks: self.topk_blocks,
            block_region_topk_regions_per_block: self.topk_regions,
        }
    }

    fn table_options(&self) -> TableOptions {
        TableOptions { scale: self.scale }
    }

    fn perfetto_options(&self) -> PerfettoOptions {
        PerfettoOptions {
            group_by: self.group_by,
            launch_layout: self.launch_layout,
            compression: self.perfetto_compression,
            critical_path: self.perfetto_critical_path,
            host_clock: self.host_clock,
        }
    }

    fn inputs(&self) -> Vec<&Path> {
        self.bufs.iter().map(PathBuf::as_path).collect()
    }
}

/// Runs `ikp decode`: the one buffer streamed to `--perfetto` when the library finds it
/// streams (see [`streaming`]), else every launch in memory.
pub fn run(a: Args) -> anyhow::Result<()> {
    anyhow::ensure!(
        a.scale.is_finite() && a.scale > 0.0,
        "--scale must be a positive number, got {}",
        a.scale
    );
    anyhow::ensure!(a.hist_bins >= 1, "--hist-bins must be at least 1");
    one_buffer_outputs(&a)?;
    stdout_outputs(&a)?;
    match (a.input).load_or_stream(&a.bufs, labels(&a.bufs), streaming(&a))? {
        Loaded::Streamed(src) => stream_perfetto(&a, &src),
        Loaded::Launches(launches) => write_launches(&a, launches),
    }
}

/// Writes the outputs of the launches decoded in memory: the one-launch outputs (refused,
/// as a usage error, for several), Parquet and Perfetto; with no output, each launch's
/// summary table.
fn write_launches(a: &Args, launches: Launches) -> anyhow::Result<()> {
    let Launches {
        labels,
        buffers,
        traces,
    } = launches;
    if traces.len() > 1 {
        let why = format!("one launch; {} holds {} launches (epochs): several launches go to --perfetto and --parquet, or to ikp summary, analyze and report", a.bufs[0].display(), traces.len());
        refuse_one_launch_outputs(a, None, &why)?;
    }
    if a.outputs().iter().all(|(_, p)| p.is_none()) {
        return print_tables(&labels, &traces, &a.table_options());
    }
    // One launch is labelled by its buffer (a launch of an epoch too).
    let names = if traces.len() == 1 { &buffers } else { &labels };
    let launches: Vec<Launch> = (names.iter().zip(&traces))
        .map(|(l, t)| Launch::new(l, t))
        .collect();
    // The Parquet rows are labelled by buffer: their `launch` column tells a buffer's
    // launches apart.
    let by_buffer: Vec<Launch> = (buffers.iter().zip(&traces))
        .map(|(b, t)| Launch::new(b, t))
        .collect();
    let popts = a.perfetto_options();
    let mut outs = Outputs::new(&a.inputs(), a.quiet);
    if let [trace] = &traces[..] {
        // Computed by the first output that needs it: the trace writers do not.
        let stats = LazyCell::new(|| TraceStats::of(trace));
        let buf = &a.bufs[0];
        // The `trace` field of the JSON outputs names the Chrome trace when there is a file
        // of it, else the buffer.
        let chrome_file = a.chrome.as_deref().filter(|p| !is_stdout(p));
        let trace_name = ikp_host::file_name(chrome_file.unwrap_or(buf));
        let label = ikp_host::file_name(buf);
        if let Some(p) = &a.chrome {
            outs.file(p, |w| write_chrome(w, trace, &a.chrome_options()))?;
        }
        if let Some(p) = &a.summary {
            let mut doc = ikp_host::summarize(&stats, &a.summary_options(), &trace_name);
            doc.buffer = Some(label.clone());
            outs.file(p, move |w| write_summary(w, &doc))?;
        }
        if let Some(p) = &a.block_dists {
            let opt = a.block_dist_options();
            write_block_dists(outs.batch(), p, &stats, &opt, &trace_name)?;
        }
        if let Some(p) = &a.csv {
            outs.file(p, |w| write_csv(w, trace))?;
        }
    }
    if let Some(p) = &a.parquet {
        write_parquet(outs.batch(), p, &by_buffer)?;
    }
    if let Some(p) = &a.perfetto {
        outs.file(p, |w| write_perfetto(w, &launches, &popts).map(|_| ()))?;
    }
    outs.commit()
}

/// Without an output: the summary table of the one launch, or each launch's under a
/// `==> label <==` line.
fn print_tables(labels: &[String], traces: &[Trace], opt: &TableOptions) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if let [trace] = traces {
        write_table(&mut out, &TraceStats::of(trace), opt)?;
        eprintln!("ikp decode: no output asked for (--chrome, --summary, --csv, --parquet, --perfetto, --block-dists); printed the summary table");
        return Ok(());
    }
    for (i, (l, t)) in labels.iter().zip(traces).enumerate() {
        let sep = if i == 0 { "" } else { "\n" };
        writeln!(out, "{sep}==> {l} <==").context("writing to stdout")?;
        write_table(&mut out, &TraceStats::of(t), opt)?;
    }
    eprintln!("ikp decode: no output asked for (--perfetto and --parquet take several buffers); printed the summary tables");
    Ok(())
}

/// Whether the output `flag` takes several launches (several buffers, or a buffer of
/// several epochs).
fn several_launches(flag: &str) -> bool {
    matches!(flag, "--perfetto" | "--parquet")
}

/// Refuses, as a usage error, outputs that take one buffer when several are given.
fn one_buffer_outputs(a: &Args) -> anyhow::Result<()> {
    if a.bufs.len() < 2 {
        return Ok(());
    }
    let why = format!(
        "one buffer; {} were given (several buffers go to --perfetto and --parquet)",
        a.bufs.len()
    );
    refuse_one_launch_outputs(a, a.stream.then_some("--stream"), &why)
}

/// A usage error naming the one-launch outputs asked for (and `more`), if any: they take `why`.
fn refuse_one_launch_outputs(a: &Args, more: Option<&str>, why: &str) -> anyhow::Result<()> {
    let flags: Vec<&str> = (a.outputs().into_iter())
        .filter(|(f, p)| !several_launches(f) && p.is_some())
        .map(|(f, _)| f)
        .chain(more)
        .collect();
    let verb = match flags.len() {
        0 => return Ok(()),
        1 => "takes",
        _ => "take",
    };
    Err(UsageError(format!("{} {verb} {why}", flags.join(", "))).into())
}

/// Refuses, as a usage error, `-` (standard output) for more than one output, or for the
/// block distributions and the Parquet tables (directories).
fn stdout_outputs(a: &Args) -> anyhow::Result<()> {
    for (flag, p) in [("--block-dists", &a.block_dists), ("--parquet", &a.parquet)] {
        if p.as_deref().is_some_and(is_stdout) {
            return Err(UsageError(format!(
                "{flag} writes a directory; it cannot be - (standard output)"
            ))
            .into());
        }
    }
    let to_stdout: Vec<&str> = a
        .outputs()
        .into_iter()
        .filter(|(_, p)| p.is_some_and(is_stdout))
        .map(|(f, _)| f)
        .collect();
    if to_stdout.len() > 1 {
        return Err(UsageError(format!(
            "{} ask for - (standard output): only one output can go there",
            to_stdout.join(", ")
        ))
        .into());
    }
    Ok(())
}

/// Whether `--perfetto` may be written lane by lane: it is the only output and nothing
/// needs the whole trace (the critical path does). Whether the buffer streams is the
/// library's call ([`ikp_host::Input::decode_or_stream`]): a native one or a stream file of
/// at least 1 GiB, or of any size with `--stream`.
fn streaming(a: &Args) -> Streaming {
    let only_perfetto = a
        .outputs()
        .iter()
        .all(|(f, p)| *f == "--perfetto" || p.is_none());
    if a.perfetto.is_none() || !only_perfetto || a.perfetto_critical_path {
        Streaming::Never
    } else if a.stream {
        Streaming::Always
    } else {
        Streaming::Large
    }
}

/// `--perfetto` by streaming (see the module documentation).
fn stream_perfetto(a: &Args, src: &StreamedBuffer) -> anyhow::Result<()> {
    let p = a.perfetto.as_deref().expect("streaming writes --perfetto");
    let label = ikp_host::file_name(src.path());
    let popts = a.perfetto_options();
    let mut outs = Outputs::new(&a.inputs(), a.quiet);
    outs.file(p, |w| {
        write_perfetto_streamed(w, &label, src, &popts).map(|_| ())
    })?;
    outs.commit()?;
    warn(None, &src.diagnostic_counts());
    Ok(())
}
