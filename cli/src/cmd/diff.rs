//! `ikp diff A B`: compare two runs region by region and flag regressions.
use super::decode::{Format, Input};
use ikp_host::analysis::diff::diff;
use ikp_host::write::atomic;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `ikp diff`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The baseline buffer.
    pub a: PathBuf,
    /// The buffer compared with it.
    pub b: PathBuf,
    /// Region names for TVM-format buffers (one per line, or JSON {"id": "name"}).
    #[arg(long)]
    pub names: Option<PathBuf>,
    /// Wire format of the buffers.
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    pub format: Format,
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
    let load = |buf: &PathBuf| Input::of(buf, args.names.clone(), args.format).load();
    let (a, b) = (load(&args.a)?, load(&args.b)?);
    let d = diff(&a, &b, args.threshold);
    let mut o = std::io::stdout().lock();
    writeln!(
        o,
        "kernel: {} ns -> {} ns ({:+.1}%)",
        d.kernel.0, d.kernel.1, d.kernel_change_pct
    )?;
    writeln!(
        o,
        "{:<24} {:>8} {:>8} {:>12} {:>12} {:>8} {:>8}  flag",
        "region", "count A", "count B", "mean A", "mean B", "mean %", "p50 %"
    )?;
    for r in &d.regions {
        let flag = if r.regression {
            "REGRESSION"
        } else if r.improvement {
            "improved"
        } else {
            ""
        };
        writeln!(
            o,
            "{:<24} {:>8} {:>8} {:>12.1} {:>12.1} {:>+8.1} {:>+8.1}  {flag}",
            r.name, r.count.0, r.count.1, r.mean.0, r.mean.1, r.mean_change_pct, r.p50_change_pct
        )?;
    }
    for n in &d.added {
        writeln!(o, "added:   {n}")?;
    }
    for n in &d.removed {
        writeln!(o, "removed: {n}")?;
    }
    let n = d.regressions().count();
    writeln!(o, "{n} regression(s) beyond {}%", d.threshold_pct)?;
    if let Some(out) = &args.json {
        atomic::write_file(out, |w| {
            serde_json::to_writer_pretty(&mut *w, &d).map_err(std::io::Error::other)
        })?;
    }
    Ok(n > 0 && args.fail_on_regression)
}
