//! Memory safety on the device: the bundled examples and the overflow check under
//! NVIDIA's `compute-sanitizer`, with its `memcheck` tool (out-of-bounds and misaligned
//! accesses to global, local and shared memory: a record past a lane's segment, a counter
//! past its lane) and its `racecheck` tool (shared-memory hazards between the threads of a
//! block: ikp's records go to global memory, so a hazard here is the instrumented kernel's
//! own, which ikp must not introduce or hide).
//!
//! Judged: the tool's summary line reports 0 errors (memcheck) or 0 hazards (racecheck),
//! and the program under it succeeded. Small grids, so each run takes seconds. Where the
//! machine has no `compute-sanitizer` (`IKP_COMPUTE_SANITIZER`, then `PATH`, then
//! `/usr/local/cuda/bin`) the checks are skipped with that reason: a CUDA toolkit is not
//! something ikp's users must have.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::{examples::EXAMPLES, Plan};
use crate::child;
use crate::results::{Check, Status};

/// Time limit of one program under the sanitizer.
pub const SANITIZER_LIMIT: Duration = Duration::from_secs(90);
/// The tools run, in this order.
pub const TOOLS: [&str; 2] = ["memcheck", "racecheck"];
/// Exit status the sanitizer is told to use when it found something.
const ERROR_EXIT: i32 = 86;

/// The sanitizer's executable, if this machine has one.
pub fn find() -> Option<PathBuf> {
    super::find_cuda_tool("IKP_COMPUTE_SANITIZER", "compute-sanitizer")
}

/// What runs under the sanitizer: (name, program, arguments).
fn targets(bundle: &Path, plan: &Plan) -> Vec<(String, PathBuf, Vec<String>)> {
    let mut v: Vec<(String, PathBuf, Vec<String>)> = EXAMPLES
        .iter()
        .map(|e| {
            let out = plan.files.join("sanitizer").join(e);
            let mut args = vec![out.display().to_string()];
            if *e == "persistent_stream" {
                // 200 tiles per SM: the rings still turn over, in a sanitizer's time.
                args.push("200".into());
            }
            let program = bundle.join("examples").join(e);
            (format!("example/{e}"), program, args)
        })
        .collect();
    v.push((
        "overflow".into(),
        bundle.join("bin").join("ikp-gpucheck"),
        vec!["check".into(), "overflow".into()],
    ));
    v
}

/// Runs every target under every tool.
pub fn run(bundle: &Path, plan: &Plan) -> Vec<Check> {
    let names = || {
        targets(bundle, plan).into_iter().flat_map(|(name, _, _)| {
            TOOLS
                .iter()
                .map(move |t| format!("sanitizer/{t}/{name}"))
                .collect::<Vec<_>>()
        })
    };
    if let Some(why) = plan.skip_all() {
        return names().map(|n| Check::skip(n, why.clone())).collect();
    }
    let Some(exe) = find() else {
        return names()
            .map(|n| {
                Check::new(
                    n,
                    Status::Skip,
                    false,
                    "no compute-sanitizer on this machine (IKP_COMPUTE_SANITIZER, PATH, \
                     /usr/local/cuda/bin)",
                )
            })
            .collect();
    };
    let mut checks = Vec::new();
    for (name, program, args) in targets(bundle, plan) {
        for tool in TOOLS {
            let check = format!("sanitizer/{tool}/{name}");
            let mut cmd = Command::new(&exe);
            cmd.args(["--tool", tool, "--error-exitcode", &ERROR_EXIT.to_string()])
                .args(["--print-limit", "20"])
                .arg(&program)
                .args(&args)
                // Nothing under the sanitizer is timed.
                .env(crate::gpu::NO_WARM_UP_VAR, "1");
            plan.gpu_env(&mut cmd);
            let log = format!("sanitizer-{tool}-{}", name.replace('/', "-"));
            checks.push(
                match child::run(cmd, &log, &plan.logs, plan.limit(SANITIZER_LIMIT)) {
                    Ok(f) => judge(&check, tool, &f),
                    Err(e) => Check::fail(check, format!("could not start {}: {e}", exe.display())),
                },
            );
        }
    }
    checks
}

