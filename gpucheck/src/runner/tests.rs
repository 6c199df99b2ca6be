//! The bundled test binaries: each runs in a child with the GPU gate set, and each of its
//! tests becomes a check `test/<binary>/<test>`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::{Plan, TEST_LIMIT};
use crate::child;
use crate::libtest::{self, Outcome};
use crate::results::{Check, Status};

/// Test binaries whose tests need a GPU: their skips fail a run that requires one.
pub const GPU_BINARIES: [&str; 2] = ["session_gpu", "examples_gpu"];

/// Tests that read the repository at run time (the bundle carries none of it): binary,
/// test, why. They are not run and are reported as skipped (not GPU checks).
pub const NEEDS_REPOSITORY: [(&str, &str, &str); 1] = [(
    "examples_nvrtc",
    "every_example_directory_is_covered",
    "reads the repository's examples/ directory, which the bundle does not carry (CI runs it)",
)];

/// The test names of `binary` (`--list`), or why they could not be listed.
pub fn list(binary: &Path, logs: &Path) -> Result<Vec<String>, String> {
    let name = file_name(binary);
    let mut cmd = Command::new(binary);
    cmd.arg("--list");
    let f = child::run(cmd, &format!("{name}.list"), logs, Duration::from_secs(60))
        .map_err(|e| format!("could not start {}: {e}", binary.display()))?;
    if !f.ok() {
        return Err(format!("{name} --list {}", f.failure()));
    }
    Ok(libtest::parse_list(&f.stdout))
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map_or_else(String::new, |f| f.to_string_lossy().into_owned())
}

/// Runs one test binary (or, when `plan` says not to, only lists it) and returns a check
/// per test.
pub fn run(binary: &Path, plan: &Plan) -> Vec<Check> {
    let bin = file_name(binary);
    let gpu = GPU_BINARIES.contains(&bin.as_str());
    let name = |t: &str| format!("test/{bin}/{t}");
    let tests = match list(binary, &plan.logs) {
        Ok(t) => t,
        Err(e) => return vec![Check::new(format!("test/{bin}"), Status::Fail, gpu, e)],
    };
    let repo_only = |t: &str| {
        NEEDS_REPOSITORY
            .iter()
            .find(|(b, n, _)| *b == bin && *n == t)
    };
    if let Some(why) = plan.skip_all() {
        return tests
            .iter()
            .map(|t| Check::new(name(t), Status::Skip, gpu, why.clone()))
            .collect();
    }
    let mut cmd = Command::new(binary);
    cmd.arg("--test-threads=1");
    for (_, t, _) in NEEDS_REPOSITORY.iter().filter(|(b, _, _)| *b == bin) {
        cmd.args(["--skip", t]);
    }
    plan.gpu_env(&mut cmd);
    let f = match child::run(cmd, &bin, &plan.logs, plan.limit(TEST_LIMIT)) {
        Ok(f) => f,
        Err(e) => {
            return vec![Check::new(
                format!("test/{bin}"),
                Status::Fail,
                gpu,
                format!("could not start: {e}"),
            )]
        }
    };
    let outcomes = libtest::parse_outcomes(&f.stdout);
    let skips = libtest::parse_skips(&f.stderr);
    tests
        .iter()
        .map(|t| {
            if let Some((_, _, why)) = repo_only(t) {
                return Check::new(name(t), Status::Skip, false, *why);
            }
            let (status, detail) = match (outcomes.get(t), skips.get(t)) {
                (Some(Outcome::Ok), Some(why)) => (Status::Skip, why.clone()),
                (Some(Outcome::Ok), None) => (Status::Pass, "passed".to_owned()),
                (Some(Outcome::Failed(text)), _) => (Status::Fail, text.clone()),
                (Some(Outcome::Ignored), _) => (Status::Skip, "ignored".to_owned()),
                (None, _) => (
                    Status::Fail,
                    format!(
                        "the binary ended before this test reported ({})",
                        f.failure()
                    ),
                ),
            };
            Check::new(name(t), status, gpu, detail)
        })
        .collect()
}
