//! `ikp decode BUF [BUF]...`: decode a buffer and write any of the Chrome trace, summary
//! JSON, per-block distributions, CSV and Perfetto outputs (each atomically).
//!
//! **Perfetto** (`--perfetto OUT`) is deflate-compressed by default
//! (`--perfetto-compression deflate`: `TracePacket.compressed_packets` bundles, which the
//! Perfetto UI and trace processor expand transparently; about 10x smaller than the Chrome
//! JSON of the shipped sample, against about 2x for `none`). The library's default stays
//! plain.
//!
//! **Several buffers** (`ikp decode a.bin b.bin --perfetto out.trace`) go into one Perfetto
//! trace, a launch per buffer in the order given, each decoded with the same `--format`,
//! `--names` options. A launch's root track is labelled `launch k: <file name>`; buffers
//! whose file names coincide are labelled with the path as given instead (and a path given
//! twice gets a ` (2)` suffix). `--launch-layout` places them one after the other
//! (`sequential`, default) or all at 0 (`aligned`). They are decoded one after the other and
//! all held in memory while the trace is written (the streaming path takes one buffer).
//! The other outputs (`--chrome`, `--summary`, `--csv`, `--block-dists`) take one buffer:
//! asking for them with several is a usage error (exit code 2, nothing written). With no
//! output asked for, each buffer's summary table is printed under a `==> label <==` line.
//!
//! **Streaming**: a single native buffer of at least 1 GiB (or `--stream`) with `--perfetto`
//! as the only output is decoded lane by lane from a memory map, with the same bytes as the
//! in-memory path.
//!
//! `--block-filter` applies to every output; with it, or with `--perfetto-critical-path`
//! (which needs every span at once), Perfetto takes the in-memory path.
//!
//! Each file written gets a line on stderr (path and size) unless `--quiet`. `-` as an
//! output path is standard output, for one output at a time (`ikp decode BUF --summary - |
//! jq ...`); a closed pipe ends the command quietly with status 0.
use anyhow::Context;
use ikp_host::decode::{self, DecodeOptions, FormatChoice};
use ikp_host::model::Trace;
use ikp_host::write::perfetto::{Launch, PerfettoOptions};
use ikp_host::write::{self, atomic, BlockFilter, TraceWriteOptions};
use std::io::Write;
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

/// Placement of several launches in one Perfetto trace.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum LaunchLayout {
    /// One after the other, in the order given (with a small gap).
    Sequential,
    /// All starting at 0, for side-by-side comparison.
    Aligned,
}

/// Perfetto packet compression.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum PerfettoCompression {
    /// Plain packets (fastest to write).
    None,
    /// Deflate-compressed packet bundles (read transparently by the Perfetto UI and trace
    /// processor).
    Deflate,
}

/// A misuse of the command line found after parsing (a combination of arguments the
/// command refuses): exit code 2, like clap's own usage errors.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

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
    /// The input `buf`, read with `names` and `format` and no block filter (for commands
    /// that take several buffers).
    pub fn of(buf: &Path, names: Option<PathBuf>, format: Format) -> Input {
        Input {
            buf: buf.to_path_buf(),
            names,
            format,
            block_filter: None,
        }
    }

    /// Reads and decodes the buffer.
    pub fn load(&self) -> anyhow::Result<Trace> {
        Ok(decode::load(&self.buf, &self.options()?)?)
    }

    /// The decode options these arguments ask for.
    pub fn options(&self) -> anyhow::Result<DecodeOptions> {
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
        Ok(opts)
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
    /// More buffers, each decoded with the same --format, --names: --perfetto then writes
    /// one trace with a launch per buffer, in the order given, labelled with the file
    /// names. The other outputs take one buffer.
    #[arg(value_name = "BUF")]
    pub more: Vec<PathBuf>,
    /// Write a Chrome Trace Event JSON file (chrome://tracing, ui.perfetto.dev).
    #[arg(long, value_name = "OUT")]
    pub chrome: Option<PathBuf>,
    /// Write the summary JSON (region statistics).
    #[arg(long, value_name = "OUT")]
    pub summary: Option<PathBuf>,
    /// Write the spans as CSV.
    #[arg(long, value_name = "OUT")]
    pub csv: Option<PathBuf>,
    /// Write a native Perfetto protobuf trace (ui.perfetto.dev, trace processor); with
    /// several buffers, one trace with a launch per buffer.
    #[arg(long, value_name = "OUT")]
    pub perfetto: Option<PathBuf>,
    /// Perfetto: deflate-compressed packet bundles (several times smaller; the Perfetto UI
    /// and trace processor read them transparently) or plain packets.
    #[arg(long, value_enum, value_name = "HOW", default_value_t = PerfettoCompression::Deflate)]
    pub perfetto_compression: PerfettoCompression,
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
    /// Force the streaming Perfetto path (memory-mapped input, one lane at a time), which
    /// is otherwise taken automatically for native buffers of at least 1 GiB when
    /// --perfetto is the only output. One buffer only.
    #[arg(long, hide = true)]
    pub stream: bool,
}

