//! `ikp report BUF... -o DIR`: one self-contained HTML page (DIR/report.html) with the
//! summary tables, histograms, SM heat map and imbalance chart of every launch, and with
//! `--xlsx` the TraceLens-style workbook DIR/report.xlsx.
use super::analysis_opts::AnalysisOpts;
use super::decode::{Format, Input};
use anyhow::Context;
use ikp_host::report::xlsx::xlsx_bytes;
use ikp_host::report::{write_html, ReportOptions};
use ikp_host::write::atomic;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `ikp report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Buffers to report on, one launch each (ikp native or TVM format).
    #[arg(required = true)]
    pub bufs: Vec<PathBuf>,
    /// Output directory; the page is DIR/report.html.
    #[arg(short = 'o', long = "out-dir")]
    pub out_dir: PathBuf,
    /// Region names for TVM-format buffers (one per line, or JSON {"id": "name"}).
    #[arg(long)]
    pub names: Option<PathBuf>,
    /// Wire format of the buffers.
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    pub format: Format,
    /// Histogram bins.
    #[arg(long, default_value_t = 40)]
    pub hist_bins: usize,
    /// Also write DIR/report.xlsx (sheets gpu_timeline, regions, regions_summary_by_category,
    /// regions_summary, regions_unique_args, roofline).
    #[arg(long)]
    pub xlsx: bool,
    #[command(flatten)]
    pub analysis: AnalysisOpts,
}

/// Runs `ikp report`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let traces = args
        .bufs
        .iter()
        .map(|buf| Input::of(buf, args.names.clone(), args.format).load())
        .collect::<anyhow::Result<Vec<_>>>()?;
    let labels: Vec<String> = args.bufs.iter().map(|p| p.display().to_string()).collect();
    let launches: Vec<(&str, &_)> = labels
        .iter()
        .map(String::as_str)
        .zip(traces.iter())
        .collect();
    let opts = ReportOptions {
        categories: args.analysis.categories()?,
        work: args.analysis.work()?,
        gpu: Some(args.analysis.gpu()?),
        hist_bins: args.hist_bins,
        heat_columns: 200,
    };
    std::fs::create_dir_all(&args.out_dir)
        .with_context(|| format!("cannot create {}", args.out_dir.display()))?;
    let path = args.out_dir.join("report.html");
    atomic::write_file(&path, |w| write_html(w, &launches, &opts))?;
    println!("{}", path.display());
    if args.xlsx {
        let bytes = xlsx_bytes(&launches, &opts).context("cannot build the xlsx workbook")?;
        let path = args.out_dir.join("report.xlsx");
        atomic::write_file(&path, |w| w.write_all(&bytes))?;
        println!("{}", path.display());
    }
    Ok(())
}
