//! Helpers shared by the session and NVRTC tests (and, through `tests/support.rs`, the root
//! package's GPU tests): re-running one test of this binary in a child process with a chosen environment (the dynamic loader reads
//! `LD_LIBRARY_PATH` once, at exec, and ikp's NVRTC search reads the environment once, so
//! "no libcuda", "libcuda without a device" and each NVRTC search need their own
//! process), requiring the provisioned libraries, and reporting skips.
//!
//! # When a test may skip
//!
//! A test first decides whether its scenario can exist on this machine at all (a system
//! `libcuda.so.1` makes "no driver" impossible, a GPU makes "no device" impossible, a
//! system NVRTC makes "nothing to find" impossible): if not, it prints a `SKIPPED` line
//! with [`skip`] and passes. Only then does it ask for the provisioned libraries
//! (`scripts/provision.sh`, `source scripts/env.sh`) with [`provisioned_dir`]. A missing
//! provisioning variable fails the test, so CI can never skip silently, except under
//! `IKP_GPU_BUNDLE=1`: the GPU bundle runner sets it on GPU machines, which have no
//! `.venv`, and there the test is skipped with a notice.
#![allow(dead_code)]

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Set in the child: which scenario it runs.
pub const CHILD_ENV: &str = "IKP_TEST_CHILD";
/// Printed by a child that ran its scenario to the end.
pub const CHILD_DONE: &str = "IKP-CHILD-DONE";
/// Set by the GPU bundle runner: missing provisioning variables skip instead of failing.
pub const GPU_BUNDLE_ENV: &str = "IKP_GPU_BUNDLE";

/// The scenario this process was started for, if it is a child.
pub fn child_mode() -> Option<String> {
    std::env::var(CHILD_ENV).ok()
}

/// A directory named by a provisioning variable, or `None` after printing a skip for this
/// test when the variable is unset and `IKP_GPU_BUNDLE=1`. Fails the test when the
/// variable is unset otherwise, or when the directory lacks `must_hold`.
pub fn provisioned_dir(var: &str, must_hold: &str) -> Option<PathBuf> {
    let Some(dir) = std::env::var_os(var).filter(|v| !v.is_empty()) else {
        if std::env::var(GPU_BUNDLE_ENV).as_deref() == Ok("1") {
            skip(&format!(
                "{var} is not set ({GPU_BUNDLE_ENV}=1: this machine is not provisioned)"
            ));
            return None;
        }
        panic!(
            "{var} is not set: this test needs the provisioned CUDA libraries. Run \
             `bash scripts/provision.sh && source scripts/env.sh` (scripts/test.sh does both)"
        )
    };
    let dir = PathBuf::from(dir);
    assert!(
        dir.join(must_hold).exists(),
        "{var}={} does not contain {must_hold}: re-run `bash scripts/provision.sh`",
        dir.display()
    );
    Some(dir)
}

/// The Python venv that holds `dir` (the provisioned `.venv` for `IKP_NVRTC_LIB`).
pub fn venv_of(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|a| a.join("pyvenv.cfg").is_file())
        .unwrap_or_else(|| panic!("{} is not inside a Python venv", dir.display()))
        .to_owned()
}

/// The `site-packages` directory of `venv`.
pub fn site_packages(venv: &Path) -> PathBuf {
    let lib = venv.join("lib");
    std::fs::read_dir(&lib)
        .unwrap_or_else(|e| panic!("{}: {e}", lib.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
        .unwrap_or_else(|| panic!("no lib/python3*/site-packages in {}", venv.display()))
}

/// `major.minor` of the pip distribution `dist` (e.g. `nvidia_cuda_nvrtc`) installed in
/// `site`, read from its `.dist-info` directory name.
pub fn dist_version(site: &Path, dist: &str) -> (u32, u32) {
    let prefix = format!("{dist}-");
    let name = std::fs::read_dir(site)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with(&prefix) && n.ends_with(".dist-info"))
        .unwrap_or_else(|| panic!("{dist} is not installed in {}", site.display()));
    let version = &name[prefix.len()..name.len() - ".dist-info".len()];
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap());
    (parts.next().unwrap(), parts.next().unwrap())
}

/// File names ikp's NVRTC search looks for.
pub const NVRTC_NAMES: [&str; 3] = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];

fn holds_nvrtc(dir: &Path) -> bool {
    NVRTC_NAMES.iter().any(|n| dir.join(n).exists())
}

fn glob_dirs(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// An NVRTC installed on this system, outside anything a test's environment controls:
/// in the dynamic loader's cache, a CUDA toolkit under `/usr/local`, a system library
/// directory, or the system Python's pip packages. With one, "NVRTC comes from the venv"
/// and "nothing to find" cannot be set up.
pub fn system_nvrtc() -> Option<PathBuf> {
    if let Some(name) = NVRTC_NAMES.iter().find(|n| system_has_library(n)) {
        return Some(PathBuf::from(name));
    }
    let mut dirs: Vec<PathBuf> = ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"]
        .iter()
        .map(PathBuf::from)
        .collect();
    for cuda in glob_dirs(Path::new("/usr/local"), "cuda") {
        dirs.push(cuda.join("lib64"));
    }
    let mut sites = vec![PathBuf::from("/usr/lib/python3/dist-packages")];
    for lib in ["/usr/local/lib", "/usr/lib"] {
        for py in glob_dirs(Path::new(lib), "python3") {
            sites.push(py.join("site-packages"));
            sites.push(py.join("dist-packages"));
        }
    }
    for site in sites {
        dirs.extend(
            glob_dirs(&site.join("nvidia"), "")
                .into_iter()
                .map(|d| d.join("lib")),
        );
    }
    dirs.into_iter().find(|d| holds_nvrtc(d))
}

/// The directories of the current `LD_LIBRARY_PATH` that hold an NVRTC library: removed
/// from a child's path so that only the scenario's own library can be found.
pub fn nvrtc_dirs_on_library_path() -> Vec<PathBuf> {
    std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|e| !e.is_empty())
        .map(PathBuf::from)
        .filter(|d| holds_nvrtc(d))
        .collect()
}