/// The verdict on one sanitizer run from its exit and its summary line.
pub fn judge(check: &str, tool: &str, f: &child::Finished) -> Check {
    // The sanitizer prints its report on stdout, prefixed with "========= ".
    let report = format!("{}\n{}", f.stdout, f.stderr);
    let found = summary(tool, &report);
    let unit = unit_and_key(tool).0;
    let detail = match (found, f.ok()) {
        (Some(0), true) => format!("{tool}: 0 {unit} in {:.1} s", f.secs),
        (Some(n), _) if n > 0 => format!("{tool}: {n} {unit}: {}", first_findings(&report, 3)),
        (_, false) => format!("the program under {tool} {}", f.failure()),
        _ => format!(
            "{tool} printed no summary line: {}",
            child::last_lines(&report, 3)
        ),
    };
    let status = Status::of(found == Some(0) && f.ok());
    Check::new(check, status, true, detail)
        .figure(unit, found)
        .figure("seconds", (f.secs * 10.0).round() / 10.0)
}

/// What the tool counts, and the key of its summary line.
fn unit_and_key(tool: &str) -> (&'static str, &'static str) {
    if tool == "racecheck" {
        ("hazards", "RACECHECK SUMMARY:")
    } else {
        ("errors", "ERROR SUMMARY:")
    }
}

/// The count in the tool's summary line: `ERROR SUMMARY: N errors` (memcheck) or
/// `RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)` (racecheck, whose N
/// counts every displayed hazard, warnings included).
pub fn summary(tool: &str, report: &str) -> Option<u64> {
    let key = unit_and_key(tool).1;
    let line = report.lines().rev().find(|l| l.contains(key))?;
    let rest = line[line.find(key)? + key.len()..].trim_start();
    rest.split_whitespace().next()?.parse().ok()
}

/// The first `n` findings of the report (lines starting `========= Error` or `Warning`),
/// with the line after each (where the access is).
fn first_findings(report: &str, n: usize) -> String {
    let lines: Vec<&str> = report.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start_matches('=').trim();
        if t.starts_with("Error") || t.starts_with("Warning") || t.starts_with("Invalid") {
            let next = lines
                .get(i + 1)
                .map(|l| l.trim_start_matches('=').trim())
                .unwrap_or("");
            out.push(format!("{t} {next}").trim().to_owned());
            if out.len() == n {
                break;
            }
        }
    }
    out.join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn finished(code: i32, stdout: &str) -> child::Finished {
        use std::os::unix::process::ExitStatusExt;
        child::Finished {
            status: Some(std::process::ExitStatus::from_raw(code << 8)),
            secs: 1.25,
            stdout: stdout.into(),
            stderr: String::new(),
            logs: (PathBuf::new(), PathBuf::new()),
        }
    }

    // Summary lines as compute-sanitizer 2025.3 (CUDA 13.0) printed them on an H100.
    const CLEAN_MEMCHECK: &str = "========= COMPUTE-SANITIZER\nwarp_specialized: 16 lanes\n========= ERROR SUMMARY: 0 errors\n";
    const RACES: &str = "========= COMPUTE-SANITIZER\n========= Error: Race reported between Read access at warp_specialized+0xb40\n=========     and Write access at warp_specialized+0x1460 [30720 hazards]\n========= \n========= RACECHECK SUMMARY: 3 hazards displayed (3 errors, 0 warnings)\n";

    #[test]
    fn summaries_are_read_for_each_tool() {
        assert_eq!(summary("memcheck", CLEAN_MEMCHECK), Some(0));
        assert_eq!(summary("racecheck", RACES), Some(3));
        assert_eq!(summary("racecheck", CLEAN_MEMCHECK), None);
        assert_eq!(
            summary(
                "racecheck",
                "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
            ),
            Some(0)
        );
    }

    #[test]
    fn clean_passes_and_findings_or_a_failed_program_fail() {
        let c = judge(
            "sanitizer/memcheck/x",
            "memcheck",
            &finished(0, CLEAN_MEMCHECK),
        );
        assert_eq!(c.status, Status::Pass, "{}", c.detail);
        assert_eq!(c.figures["errors"], 0);

        let c = judge(
            "sanitizer/racecheck/x",
            "racecheck",
            &finished(ERROR_EXIT, RACES),
        );
        assert_eq!(c.status, Status::Fail);
        assert!(
            c.detail.contains("3 hazards") && c.detail.contains("0xb40 and Write access"),
            "{}",
            c.detail
        );

        // A clean summary from a program that failed is still a failure.
        let c = judge(
            "sanitizer/memcheck/x",
            "memcheck",
            &finished(1, CLEAN_MEMCHECK),
        );
        assert_eq!(c.status, Status::Fail);
        assert!(c.detail.contains("exit status: 1"), "{}", c.detail);

        // No summary at all (the sanitizer itself broke).
        let c = judge("sanitizer/memcheck/x", "memcheck", &finished(0, "hello\n"));
        assert_eq!(c.status, Status::Fail);
        assert!(c.detail.contains("no summary line"), "{}", c.detail);
    }
}
