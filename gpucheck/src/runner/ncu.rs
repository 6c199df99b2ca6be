//! Where the overhead goes: each build of every overhead bench kernel (the Hopper GEMM on
//! sm_90 only: elsewhere its check is skipped) under Nsight Compute (`ncu`), one launch per
//! build (the bench's profiling mode,
//! `IKP_OVERHEAD_PROFILE`), with the metrics that say what a probe costs: instructions
//! issued and executed, registers, achieved occupancy, the warp stall reasons (cycles a
//! warp spent stalled per issued instruction, by reason), the global stores' LSU requests
//! and sectors and the L2's write sectors, and the kernel's duration; and, where the
//! machine's `ncu` lists them (`ncu --query-metrics`), the instructions each execution
//! pipe ran (ALU, FMA and its heavy and lite halves), which tell whether an added
//! instruction competes with the kernel's own for a pipe (`PIPE_METRICS`).
//!
//! A figure per build, not a target (the `overhead` checks judge the targets): the check
//! passes when every build of the kernel was profiled and fails when `ncu` ran and did not
//! give them. Where the machine has no `ncu` (`IKP_NCU`, then `PATH`, then
//! `/usr/local/cuda/bin`), or its driver refuses the performance counters to this user
//! (`ERR_NVGPUCTRPERM`), the checks are skipped with that reason.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use super::Plan;
use crate::child;
use crate::results::{Check, Status, Table};

/// Time limit of the whole profile (every build of every kernel).
pub const NCU_LIMIT: Duration = Duration::from_secs(180);
/// Time limit of `ncu --query-metrics`.
const QUERY_LIMIT: Duration = Duration::from_secs(30);
/// The bench kernels profiled: all of them (the H200 run of 2026-11-28 profiled every
/// build of three in 16 s).
pub const KERNELS: [&str; 8] = [
    "load_compute_store",
    "warp_specialized",
    "persistent",
    "gemm_half",
    "stream_copy",
    "region_loop",
    "region_loop_dispatch",
    "hopper_gemm",
];
/// The bench's builds, in the order its profiling mode launches them (`Variant::ALL`).
pub const BUILDS: [&str; 11] = [
    "baseline",
    "fenced zones",
    "unfenced zones",
    "counters only",
    "compiled out",
    "tvm style",
    "null arg",
    "fenced zones clock",
    "unfenced zones clock",
    "unfenced zones predicated",
    "null arg predicated",
];
/// Launches of each kernel before the profiled ones (one warm-up launch per build).
const WARM_UP: usize = BUILDS.len();

/// The metrics, with the short names the tables use.
pub const METRICS: [(&str, &str); 22] = [
    ("gpu__time_duration.sum", "ns"),
    ("smsp__inst_issued.sum", "issued"),
    ("smsp__inst_executed.sum", "executed"),
    ("launch__registers_per_thread", "regs"),
    (
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "occupancy %",
    ),
    (
        "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
        "LSU st requests",
    ),
    (
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
        "LSU st sectors",
    ),
    ("lts__t_sectors_op_write.sum", "L2 write sectors"),
    (
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
        "stall long scoreboard",
    ),
    (
        "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
        "stall short scoreboard",
    ),
    (
        "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
        "stall wait",
    ),
    (
        "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
        "stall math pipe",
    ),
    (
        "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
        "stall lg throttle",
    ),
    (
        "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio",
        "stall membar",
    ),
    (
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
        "stall barrier",
    ),
    (
        "smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio",
        "stall branch",
    ),
    (
        "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio",
        "stall no instruction",
    ),
    (
        "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
        "stall mio throttle",
    ),
    (
        "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
        "stall dispatch",
    ),
    (
        "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
        "stall not selected",
    ),
    (
        "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio",
        "selected",
    ),
    (
        "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio",
        "stall drain",
    ),
];

/// Instructions executed per pipe: profiled only where the machine's `ncu` lists them (their
/// names differ between architectures and `ncu` versions, and one unknown name fails the
/// whole profile), reported where they came back, never required. Why: a build whose loop
/// SASS is the baseline's but for the loop counter's add (`VIADD` for `IADD3`) can still
/// run slower if that add now takes an FMA pipe's slot from the kernel's multiply-adds.
pub const PIPE_METRICS: [(&str, &str); 4] = [
    ("smsp__inst_executed_pipe_alu.sum", "pipe alu"),
    ("smsp__inst_executed_pipe_fma.sum", "pipe fma"),
    ("smsp__inst_executed_pipe_fmaheavy.sum", "pipe fmaheavy"),
    ("smsp__inst_executed_pipe_fmalite.sum", "pipe fmalite"),
];

/// The metric names `ncu --query-metrics` lists (its first column: base names, no rollup
/// such as `.sum`).
fn listed_metrics(query: &str) -> std::collections::HashSet<&str> {
    query
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.contains("__") && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect()
}

