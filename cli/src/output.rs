//! Where a command's outputs go: files and directories written whole and put in place
//! together (or none of them, when any fails), standard output for one output given as
//! `-`, a line per file written, and no output that is one of the command's inputs.
use anyhow::Context;
use ikp_host::atomic;
use ikp_host::WriteError;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A usage error found after parsing (arguments that parse but do not go together): exit
/// code 2, like clap's own usage errors.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Whether an output path means standard output.
pub fn is_stdout(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// Fills the output it is given.
type Fill<'a> = Box<dyn FnOnce(&mut dyn Write) -> Result<(), WriteError> + 'a>;

/// The outputs of one command, committed together by [`Outputs::commit`].
pub struct Outputs<'a> {
    batch: atomic::Outputs,
    stdout: Option<Fill<'a>>,
    inputs: Vec<PathBuf>,
    quiet: bool,
}

impl<'a> Outputs<'a> {
    /// Outputs of a command that reads `inputs`; `quiet` drops the line per file.
    pub fn new(inputs: &[&Path], quiet: bool) -> Outputs<'a> {
        Outputs {
            batch: atomic::Outputs::new(),
            stdout: None,
            inputs: inputs.iter().map(|p| p.to_path_buf()).collect(),
            quiet,
        }
    }

    /// Writes the file `path` through `fill` (kept aside until [`Outputs::commit`]), or
    /// keeps `fill` for standard output when `path` is `-` (one output at most; the
    /// commands refuse more as a usage error first).
    pub fn file(
        &mut self,
        path: &Path,
        fill: impl FnOnce(&mut dyn Write) -> Result<(), WriteError> + 'a,
    ) -> anyhow::Result<()> {
        if is_stdout(path) {
            anyhow::ensure!(self.stdout.is_none(), "two outputs for standard output");
            self.stdout = Some(Box::new(fill));
            return Ok(());
        }
        self.refuse_input(path)?;
        self.batch
            .file(path, |w| fill(w as &mut dyn Write))
            .map_err(Into::into)
    }

    /// The batch, for library writers that stage directories into it.
    pub fn batch(&mut self) -> &mut atomic::Outputs {
        &mut self.batch
    }

    /// Writes the standard-output output (if any), then puts every file in place and
    /// names each on stderr with its size. Nothing is put in place when the standard
    /// output fails, unless its reader closed the pipe: that ends the command quietly
    /// (exit 0, as for `ikp summary BUF | head`), after the files.
    pub fn commit(mut self) -> anyhow::Result<()> {
        // A path that goes through a directory which did not exist before this command
        // (`new/../run.ikp`) is an input only now that the directory was created.
        let staged: Vec<PathBuf> = self.batch.paths().map(Path::to_path_buf).collect();
        for p in &staged {
            self.refuse_input(p)?;
        }
        let mut piped = Ok(());
        if let Some(fill) = self.stdout.take() {
            let mut w = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
            let r = fill(&mut w).and_then(|()| w.flush().map_err(WriteError::from));
            match r {
                Err(e) if e.is_broken_pipe() => piped = Err(e),
                Err(e) => return Err(e).context("writing to standard output"),
                Ok(()) => {}
            }
        }
        self.batch.commit()?;
        if !self.quiet {
            for p in &staged {
                eprintln!("wrote {}", describe(p));
            }
        }
        Ok(piped?)
    }

    /// Refuses an output path that is one of the inputs (same file, by device and inode,
    /// whatever the spelling of the path): writing it would destroy the run.
    fn refuse_input(&self, out: &Path) -> anyhow::Result<()> {
        for input in &self.inputs {
            if same_file(input, out) {
                anyhow::bail!(
                    "{}: this output is the input buffer {}; refusing to overwrite it",
                    out.display(),
                    input.display()
                );
            }
        }
        Ok(())
    }
}

/// `PATH (1.2 MiB)` for a file, `DIR/ (N files)` for a directory.
fn describe(p: &Path) -> String {
    match std::fs::metadata(p) {
        Ok(m) if m.is_dir() => {
            let n = std::fs::read_dir(p).map_or(0, |d| d.count());
            format!("{}/ ({n} files)", p.display())
        }
        Ok(m) => format!("{} ({})", p.display(), human_bytes(m.len())),
        Err(_) => p.display().to_string(),
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        ma.dev() == mb.dev() && ma.ino() == mb.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (ma, mb);
        std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
    }
}

/// `1234567` -> `1.2 MiB`.
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let (mut v, mut u) = (n as f64 / 1024.0, 0);
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}