/// The variables of ikp's NVRTC search, all cleared in a child unless the scenario sets
/// them again.
pub const NVRTC_SEARCH_VARS: [&str; 5] = [
    "IKP_NVRTC",
    "CUDA_HOME",
    "CUDA_PATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
];

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

/// The running test's full name as libtest lists it (`session_gpu::a_test`): libtest runs
/// every test on a thread of that name, whatever `--test-threads` says. Skip notices and
/// children use it, so they name the test as the GPU bundle's runner and `--exact` do.
pub fn this_test() -> String {
    std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .expect("called from a libtest test thread")
        .to_owned()
}

/// Re-runs the running test of this binary in a child with `mode` and `LD_LIBRARY_PATH`.
pub fn run_child(mode: &str, ld_library_path: &str) -> Output {
    run_child_with(
        mode,
        &[("LD_LIBRARY_PATH", Some(OsString::from(ld_library_path)))],
    )
}

/// Re-runs the running test of this binary in a child with `mode` and the environment
/// changed by `env`: `Some` sets a variable, `None` removes it.
pub fn run_child_with(mode: &str, env: &[(&str, Option<OsString>)]) -> Output {
    let exe = std::env::current_exe().expect("path of the test binary");
    let mut cmd = Command::new(exe);
    cmd.args([&this_test(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, mode);
    for (var, value) in env {
        match value {
            Some(v) => cmd.env(var, v),
            None => cmd.env_remove(var),
        };
    }
    cmd.output().expect("spawning the test binary again")
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
/// the default directories): then a "library missing" scenario cannot be set up. The
/// name must match exactly (`libcuda.so` is not found by a cached `libcuda.so.1`).
pub fn system_has_library(soname: &str) -> bool {
    // `ldconfig -p` lines: "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/.../libcuda.so.1".
    let cached = Command::new("ldconfig")
        .arg("-p")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.split_whitespace().next() == Some(soname))
        })
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

/// The names ikp and cudarc try for the driver library that matter on Linux: the
/// driver's soname, and the development link cudarc tries before it.
pub const LIBCUDA_NAMES: [&str; 2] = ["libcuda.so.1", "libcuda.so"];

/// A driver library the dynamic loader finds without `LD_LIBRARY_PATH` (in its cache or
/// default directories), which no child environment can hide.
pub fn system_libcuda() -> Option<&'static str> {
    LIBCUDA_NAMES.into_iter().find(|n| system_has_library(n))
}

/// The directories of the current `LD_LIBRARY_PATH` that hold a driver library (a GPU
/// machine's `/usr/local/nvidia/lib64`, the provisioned one): removed from a child's path
/// so that only the scenario's own library can be found.
pub fn libcuda_dirs_on_library_path() -> Vec<PathBuf> {
    std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|e| !e.is_empty())
        .map(PathBuf::from)
        .filter(|d| LIBCUDA_NAMES.iter().any(|n| d.join(n).exists()))
        .collect()
}

/// Whether this machine has an NVIDIA GPU: the kernel module lists one. (`/dev/nvidiactl`
/// proves nothing: libcuda, run as root, creates it even when there is no module.)
pub fn machine_has_gpu() -> bool {
    std::fs::read_dir("/proc/driver/nvidia/gpus")
        .map(|mut d| d.next().is_some())
        .unwrap_or(false)
        || Path::new("/dev/nvidia0").exists()
}

/// Prints a skip notice for the running test straight to stderr, past the test harness's
/// output capture, so it shows in a plain `cargo test` run (scripts/test.sh counts them;
/// the GPU bundle's runner reports them as skips).
pub fn skip(why: &str) {
    let line = format!("SKIPPED {}: {why}\n", this_test());
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
pub fn gpu_or_skip() -> Option<std::sync::Arc<ikp_host::cuda::cudarc::driver::CudaContext>> {
    let test = this_test();
    let setting = std::env::var("IKP_GPU_TESTS").unwrap_or_default();
    if setting == "0" {
        skip("IKP_GPU_TESTS=0");
        return None;
    }
    let why = match ikp_host::cuda::device_count() {
        Ok(n) if n > 0 => {
            return Some(ikp_host::cuda::open_device(0).unwrap_or_else(|e| panic!("{e}")))
        }
        Ok(_) => "the CUDA driver reports no device".to_owned(),
        Err(ikp_host::cuda::SessionError::NoDriver { .. }) => {
            "no CUDA driver library (libcuda.so.1) found".to_owned()
        }
        Err(e) => panic!("{test}: the CUDA driver is present but failed: {e}"),
    };
    assert!(
        setting != "1",
        "{test}: IKP_GPU_TESTS=1 but no usable GPU: {why}"
    );
    skip(&format!(
        "no CUDA GPU ({why}); set IKP_GPU_TESTS=1 to make this a failure"
    ));
    None
}
