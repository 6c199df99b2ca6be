//! The results of one GPU run: the machine, every check with its status and figures, and
//! the two files they are written to.
//!
//! # Format
//!
//! `gpu-results.json` (format `ikp-gpu-results`, version 1) is one object:
//!
//! | field | meaning |
//! |---|---|
//! | `format`, `version` | `"ikp-gpu-results"`, `1` |
//! | `machine` | object: what the run found (GPU name, SM count, compute capability, driver, NVRTC version and the library files loaded, clocks when readable, the bundle's commit); see [`crate::machine`] |
//! | `gpu_required` | `true` when a skip of a GPU check counts as a failure: `IKP_GPU_TESTS=1`, the kernel lists an NVIDIA GPU, or ikp opened one |
//! | `wall_s` | seconds the whole run took (so far, while `complete` is false) |
//! | `complete` | `false` in the files the runner rewrites after each step, `true` once the run has ended: files that still say `false` come from a run stopped before its end, and hold the checks of the steps it finished |
//! | `summary` | `{"pass", "fail", "skip"}` counts and `exit`, the runner's exit status |
//! | `checks` | list of checks, below, in the order they ran |
//! | `steps` | list of `{"first", "checks", "wall_s"}`, one per step of the run in order: the step's first check, how many checks it made and the seconds it took (what a run's time budget went to) |
//!
//! Each check is `{"name", "status", "gpu", "detail", "figures"}`: `status` is `"pass"`,
//! `"fail"` or `"skip"`; `gpu` says whether the check needs a GPU (its skip fails the run
//! when `gpu_required`); `detail` is one human sentence (why it failed or skipped, or what
//! passed); `figures` is an object of measured values (numbers, strings, lists), whose
//! optional `table` entry (`{"columns": [..], "rows": [[..], ..]}`) is rendered as a table
//! in the Markdown file. Names are `test/<module>/<test>`, `example/<name>`,
//! `python/wheel`, `python/native`, `python/proton`, `python/triton-probes`,
//! `python/torch-compile`, `python/triton-autotune` (the Python clients,
//! [`crate::runner::python`]; `python` alone when the script could not report),
//! `timer/resolution`, `timing/<timer>`, `time-axis`, `overflow`, `overhead/<kernel>` and
//! `machine`.
//! Memory safety under compute-sanitizer: `sanitizer/<tool>/<target>`; a failure to
//! archive the run's other files: `archive`. A check of a GPU check child also carries
//! `sm_mhz_after_warm_up` (the SM clock its warm-up measured), `smi_sm_mhz_before` and
//! `smi_sm_mhz_after` (nvidia-smi's reading around the check).
//!
//! `gpu-results.md` holds the same in tables for people (and for BENCHMARKS.md).
//!
//! The results directory holds four files, so that a GPU machine that hands back a few
//! files returns all of them: `gpu-results.json`, `gpu-results.md`, `overhead.json` (the
//! bench's own figures, `benches/gpu_overhead.rs`), and `gpu-files.tar.gz` with the rest
//! under `files/`: `logs/` (each child's stdout and stderr), `examples/` (the examples'
//! buffers and traces), `data/` (per-lane raw figures, e.g. the timing checks' CSVs) and
//! `sanitizer/`.
//!
//! Exit status of the runner: 0 when no check failed and, if `gpu_required`, no GPU check
//! skipped; 1 otherwise.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// The outcome of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// It ran and held.
    Pass,
    /// It ran and did not hold, or could not run on a machine where it should.
    Fail,
    /// It did not run (no GPU, or not applicable here); `detail` says why.
    Skip,
}

/// One check and what it measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// `family/what`, e.g. `timing/globaltimer`.
    pub name: String,
    /// Its outcome.
    pub status: Status,
    /// Whether it needs a GPU: its skip fails a run that requires one.
    pub gpu: bool,
    /// One sentence: what held, what did not, or why it was skipped.
    pub detail: String,
    /// Measured values; an optional `table` entry is rendered as a table.
    pub figures: Map<String, Value>,
}

impl Status {
    /// Pass when `holds`, else fail.
    pub fn of(holds: bool) -> Status {
        [Status::Fail, Status::Pass][usize::from(holds)]
    }
}

impl Check {
    /// A check with `status` and no figures yet.
    pub fn new(
        name: impl Into<String>,
        status: Status,
        gpu: bool,
        detail: impl Into<String>,
    ) -> Check {
        Check {
            name: name.into(),
            status,
            gpu,
            detail: detail.into(),
            figures: Map::new(),
        }
    }

