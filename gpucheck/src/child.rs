//! Running one bundled program as a child process with a time limit, its output in log
//! files. Every GPU step runs in a child: a kernel fault, a hang or a crash then costs one
//! check, not the run and its results file.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How a child ended.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status; `None` when it was killed at the time limit.
    pub status: Option<ExitStatus>,
    /// Seconds it ran.
    pub secs: f64,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
    /// Where both were saved.
    pub logs: (PathBuf, PathBuf),
}

impl Finished {
    /// Whether it exited with status 0.
    pub fn ok(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// Why it did not succeed, in a few words, with the last lines of its error output.
    pub fn failure(&self) -> String {
        let how = match self.status {
            None => format!("killed at its time limit after {:.0} s", self.secs),
            Some(s) => format!("exited with {s}"),
        };
        let tail = last_lines(&self.stderr, 6);
        if tail.is_empty() {
            how
        } else {
            format!("{how}: {tail}")
        }
    }
}

/// The last `n` non-empty lines of `text`, joined with " / ".
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}

/// Runs `cmd` until it exits or `limit` passes (then kills it), with stdout and stderr
/// written to `<logs>/<name>.stdout` and `.stderr`.
pub fn run(
    mut cmd: Command,
    name: &str,
    logs: &Path,
    limit: Duration,
) -> std::io::Result<Finished> {
    std::fs::create_dir_all(logs)?;
    let out_path = logs.join(format!("{name}.stdout"));
    let err_path = logs.join(format!("{name}.stderr"));
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path)?)
        .stderr(std::fs::File::create(&err_path)?);
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if start.elapsed() >= limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    Ok(Finished {
        status,
        secs: start.elapsed().as_secs_f64(),
        stdout: read(&out_path),
        stderr: read(&err_path),
        logs: (out_path, err_path),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_past_its_limit_is_killed_and_its_output_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Command::new("sh");
        c.args(["-c", "echo started; echo oops >&2; sleep 30"]);
        let f = run(c, "slow", dir.path(), Duration::from_millis(300)).unwrap();
        assert!(f.status.is_none() && !f.ok());
        assert!(f.secs < 10.0, "{}", f.secs);
        assert_eq!(f.stdout.trim(), "started");
        assert!(f.failure().contains("killed at its time limit") && f.failure().contains("oops"));
        assert!(f.logs.0.is_file() && f.logs.1.is_file());

        let mut c = Command::new("sh");
        c.args(["-c", "exit 3"]);
        let f = run(c, "fails", dir.path(), Duration::from_secs(10)).unwrap();
        assert!(
            !f.ok() && f.failure().contains("exit status: 3"),
            "{}",
            f.failure()
        );
    }
}
