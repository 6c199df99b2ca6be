//! `ikp plot BUF -o DIR`: SVG histograms per region and per-block overlays (see
//! [`ikp_host::report::plot`] for the files written), all of them or none.
use crate::input::InputArgs;
use crate::output::Outputs;
use ikp_host::report::plots;
use ikp_host::TraceStats;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `ikp plot`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The buffer file (ikp native, TVM, FlashInfer or Mirage format).
    pub buf: PathBuf,
    #[command(flatten)]
    pub input: InputArgs,
    /// Output directory (created if missing).
    #[arg(short = 'o', long = "out-dir")]
    pub out_dir: PathBuf,
    /// Histogram bins.
    #[arg(long, default_value_t = 64)]
    pub bins: u32,
    /// Blocks drawn in each per-block overlay (those with the most occurrences).
    #[arg(long, default_value_t = 8)]
    pub top_blocks: usize,
}

/// Runs `ikp plot`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let trace = args.input.load(&args.buf)?;
    let charts = plots(&TraceStats::of(&trace), args.bins, args.top_blocks);
    let mut outs = Outputs::new(&[&args.buf], true);
    for p in &charts {
        outs.file(&args.out_dir.join(&p.file), |w| {
            Ok(w.write_all(p.svg.as_bytes())?)
        })?;
    }
    outs.commit()?;
    writeln!(
        std::io::stdout(),
        "{} charts in {}",
        charts.len(),
        args.out_dir.display()
    )?;
    Ok(())
}
