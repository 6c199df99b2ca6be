//! `ikp-gpucheck`: the GPU bundle's runner.
//!
//! ```text
//! ikp-gpucheck run RESULTS_DIR [--bundle DIR]   every check; the bundle defaults to the
//!                                               directory above this binary's bin/
//! ikp-gpucheck check NAME                       one GPU check, its result as JSON
//! ```
//! Exit status of `run`: 0 when nothing failed (see `results` for the rule), 1 when a check
//! failed, 2 on a usage error.

use std::path::PathBuf;
use std::process::ExitCode;

use ikp_gpucheck::{gpu, runner};

const USAGE: &str = "usage: ikp-gpucheck run RESULTS_DIR [--bundle DIR] | ikp-gpucheck check NAME";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("run") => run(&args[1..]),
        Some("check") if args.len() == 2 => match serde_json::to_string(&gpu::run(&args[1])) {
            Ok(s) => {
                println!("{s}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("ikp-gpucheck: {e}");
                ExitCode::FAILURE
            }
        },
        _ => usage(),
    }
}

fn usage() -> ExitCode {
    eprintln!("{USAGE}");
    ExitCode::from(2)
}

fn run(args: &[String]) -> ExitCode {
    let (mut results, mut bundle) = (None, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--bundle" => bundle = it.next().map(PathBuf::from),
            s if results.is_none() && !s.starts_with('-') => results = Some(PathBuf::from(s)),
            _ => return usage(),
        }
    }
    let Some(results) = results else {
        return usage();
    };
    let bundle = bundle.or_else(|| {
        let exe = std::env::current_exe().ok()?;
        Some(exe.parent()?.parent()?.to_owned())
    });
    let Some(bundle) = bundle else {
        eprintln!("ikp-gpucheck: cannot tell where the bundle is; pass --bundle DIR");
        return ExitCode::from(2);
    };
    let budget = std::env::var("IKP_GPU_BUDGET_S")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(runner::BUDGET, std::time::Duration::from_secs);
    match runner::run(&bundle, &results, budget) {
        Ok(r) => {
            print!("{}", summary(&r));
            println!("results: {}", results.join("gpu-results.md").display());
            ExitCode::from(r.exit_code() as u8)
        }
        Err(e) => {
            eprintln!(
                "ikp-gpucheck: writing results into {}: {e}",
                results.display()
            );
            ExitCode::FAILURE
        }
    }
}

/// The lines the terminal shows: counts, then every check that did not pass.
fn summary(r: &ikp_gpucheck::results::Results) -> String {
    use ikp_gpucheck::results::Status;
    let mut s = format!(
        "ikp GPU checks: {} passed, {} failed, {} skipped in {:.0} s{}\n",
        r.count(Status::Pass),
        r.count(Status::Fail),
        r.count(Status::Skip),
        r.wall_s,
        if r.required_skips() > 0 {
            format!(
                " ({} skipped GPU checks fail the run: a GPU was required)",
                r.required_skips()
            )
        } else {
            String::new()
        }
    );
    let mut skipped = std::collections::BTreeMap::<&str, usize>::new();
    for c in &r.checks {
        match c.status {
            Status::Fail => s.push_str(&format!("  FAIL {}: {}\n", c.name, c.detail)),
            Status::Skip => *skipped.entry(c.detail.as_str()).or_default() += 1,
            Status::Pass => {}
        }
    }
    for (why, n) in skipped {
        s.push_str(&format!("  skipped {n}: {why}\n"));
    }
    s
}
