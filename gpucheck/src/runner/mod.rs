//! The run: every check of the bundle, in order, within a time budget, then the results
//! files.
//!
//! Order: the machine; the GPU checks of [`crate::gpu`] (each in a child of this binary);
//! the overhead bench (before the Python step: its limit, 330 s, is the shorter, so a long
//! Python step cannot leave it no time, and the Python step reports what it finished); the
//! examples; the Python clients ([`python`]); the test suites ([`tests::SUITES`]); the
//! examples and the overflow check under compute-sanitizer ([`sanitizer`]); last the ncu
//! profiles, with what time is left. Without a
//! GPU every step reports its checks as skipped with the reason, after listing the test
//! binaries (which proves they start here and hold their suites), in seconds. A step that would start after the
//! budget is spent is skipped with that reason. Last, everything but the results files is
//! packed into [`ARCHIVE`] (see [`crate::results`] for the directory's layout).
//!
//! [`ONLY_VAR`] (`IKP_GPU_ONLY=stream,overhead`) runs only the steps whose checks' names
//! start with one of its comma-separated prefixes (`overhead` takes the ncu profiles too;
//! `python/triton-probes` runs the Python step with that check alone, besides the wheel's):
//! a GPU session of a few minutes spends them on the checks it is about, instead of leaving
//! the last steps to the budget's skip.
//! The steps left out are not in the results; the selection is (`machine.only`).
//!
//! The bundle's layout (written by `scripts/gpu-bundle.sh`): `bin/` (this runner, `ikp`,
//! `gpu_overhead`), `examples/`, `tests/` (the test binaries of [`tests::SUITES`]), `python/` (the wheel and the
//! clients' script), `include/` (the headers), `bundle.json` (commit, build).

pub mod archive;
pub mod examples;
pub mod ncu;
pub mod overhead;
pub mod python;
pub mod readme;
pub mod sanitizer;
pub mod tests;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::child;
use crate::machine::{self, Availability};
use crate::results::{Check, Results, Status, StepTime};

/// Time limit of one test suite.
pub const TEST_LIMIT: Duration = Duration::from_secs(180);
/// Time limit of one example and of each CLI call on its buffer.
pub const EXAMPLE_LIMIT: Duration = Duration::from_secs(60);
/// Time limit of one GPU check.
pub const CHECK_LIMIT: Duration = Duration::from_secs(120);
/// Time limit of the overhead bench.
pub const OVERHEAD_LIMIT: Duration = Duration::from_secs(330);
/// The whole run's budget: the GPU machine runs a command for at most 10 minutes.
pub const BUDGET: Duration = Duration::from_secs(570);

/// The environment variable that selects the steps to run (see the module doc).
pub const ONLY_VAR: &str = "IKP_GPU_ONLY";

/// The steps [`ONLY_VAR`] selects: all of them when it is unset or empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection(Option<Vec<String>>);

impl Selection {
    /// The selection in [`ONLY_VAR`].
    pub fn from_env() -> Selection {
        Selection::parse(&std::env::var(ONLY_VAR).unwrap_or_default())
    }

    /// Comma-separated check-name prefixes; empty: every step.
    pub fn parse(list: &str) -> Selection {
        let v: Vec<String> = list
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(String::from)
            .collect();
        Selection((!v.is_empty()).then_some(v))
    }

    /// Whether the step whose checks are named `key...` runs: a prefix names it, or names
    /// one of its checks (`python/stream` runs the Python step, which runs all of them).
    pub fn runs(&self, key: &str) -> bool {
        self.0.as_ref().is_none_or(|ps| {
            ps.iter()
                .any(|p| key.starts_with(p.as_str()) || p.starts_with(key))
        })
    }

    /// The prefixes that name checks inside the step whose checks are named `step...`
    /// (`python/stream` inside `python/`), for a step that can run some of its checks
    /// alone; `None` when the whole step runs (no selection, or a prefix of `step` itself).
    pub fn within(&self, step: &str) -> Option<Vec<String>> {
        let ps = self.0.as_ref()?;
        if ps.iter().any(|p| step.starts_with(p.as_str())) {
            return None;
        }
        Some(ps.iter().filter(|p| p.starts_with(step)).cloned().collect())
    }

