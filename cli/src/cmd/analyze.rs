//! `ikp analyze BUF`: the answers behind the timeline, as text (or JSON with `--json`):
//! timeline breakdown and compute isolation per block and summed, imbalance, gaps, links
//! and the critical path of the slowest block.
//!
//! The JSON is [`ikp_host::analysis::kernel::KernelAnalysis`]; its `# Format` documents
//! every field. The text ([`super::analyze_text`]) shows the same figures.
use super::analysis_opts::AnalysisOpts;
use super::analyze_text;
use super::decode::Input;
use ikp_host::analysis::kernel::{self, KernelOptions};
use ikp_host::write::atomic;
use std::path::PathBuf;

/// Arguments of `ikp analyze`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub analysis: AnalysisOpts,
    /// Also write everything as JSON to this file (every critical-path step included).
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
    /// ns per spin iteration for counter-based blocked time (default: fitted).
    #[arg(long)]
    pub ns_per_iteration: Option<f64>,
    /// Critical-path steps the text shows: the longest ones, in path order (the longest
    /// waits always among them).
    #[arg(long, value_name = "N", default_value_t = 15)]
    pub path_steps: usize,
}

/// Runs `ikp analyze`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let trace = args.input.load()?;
    let gpu = args.analysis.gpu()?;
    let opts = KernelOptions {
        categories: args.analysis.categories()?,
        work: args.analysis.work()?,
        gpu: Some(gpu),
        ns_per_iteration: args.ns_per_iteration,
    };
    let a = kernel::analyze(&trace, &opts);
    let mut o = std::io::stdout().lock();
    analyze_text::write(&mut o, &trace, &a, gpu, args.path_steps)?;
    if let Some(out) = &args.json {
        atomic::write_file(out, |w| {
            serde_json::to_writer_pretty(&mut *w, &a).map_err(std::io::Error::other)
        })?;
    }
    Ok(())
}
