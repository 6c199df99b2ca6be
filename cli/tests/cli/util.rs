//! What every CLI test needs: the `ikp` binary under test, and paths.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the `ikp` binary built for these tests with `args`, to completion.
pub fn ikp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ikp"))
        .args(args)
        .output()
        .expect("run ikp")
}

/// `p` as a command-line argument (test paths are UTF-8).
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The repository's root (for the shipped samples).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}