/// The pipe metrics whose base name (before the rollup) `query` lists.
fn available_pipe_metrics(query: &str) -> Vec<(&'static str, &'static str)> {
    let listed = listed_metrics(query);
    PIPE_METRICS
        .iter()
        .filter(|(m, _)| listed.contains(m.split('.').next().unwrap_or(m)))
        .copied()
        .collect()
}

/// The machine's `ncu`, if it has one.
pub fn find() -> Option<PathBuf> {
    super::find_cuda_tool("IKP_NCU", "ncu")
}

fn names() -> impl Iterator<Item = String> {
    KERNELS.iter().map(|k| format!("overhead/ncu/{k}"))
}

/// Profiles the bench's builds and returns a check per kernel.
pub fn run(bundle: &Path, plan: &Plan) -> Vec<Check> {
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
                    "no ncu on this machine (IKP_NCU, PATH, /usr/local/cuda/bin)",
                )
            })
            .collect();
    };
    let csv = plan.files.join("ncu.csv");
    let log = plan.logs.join("ncu-log.txt");
    let mut query = Command::new(&exe);
    query.arg("--query-metrics");
    plan.gpu_env(&mut query);
    let pipes = match child::run(
        query,
        "ncu-query-metrics",
        &plan.logs,
        plan.limit(QUERY_LIMIT),
    ) {
        Ok(f) if f.ok() => available_pipe_metrics(&f.stdout),
        _ => Vec::new(),
    };
    let metrics: Vec<&str> = METRICS.iter().chain(&pipes).map(|m| m.0).collect();
    let mut cmd = Command::new(&exe);
    cmd.args(["--csv", "--page", "raw", "--metrics", &metrics.join(",")])
        .arg("--kernel-name")
        .arg(format!("regex:^({})$", KERNELS.join("|")))
        .arg("--log-file")
        .arg(&log)
        .arg(bundle.join("bin").join("gpu_overhead"))
        .arg("--bench")
        .env("IKP_OVERHEAD_PROFILE", KERNELS.join(","));
    plan.gpu_env(&mut cmd);
    let _ = std::fs::create_dir_all(&plan.files);
    let finished = match child::run(cmd, "ncu", &plan.logs, plan.limit(NCU_LIMIT)) {
        Ok(f) => f,
        Err(e) => {
            return names()
                .map(|n| Check::fail(n, format!("could not start {}: {e}", exe.display())))
                .collect()
        }
    };
    // With --log-file, ncu writes its report (the CSV) and its notes there, and the
    // profiled program's output (the bench's `profile:` lines) goes to standard output.
    let report = std::fs::read_to_string(&log).unwrap_or_default();
    let all = format!("{}\n{}\n{report}", finished.stdout, finished.stderr);
    if all.contains("ERR_NVGPUCTRPERM") {
        return names()
            .map(|n| {
                Check::new(
                    n,
                    Status::Skip,
                    false,
                    "ncu: the driver does not give this user the performance counters \
                     (ERR_NVGPUCTRPERM)",
                )
            })
            .collect();
    }
    let _ = std::fs::write(&csv, &report);
    if !finished.ok() {
        return names()
            .map(|n| Check::fail(n, format!("ncu {}", finished.failure())))
            .collect();
    }
    judge(&format!("{}\n{report}", finished.stdout))
}

/// Whether ncu's "Kernel Name" `field` is `kernel`: the name alone, or followed by its
/// signature (`kernel(float *, ...)`), never another kernel whose name it begins
/// (`region_loop_dispatch` is not `region_loop`).
fn names_kernel(field: &str, kernel: &str) -> bool {
    field
        .strip_prefix(kernel)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('('))
}