/// Native buffers from this size on are decoded to Perfetto lane by lane when Perfetto is
/// the only output: peak memory is then bounded by the largest lane, not by the trace.
const STREAM_MIN_BYTES: u64 = 1 << 30;

/// Runs `ikp decode`.
pub fn run(a: Args) -> anyhow::Result<()> {
    anyhow::ensure!(
        a.scale.is_finite() && a.scale > 0.0,
        "--scale must be a positive number, got {}",
        a.scale
    );
    anyhow::ensure!(a.hist_bins >= 1, "--hist-bins must be at least 1");
    one_buffer_outputs(&a)?;
    let opt = TraceWriteOptions {
        scale: a.scale,
        emit_complete_events: !a.begin_end,
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
    refuse_input_as_output(&a)?;
    stdout_outputs(&a)?;
    if !a.more.is_empty() {
        return run_several(&a, &opt);
    }
    if let Some(p) = &a.perfetto {
        if streamable(&a)? {
            return stream_perfetto(&a, p);
        }
    }
    let trace = a.input.load()?;
    create_parents(&a)?;
    // The `trace` field of the JSON outputs names the Chrome trace when there is a file of
    // it, else the buffer.
    let chrome_file = a.chrome.as_deref().filter(|p| !is_stdout(p));
    let trace_name = write::file_name(chrome_file.unwrap_or(&a.input.buf));
    let any = a.chrome.is_some()
        || a.summary.is_some()
        || a.csv.is_some()
        || a.perfetto.is_some()
        || a.block_dists.is_some();
    if let Some(p) = &a.chrome {
        emit(p, a.quiet, |mut w| {
            write::chrome::write_chrome(&trace, &opt, &mut w)
        })?;
    }
    if let Some(p) = &a.summary {
        let mut doc = write::summary::summarize(&trace, &opt, &trace_name);
        doc.buffer = Some(write::file_name(&a.input.buf));
        emit(p, a.quiet, |mut w| {
            write::summary::write_summary_doc(&doc, &mut w)
        })?;
    }
    if let Some(p) = &a.block_dists {
        write::summary::write_block_dists(&trace, &opt, &trace_name, p)?;
        if !a.quiet {
            eprintln!("wrote {}/ (per-block region distributions)", p.display());
        }
    }
    if let Some(p) = &a.csv {
        emit(p, a.quiet, |mut w| {
            write::csv::write_csv(&trace, &opt, &mut w)
        })?;
    }
    if let Some(p) = &a.perfetto {
        let label = write::file_name(&a.input.buf);
        let kept = only_blocks(&trace, &opt.block_filter);
        let t = kept.as_ref().unwrap_or(&trace);
        write_perfetto(&[Launch::new(&label, t)], &a, p)?;
    }
    if !any {
        let mut out = std::io::stdout().lock();
        write::table::write_table(&trace, &opt, &mut out).context("writing to stdout")?;
        eprintln!("ikp decode: no output asked for (--chrome, --summary, --csv, --perfetto, --block-dists); printed the summary table");
    }
    report(&trace, None);
    Ok(())
}

/// The buffers given, in order.
fn buffers(a: &Args) -> Vec<&Path> {
    std::iter::once(&a.input.buf)
        .chain(&a.more)
        .map(PathBuf::as_path)
        .collect()
}

/// Refuses, as a usage error, outputs that take one buffer when several are given.
fn one_buffer_outputs(a: &Args) -> anyhow::Result<()> {
    if a.more.is_empty() {
        return Ok(());
    }
    let flags: Vec<&str> = [
        ("--chrome", a.chrome.is_some()),
        ("--summary", a.summary.is_some()),
        ("--csv", a.csv.is_some()),
        ("--block-dists", a.block_dists.is_some()),
        ("--stream", a.stream),
    ]
    .into_iter()
    .filter_map(|(f, on)| on.then_some(f))
    .collect();
    let verb = match flags.len() {
        0 => return Ok(()),
        1 => "takes",
        _ => "take",
    };
    Err(UsageError(format!(
        "{} {verb} one buffer; {} were given (several buffers go to --perfetto)",
        flags.join(", "),
        a.more.len() + 1
    ))
    .into())
}

/// `ikp decode` with several buffers: one Perfetto trace with a launch per buffer, or
/// without an output each buffer's summary table (other outputs were refused before).
/// Every buffer is decoded, one after the other, before anything is written.
fn run_several(a: &Args, opt: &TraceWriteOptions) -> anyhow::Result<()> {
    let bufs = buffers(a);
    let dopts = a.input.options()?;
    let traces = bufs
        .iter()
        .map(|p| Ok(decode::load(p, &dopts)?))
        .collect::<anyhow::Result<Vec<Trace>>>()?;
    let labels = labels(&bufs);
    if let Some(p) = &a.perfetto {
        create_parents(a)?;
        let kept: Vec<Option<Trace>> = (traces.iter())
            .map(|t| only_blocks(t, &opt.block_filter))
            .collect();
        let launches: Vec<Launch> = labels
            .iter()
            .zip(traces.iter().zip(&kept))
            .map(|(l, (t, k))| Launch::new(l, k.as_ref().unwrap_or(t)))
            .collect();
        write_perfetto(&launches, a, p)?;
    } else {
        let mut out = std::io::stdout().lock();
        for (i, (l, t)) in labels.iter().zip(&traces).enumerate() {
            let sep = if i == 0 { "" } else { "\n" };
            writeln!(out, "{sep}==> {l} <==").context("writing to stdout")?;
            write::table::write_table(t, opt, &mut out).context("writing to stdout")?;
        }
        eprintln!("ikp decode: no output asked for (--perfetto takes several buffers); printed the summary tables");
    }
    for (l, t) in labels.iter().zip(&traces) {
        report(t, Some(l));
    }
    Ok(())
}

/// Launch labels of several buffers: each one's file name; where file names coincide, the
/// path as given; a path given more than once gets " (2)", " (3)", ... after the first.
fn labels(bufs: &[&Path]) -> Vec<String> {
    let names: Vec<String> = bufs.iter().map(|p| write::file_name(p)).collect();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(bufs.len());
    for (n, p) in names.iter().zip(bufs) {
        let base = if names.iter().filter(|m| *m == n).count() > 1 {
            p.display().to_string()
        } else {
            n.clone()
        };
        let mut label = base.clone();
        let mut k = 2;
        while !seen.insert(label.clone()) {
            label = format!("{base} ({k})");
            k += 1;
        }
        out.push(label);
    }
    out
}

/// Creates the missing directories above every output, then checks again that no output
/// is an input: a path through a directory that did not exist yet (`new/../run.ikp`) can
/// only be resolved now.
fn create_parents(a: &Args) -> anyhow::Result<()> {
    for p in [&a.chrome, &a.summary, &a.csv, &a.perfetto, &a.block_dists]
        .into_iter()
        .flatten()
    {
        create_parent(p)?;
    }
    refuse_input_as_output(a)
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

/// Refuses an output path that is one of the input buffers (same file, by device and
/// inode, whatever the spelling of the path): writing it would destroy the run.
fn refuse_input_as_output(a: &Args) -> anyhow::Result<()> {
    let outs = [&a.chrome, &a.summary, &a.csv, &a.perfetto, &a.block_dists];
    for o in outs.into_iter().flatten() {
        for input in buffers(a) {
            if same_file(input, o) {
                anyhow::bail!(
                    "{}: this output is the input buffer {}; refusing to overwrite it",
                    o.display(),
                    input.display()
                );
            }
        }
    }
    Ok(())
}

fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        ma.dev() == mb.dev() && ma.ino() == mb.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (ma, mb);
        std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
    }
}

