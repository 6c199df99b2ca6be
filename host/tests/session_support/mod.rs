//! Helpers shared by the session and NVRTC integration tests: re-running one test of this
//! binary in a child process with a chosen library search path (the dynamic loader reads
//! `LD_LIBRARY_PATH` once, at exec, so "no libcuda" and "libcuda without a device" need
//! two processes), requiring the provisioned libraries, and reporting skips.
#![allow(dead_code)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Set in the child: which scenario it runs.
pub const CHILD_ENV: &str = "IKP_TEST_CHILD";
/// Printed by a child that ran its scenario to the end.
pub const CHILD_DONE: &str = "IKP-CHILD-DONE";

/// The scenario this process was started for, if it is a child.
pub fn child_mode() -> Option<String> {
    std::env::var(CHILD_ENV).ok()
}

/// A directory named by a provisioning variable; fails the test (never skips) when the
/// variable is unset or the directory lacks `must_hold`.
pub fn provisioned_dir(var: &str, must_hold: &str) -> PathBuf {
    let dir = std::env::var_os(var).unwrap_or_else(|| {
        panic!(
            "{var} is not set: this test needs the provisioned CUDA libraries. Run \
             `bash scripts/provision.sh && source scripts/env.sh` (scripts/test.sh does both)"
        )
    });
    let dir = PathBuf::from(dir);
    assert!(
        dir.join(must_hold).exists(),
        "{var}={} does not contain {must_hold}: re-run `bash scripts/provision.sh`",
        dir.display()
    );
    dir
}

fn same_dir(a: &str, b: &Path) -> bool {
    let a = Path::new(a);
    a == b
        || match (a.canonicalize(), b.canonicalize()) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
}

/// The current `LD_LIBRARY_PATH` without `remove` and with `prepend` in front.
pub fn library_path(remove: &[&Path], prepend: &[&Path]) -> String {
    let current = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let mut parts: Vec<String> = prepend.iter().map(|p| p.display().to_string()).collect();
    parts.extend(
        current
            .split(':')
            .filter(|e| !e.is_empty())
            .filter(|e| !remove.iter().any(|r| same_dir(e, r)))
            .map(str::to_owned),
    );
    parts.join(":")
}

/// Re-runs test `name` of this binary in a child with `mode` and `LD_LIBRARY_PATH`.
pub fn run_child(name: &str, mode: &str, ld_library_path: &str) -> Output {
    let exe = std::env::current_exe().expect("path of the test binary");
    Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, mode)
        .env("LD_LIBRARY_PATH", ld_library_path)
        .output()
        .expect("spawning the test binary again")
}

/// Asserts the child passed and printed [`CHILD_DONE`]; returns its stdout.
pub fn assert_child_passed(what: &str, out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(CHILD_DONE),
        "child process for {what} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    stdout
}

/// Whether the dynamic loader finds `soname` without `LD_LIBRARY_PATH` (ld.so cache or
/// the default directories): then a "library missing" scenario cannot be set up.
pub fn system_has_library(soname: &str) -> bool {
    let cached = Command::new("ldconfig")
        .arg("-p")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains(soname))
        .unwrap_or(false);
    cached
        || [
            "/lib",
            "/usr/lib",
            "/lib64",
            "/usr/lib64",
            "/usr/lib/x86_64-linux-gnu",
        ]
        .iter()
        .any(|d| Path::new(d).join(soname).exists())
}

/// Whether this machine has an NVIDIA GPU: the kernel module lists one. (`/dev/nvidiactl`
/// proves nothing: libcuda, run as root, creates it even when there is no module.)
pub fn machine_has_gpu() -> bool {
    std::fs::read_dir("/proc/driver/nvidia/gpus")
        .map(|mut d| d.next().is_some())
        .unwrap_or(false)
        || Path::new("/dev/nvidia0").exists()
}

/// Prints a skip notice straight to stderr, past the test harness's output capture, so it
/// shows in a plain `cargo test` run.
pub fn skip(test: &str, why: &str) {
    let line = format!("SKIPPED {test}: {why}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Device 0 for a GPU test, or `None` after printing why the test is skipped.
///
/// Only "no GPU here" skips: no driver library, or a driver that answers
/// `CUDA_ERROR_NO_DEVICE`. Any other driver error fails the test: a stub `libcuda.so`
/// (`CUDA_ERROR_STUB_LIBRARY`) or a driver too old for the device must not make every GPU
/// test "pass". `IKP_GPU_TESTS=1` makes a missing GPU a failure too (the GPU bundle's
/// runner sets it on a machine that has one); `IKP_GPU_TESTS=0` skips even when a GPU is
/// present.
pub fn gpu_or_skip(
    test: &str,
) -> Option<std::sync::Arc<ikp_host::session::cudarc::driver::CudaContext>> {
    let setting = std::env::var("IKP_GPU_TESTS").unwrap_or_default();
    if setting == "0" {
        skip(test, "IKP_GPU_TESTS=0");
        return None;
    }
    let why = match ikp_host::session::device_count() {
        Ok(n) if n > 0 => {
            return Some(ikp_host::session::open_device(0).unwrap_or_else(|e| panic!("{e}")))
        }
        Ok(_) => "the CUDA driver reports no device".to_owned(),
        Err(ikp_host::session::SessionError::NoDriver { .. }) => {
            "no CUDA driver library (libcuda.so.1) found".to_owned()
        }
        Err(e) => panic!("{test}: the CUDA driver is present but failed: {e}"),
    };
    assert!(
        setting != "1",
        "{test}: IKP_GPU_TESTS=1 but no usable GPU: {why}"
    );
    skip(
        test,
        &format!("no CUDA GPU ({why}); set IKP_GPU_TESTS=1 to make this a failure"),
    );
    None
}
