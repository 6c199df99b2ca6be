//! Golden files: an output compared with the file that pins it, or the file rewritten
//! under `IKP_BLESS=1` (every golden test of this binary goes through here). The goldens
//! live in one directory, `host/tests/golden/` ([`golden`]); the shipped samples the
//! peers' tests regenerate are checked in place ([`check`]).
//!
//! `IKP_BLESS=1 cargo test -p ikp-host --test host` rewrites every golden; add a module
//! or test name to rewrite fewer.
use std::path::{Path, PathBuf};

/// Whether this run rewrites the golden files instead of checking them.
pub fn bless() -> bool {
    std::env::var_os("IKP_BLESS").is_some_and(|v| v == "1")
}

/// The directory of the goldens.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compares `got` with the golden file `name` of [`dir`], or rewrites it under
/// `IKP_BLESS=1`.
pub fn golden(name: &str, got: &[u8]) {
    check(&dir().join(name), got);
}

/// Compares `got` with the golden file `p`, or rewrites it under `IKP_BLESS=1`; a
/// difference fails naming the file and its first differing line.
pub fn check(p: &Path, got: &[u8]) {
    if bless() {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, got).unwrap();
        return;
    }
    let want = std::fs::read(p)
        .unwrap_or_else(|e| panic!("{}: {e} (run with IKP_BLESS=1 to create)", p.display()));
    if want != got {
        let (w, g) = (String::from_utf8_lossy(&want), String::from_utf8_lossy(got));
        let line = w.lines().zip(g.lines()).position(|(a, b)| a != b);
        panic!(
            "{} differs from the output ({} bytes pinned, {} written; first differing line \
             {:?}); IKP_BLESS=1 to accept",
            p.display(),
            want.len(),
            got.len(),
            line.map(|i| i + 1)
        );
    }
}