/// Splits one CSV line (ncu quotes every field; no field holds a newline).
fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// Checks from ncu's `--csv --page raw` report (its log file) beside the bench's output: a
/// header line, a units line, then a line per profiled launch in launch order (other lines,
/// ncu's `==PROF==` notes and the bench's own output, are skipped).
pub fn judge(csv: &str) -> Vec<Check> {
    let mut lines = csv.lines().filter(|l| l.starts_with('"'));
    let Some(header) = lines.next().map(fields) else {
        return names()
            .map(|n| Check::fail(n, "ncu printed no CSV"))
            .collect();
    };
    let col = |name: &str| header.iter().position(|h| h == name);
    let kernel_col = col("Kernel Name");
    let rows: Vec<Vec<String>> = lines.map(fields).collect();
    let mut checks = Vec::new();
    for kernel in KERNELS {
        let name = format!("overhead/ncu/{kernel}");
        if let Some(line) = csv
            .lines()
            .find(|l| l.starts_with(&format!("profile: skipped {kernel} ")))
        {
            checks.push(Check::new(name, Status::Skip, false, line.to_string()));
            continue;
        }
        let launches: Vec<&Vec<String>> = rows
            .iter()
            .filter(|r| {
                kernel_col
                    .and_then(|c| r.get(c))
                    .is_some_and(|k| names_kernel(k, kernel))
            })
            .collect();
        if launches.len() < WARM_UP + BUILDS.len() {
            checks.push(Check::fail(
                name,
                format!(
                    "ncu profiled {} launches of {kernel}, {} expected (a warm-up and a \
                     profiled launch per build)",
                    launches.len(),
                    WARM_UP + BUILDS.len()
                ),
            ));
            continue;
        }
        // The pipe metrics this profile has (ncu profiled those its query listed).
        let pipes: Vec<(&str, &str)> = PIPE_METRICS
            .iter()
            .filter(|(m, _)| col(m).is_some())
            .copied()
            .collect();
        let mut columns = vec!["build"];
        columns.extend(METRICS.iter().chain(&pipes).map(|m| m.1));
        let mut t = Table::new(&columns);
        let mut per_build = serde_json::Map::new();
        let mut missing = Vec::new();
        for (build, row) in BUILDS.iter().zip(&launches[WARM_UP..]) {
            let mut cells = vec![json!(build)];
            let mut figures = serde_json::Map::new();
            for (i, (metric, short)) in METRICS.iter().chain(&pipes).enumerate() {
                let v = col(metric)
                    .and_then(|c| row.get(c))
                    .and_then(|s| s.replace(',', "").parse::<f64>().ok());
                if v.is_none() && i < METRICS.len() {
                    missing.push(format!("{build}: {metric}"));
                }
                cells.push(json!(v));
                figures.insert((*short).into(), json!(v));
            }
            t.row(cells);
            per_build.insert((*build).into(), Value::Object(figures));
        }
        let status = Status::of(missing.is_empty());
        let detail = if missing.is_empty() {
            format!(
                "{} builds profiled, {} metrics each ({} of the {} pipe counts)",
                BUILDS.len(),
                METRICS.len() + pipes.len(),
                pipes.len(),
                PIPE_METRICS.len()
            )
        } else {
            format!("metrics missing from ncu's output: {}", missing.join(", "))
        };
        checks.push(
            Check::new(name, status, true, detail)
                .figure("builds", Value::Object(per_build))
                .table(t),
        );
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(launches: usize, drop_metric: bool) -> String {
        csv_with(launches, drop_metric, &[])
    }

    /// A report of `launches` launches a kernel with the required metrics (the fourth left
    /// out if `drop_metric`) and `extra` metrics after them.
    fn csv_with(launches: usize, drop_metric: bool, extra: &[(&str, &str)]) -> String {
        let mut header = vec!["\"ID\"".to_string(), "\"Kernel Name\"".to_string()];
        for (i, (m, _)) in METRICS.iter().chain(extra).enumerate() {
            if !(drop_metric && i == 3) {
                header.push(format!("\"{m}\""));
            }
        }
        let mut out = format!("==PROF== Connected\n{}\n", header.join(","));
        out.push_str(&format!("\"\",\"\"{}\n", ",\"u\"".repeat(header.len() - 2)));
        for kernel in KERNELS {
            for l in 0..launches {
                let mut row = vec![format!("\"{l}\""), format!("\"{kernel}\"")];
                row.extend((2..header.len()).map(|i| format!("\"{},{}\"", l, i)));
                out.push_str(&row.join(","));
                out.push('\n');
            }
        }
        out
    }

    #[test]
    fn every_build_gets_its_metrics_in_launch_order() {
        let c = judge(&csv(2 * BUILDS.len(), false));
        assert_eq!(c.len(), KERNELS.len());
        assert!(
            c.iter().all(|c| c.status == Status::Pass),
            "{:?}",
            c[0].detail
        );
        // The first profiled launch (after the warm-ups) is the baseline: "11,2" -> 112.
        let b = &c[0].figures["builds"]["baseline"];
        assert_eq!(b["ns"], json!(112.0), "{b}");
        assert_eq!(
            c[1].figures["builds"]["unfenced zones clock"]["ns"],
            json!(192.0)
        );
        assert_eq!(
            c[1].figures["builds"]["null arg predicated"]["ns"],
            json!(212.0)
        );
    }

    #[test]
    fn pipe_counts_are_reported_where_ncu_gave_them_and_never_required() {
        // Two of the four, as an ncu that lists only those would profile.
        let c = judge(&csv_with(2 * BUILDS.len(), false, &PIPE_METRICS[..2]));
        assert!(
            c.iter().all(|c| c.status == Status::Pass),
            "{}",
            c[0].detail
        );
        assert!(
            c[0].detail.contains("(2 of the 4 pipe counts)"),
            "{}",
            c[0].detail
        );
        let b = &c[0].figures["builds"]["baseline"];
        // Columns: ID, name, the required metrics, then the pipes: "pipe fma" is the last.
        let last = METRICS.len() + 3;
        assert_eq!(
            b["pipe fma"],
            json!(format!("11{last}").parse::<f64>().unwrap()),
            "{b}"
        );
        assert!(b.get("pipe fmalite").is_none(), "{b}");
        // None at all: the check passes as before.
        let c = judge(&csv(2 * BUILDS.len(), false));
        assert!(
            c[0].detail.contains("(0 of the 4 pipe counts)"),
            "{}",
            c[0].detail
        );
    }

    #[test]
    fn the_pipe_metrics_profiled_are_those_the_query_lists() {
        let query = "Device NVIDIA H200 (GH100)\n\
             ----------------------------------------------------------------------\n\
             Metric Name                              Metric Description\n\
             smsp__inst_executed                      # of warp instructions executed\n\
             smsp__inst_executed_pipe_alu             # of warp instructions executed by alu pipe\n\
             smsp__inst_executed_pipe_fmaheavy        # of warp instructions executed by fmaheavy pipe\n";
        let got: Vec<&str> = available_pipe_metrics(query).iter().map(|m| m.0).collect();
        assert_eq!(
            got,
            [
                "smsp__inst_executed_pipe_alu.sum",
                "smsp__inst_executed_pipe_fmaheavy.sum"
            ]
        );
        assert!(available_pipe_metrics("ncu: no device\n").is_empty());
    }

    #[test]
    fn a_kernel_name_is_matched_whole() {
        assert!(names_kernel("region_loop", "region_loop"));
        assert!(names_kernel(
            "region_loop(float *, const float *)",
            "region_loop"
        ));
        assert!(!names_kernel("region_loop_dispatch", "region_loop"));
        assert!(!names_kernel("region", "region_loop"));
    }

    #[test]
    fn missing_launches_or_metrics_fail() {
        let c = judge(&csv(BUILDS.len(), false));
        assert!(c.iter().all(|c| c.status == Status::Fail));
        assert!(c[0].detail.contains("launches"), "{}", c[0].detail);
        let c = judge(&csv(2 * BUILDS.len(), true));
        assert_eq!(c[0].status, Status::Fail);
        assert!(
            c[0].detail.contains("launch__registers_per_thread"),
            "{}",
            c[0].detail
        );
        assert_eq!(judge("no csv")[0].status, Status::Fail);
    }

    /// The report of the H200 run of 2026-11-28 (docs/gpu-runs/2026-11-28-h200-6), which
    /// ncu wrote to its log file: the run judged standard output instead and found no CSV.
    #[test]
    fn the_h200_report_gives_every_build_its_metrics() {
        let report = include_str!("../../tests/data/ncu-h200-2026-11-28.txt");
        let c = judge(report);
        assert_eq!(c.len(), KERNELS.len());
        // That run profiled three kernels; the others are missing from it, and say so.
        let profiled = ["warp_specialized", "gemm_half", "hopper_gemm"];
        for c in &c {
            let kernel = c.name.trim_start_matches("overhead/ncu/");
            if profiled.contains(&kernel) {
                assert_eq!(c.status, Status::Pass, "{}: {}", c.name, c.detail);
            } else {
                assert_eq!(c.status, Status::Fail, "{}", c.name);
                assert!(c.detail.contains("profiled 0 launches"), "{}", c.detail);
            }
        }
        // The warp-specialized kernel without ikp: 19 registers (figures as ncu printed them).
        let ws = &c[1].figures["builds"];
        assert_eq!(ws["baseline"]["regs"], json!(19.0), "{ws}");
        assert!(ws["fenced zones"]["issued"].as_f64() > ws["baseline"]["issued"].as_f64());
    }

    #[test]
    fn a_kernel_the_device_cannot_run_is_skipped_with_the_reason() {
        let mut out = csv(2 * BUILDS.len(), false);
        out = out
            .lines()
            .filter(|l| !l.contains("hopper_gemm"))
            .collect::<Vec<_>>()
            .join("\n");
        out.push_str("\nprofile: skipped hopper_gemm (hopper_gemm needs sm_90 (wgmma, TMA), the device is sm_80)\n");
        let c = judge(&out);
        let hopper = c
            .iter()
            .find(|c| c.name == "overhead/ncu/hopper_gemm")
            .unwrap();
        assert_eq!(hopper.status, Status::Skip, "{}", hopper.detail);
        assert!(hopper.detail.contains("needs sm_90"));
        assert_eq!(c[0].status, Status::Pass, "{}", c[0].detail);
    }
}
