//! `ikp diff A B`: compare two runs region by region and flag regressions.
use crate::input::InputArgs;
use crate::output::Outputs;
use ikp_host::analysis::diff::diff;
use ikp_host::{write_diff, TraceStats};
use std::path::PathBuf;

/// Arguments of `ikp diff`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The baseline buffer.
    pub a: PathBuf,
    /// The buffer compared with it.
    pub b: PathBuf,
    #[command(flatten)]
    pub input: InputArgs,
    /// A region regresses when its mean and median both grow by more than this (percent).
    #[arg(long, default_value_t = 5.0)]
    pub threshold: f64,
    /// Also write the comparison as JSON.
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
    /// Exit with status 3 when any region regressed (for CI).
    #[arg(long)]
    pub fail_on_regression: bool,
}

/// Exit status when `--fail-on-regression` finds one.
pub const REGRESSION_EXIT: u8 = 3;

/// Runs `ikp diff`; `Ok(true)` when a regression was found.
pub fn run(args: Args) -> anyhow::Result<bool> {
    let runs = args.input.load_all(&[args.a.clone(), args.b.clone()])?;
    let (a, b) = (TraceStats::of(&runs[0]), TraceStats::of(&runs[1]));
    let d = diff(&a, &b, args.threshold);
    if let Some(out) = &args.json {
        let mut outs = Outputs::new(&[&args.a, &args.b], true);
        outs.file(out, |w| Ok(serde_json::to_writer_pretty(w, &d)?))?;
        outs.commit()?;
    }
    write_diff(std::io::stdout().lock(), &d)?;
    Ok(d.regressions().count() > 0 && args.fail_on_regression)
}
