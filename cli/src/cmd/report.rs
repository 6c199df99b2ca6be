//! `ikp report BUF... -o DIR`: one self-contained HTML page (DIR/report.html) with the
//! summary tables, histograms, SM heat map and imbalance chart of every launch, and with
//! `--xlsx` the TraceLens-style workbook DIR/report.xlsx; both or neither.
use crate::analysis_opts::AnalysisOpts;
use crate::input::InputArgs;
use crate::output::Outputs;
use ikp_host::report::{prepare, write_html, write_xlsx, ReportOptions};
use ikp_host::Launch;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `ikp report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Buffers to report on, one launch each (ikp native, TVM, FlashInfer or Mirage format).
    #[arg(required = true)]
    pub bufs: Vec<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Output directory; the page is DIR/report.html.
    #[arg(short = 'o', long = "out-dir")]
    pub out_dir: PathBuf,
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
    // A buffer of several launches (epochs) is a launch each, `<path> · launch k`.
    let paths: Vec<String> = args.bufs.iter().map(|p| p.display().to_string()).collect();
    let crate::input::Launches { labels, traces, .. } =
        args.input.load_launches(&args.bufs, paths)?;
    let launches: Vec<Launch> = (labels.iter().zip(&traces))
        .map(|(l, t)| Launch::new(l, t))
        .collect();
    let opts = ReportOptions {
        categories: args.analysis.categories()?,
        work: args.analysis.work()?,
        gpu: Some(args.analysis.gpu()?),
        hist_bins: args.hist_bins,
        heat_columns: 200,
    };
    // The statistics and block views once, for the page and the workbook.
    let launches = prepare(&launches, &opts);
    let inputs: Vec<&std::path::Path> = args.bufs.iter().map(PathBuf::as_path).collect();
    let mut outs = Outputs::new(&inputs, true);
    let html = args.out_dir.join("report.html");
    outs.file(&html, |w| write_html(w, &launches, &opts))?;
    let xlsx = args.xlsx.then(|| args.out_dir.join("report.xlsx"));
    if let Some(p) = &xlsx {
        outs.file(p, |w| write_xlsx(w, &launches, &opts))?;
    }
    outs.commit()?;
    let mut o = std::io::stdout().lock();
    for p in std::iter::once(&html).chain(&xlsx) {
        writeln!(o, "{}", p.display())?;
    }
    Ok(())
}