    /// The prefixes, when some steps are left out.
    pub fn prefixes(&self) -> Option<&[String]> {
        self.0.as_deref()
    }
}

/// The archive at the top of the results directory that holds everything but the results
/// files: children's logs, the examples' outputs and the checks' raw data.
pub const ARCHIVE: &str = "gpu-files.tar.gz";
/// The folder under the results directory that [`ARCHIVE`] is made from (and which is
/// removed once it is).
pub const FILES: &str = "files";

/// What every step needs to know.
#[derive(Debug)]
pub struct Plan {
    /// The results directory.
    pub results: PathBuf,
    /// Where everything but the results files goes during the run (`results/files`).
    pub files: PathBuf,
    /// Where children's output goes (`files/logs`).
    pub logs: PathBuf,
    /// Whether there is a GPU to run on.
    pub availability: Availability,
    /// When the budget is spent.
    pub deadline: Instant,
}

impl Plan {
    /// Why a step is not run, if it is not: no usable GPU, or no time left.
    pub fn skip_all(&self) -> Option<String> {
        match &self.availability {
            Availability::NoGpu(why) => Some(format!("no CUDA GPU: {why}")),
            Availability::Broken(why) => Some(format!("no usable GPU: {why}")),
            Availability::Gpu if Instant::now() >= self.deadline => Some(format!(
                "the run's {} s budget was spent before this step",
                BUDGET.as_secs()
            )),
            Availability::Gpu => None,
        }
    }

    /// The environment of every child that may touch the GPU: GPU tests and the overhead
    /// bench must not skip (`IKP_GPU_TESTS=1`), and tests that need this repository's
    /// provisioning skip (`IKP_GPU_BUNDLE=1`).
    pub fn gpu_env(&self, cmd: &mut Command) {
        // Panic messages without backtraces: the first lines of a failure are its detail.
        cmd.env("IKP_GPU_BUNDLE", "1")
            .env("RUST_BACKTRACE", "0")
            .env(crate::gpu::DATA_DIR_VAR, self.files.join("data"));
        if self.availability == Availability::Gpu {
            cmd.env("IKP_GPU_TESTS", "1");
        }
    }

    /// `limit`, shortened to what is left of the budget.
    pub fn limit(&self, limit: Duration) -> Duration {
        limit.min(self.deadline.saturating_duration_since(Instant::now()))
    }
}

/// A CUDA tool of the GPU machine: the path in the environment variable `var`, else `tool`
/// on `PATH`, else in `/usr/local/cuda/bin`.
pub fn find_cuda_tool(var: &str, tool: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var) {
        return Some(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(tool))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let p = Path::new("/usr/local/cuda/bin").join(tool);
        p.is_file().then_some(p)
    })
}

/// Files the bundle must hold, relative to its root.
pub fn expected_files() -> Vec<String> {
    let bins = ["ikp-gpucheck", "ikp", "gpu_overhead"].map(|b| format!("bin/{b}"));
    let examples = examples::EXAMPLES.map(|e| format!("examples/{e}"));
    let cpp = examples::CPP_SOURCES.map(String::from);
    let readme = [readme::README.to_owned()];
    let tests = tests::binaries().into_iter().map(|b| format!("tests/{b}"));
    (bins
        .into_iter()
        .chain(examples)
        .chain(cpp)
        .chain(readme)
        .chain(tests))
    .collect()
}