    /// A GPU check skipped for `why`.
    pub fn skip(name: impl Into<String>, why: impl Into<String>) -> Check {
        Check::new(name, Status::Skip, true, why)
    }

    /// A GPU check failed for `why`.
    pub fn fail(name: impl Into<String>, why: impl Into<String>) -> Check {
        Check::new(name, Status::Fail, true, why)
    }

    /// Adds figure `key`.
    pub fn figure(mut self, key: &str, value: impl Into<Value>) -> Check {
        self.figures.insert(key.to_owned(), value.into());
        self
    }

    /// Adds the table the Markdown file shows under this check.
    pub fn table(self, t: Table) -> Check {
        self.figure("table", json!({ "columns": t.columns, "rows": t.rows }))
    }
}

/// Rows of figures, for the Markdown file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// Column headings.
    pub columns: Vec<String>,
    /// Rows, one value per column.
    pub rows: Vec<Vec<Value>>,
}

impl Table {
    /// A table with these headings.
    pub fn new(columns: &[&str]) -> Table {
        Table {
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub fn row(&mut self, row: Vec<Value>) {
        self.rows.push(row);
    }
}

/// One step of a run (a check, or a family of checks run together) and the time it took.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepTime {
    /// The name of the step's first check.
    pub first: String,
    /// How many checks the step made.
    pub checks: usize,
    /// Seconds it took.
    pub wall_s: f64,
}

/// Everything one run found.
#[derive(Clone, Debug, PartialEq)]
pub struct Results {
    /// What the run found out about the machine.
    pub machine: Map<String, Value>,
    /// Whether a skipped GPU check fails the run.
    pub gpu_required: bool,
    /// Seconds the run took.
    pub wall_s: f64,
    /// The checks in the order they ran.
    pub checks: Vec<Check>,
    /// The time each step took, in the order they ran.
    pub steps: Vec<StepTime>,
    /// Whether the run has ended (`false` in the files written after each step).
    pub complete: bool,
}

impl Results {
    /// Checks with `status`.
    pub fn count(&self, status: Status) -> usize {
        self.checks.iter().filter(|c| c.status == status).count()
    }

    /// Skipped GPU checks that fail the run because a GPU was required.
    pub fn required_skips(&self) -> usize {
        let required = |c: &&Check| self.gpu_required && c.gpu && c.status == Status::Skip;
        self.checks.iter().filter(required).count()
    }

    /// The runner's exit status: 0 when nothing failed and no required check skipped.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.count(Status::Fail) > 0 || self.required_skips() > 0)
    }

    /// `gpu-results.json` (see the module's `# Format`).
    pub fn to_json(&self) -> Value {
        json!({
            "format": "ikp-gpu-results",
            "version": 1,
            "machine": self.machine,
            "gpu_required": self.gpu_required,
            "wall_s": (self.wall_s * 10.0).round() / 10.0,
            "complete": self.complete,
            "summary": {
                "pass": self.count(Status::Pass),
                "fail": self.count(Status::Fail),
                "skip": self.count(Status::Skip),
                "exit": self.exit_code(),
            },
            "checks": self.checks,
            "steps": self.steps.iter().map(|s| json!({
                "first": s.first,
                "checks": s.checks,
                "wall_s": (s.wall_s * 10.0).round() / 10.0,
            })).collect::<Vec<_>>(),
        })
    }

    /// `gpu-results.md`: the machine, a line per check, then each check's table.
    pub fn to_markdown(&self) -> String {
        let mut md = String::from("# ikp GPU results\n\n## Machine\n\n| | |\n|---|---|\n");
        for (k, v) in &self.machine {
            md.push_str(&format!("| {k} | {} |\n", cell(v)));
        }
        md.push_str(&format!(
            "\n## Checks\n\n{} passed, {} failed, {} skipped in {:.0} s; exit status {}.",
            self.count(Status::Pass),
            self.count(Status::Fail),
            self.count(Status::Skip),
            self.wall_s,
            self.exit_code()
        ));
        if !self.complete {
            md.push_str(
                " **The run had not ended** when this file was written: these are the checks of \
                 the steps it finished before it was stopped.",
            );
        }
        if self.required_skips() > 0 {
            md.push_str(&format!(
                " {} GPU checks skipped although a GPU was required (IKP_GPU_TESTS=1 or a GPU \
                 on the machine): each counts as a failure.",
                self.required_skips()
            ));
        }
        md.push_str("\n\n| check | status | detail |\n|---|---|---|\n");
        for c in &self.checks {
            md.push_str(&format!(
                "| {} | {} | {} |\n",
                c.name,
                status_word(c.status),
                escape(&c.detail)
            ));
        }
        if !self.steps.is_empty() {
            md.push_str(
                "\n## Time per step\n\n| step (its first check) | checks | s |\n|---|---|---|\n",
            );
            for s in &self.steps {
                md.push_str(&format!(
                    "| {} | {} | {:.1} |\n",
                    s.first, s.checks, s.wall_s
                ));
            }
        }
        for c in &self.checks {
            if let Some(t) = c.figures.get("table") {
                md.push_str(&format!("\n### {}\n\n{}", c.name, table_markdown(t)));
            }
        }
        md
    }
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Pass => "pass",
        Status::Fail => "**FAIL**",
        Status::Skip => "skip",
    }
}

