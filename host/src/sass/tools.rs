//! Finding `nvcc` and `cuobjdump`, and compiling CUDA source to SASS with them.
//!
//! The tools come from `IKP_CUDA_BIN` when it is set (the repository's `scripts/env.sh`
//! points it at the pinned CUDA wheels, so measurements are reproducible), else from
//! `PATH`. A missing tool is a typed error that says how to get one, never a panic.

use super::{Sass, SassError};
use crate::arch::Arch;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Environment variable naming the directory that holds `nvcc` and `cuobjdump`.
pub const CUDA_BIN_VAR: &str = "IKP_CUDA_BIN";

/// The two CUDA tools a SASS measurement needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaTools {
    /// The CUDA compiler driver.
    pub nvcc: PathBuf,
    /// The disassembler.
    pub cuobjdump: PathBuf,
}

impl CudaTools {
    /// Finds both tools in `IKP_CUDA_BIN` if it is set, else on `PATH`.
    pub fn discover() -> Result<CudaTools, SassError> {
        match std::env::var_os(CUDA_BIN_VAR) {
            Some(dir) => CudaTools::in_dir(Path::new(&dir)),
            None => {
                let path = std::env::var_os("PATH").unwrap_or_default();
                CudaTools::find(&std::env::split_paths(&path).collect::<Vec<_>>(), |tool| {
                    format!("{CUDA_BIN_VAR} is unset and {tool} is not on PATH")
                })
            }
        }
    }

    /// Both tools from one directory.
    pub fn in_dir(dir: &Path) -> Result<CudaTools, SassError> {
        CudaTools::find(&[dir.to_owned()], |tool| {
            let p = dir.join(tool);
            format!("no {} ({CUDA_BIN_VAR} or given directory)", p.display())
        })
    }

    /// Both tools from the first of `dirs` holding each; `missing` says where a tool
    /// found in none was looked for.
    fn find(dirs: &[PathBuf], missing: impl Fn(&str) -> String) -> Result<CudaTools, SassError> {
        let find = |tool: &'static str| {
            (dirs.iter().map(|d| d.join(tool)))
                .find(|p| p.is_file())
                .ok_or_else(|| SassError::ToolNotFound {
                    tool,
                    where_: missing(tool),
                })
        };
        Ok(CudaTools {
            nvcc: find("nvcc")?,
            cuobjdump: find("cuobjdump")?,
        })
    }

    /// nvcc's version line, e.g. `Cuda compilation tools, release 13.5, V13.5.37`: the
    /// figures depend on it, so every report names it.
    pub fn nvcc_version(&self) -> Result<String, SassError> {
        let mut cmd = Command::new(&self.nvcc);
        cmd.arg("--version");
        let out = run(cmd)?;
        Ok(out
            .lines()
            .find(|l| l.contains("release"))
            .unwrap_or("unknown nvcc version")
            .trim()
            .to_owned())
    }
}

/// Runs `cmd`; its stdout on success, [`SassError::ToolFailed`] with its output otherwise.
pub(crate) fn run(mut cmd: Command) -> Result<String, SassError> {
    let command = format!("{cmd:?}");
    let out = (cmd.output()).map_err(io("cannot run", Path::new(cmd.get_program())))?;
    if !out.status.success() {
        return Err(SassError::ToolFailed {
            command,
            status: out.status.to_string(),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// [`SassError::Io`] of `what` on `path`.
fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SassError {
    let path = path.to_owned();
    move |source| SassError::Io { what, path, source }
}

/// Compiles CUDA source to cubins with nvcc and disassembles them, in a private temporary
/// directory that also holds the generated `ikp.cuh` (so sources `#include "ikp.cuh"`
/// exactly as users do). Shareable between threads: every compilation gets its own files.
#[derive(Debug)]
pub struct SassCompiler {
    tools: CudaTools,
    dir: tempfile::TempDir,
    next: AtomicUsize,
}

impl SassCompiler {
    /// A compiler using `tools`, with the header written to a new temporary directory.
    pub fn new(tools: CudaTools) -> Result<SassCompiler, SassError> {
        let dir = tempfile::Builder::new()
            .prefix("ikp-sass-")
            .tempdir()
            .map_err(io(
                "creating a temporary directory in",
                &std::env::temp_dir(),
            ))?;
        ikp_device::cuh::write_to_dir(dir.path())
            .map_err(io("writing ikp.cuh into", dir.path()))?;
        Ok(SassCompiler {
            tools,
            dir,
            next: AtomicUsize::new(0),
        })
    }

    /// The tools in use.
    pub fn tools(&self) -> &CudaTools {
        &self.tools
    }

    /// `nvcc -cubin -arch=<arch> -D<define>...` on `source`, then `cuobjdump -sass`.
    /// `name` only names the files (and appears in errors).
    pub fn sass(
        &self,
        name: &str,
        source: &str,
        arch: Arch,
        defines: &[&str],
    ) -> Result<Sass, SassError> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let stem: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let dir = self.dir.path();
        let src = dir.join(format!("{stem}-{n}.cu"));
        let cubin = dir.join(format!("{stem}-{n}-{}.cubin", arch.sm()));
        std::fs::write(&src, source).map_err(io("writing", &src))?;
        let mut cmd = Command::new(&self.tools.nvcc);
        cmd.arg("-cubin")
            .arg(format!("-arch={}", arch.sm()))
            .arg("-I")
            .arg(dir);
        for d in defines {
            cmd.arg(format!("-D{d}"));
        }
        cmd.arg("-o").arg(&cubin).arg(&src);
        run(cmd)?;
        let mut dump = Command::new(&self.tools.cuobjdump);
        dump.arg("-sass").arg(&cubin);
        let text = run(dump)?;
        // The files are small; removing them keeps a long `ikp cost` from piling them up.
        let _ = std::fs::remove_file(&src);
        let _ = std::fs::remove_file(&cubin);
        Ok(Sass::parse(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_dir_names_the_missing_tool_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let err = CudaTools::in_dir(dir.path()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("nvcc not found"), "{msg}");
        assert!(msg.contains("set IKP_CUDA_BIN"), "{msg}");
        assert!(
            !msg.contains("scripts/"),
            "the library speaks of itself: {msg}"
        );
        // With nvcc present, the next missing tool is named.
        std::fs::write(dir.path().join("nvcc"), "").unwrap();
        let msg = CudaTools::in_dir(dir.path()).unwrap_err().to_string();
        assert!(msg.starts_with("cuobjdump not found"), "{msg}");
    }

    #[test]
    fn a_failing_tool_is_an_error_with_its_output() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo oops >&2; exit 3"]);
        match run(cmd).unwrap_err() {
            SassError::ToolFailed { output, status, .. } => {
                assert!(output.contains("oops"), "{output}");
                assert!(status.contains('3'), "{status}");
            }
            e => panic!("unexpected {e:?}"),
        }
        let missing = run(Command::new("/nonexistent/ikp-tool")).unwrap_err();
        assert!(matches!(missing, SassError::Io { .. }), "{missing:?}");
    }
}