/// Runs every check of the bundle at `bundle` and writes the results into `results`.
pub fn run(bundle: &Path, results: &Path, budget: Duration) -> std::io::Result<Results> {
    let started = Instant::now();
    std::fs::create_dir_all(results)?;
    // A folder left by an earlier run into the same directory would be archived as this
    // run's.
    match std::fs::remove_dir_all(results.join(FILES)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let (availability, mut m) = machine::describe();
    // A GPU is required where one was asked for, where the kernel lists one, or where ikp
    // opened one: then a GPU check that did not run is a failure.
    let gpu_required = std::env::var("IKP_GPU_TESTS").as_deref() == Ok("1")
        || !machine::os_sees_gpu().is_empty()
        || availability == Availability::Gpu;
    m.insert("bundle".into(), bundle_info(bundle));
    let files = results.join(FILES);
    let plan = Plan {
        results: results.to_owned(),
        logs: files.join("logs"),
        files,
        availability: availability.clone(),
        deadline: started + budget,
    };
    let mut run = Progress {
        dir: results,
        started,
        gpu_required,
        checks: Vec::new(),
        steps: Vec::new(),
        step_started: started,
    };
    let only = Selection::from_env();
    if let Some(ps) = only.prefixes() {
        m.insert("only".into(), json!(ps));
    }
    run.add(&m, [machine_check(&availability, &m)])?;
    let missing: Vec<String> = expected_files()
        .into_iter()
        .filter(|f| !bundle.join(f).is_file())
        .collect();
    if !missing.is_empty() {
        let why = format!(
            "{} lacks {}: build it with scripts/gpu-bundle.sh",
            bundle.display(),
            missing.join(", ")
        );
        run.add(&m, [Check::new("bundle", Status::Fail, false, why)])?;
    }
    for name in crate::gpu::CHECKS.iter().filter(|n| only.runs(n)) {
        run.add(&m, gpu_check(bundle, name, &plan))?;
    }
    if only.runs("overhead") {
        run.add(&m, overhead::run(bundle, &plan))?;
    }
    if only.runs("example/") {
        for e in examples::EXAMPLES {
            run.add(&m, [examples::run(bundle, e, &plan)])?;
        }
        run.add(&m, [examples::run_cpp(bundle, &plan)])?;
    }
    if only.runs(readme::CHECK) {
        run.add(&m, [readme::run(bundle, &plan)])?;
    }
    if only.runs("python/") {
        run.add(&m, python::run(bundle, &plan, only.within(python::PREFIX)))?;
    }
    if only.runs("test/") {
        for suite in &tests::SUITES {
            run.add(&m, tests::run(bundle, suite, &plan))?;
        }
    }
    if only.runs("sanitizer/") {
        run.add(&m, sanitizer::run(bundle, &plan))?;
    }
    // Last: the profile is a figure, and it takes what time the run has left.
    if only.runs("overhead/ncu/") {
        run.add(&m, ncu::run(bundle, &plan))?;
    }
    if let Some(after) = machine::nvidia_smi() {
        m.insert("after_run".into(), Value::Object(after));
    }
    match archive(&plan) {
        Err(why) => run
            .checks
            .push(Check::new("archive", Status::Fail, false, why)),
        // What the archive holds in part or not at all, in the results (its list is also
        // in the archive, files/trimmed.txt).
        Ok(trimmed) if !trimmed.is_empty() => {
            let t = trimmed.iter().map(
                |t| json!({"path": t.path.display().to_string(), "bytes": t.bytes, "kept": t.kept}),
            );
            m.insert("archive_trimmed".into(), Value::Array(t.collect()));
        }
        Ok(_) => {}
    }
    let r = run.results(&m, true);
    write(results, &r)?;
    Ok(r)
}

/// The checks so far, written to the results files after each step (`complete`: false):
/// a run stopped from outside (the GPU machine's own time limit) still leaves the checks
/// of the steps it finished.
struct Progress<'a> {
    dir: &'a Path,
    started: Instant,
    gpu_required: bool,
    checks: Vec<Check>,
    steps: Vec<StepTime>,
    /// When the step now running began (the previous step's end).
    step_started: Instant,
}

impl Progress<'_> {
    fn add(
        &mut self,
        machine: &serde_json::Map<String, Value>,
        checks: impl IntoIterator<Item = Check>,
    ) -> std::io::Result<()> {
        let before = self.checks.len();
        self.checks.extend(checks);
        if let Some(first) = self.checks.get(before) {
            self.steps.push(StepTime {
                first: first.name.clone(),
                checks: self.checks.len() - before,
                wall_s: self.step_started.elapsed().as_secs_f64(),
            });
        }
        self.step_started = Instant::now();
        write(self.dir, &self.results(machine, false))
    }

    /// The results so far.
    fn results(&self, machine: &serde_json::Map<String, Value>, complete: bool) -> Results {
        Results {
            machine: machine.clone(),
            gpu_required: self.gpu_required,
            wall_s: self.started.elapsed().as_secs_f64(),
            checks: self.checks.clone(),
            steps: self.steps.clone(),
            complete,
        }
    }
}

