//! Runs or compiles one page's blocks (see [`super::extract`] for what each kind gets) in a
//! directory of its own that looks like the checkout's root: a copy of `samples/`, links
//! to the sources the pages read (`host/`, `device/`, `examples/`, `scripts/`, `python/`),
//! `ikp` on `PATH` (the binary under test), then the provisioned venv (its `python3` has
//! DuckDB) and CUDA tools.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Output};

use super::extract::{ikp_commands, shell_lines, Block};
use crate::util::repo;

/// Flags whose value is a file or directory a command writes.
const OUTPUT_FLAGS: &[&str] = &[
    "--perfetto",
    "--chrome",
    "--summary",
    "--csv",
    "--parquet",
    "--block-dists",
    "--json",
    "-o",
];

/// A page's working directory and what running its blocks has learnt.
pub struct Page {
    pub dir: tempfile::TempDir,
    path: OsString,
    /// `ikp SUBCOMMAND --help`, per subcommand.
    help: HashMap<String, String>,
}

fn output(c: &mut Command, what: &str) -> Result<Output, String> {
    c.output().map_err(|e| format!("{what}: cannot start: {e}"))
}

fn check(o: &Output, what: &str) -> Result<(), String> {
    if o.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}):\n{}{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    ))
}

/// The directory of the CUDA tools: `IKP_CUDA_BIN` (scripts/env.sh), else the venv's.
fn cuda_bin() -> PathBuf {
    std::env::var_os("IKP_CUDA_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let lib = repo().join(".venv/lib");
            let py = std::fs::read_dir(&lib)
                .ok()
                .and_then(|mut d| d.find_map(|e| e.ok()))
                .map(|e| e.path())
                .unwrap_or(lib);
            py.join("site-packages/nvidia/cu13/bin")
        })
}

