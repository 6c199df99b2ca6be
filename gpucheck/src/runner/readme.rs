//! The front page's CUDA C++ path as a user follows it on a GPU machine (README.md, "A CUDA
//! C++ kernel with `ikp.cuh`"): its `k.cu` block, taken from the README the bundle
//! carries, compiled with that machine's nvcc exactly as the page says, run (it writes
//! `k.ikp`), decoded, and given to `ikp report`. Here, without a GPU, the test command
//! compiles the same block with nvcc (cli/tests/cli/docs); this check runs it.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use ikp_host::decode::{load, DecodeOptions};

use super::{Plan, EXAMPLE_LIMIT};
use crate::child;
use crate::results::{Check, Status};
use crate::verify::clean_and_ordered;

/// The check's name.
pub const CHECK: &str = "docs/readme-cuda";
/// The README in the bundle (scripts/gpu-bundle.sh copies it).
pub const README: &str = "docs/README.md";
/// The fence of the block the check compiles.
const FENCE: &str = "```cuda k.cu";
/// What the README's kernel records: 8 blocks of one lane, a `load` and a `compute` span
/// each.
const LANES: usize = 8;
const SPANS: usize = 16;
/// Time limit of the compilation.
const NVCC_LIMIT: Duration = Duration::from_secs(120);

/// The text of the README's `k.cu` block, if it has one.
pub fn kernel_source(readme: &str) -> Option<String> {
    let start = readme.find(FENCE)?;
    let body = &readme[start..];
    let body = &body[body.find('\n')? + 1..];
    let end = body.find("\n```")?;
    Some(body[..=end].to_owned())
}

/// Compiles and runs the README's `k.cu`, then decodes and reports its buffer.
pub fn run(bundle: &Path, plan: &Plan) -> Check {
    if let Some(why) = plan.skip_all() {
        return Check::skip(CHECK, why);
    }
    let Some(nvcc) = super::find_cuda_tool("IKP_NVCC", "nvcc") else {
        return Check::skip(
            CHECK,
            "no nvcc on this machine (IKP_NVCC, PATH, /usr/local/cuda/bin): the README's \
             path compiles where it runs",
        );
    };
    let fail = |detail: String| Check::fail(CHECK, detail);
    let readme = match std::fs::read_to_string(bundle.join(README)) {
        Ok(t) => t,
        Err(e) => return fail(format!("reading {README}: {e}")),
    };
    let Some(source) = kernel_source(&readme) else {
        return fail(format!("{README} has no {FENCE} block"));
    };
    // The user's directory: k.cu, include/ (the bundle's `ikp header` output), then k.ikp.
    let dir = plan.files.join("readme");
    let build = plan.files.join("build-readme");
    for d in [&dir, &build] {
        if let Err(e) = std::fs::create_dir_all(d) {
            return fail(format!("creating {}: {e}", d.display()));
        }
    }
    if let Err(e) = std::fs::write(dir.join("k.cu"), &source) {
        return fail(format!("writing k.cu: {e}"));
    }
    let exe = build.join("k");
    let mut cc = Command::new(&nvcc);
    cc.current_dir(&dir)
        .args(["-std=c++17", "-arch=native", "-I"])
        .arg(bundle.join("include"))
        .arg("k.cu")
        .arg("-o")
        .arg(&exe);
    let run = |cmd, log: &str, limit| child::run(cmd, log, &plan.logs, plan.limit(limit));
    match run(cc, "nvcc-readme", NVCC_LIMIT) {
        Ok(f) if f.ok() => {}
        Ok(f) => return fail(format!("{} {}", nvcc.display(), f.failure())),
        Err(e) => return fail(format!("could not start {}: {e}", nvcc.display())),
    }
    let mut k = Command::new(&exe);
    k.current_dir(&dir);
    plan.gpu_env(&mut k);
    let ran = run(k, "readme-k", EXAMPLE_LIMIT);
    // The executable is not a result: keep it out of the archive.
    let _ = std::fs::remove_dir_all(&build);
    match ran {
        Ok(f) if f.ok() => {}
        Ok(f) => return fail(format!("./k {}", f.failure())),
        Err(e) => return fail(format!("could not start ./k: {e}")),
    }
    let raw = dir.join("k.ikp");
    let trace = match load(&raw, &DecodeOptions::default()) {
        Ok(t) => t,
        Err(e) => return fail(format!("decoding k.ikp: {e}")),
    };
    if let Err(e) = clean_and_ordered(&trace) {
        return fail(e);
    }
    if (trace.lanes.len(), trace.spans.len()) != (LANES, SPANS) {
        return fail(format!(
            "k.ikp holds {} lanes and {} spans; the README's kernel records {LANES} and {SPANS}",
            trace.lanes.len(),
            trace.spans.len()
        ));
    }
    // The page's next step: `ikp report k.ikp -o k-report`.
    let mut report = Command::new(bundle.join("bin").join("ikp"));
    report
        .current_dir(&dir)
        .args(["report", "k.ikp", "-o", "k-report"]);
    match run(report, "ikp-report-readme", EXAMPLE_LIMIT) {
        Ok(f) if f.ok() => {}
        Ok(f) => return fail(format!("`ikp report k.ikp` {}", f.failure())),
        Err(e) => return fail(format!("could not start `ikp report`: {e}")),
    }
    if !dir.join("k-report/report.html").is_file() {
        return fail("`ikp report` wrote no k-report/report.html".into());
    }
    Check::new(
        CHECK,
        Status::Pass,
        true,
        format!(
            "the README's k.cu compiled with {} and ran: {LANES} lanes, {SPANS} spans, clean \
             and ordered; `ikp report` wrote k-report/report.html",
            nvcc.display()
        ),
    )
    .figure("lanes", trace.lanes.len())
    .figure("spans", trace.spans.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readme_has_the_kernel_this_check_runs() {
        let readme = include_str!("../../../README.md");
        let src = kernel_source(readme).expect("README.md's ```cuda k.cu block");
        assert!(src.contains("__global__ void k("), "{src}");
        assert!(src.contains("std::ofstream(\"k.ikp\""), "{src}");
        assert!(src.contains("layout.grid = {blocks, 1, 1}") && src.contains("blocks = 8"));
        assert!(readme.contains("nvcc -std=c++17 -arch=native -I include k.cu -o k"));
        assert_eq!(kernel_source("no block"), None);
    }
}