/// Packs `plan.files` into [`ARCHIVE`], trimmed to stay under [`archive::LIMIT`] (logs
/// first, bulky traces last: [`archive::fit`]), beside the results files and removes the folder, so
/// that the results directory holds four files: the GPU machine hands back at most eight,
/// and none in folders more than two down. Uses the system `tar` (every Linux GPU machine
/// has it). Where it fails the folder stays, and the run says so.
fn archive(plan: &Plan) -> Result<Vec<archive::Trimmed>, String> {
    if !plan.files.is_dir() {
        return Ok(Vec::new());
    }
    let trimmed = archive::fit(&plan.files).map_err(|e| {
        format!(
            "trimming {} to fit the archive: {e}; the folder is left as it is",
            plan.files.display()
        )
    })?;
    let tmp = plan.results.join(format!(".{ARCHIVE}.tmp"));
    let status = Command::new("tar")
        .arg("-czf")
        .arg(&tmp)
        .arg("-C")
        .arg(&plan.results)
        .arg(FILES)
        .status();
    match status {
        Ok(s) if s.success() => {
            std::fs::rename(&tmp, plan.results.join(ARCHIVE))
                .map_err(|e| format!("keeping {ARCHIVE}: {e}"))?;
            std::fs::remove_dir_all(&plan.files).map_err(|e| {
                format!("removing {} after archiving it: {e}", plan.files.display())
            })?;
            Ok(trimmed)
        }
        Ok(s) => Err(format!(
            "tar could not pack {} ({s}); the folder is left as it is",
            plan.files.display()
        )),
        Err(e) => Err(format!(
            "could not run tar to pack {} ({e}); the folder is left as it is",
            plan.files.display()
        )),
    }
}

fn machine_check(a: &Availability, m: &serde_json::Map<String, Value>) -> Check {
    let get = |k: &str, or| m.get(k).and_then(Value::as_str).unwrap_or(or);
    match a {
        Availability::Gpu => Check::new(
            "machine",
            Status::Pass,
            true,
            format!(
                "{}, driver CUDA {}, NVRTC {}",
                get("gpu", "GPU 0"),
                get("driver_cuda_version", "?"),
                get("nvrtc_version", "?")
            ),
        ),
        Availability::NoGpu(why) => Check::skip("machine", format!("no CUDA GPU: {why}")),
        Availability::Broken(why) => Check::fail("machine", why.clone()),
    }
}

/// One GPU check in a child of this binary.
fn gpu_check(bundle: &Path, name: &str, plan: &Plan) -> Vec<Check> {
    if let Some(why) = plan.skip_all() {
        return vec![Check::skip(name, why)];
    }
    let exe = bundle.join("bin").join("ikp-gpucheck");
    let mut cmd = Command::new(&exe);
    cmd.args(["check", name]);
    plan.gpu_env(&mut cmd);
    let log = format!("check-{}", name.replace('/', "-"));
    let fail = |d: String| vec![Check::fail(name, d)];
    match child::run(cmd, &log, &plan.logs, plan.limit(CHECK_LIMIT)) {
        Ok(f) if f.ok() => match serde_json::from_str::<Vec<Check>>(f.stdout.trim()) {
            Ok(c) if !c.is_empty() => c,
            Ok(_) => fail("the check reported nothing".into()),
            Err(e) => fail(format!(
                "unreadable report ({e}): {}",
                child::last_lines(&f.stdout, 3)
            )),
        },
        Ok(f) => fail(f.failure()),
        Err(e) => fail(format!("could not start {}: {e}", exe.display())),
    }
}