/// Whether `--perfetto` can take the streaming path: it is the only output and the
/// buffer is a native one of at least [`STREAM_MIN_BYTES`] (or `--stream`).
fn streamable(a: &Args) -> anyhow::Result<bool> {
    if a.chrome.is_some()
        || a.summary.is_some()
        || a.csv.is_some()
        || a.block_dists.is_some()
        || a.perfetto_critical_path
    {
        return Ok(false);
    }
    if matches!(a.input.format, Format::Tvm) || a.input.block_filter.is_some() {
        return Ok(false);
    }
    let Ok(m) = std::fs::metadata(&a.input.buf) else {
        return Ok(false); // the normal path reports the error
    };
    if !m.is_file() || (m.len() < STREAM_MIN_BYTES && !a.stream) {
        return Ok(false);
    }
    use std::io::Read;
    let mut w0 = [0u8; 8];
    let native = std::fs::File::open(&a.input.buf)
        .and_then(|mut f| f.read_exact(&mut w0))
        .is_ok_and(|()| u64::from_le_bytes(w0) == ikp_device::wire::MAGIC);
    Ok(native || matches!(a.input.format, Format::Ikp))
}

/// The Perfetto options the arguments ask for (both paths).
fn perfetto_options(a: &Args) -> PerfettoOptions {
    use write::perfetto::{Compression, GroupBy as G, LaunchLayout as L};
    PerfettoOptions {
        group_by: match a.group_by {
            GroupBy::Sm => G::Sm,
            GroupBy::Block => G::Block,
        },
        launch_layout: match a.launch_layout {
            LaunchLayout::Sequential => L::Sequential,
            LaunchLayout::Aligned => L::Aligned,
        },
        compression: match a.perfetto_compression {
            PerfettoCompression::None => Compression::None,
            PerfettoCompression::Deflate => Compression::Deflate,
        },
        critical_path: a.perfetto_critical_path,
    }
}

