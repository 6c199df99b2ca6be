//! Shared helpers of the device tests that run `ikp.cuh` as host C++: the generated header
//! on disk, the host C++ compiler, running a tool.
//!
//! The nvcc / cuobjdump SASS measurements and the NVRTC compile checks live in
//! `ikp_host::sass` and the root package's `tests/device_sass.rs` / `tests/device_nvrtc.rs`.
// Each test crate uses a different subset of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The fixture sources (`tests/kernels/`).
pub fn kernels_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels")
}

/// A directory holding the generated `ikp.cuh`, written once per test process through the
/// public `write_to_dir`, so the tests compile exactly what the generator produces.
pub fn header_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir for ikp.cuh");
        ikp_device::cuh::write_to_dir(dir.path()).expect("writing ikp.cuh");
        dir
    })
    .path()
}

/// Runs `cmd`, panicking with its output when it fails; returns stdout.
pub fn run(mut cmd: Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if !out.status.success() {
        panic!(
            "{cmd:?} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).expect("tool output is UTF-8")
}

/// The host triple, as the `cc` crate wants it (from `rustc -vV`).
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let mut cmd = Command::new(rustc);
    cmd.arg("-vV");
    run(cmd)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV prints the host triple")
        .trim()
        .to_owned()
}

/// The host C++ compiler the `cc` crate picks, with `-O2` and the other flags it adds.
pub fn host_cxx() -> Command {
    let triple = host_triple();
    cc::Build::new()
        .cpp(true)
        .opt_level(2)
        .host(&triple)
        .target(&triple)
        .cargo_metadata(false)
        .get_compiler()
        .to_command()
}