/// `bundle.json` without its file list, or what is known without it.
fn bundle_info(bundle: &Path) -> Value {
    let info = std::fs::read(bundle.join("bundle.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    match info {
        Some(Value::Object(mut o)) => {
            o.remove("files");
            o.insert("path".into(), json!(bundle.display().to_string()));
            Value::Object(o)
        }
        _ => json!({"path": bundle.display().to_string(), "note": "no bundle.json"}),
    }
}

/// Writes `gpu-results.json` and `gpu-results.md`, each whole or not at all.
fn write(dir: &Path, r: &Results) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(&r.to_json()).map_err(std::io::Error::other)?;
    for (name, bytes) in [
        ("gpu-results.json", json),
        ("gpu-results.md", r.to_markdown().into_bytes()),
    ] {
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, dir.join(name))?;
    }
    Ok(())
}

#[cfg(test)]
mod progress_tests {
    use super::*;

    /// After each step the results files hold the checks so far and say the run has not
    /// ended; the Markdown file says so in words.
    #[test]
    fn each_step_leaves_results_files_that_say_the_run_has_not_ended() {
        let dir = tempfile::tempdir().unwrap();
        let mut run = Progress {
            dir: dir.path(),
            started: Instant::now(),
            gpu_required: true,
            checks: Vec::new(),
            steps: Vec::new(),
            step_started: Instant::now(),
        };
        let machine = serde_json::Map::new();
        let read = || -> Value {
            serde_json::from_slice(&std::fs::read(dir.path().join("gpu-results.json")).unwrap())
                .unwrap()
        };
        run.add(
            &machine,
            [Check::new("machine", Status::Pass, true, "a GPU")],
        )
        .unwrap();
        let first = read();
        assert_eq!(first["complete"], false);
        assert_eq!(first["checks"].as_array().unwrap().len(), 1);
        run.add(
            &machine,
            [
                Check::new("stream/wait", Status::Pass, true, "ok"),
                Check::fail("stream/drop", "3.2 % > 3 %"),
            ],
        )
        .unwrap();
        let second = read();
        let names: Vec<&str> = second["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["machine", "stream/wait", "stream/drop"]);
        // One step a call, named by its first check; a step's time is its own.
        let steps: Vec<(&str, u64)> = second["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["first"].as_str().unwrap(), s["checks"].as_u64().unwrap()))
            .collect();
        assert_eq!(steps, [("machine", 1), ("stream/wait", 2)]);
        assert_eq!(
            (
                second["complete"].clone(),
                second["summary"]["fail"].clone()
            ),
            (json!(false), json!(1))
        );
        let md = std::fs::read_to_string(dir.path().join("gpu-results.md")).unwrap();
        assert!(md.contains("The run had not ended"), "{md}");
    }
}

#[cfg(test)]
mod selection_tests {
    use super::Selection;

    #[test]
    fn a_prefix_selects_its_steps_and_only_them() {
        let all = Selection::parse(" , ");
        assert!(all.runs("python/") && all.runs("stream/wait") && all.prefixes().is_none());
        let s = Selection::parse("stream,python/torch-compile,overhead");
        assert!(s.runs("stream/wait") && s.runs("stream/sweep"));
        assert!(
            s.runs("python/"),
            "a check of the Python step runs the step"
        );
        assert!(s.runs("overhead") && s.runs("overhead/ncu/"));
        assert!(!s.runs("timing/clock") && !s.runs("test/") && !s.runs("sanitizer/"));
        assert!(!s.runs("example/") && !s.runs("docs/readme-cuda"));
    }

    #[test]
    fn a_prefix_inside_a_step_narrows_it_to_the_checks_it_names() {
        assert_eq!(Selection::parse("").within("python/"), None);
        for whole in ["python", "python/", "py,stream"] {
            assert_eq!(Selection::parse(whole).within("python/"), None, "{whole}");
        }
        let s = Selection::parse("stream,python/triton-probes,python/native,overhead");
        assert_eq!(
            s.within("python/"),
            Some(vec!["python/triton-probes".into(), "python/native".into()])
        );
        // A selection that leaves the step out names none of its checks.
        assert_eq!(Selection::parse("stream").within("python/"), Some(vec![]));
    }
}
