//! The Python clients: the bundle's wheel and the kernels a Python user launches
//! (`python/gpu_clients.py`, from `gpucheck/python/`), checked with the GPU machine's own
//! `python3` (CuPy, torch, Triton's Proton), which is where users meet ikp from Python.
//!
//! The script prints each check (`python/wheel`, `python/native`, `python/stream`,
//! `python/proton`, `python/triton-probes`, `python/torch-compile`,
//! `python/triton-autotune`; [`crate::results`] has the format) as one line of JSON the
//! moment it is decided, and logs to standard error: a script stopped at its time limit
//! still hands back what it finished, beside the check that says it was stopped. It is
//! told its time (`--seconds`, the step's limit less [`MARGIN`]; later checks skip with
//! that reason) and, under a selection that names some of its checks (`IKP_GPU_ONLY=
//! python/triton-probes`), which to run (`--only`). Without a GPU it is still run, with
//! `--no-gpu REASON`, so a skip-mode run proves it starts and names its checks. What keeps
//! it from reporting (no interpreter, no wheel, a crash, unreadable lines) becomes one
//! `python` check: skipped without a GPU, failed with one. `IKP_PYTHON` names another
//! interpreter than `python3`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::Plan;
use crate::child;
use crate::results::{Check, Status};

/// Time limit of the script on a GPU: pip, an NVRTC compile, `python/triton-probes`' some
/// 45 Triton compiles (nine kernels plain and instrumented at two sizes, three
/// Proton-scoped), their timed launches and the decode of every recorded launch, and the
/// torch.compile and autotuning checks' Inductor compiles (twice) and the autotuner's
/// benchmarks: not yet timed on a GPU.
pub const PYTHON_LIMIT: Duration = Duration::from_secs(480);
/// Time limit of the script when it only reports its skips.
pub const SKIP_LIMIT: Duration = Duration::from_secs(60);
/// What the script is told it has is its limit less this: the check (or Triton kernel)
/// it starts last then has this long to finish and report before the script is stopped.
pub const MARGIN: Duration = Duration::from_secs(30);
/// The script, relative to the bundle.
pub const SCRIPT: &str = "python/gpu_clients.py";
/// Prefix of every check name the script may report.
pub const PREFIX: &str = "python/";

/// The interpreter: `IKP_PYTHON`, else `python3`.
pub fn interpreter() -> String {
    std::env::var("IKP_PYTHON")
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "python3".into())
}

/// The bundle's wheel (`python/ikp-*.whl`), if there is exactly one.
pub fn wheel(bundle: &Path) -> Result<PathBuf, String> {
    let dir = bundle.join("python");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("ikp-") && n.ends_with(".whl"))
        })
        .collect();
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(format!("{} holds no ikp-*.whl", dir.display())),
        n => Err(format!(
            "{} holds {n} ikp wheels, expected one",
            dir.display()
        )),
    }
}

/// The checks in the script's standard output: one JSON object a line, every name under
/// `python/`. A script that did not finish (`finished` false) may have been stopped in the
/// middle of its last line: that line is then left out.
pub fn parse(stdout: &str, finished: bool) -> Result<Vec<Check>, String> {
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut checks = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_str::<Check>(line) {
            Ok(c) => checks.push(c),
            Err(_) if !finished && i + 1 == lines.len() => break,
            Err(e) => {
                return Err(format!(
                    "its line {} is not a check ({e}): {}",
                    i + 1,
                    child::last_lines(stdout, 3)
                ))
            }
        }
    }
    if checks.is_empty() {
        return Err("it reported no check".into());
    }
    if let Some(c) = checks.iter().find(|c| !c.name.starts_with(PREFIX)) {
        return Err(format!("it reported check {:?}, outside {PREFIX}", c.name));
    }
    Ok(checks)
}

/// Runs the script of the bundle at `bundle` with [`interpreter`] and returns its checks;
/// `only`: the check-name prefixes it is to run (`None`: all).
pub fn run(bundle: &Path, plan: &Plan, only: Option<Vec<String>>) -> Vec<Check> {
    run_with(&interpreter(), bundle, plan, only)
}

