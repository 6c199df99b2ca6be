//! The bundled tests: the workspace has one integration-test binary per crate, and the
//! bundle carries the two whose modules launch kernels or compile them with NVRTC. Each
//! [`Suite`] (one module of one binary) runs in a child of its own with the GPU gate set,
//! and each of its tests becomes a check `test/<module>/<test>`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::{Plan, TEST_LIMIT};
use crate::child;
use crate::libtest::{self, Outcome};
use crate::results::{Check, Status};

/// One module of a bundled test binary, run as a group of checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Suite {
    /// The test binary (`tests/<binary>` in the bundle): `host` is ikp-host's
    /// `host/tests/host/`, `integration` the root package's `tests/tests.rs`.
    pub binary: &'static str,
    /// The module whose tests make the suite (libtest names them `<module>::<test>`).
    pub module: &'static str,
    /// Whether its tests need a GPU: their skips fail a run that requires one.
    pub gpu: bool,
}

const fn suite(binary: &'static str, module: &'static str, gpu: bool) -> Suite {
    Suite {
        binary,
        module,
        gpu,
    }
}

/// Every suite the bundle runs, in the order it runs them.
pub const SUITES: [Suite; 7] = [
    suite("integration", "device_nvrtc", false),
    suite("integration", "examples_gpu", true),
    suite("integration", "examples_nvrtc", false),
    suite("integration", "gpu_overhead_nvrtc", false),
    suite("host", "nvrtc_compile", false),
    suite("host", "session_gpu", true),
    suite("host", "session_no_gpu", false),
];

/// The test binaries the suites need, each once (`scripts/gpu-bundle.sh` builds them).
pub fn binaries() -> Vec<&'static str> {
    let mut v: Vec<&str> = SUITES.iter().map(|s| s.binary).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Tests that read the repository at run time (the bundle carries none of it): module,
/// test, why. They are not run and are reported as skipped (not GPU checks).
pub const NEEDS_REPOSITORY: [(&str, &str, &str); 2] = [
    (
        "examples_nvrtc",
        "every_example_directory_is_covered",
        "reads the repository's examples/ directory, which the bundle does not carry (CI runs it)",
    ),
    (
        "examples_nvrtc",
        "the_cpp_stream_launcher_builds_with_nvcc",
        "builds examples/persistent_stream/launcher.cu from the repository with the pinned nvcc \
         (CI runs it; here example/persistent_stream_cpp builds it with this machine's nvcc)",
    ),
];

/// The test names of `binary` (`--list`), or why they could not be listed; `log` names
/// the child's log files.
pub fn list(binary: &Path, log: &str, logs: &Path) -> Result<Vec<String>, String> {
    let mut cmd = Command::new(binary);
    cmd.arg("--list");
    let f = child::run(cmd, &format!("{log}.list"), logs, Duration::from_secs(60))
        .map_err(|e| format!("could not start {}: {e}", binary.display()))?;
    if !f.ok() {
        return Err(format!("{} --list {}", binary.display(), f.failure()));
    }
    Ok(libtest::parse_list(&f.stdout))
}

/// Runs one suite from the bundle at `bundle` (or, when `plan` says not to, only lists its
/// binary) and returns a check per test of the suite.
pub fn run(bundle: &Path, suite: &Suite, plan: &Plan) -> Vec<Check> {
    let (binary, module, gpu) = (suite.binary, suite.module, suite.gpu);
    let exe = bundle.join("tests").join(binary);
    let group = format!("test/{module}");
    let fail = |why: String| vec![Check::new(group.clone(), Status::Fail, gpu, why)];
    let prefix = format!("{module}::");
    // Full libtest names of the suite's tests, and the short names its checks carry.
    let tests: Vec<(String, String)> = match list(&exe, module, &plan.logs) {
        Ok(all) => all
            .into_iter()
            .filter_map(|t| Some((t.strip_prefix(&prefix)?.to_owned(), t.clone())))
            .collect(),
        Err(e) => return fail(e),
    };
    if tests.is_empty() {
        return fail(format!(
            "{} lists no test of module {module}",
            exe.display()
        ));
    }
    let name = |t: &str| format!("test/{module}/{t}");
    if let Some(why) = plan.skip_all() {
        return tests
            .iter()
            .map(|(t, _)| Check::new(name(t), Status::Skip, gpu, why.clone()))
            .collect();
    }
    let repo_only = |t: &str| {
        NEEDS_REPOSITORY
            .iter()
            .find(|(m, n, _)| *m == module && *n == t)
    };
    // Exactly the suite's tests, named one by one.
    let mut cmd = Command::new(&exe);
    cmd.args(["--exact", "--test-threads=1"]);
    cmd.args(
        tests
            .iter()
            .filter(|(t, _)| repo_only(t).is_none())
            .map(|(_, full)| full),
    );
    plan.gpu_env(&mut cmd);
    let f = match child::run(cmd, module, &plan.logs, plan.limit(TEST_LIMIT)) {
        Ok(f) => f,
        Err(e) => return fail(format!("could not start {}: {e}", exe.display())),
    };
    let outcomes = libtest::parse_outcomes(&f.stdout);
    let skips = libtest::parse_skips(&f.stderr);
    tests
        .iter()
        .map(|(t, full)| {
            if let Some((_, _, why)) = repo_only(t) {
                return Check::new(name(t), Status::Skip, false, *why);
            }
            let (status, detail) = match (outcomes.get(full), skips.get(full)) {
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

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn suites_are_unique_and_need_two_binaries() {
        let mut modules: Vec<&str> = SUITES.iter().map(|s| s.module).collect();
        modules.sort_unstable();
        modules.dedup();
        assert_eq!(modules.len(), SUITES.len());
        assert_eq!(binaries(), ["host", "integration"]);
        for (m, _, _) in NEEDS_REPOSITORY {
            assert!(SUITES.iter().any(|s| s.module == m), "{m}");
        }
    }
}
