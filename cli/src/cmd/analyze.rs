//! `ikp analyze BUF`: the answers behind the timeline, as text (or JSON with `--json`):
//! timeline breakdown and compute isolation per block and summed, imbalance, gaps, links
//! and the critical path of the slowest block.
//!
//! The JSON is [`ikp_host::analysis::kernel::KernelAnalysis`]; its `# Format` documents
//! every field. The text ([`ikp_host::write_analysis`]) shows the same figures. Lanes the
//! decoder set aside (stamps that cannot belong to the launch, see
//! [`ikp_host::Diagnostics::set_aside`]) are in none of them; a warning on stderr names
//! them. A buffer of several launches (epochs) is analyzed launch by launch, each under
//! a `==> <file> · launch k <==` line (`--json` then is a usage error).
use crate::analysis_opts::AnalysisOpts;
use crate::input::InputArgs;
use crate::output::Outputs;
use ikp_host::analysis::kernel::{self, KernelOptions};
use ikp_host::{write_analysis, AnalysisTextOptions};
use std::path::PathBuf;

/// Arguments of `ikp analyze`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The buffer file (ikp native, TVM, FlashInfer or Mirage format).
    pub buf: PathBuf,
    #[command(flatten)]
    pub input: InputArgs,
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
    let bufs = [args.buf.clone()];
    let l = args
        .input
        .load_launches(&bufs, crate::input::labels(&bufs))?;
    if l.traces.len() > 1 && args.json.is_some() {
        return Err(crate::output::UsageError(format!(
            "--json takes one launch; {} holds {} launches (epochs): without --json, each launch's analysis is printed",
            args.buf.display(),
            l.traces.len()
        ))
        .into());
    }
    let gpu = args.analysis.gpu()?;
    let opts = KernelOptions {
        categories: args.analysis.categories()?,
        work: args.analysis.work()?,
        gpu: Some(gpu),
        ns_per_iteration: args.ns_per_iteration,
    };
    let several = l.traces.len() > 1;
    for (i, (label, trace)) in l.labels.iter().zip(&l.traces).enumerate() {
        if several {
            use std::io::Write;
            let sep = if i == 0 { "" } else { "\n" };
            writeln!(std::io::stdout().lock(), "{sep}==> {label} <==")?;
        }
        analyze_one(&args, trace, &opts, gpu)?;
    }
    Ok(())
}

/// Analyzes one launch: the text on stdout, and the JSON with `--json`.
fn analyze_one(
    args: &Args,
    trace: &ikp_host::Trace,
    opts: &KernelOptions,
    gpu: &'static ikp_host::analysis::roofline::GpuPreset,
) -> anyhow::Result<()> {
    let a = kernel::analyze(trace, opts);
    if let Some(out) = &args.json {
        let mut outs = Outputs::new(&[&args.buf], true);
        outs.file(out, |w| Ok(serde_json::to_writer_pretty(w, &a)?))?;
        outs.commit()?;
    }
    let text = AnalysisTextOptions {
        path_steps: args.path_steps,
    };
    write_analysis(std::io::stdout().lock(), trace, &a, gpu, &text)?;
    Ok(())
}