/// `--perfetto` by streaming: the buffer is mapped, its lanes checked (pages released as
/// they are read), then decoded and written one lane at a time, each lane's pages released
/// after use. Output is byte-identical to the in-memory path.
fn stream_perfetto(a: &Args, p: &Path) -> anyhow::Result<()> {
    use ikp_host::buffer::MappedBuffer;
    use ikp_host::decode::{native, LoadError};
    let path = &a.input.buf;
    let load_err = |kind: decode::LoadErrorKind| LoadError {
        path: path.clone(),
        kind,
    };
    let map = MappedBuffer::open(path).map_err(|e| load_err(e.into()))?;
    let mut opts = a.input.options()?;
    opts.format = FormatChoice::Ikp;
    let prep =
        native::prepare(map.words(), &opts, &|r| map.release(r)).map_err(|e| load_err(e.into()))?;
    create_parents(a)?;
    let label = write::file_name(path);
    let popts = perfetto_options(a);
    let mut diag = None;
    emit(p, a.quiet, |w| {
        let (_, d) = write::perfetto::write_perfetto_streamed(
            w,
            &label,
            prep.lane_count(),
            |i| {
                let mut t = prep.decode_lanes(i..i + 1)?;
                map.release(prep.lane_words(i));
                if let Some(n) = &opts.names {
                    decode::names::overlay(&mut t.names, n);
                }
                Ok(t)
            },
            &popts,
        )
        .map_err(std::io::Error::other)?;
        diag = Some(d);
        Ok(())
    })?;
    if let Some(d) = diag {
        warn(
            None,
            d.unmatched_begin,
            d.unmatched_end,
            d.after_finalize,
            d.unknown_records,
            d.backward_steps,
            d.dropped,
        );
    }
    Ok(())
}

