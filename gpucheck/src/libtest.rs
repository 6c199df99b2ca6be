//! Reading what a Rust test binary (libtest) printed: the test list (`--list`), each
//! test's outcome (`test NAME ... ok | FAILED | ignored` on stdout), the first lines of a
//! failed test's captured output, and ikp's skip notices (`SKIPPED NAME: why`, written to
//! stderr by the GPU tests' gate, which libtest counts as passed).

use std::collections::BTreeMap;

/// What libtest said of one test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// `ok`.
    Ok,
    /// `FAILED`, with the first lines of its captured output.
    Failed(String),
    /// `ignored`.
    Ignored,
}

/// Test names from the output of `BINARY --list` (`name: test` lines).
pub fn parse_list(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_owned)
        .collect()
}

/// Outcomes by test name from a run's stdout.
pub fn parse_outcomes(stdout: &str) -> BTreeMap<String, Outcome> {
    let mut out = BTreeMap::new();
    for line in stdout.lines() {
        let test = line
            .strip_prefix("test ")
            .and_then(|r| r.rsplit_once(" ... "));
        let Some((name, result)) = test else {
            continue;
        };
        let outcome = match result.trim() {
            "ok" => Outcome::Ok,
            "FAILED" => Outcome::Failed(failure_text(stdout, name)),
            r if r.starts_with("ignored") => Outcome::Ignored,
            _ => continue,
        };
        out.insert(name.to_owned(), outcome);
    }
    out
}

/// The first lines of the `---- NAME stdout ----` section libtest prints for a failure.
fn failure_text(stdout: &str, name: &str) -> String {
    let head = format!("---- {name} stdout ----");
    let Some(at) = stdout.find(&head) else {
        return String::new();
    };
    stdout[at + head.len()..]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take_while(|l| !l.starts_with("---- ") && *l != "failures:")
        .filter(|l| !l.starts_with("note: ") && !l.starts_with("stack backtrace"))
        .take(3)
        .collect::<Vec<_>>()
        .join(" / ")
}

/// Skip notices by test name from a run's stderr.
pub fn parse_skips(stderr: &str) -> BTreeMap<String, String> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("SKIPPED "))
        .filter_map(|l| l.split_once(": "))
        .map(|(name, why)| (name.to_owned(), why.to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STDOUT: &str = "\nrunning 3 tests\ntest a_works ... ok\ntest b_breaks ... FAILED\n\
        test c_later ... ignored, needs a GPU\n\nfailures:\n\n---- b_breaks stdout ----\n\n\
        thread 'b_breaks' panicked at tests/x.rs:3:5:\nassertion failed: 1 == 2\n\
        stack backtrace:\nnote: Some details are omitted\n\n\
        failures:\n    b_breaks\n\ntest result: FAILED. 1 passed; 1 failed; 1 ignored\n";

    #[test]
    fn outcomes_failures_and_skips_are_read() {
        let o = parse_outcomes(STDOUT);
        assert_eq!(o.len(), 3);
        assert_eq!(o["a_works"], Outcome::Ok);
        assert_eq!(o["c_later"], Outcome::Ignored);
        assert_eq!(
            o["b_breaks"],
            Outcome::Failed(
                "thread 'b_breaks' panicked at tests/x.rs:3:5: / assertion failed: 1 == 2".into()
            )
        );
        let skips = parse_skips(
            "SKIPPED a_works: no CUDA GPU (the CUDA driver reports no device); set X\nnoise\n",
        );
        assert_eq!(
            skips["a_works"],
            "no CUDA GPU (the CUDA driver reports no device); set X"
        );
        assert_eq!(skips.len(), 1);
    }

    #[test]
    fn the_list_has_tests_only() {
        let l =
            parse_list("a_works: test\nmod::b: test\nsome_bench: bench\n\n2 tests, 1 benchmark\n");
        assert_eq!(l, ["a_works", "mod::b"]);
    }
}
