//! Headless Chromium for the tests that look at the HTML report (Debian's `chromium`,
//! installed by scripts/provision.sh), started the way this machine's closed network
//! needs: no sandbox, no GPU, no background connections, a fresh profile.

use std::path::Path;
use std::process::{Command, Output};

/// Runs Chromium headless with a fresh profile under `dir`, `extra` flags and `target`
/// (a URL); fails the test when it cannot start or exits non-zero.
pub fn headless(dir: &Path, extra: &[&str], target: &str) -> Output {
    let chromium = ["chromium", "/usr/bin/chromium"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("chromium is missing: run scripts/provision.sh (it installs Debian's chromium)");
    let o = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .args(extra)
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(target)
        .output()
        .expect("run chromium");
    assert!(
        o.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}