/// The trace restricted to `--block-filter`'s blocks, for the Perfetto writer (the other
/// writers apply the filter themselves); `None` when every block is kept.
fn only_blocks(t: &Trace, f: &BlockFilter) -> Option<Trace> {
    (!f.blocks().is_empty()).then(|| t.filter_blocks(|b| f.contains(b)))
}

/// `--perfetto` in memory: the decoded launches, written atomically.
fn write_perfetto(launches: &[Launch<'_>], a: &Args, p: &Path) -> anyhow::Result<()> {
    let opts = perfetto_options(a);
    emit(p, a.quiet, |w| {
        write::perfetto::write_perfetto(w, launches, &opts)
            .map(|_| ())
            .map_err(std::io::Error::other)
    })
}

/// Whether an output path means standard output.
fn is_stdout(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// Refuses, as a usage error, `-` (standard output) for more than one output, or for the
/// block distributions (a directory).
fn stdout_outputs(a: &Args) -> anyhow::Result<()> {
    if a.block_dists.as_deref().is_some_and(is_stdout) {
        return Err(UsageError(
            "--block-dists writes a directory; it cannot be - (standard output)".into(),
        )
        .into());
    }
    let to_stdout: Vec<&str> = [
        ("--chrome", &a.chrome),
        ("--summary", &a.summary),
        ("--csv", &a.csv),
        ("--perfetto", &a.perfetto),
    ]
    .into_iter()
    .filter(|(_, p)| p.as_deref().is_some_and(is_stdout))
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

/// Writes one output: to standard output for `-`, else to the file, atomically, followed by
/// a line on stderr naming it and its size (unless `quiet`).
fn emit(
    path: &Path,
    quiet: bool,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    if is_stdout(path) {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
        return fill(&mut w)
            .and_then(|()| w.flush())
            .context("writing to standard output");
    }
    atomic::write_file(path, |w| fill(w))?;
    if !quiet {
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        eprintln!("wrote {} ({})", path.display(), human_bytes(size));
    }
    Ok(())
}

/// `1234567` -> `1.2 MiB`.
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let (mut v, mut u) = (n as f64 / 1024.0, 0);
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// One stderr line when the buffer has problems worth knowing about (naming the buffer
/// by its label when there are several).
fn report(t: &Trace, label: Option<&str>) {
    let d = &t.diagnostics;
    warn(
        label,
        d.unmatched_begin.len() as u64,
        d.unmatched_end.len() as u64,
        d.after_finalize,
        d.unknown_records,
        d.backward_steps,
        t.dropped(),
    );
}

/// The warning line of [`report`]: the counts of a decode's diagnostics, in their order.
fn warn(
    label: Option<&str>,
    ub: u64,
    ue: u64,
    after_finalize: u64,
    unknown: u64,
    backward: u64,
    dropped: u64,
) {
    if ub == 0 && ue == 0 && after_finalize == 0 && unknown == 0 && backward == 0 && dropped == 0 {
        return;
    }
    let whose = label.map(|l| format!("{l}: ")).unwrap_or_default();
    eprintln!(
        "ikp: warning: {whose}{ub} unmatched begins, {ue} unmatched ends, {after_finalize} records after finalize, {unknown} unknown records, {backward} backward timer steps (clamped), {dropped} dropped records (see the summary for which regions and lanes)"
    );
}
