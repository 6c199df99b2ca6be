//! Golden files: an output compared with the file that pins it, or the file rewritten
//! under `IKP_BLESS=1` (shared by the golden tests).
use std::path::Path;

/// Whether this run rewrites the golden files instead of checking them.
pub fn bless() -> bool {
    std::env::var_os("IKP_BLESS").is_some()
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
            "{} differs from the output (first differing line {:?}); IKP_BLESS=1 to accept",
            p.display(),
            line.map(|i| i + 1)
        );
    }
}
