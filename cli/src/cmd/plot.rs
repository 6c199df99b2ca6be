//! `ikp plot BUF -o DIR`: SVG histograms per region and per-block overlays (see
//! `ikp_host::report::plot` for the files written).
use super::decode::Input;
use anyhow::Context;
use ikp_host::report::plot::plots;
use ikp_host::write::atomic;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `ikp plot`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub input: Input,
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
    let trace = args.input.load()?;
    std::fs::create_dir_all(&args.out_dir)
        .with_context(|| format!("cannot create {}", args.out_dir.display()))?;
    let charts = plots(&trace, args.bins, args.top_blocks);
    for p in &charts {
        atomic::write_file(&args.out_dir.join(&p.file), |w| {
            w.write_all(p.svg.as_bytes())
        })?;
    }
    println!("{} charts in {}", charts.len(), args.out_dir.display());
    Ok(())
}