/// [`run`] with the interpreter `python`.
pub fn run_with(python: &str, bundle: &Path, plan: &Plan, only: Option<Vec<String>>) -> Vec<Check> {
    let skip = plan.skip_all();
    // One check for whatever kept the script from reporting.
    let problem = |why: String| match &skip {
        Some(s) => vec![Check::skip("python", format!("{s}; besides, {why}"))],
        None => vec![Check::fail("python", why)],
    };
    let script = bundle.join(SCRIPT);
    if !script.is_file() {
        return problem(format!(
            "{} is missing: build the bundle with scripts/gpu-bundle.sh",
            script.display()
        ));
    }
    let wheel = match wheel(bundle) {
        Ok(w) => w,
        Err(e) => return problem(e),
    };
    let mut cmd = Command::new(python);
    cmd.arg(&script)
        .arg("--wheel")
        .arg(&wheel)
        .arg("--ikp")
        .arg(bundle.join("bin").join("ikp"))
        .arg("--include")
        .arg(bundle.join("include"))
        .arg("--work")
        .arg(plan.files.join("python"));
    if let Some(only) = only {
        cmd.arg("--only").arg(only.join(","));
    }
    let limit = match &skip {
        Some(why) => {
            cmd.arg("--no-gpu").arg(why);
            SKIP_LIMIT
        }
        None => {
            let limit = plan.limit(PYTHON_LIMIT);
            cmd.arg("--seconds")
                .arg(limit.saturating_sub(MARGIN).as_secs().to_string());
            limit
        }
    };
    plan.gpu_env(&mut cmd);
    let f = match child::run(cmd, "python-clients", &plan.logs, limit) {
        Ok(f) => f,
        Err(e) => {
            return problem(format!(
                "could not start {python} ({e}): set IKP_PYTHON to a Python 3.9+ interpreter"
            ))
        }
    };
    match parse(&f.stdout, f.status.is_some()) {
        Ok(mut checks) => {
            if !f.ok() {
                let reported: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
                checks.push(Check::new(
                    "python",
                    Status::Fail,
                    false,
                    format!(
                        "{SCRIPT}, after reporting {}, {}",
                        reported.join(", "),
                        f.failure()
                    ),
                ));
            }
            checks
        }
        Err(e) => {
            let how = if f.ok() {
                format!("it exited 0 after {:.0} s", f.secs)
            } else {
                f.failure()
            };
            problem(format!("{SCRIPT} under {python}: {e}; {how}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Availability;
    use std::time::Instant;

    /// A bundle whose "script" is a shell script (run with `sh` as the interpreter).
    fn bundle(dir: &Path, script: &str) -> PathBuf {
        let root = dir.join("bundle");
        std::fs::create_dir_all(root.join("python")).unwrap();
        std::fs::write(root.join(SCRIPT), script).unwrap();
        std::fs::write(root.join("python/ikp-0.1.0-cp39-abi3-linux_x86_64.whl"), "").unwrap();
        root
    }

    fn plan(dir: &Path, availability: Availability) -> Plan {
        Plan {
            results: dir.join("results"),
            files: dir.join("results/files"),
            logs: dir.join("results/files/logs"),
            availability,
            deadline: Instant::now() + Duration::from_secs(60),
        }
    }

    #[test]
    fn the_step_passes_the_bundle_its_time_and_selection_to_the_script() {
        let dir = tempfile::tempdir().unwrap();
        // The script echoes its arguments into the detail of one check.
        let root = bundle(
            dir.path(),
            r#"printf '{"name": "python/wheel", "status": "pass", "gpu": false, "detail": "%s", "figures": {}}\n' "$*""#,
        );
        let c = run_with("sh", &root, &plan(dir.path(), Availability::Gpu), None);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(
            (c[0].name.as_str(), c[0].status),
            ("python/wheel", Status::Pass)
        );
        for arg in [
            "--wheel",
            "ikp-0.1.0-cp39-abi3",
            "--ikp",
            "bin/ikp",
            "--include",
            "--work",
        ] {
            assert!(c[0].detail.contains(arg), "{arg}: {}", c[0].detail);
        }
        assert!(!c[0].detail.contains("--no-gpu"), "{}", c[0].detail);
        // Its time: what is left of the plan's 60 s less the margin; no --only without a
        // selection.
        let secs: u64 = c[0]
            .detail
            .split("--seconds ")
            .nth(1)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!((25..=30).contains(&secs), "{}", c[0].detail);
        assert!(!c[0].detail.contains("--only"), "{}", c[0].detail);
        let only = Some(vec!["python/triton-probes".into(), "python/native".into()]);
        let c = run_with("sh", &root, &plan(dir.path(), Availability::Gpu), only);
        assert!(
            c[0].detail
                .contains("--only python/triton-probes,python/native"),
            "{}",
            c[0].detail
        );
        // Without a GPU the script is told why, to skip.
        let c = run_with(
            "sh",
            &root,
            &plan(dir.path(), Availability::NoGpu("none".into())),
            None,
        );
        assert!(
            c[0].detail.contains("--no-gpu no CUDA GPU: none"),
            "{}",
            c[0].detail
        );
        assert!(!c[0].detail.contains("--seconds"), "{}", c[0].detail);
    }

    #[test]
    fn a_script_stopped_at_its_limit_keeps_the_checks_it_reported() {
        let dir = tempfile::tempdir().unwrap();
        // Two checks reported, a third cut off in the middle of its line, then a hang.
        let root = bundle(
            dir.path(),
            r#"echo '{"name": "python/wheel", "status": "pass", "gpu": false, "detail": "", "figures": {}}'
echo '{"name": "python/triton-probes", "status": "fail", "gpu": true, "detail": "1 problems", "figures": {"large_median_slowdown": 1.02}}'
printf '{"name": "python/torch-compile", "sta'
sleep 30"#,
        );
        let mut p = plan(dir.path(), Availability::Gpu);
        p.deadline = Instant::now() + Duration::from_secs(2);
        let c = run_with("sh", &root, &p, None);
        let names: Vec<&str> = c.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            ["python/wheel", "python/triton-probes", "python"],
            "{c:?}"
        );
        assert_eq!(c[1].figures["large_median_slowdown"], 1.02);
        assert_eq!(c[2].status, Status::Fail);
        assert!(
            c[2].detail
                .contains("after reporting python/wheel, python/triton-probes")
                && c[2].detail.contains("killed at its time limit"),
            "{}",
            c[2].detail
        );
    }

    #[test]
    fn what_keeps_the_script_from_reporting_is_one_clear_check() {
        let dir = tempfile::tempdir().unwrap();
        let gpu = plan(dir.path(), Availability::Gpu);
        let no_gpu = plan(dir.path(), Availability::NoGpu("none".into()));
        let root = bundle(
            dir.path(),
            "echo 'Traceback: boom' >&2; echo half a list; exit 1",
        );
        let c = run_with("sh", &root, &gpu, None);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].name.as_str(), c[0].status), ("python", Status::Fail));
        assert!(
            c[0].detail.contains("line 1 is not a check")
                && c[0].detail.contains("half a list")
                && c[0].detail.contains("Traceback: boom"),
            "{}",
            c[0].detail
        );
        // The same without a GPU is a skip that says both.
        let c = run_with("sh", &root, &no_gpu, None);
        assert_eq!(c[0].status, Status::Skip);
        assert!(
            c[0].detail.starts_with("no CUDA GPU: none; besides,"),
            "{}",
            c[0].detail
        );

        // Checks followed by a failing exit are kept, and the step fails.
        std::fs::write(
            root.join(SCRIPT),
            r#"echo '{"name": "python/wheel", "status": "pass", "gpu": false, "detail": "", "figures": {}}'; exit 3"#,
        )
        .unwrap();
        let c = run_with("sh", &root, &gpu, None);
        assert_eq!(c.len(), 2);
        assert_eq!((c[1].name.as_str(), c[1].status), ("python", Status::Fail));
        assert!(c[1].detail.contains("exit status: 3"), "{}", c[1].detail);

        // No interpreter.
        let c = run_with("/nonexistent/python3", &root, &gpu, None);
        assert!(
            c[0].status == Status::Fail
                && c[0].detail.contains("could not start /nonexistent/python3"),
            "{c:?}"
        );
        // No wheel, no script.
        std::fs::remove_file(root.join("python/ikp-0.1.0-cp39-abi3-linux_x86_64.whl")).unwrap();
        let c = run_with("sh", &root, &gpu, None);
        assert!(c[0].detail.contains("holds no ikp-*.whl"), "{c:?}");
        std::fs::remove_file(root.join(SCRIPT)).unwrap();
        let c = run_with("sh", &root, &gpu, None);
        assert!(c[0].detail.contains("gpu_clients.py is missing"), "{c:?}");
    }

    #[test]
    fn well_formed_lines_become_checks() {
        let out = r#"{"name": "python/wheel", "status": "pass", "gpu": false, "detail": "ikp 0.1.0", "figures": {"version": "0.1.0"}}

{"name": "python/proton", "status": "skip", "gpu": true, "detail": "no CUDA device visible to torch", "figures": {}}
"#;
        let c = parse(out, true).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].name, "python/wheel");
        assert_eq!(c[0].status, Status::Pass);
        assert!(!c[0].gpu);
        assert_eq!(c[0].figures["version"], "0.1.0");
        assert_eq!(c[1].status, Status::Skip);
    }

    #[test]
    fn malformed_lines_are_reported_clearly() {
        let e = parse("", true).unwrap_err();
        assert!(e.contains("reported no check"), "{e}");
        let e = parse("Traceback (most recent call last):\nKeyError: 'x'\n", true).unwrap_err();
        assert!(
            e.contains("line 1 is not a check") && e.contains("KeyError: 'x'"),
            "{e}"
        );
        let e = parse(
            r#"{"name": "python/x", "status": "maybe", "gpu": true, "detail": "", "figures": {}}"#,
            true,
        )
        .unwrap_err();
        assert!(e.contains("not a check") && e.contains("maybe"), "{e}");
        let e = parse(
            r#"{"name": "machine", "status": "pass", "gpu": true, "detail": "", "figures": {}}"#,
            true,
        )
        .unwrap_err();
        assert!(e.contains("\"machine\", outside python/"), "{e}");
        // A cut last line is left out only when the script was stopped; one in the middle
        // is an error either way.
        let good = r#"{"name": "python/wheel", "status": "pass", "gpu": false, "detail": "", "figures": {}}"#;
        let cut = format!("{good}\n{{\"name\": \"python/na");
        assert_eq!(parse(&cut, false).unwrap().len(), 1);
        assert!(parse(&cut, true)
            .unwrap_err()
            .contains("line 2 is not a check"));
        let middle = format!("{{\"name\": \"python/na\n{good}");
        assert!(parse(&middle, false)
            .unwrap_err()
            .contains("line 1 is not a check"));
    }
}