/// Pipes and newlines would break a Markdown table row.
fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => escape(s),
        Value::Null => "n/a".into(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => format_float(f),
            _ => n.to_string(),
        },
        other => escape(&other.to_string()),
    }
}

/// Four significant digits: enough for every figure the checks report.
fn format_float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return f.to_string();
    }
    let digits = (3 - f.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{f:.digits$}")
}

fn table_markdown(t: &Value) -> String {
    let columns: Vec<String> = t["columns"]
        .as_array()
        .map(|c| c.iter().map(cell).collect())
        .unwrap_or_default();
    let mut md = format!(
        "| {} |\n|{}\n",
        columns.join(" | "),
        "---|".repeat(columns.len())
    );
    for row in t["rows"].as_array().into_iter().flatten() {
        let cells: Vec<String> = row.as_array().into_iter().flatten().map(cell).collect();
        md.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(checks: Vec<Check>, gpu_required: bool) -> Results {
        Results {
            machine: Map::new(),
            gpu_required,
            wall_s: 1.0,
            checks,
            steps: vec![StepTime {
                first: "timing/globaltimer".into(),
                checks: 2,
                wall_s: 12.34,
            }],
            complete: true,
        }
    }

    #[test]
    fn exit_fails_on_a_failure_and_on_a_required_gpu_skip_only() {
        let pass = Check::new("a", Status::Pass, true, "ok");
        let gpu_skip = Check::skip("b", "no GPU");
        let cpu_skip = Check::new("c", Status::Skip, false, "not applicable");
        let fail = Check::new("d", Status::Fail, false, "broke");
        assert_eq!(
            results(vec![pass.clone(), gpu_skip.clone()], false).exit_code(),
            0
        );
        assert_eq!(
            results(vec![pass.clone(), gpu_skip.clone()], true).exit_code(),
            1
        );
        assert_eq!(results(vec![pass.clone(), cpu_skip], true).exit_code(), 0);
        assert_eq!(results(vec![pass, fail], false).exit_code(), 1);
    }

    #[test]
    fn json_and_markdown_carry_every_check_and_table() {
        let mut t = Table::new(&["N (ns)", "error (ns)"]);
        t.row(vec![100.into(), 3.25.into()]);
        let r = results(
            vec![
                Check::new(
                    "timing/globaltimer",
                    Status::Pass,
                    true,
                    "within | tolerance",
                )
                .figure("tick_ns", 32)
                .table(t),
                Check::skip("overflow", "no GPU"),
            ],
            true,
        );
        let j = r.to_json();
        assert_eq!(j["format"], "ikp-gpu-results");
        assert_eq!(j["summary"]["pass"], 1);
        assert_eq!(j["summary"]["skip"], 1);
        assert_eq!(j["summary"]["exit"], 1);
        assert_eq!(j["checks"][0]["status"], "pass");
        assert_eq!(j["checks"][0]["figures"]["tick_ns"], 32);
        assert_eq!(j["checks"][1]["gpu"], true);
        let back: Vec<Check> = serde_json::from_value(j["checks"].clone()).unwrap();
        assert_eq!(back, r.checks);
        let md = r.to_markdown();
        assert!(
            md.contains("| timing/globaltimer | pass | within \\| tolerance |"),
            "{md}"
        );
        assert!(md.contains("| overflow | skip | no GPU |"), "{md}");
        assert!(
            md.contains(
                "### timing/globaltimer\n\n| N (ns) | error (ns) |\n|---|---|\n| 100 | 3.250 |"
            ),
            "{md}"
        );
        assert!(
            md.contains("1 GPU checks skipped although a GPU was required"),
            "{md}"
        );
        assert_eq!(j["steps"][0]["first"], "timing/globaltimer");
        assert_eq!(j["steps"][0]["wall_s"], 12.3);
        assert!(md.contains("| timing/globaltimer | 2 | 12.3 |"), "{md}");
    }
}