impl Page {
    pub fn new() -> Page {
        let dir = tempfile::tempdir().unwrap();
        let root = repo();
        let samples = dir.path().join("samples");
        std::fs::create_dir(&samples).unwrap();
        for e in std::fs::read_dir(root.join("samples")).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), samples.join(e.file_name())).unwrap();
        }
        for d in ["host", "device", "examples", "scripts", "python"] {
            std::os::unix::fs::symlink(root.join(d), dir.path().join(d)).unwrap();
        }
        let bin = dir.path().join(".bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_ikp"), bin.join("ikp")).unwrap();
        let mut paths = vec![bin, root.join(".venv/bin"), cuda_bin()];
        paths.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        Page {
            dir,
            path: std::env::join_paths(paths).unwrap(),
            help: HashMap::new(),
        }
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.current_dir(self.dir.path()).env("PATH", &self.path);
        c
    }

    /// Runs or checks `b`, as its language and tags say.
    pub fn run(&mut self, b: &Block) -> Result<(), String> {
        match b.lang.as_str() {
            "sh" => self.shell(b),
            "python" => self.python_compiles(b),
            "cuda" | "cpp" => self.compile(b),
            // Compiled (and run unless no_run) as doctests of the root crate: see
            // `rust_blocks_are_doctests`.
            "rust" => Ok(()),
            other => Err(format!("{b}: no rule for ```{other}")),
        }
    }

    /// Every `--flag` of every `ikp` command in `b` is one its subcommand's `--help` lists.
    fn flags_exist(&mut self, b: &Block) -> Result<(), String> {
        for line in shell_lines(&b.code) {
            for cmd in ikp_commands(&line) {
                let Some(sub) = cmd.first() else { continue };
                if !self.help.contains_key(sub) {
                    let o = output(
                        self.command("ikp").args([sub.as_str(), "--help"]),
                        "ikp --help",
                    )?;
                    check(
                        &o,
                        &format!("{b}: `ikp {sub} --help` (is `{sub}` a command?)"),
                    )?;
                    let text = String::from_utf8_lossy(&o.stdout).into_owned();
                    self.help.insert(sub.clone(), text);
                }
                let help = &self.help[sub];
                for flag in cmd.iter().filter(|w| w.starts_with("--")) {
                    let flag = flag.split('=').next().unwrap_or(flag);
                    let listed = help
                        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
                        .any(|w| w == flag);
                    if !listed {
                        return Err(format!(
                            "{b}: `ikp {sub}` has no flag {flag} (`ikp {sub} --help`)"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn shell(&mut self, b: &Block) -> Result<(), String> {
        self.flags_exist(b)?;
        let o = output(self.command("bash").args(["-n", "-c", &b.code]), "bash -n")?;
        check(&o, &format!("{b}: bash -n"))?;
        if b.has("setup") {
            // Installs, or is the test command itself: the scripts and paths it names exist.
            for w in b.code.split_whitespace() {
                let w = w.trim_end_matches(['"', '\'', ')']);
                let p = w.split('[').next().unwrap_or(w);
                if (p.starts_with("scripts/") || p.starts_with("./")) && !repo().join(p).exists() {
                    return Err(format!("{b}: {p} does not exist"));
                }
            }
            return Ok(());
        }
        if b.has("gpu") {
            return Ok(());
        }
        let script = b.code.replace("cargo run --release -p ikp-cli -- ", "ikp ");
        let o = output(
            self.command("bash")
                .args(["-euo", "pipefail", "-c", &script]),
            "bash",
        )?;
        check(&o, &format!("{b}"))?;
        for line in shell_lines(&script) {
            for cmd in ikp_commands(&line) {
                for out in written(&cmd) {
                    if !self.dir.path().join(&out).exists() {
                        return Err(format!(
                            "{b}: `ikp {}` exited 0 but {out} is missing",
                            cmd.join(" ")
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn python_compiles(&self, b: &Block) -> Result<(), String> {
        use std::io::Write;
        use std::process::Stdio;
        let code = format!(
            "import sys; compile(sys.stdin.read(), {:?}, 'exec')",
            b.to_string()
        );
        let mut child = self
            .command("python3")
            .args(["-c", &code])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("python3: cannot start: {e}"))?;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b.code.as_bytes())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        check(&o, &format!("{b}: compile"))
    }

    /// Writes the block to its file and compiles it: CUDA with nvcc (device and host
    /// code, no link), C++ with the host compiler; `include/` (from `ikp header`), then
    /// the committed headers, on the include path.
    fn compile(&self, b: &Block) -> Result<(), String> {
        let name = b.file().unwrap_or("block");
        let src = self.dir.path().join(name);
        std::fs::write(&src, &b.code).unwrap();
        let inc = ["-I", "include", "-I"];
        let committed = repo().join("device/include");
        let committed = committed.to_str().unwrap();
        let o = if b.lang == "cuda" {
            output(
                self.command("nvcc")
                    .args(["-std=c++17", "-arch=sm_90", "-c", name, "-o", "/dev/null"])
                    .args(inc)
                    .arg(committed),
                "nvcc",
            )?
        } else {
            output(
                self.command("c++")
                    .args(["-std=c++17", "-fsyntax-only", name])
                    .args(inc)
                    .arg(committed),
                "c++",
            )?
        };
        check(&o, &format!("{b}: compiling {name}"))
    }
}

/// The files and directories `ikp ARGS` writes, where they are plain words (`-` is
/// standard output; a word with a shell expansion is not checked).
fn written(cmd: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let plain = |w: &String| !w.contains(['$', '"', '\'']) && w != "-";
    for (i, w) in cmd.iter().enumerate() {
        if OUTPUT_FLAGS.contains(&w.as_str()) {
            if let Some(v) = cmd.get(i + 1).filter(|v| plain(v)) {
                out.push(v.clone());
            }
        }
    }
    // `ikp sample OUT`: its first argument.
    if cmd.first().is_some_and(|c| c == "sample") {
        if let Some(v) = cmd.get(1).filter(|v| plain(v) && !v.starts_with('-')) {
            out.push(v.clone());
        }
    }
    out
}

/// Runs every block of the page at `rel` (relative to the checkout), in order, in one
/// working directory; the first failure is the error.
pub fn page(rel: &str) -> Result<(), String> {
    let md = std::fs::read_to_string(repo().join(rel)).map_err(|e| format!("{rel}: {e}"))?;
    let blocks = super::extract::blocks(&md).map_err(|e| format!("{rel}: {e}"))?;
    let mut page = Page::new();
    for b in &blocks {
        page.run(b).map_err(|e| format!("{rel}: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_outputs() {
        let w = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            written(&w("decode a --perfetto o.trace --chrome - --parquet d")),
            ["o.trace", "d"]
        );
        assert_eq!(
            written(&w("sample runs/$r.ikp --seed 1")),
            Vec::<String>::new()
        );
        assert_eq!(written(&w("sample s.ikp")), ["s.ikp"]);
        assert_eq!(written(&w("report a -o rep")), ["rep"]);
    }
}
