//! Shared helpers of the `device_*` tests: where the CUDA tools are, compiling the example
//! kernels with nvcc, NVRTC or the host C++ compiler, and reading SASS back.
//!
//! Every helper panics with a message that says what to do when a tool is missing: CI
//! always provisions them (`scripts/provision.sh`, then `source scripts/env.sh`), so a
//! missing tool is a broken setup, never a reason to skip.
// Each test crate uses a different subset of these helpers.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// What to run when a tool is missing.
pub const SETUP: &str = "run `bash scripts/provision.sh && source scripts/env.sh` first";

/// The fixture kernels (`tests/kernels/*.cu`).
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

/// A CUDA tool from `IKP_CUDA_BIN`, else from `PATH`.
pub fn cuda_tool(name: &str) -> PathBuf {
    if let Some(bin) = std::env::var_os("IKP_CUDA_BIN") {
        let p = Path::new(&bin).join(name);
        if p.is_file() {
            return p;
        }
        panic!(
            "{name} not found in IKP_CUDA_BIN={} ({SETUP})",
            p.parent().unwrap().display()
        );
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("{name} not found: IKP_CUDA_BIN is unset and {name} is not on PATH ({SETUP})")
        })
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

/// Compiles `src` with `nvcc -cubin -arch=<arch>` and the `-D` defines into `out_dir`.
pub fn nvcc_cubin(src: &Path, arch: &str, defines: &[&str], out_dir: &Path) -> PathBuf {
    let tag: String = defines
        .iter()
        .map(|d| d.replace(|c: char| !c.is_ascii_alphanumeric(), "_"))
        .collect::<Vec<_>>()
        .join("-");
    let stem = src.file_stem().unwrap().to_string_lossy();
    let out = out_dir.join(format!("{stem}-{arch}-{tag}.cubin"));
    let mut cmd = Command::new(cuda_tool("nvcc"));
    cmd.arg("-cubin")
        .arg(format!("-arch={arch}"))
        .arg("-I")
        .arg(header_dir());
    for d in defines {
        cmd.arg(format!("-D{d}"));
    }
    cmd.arg("-o").arg(&out).arg(src);
    run(cmd);
    out
}

/// The SASS of every kernel in a cubin: instruction text only (no addresses, encodings or
/// names), up to the self-branch that ends each kernel (the padding after it is dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sass {
    /// Kernel name to instructions.
    pub kernels: BTreeMap<String, Vec<Insn>>,
}

/// One instruction: `(address, text)`.
pub type Insn = (u64, String);

/// The kernel being parsed: name, instructions, and whether its end was seen.
type Current = Option<(String, Vec<Insn>, bool)>;

impl Sass {
    /// Disassembles `cubin` with cuobjdump.
    pub fn of(cubin: &Path) -> Sass {
        let mut cmd = Command::new(cuda_tool("cuobjdump"));
        cmd.arg("-sass").arg(cubin);
        Sass::parse(&run(cmd))
    }

    /// Parses `cuobjdump -sass` output.
    pub fn parse(text: &str) -> Sass {
        let mut kernels = BTreeMap::new();
        let mut current: Current = None;
        for line in text.lines() {
            let t = line.trim();
            if let Some(name) = t.strip_prefix("Function : ") {
                if let Some((n, ins, _)) = current.take() {
                    kernels.insert(n, ins);
                }
                current = Some((name.trim().to_owned(), Vec::new(), false));
                continue;
            }
            let Some((_, ins, done)) = current.as_mut() else {
                continue;
            };
            // `/*0a30*/   @!P1 STG.E.64 desc[UR6][R2.64], R4 ;   /* 0x... */`
            let Some(rest) = t.strip_prefix("/*") else {
                continue;
            };
            let Some((addr, rest)) = rest.split_once("*/") else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue; // an encoding-only line: `/* 0x000fe2... */`
            };
            if *done {
                continue;
            }
            let text = rest.split(';').next().unwrap().trim().to_owned();
            if text.is_empty() {
                continue;
            }
            if branch_target(&text) == Some(addr) {
                *done = true; // `BRA self`: end of the kernel, padding follows
                continue;
            }
            ins.push((addr, text));
        }
        if let Some((n, ins, _)) = current.take() {
            kernels.insert(n, ins);
        }
        Sass { kernels }
    }

    /// Instructions of kernel `name` (text only).
    pub fn kernel(&self, name: &str) -> Vec<String> {
        self.kernels
            .get(name)
            .unwrap_or_else(|| panic!("no kernel {name} in SASS (have {:?})", self.kernels.keys()))
            .iter()
            .map(|(_, t)| t.clone())
            .collect()
    }

    /// Every loop of kernel `name`: the instructions from a backward branch's target to
    /// the branch itself, innermost-first in address order.
    pub fn loops(&self, name: &str) -> Vec<Vec<String>> {
        let ins = &self.kernels[name];
        let mut loops = Vec::new();
        for (i, (addr, text)) in ins.iter().enumerate() {
            if let Some(target) = branch_target(text).filter(|t| t < addr) {
                let start = ins
                    .iter()
                    .position(|(a, _)| *a == target)
                    .expect("branch target is an instruction");
                loops.push(ins[start..=i].iter().map(|(_, t)| t.clone()).collect());
            }
        }
        loops
    }
}

/// The target of a (possibly predicated) `BRA 0x...`.
fn branch_target(text: &str) -> Option<u64> {
    let mut words = text.split_whitespace();
    let mut op = words.next()?;
    if op.starts_with('@') {
        op = words.next()?;
    }
    if op != "BRA" {
        return None;
    }
    let target = words.last()?;
    u64::from_str_radix(target.strip_prefix("0x")?, 16).ok()
}

/// The nvcc version line (`release 13.5, V13.5.37`).
pub fn nvcc_version() -> String {
    let mut cmd = Command::new(cuda_tool("nvcc"));
    cmd.arg("--version");
    let out = run(cmd);
    out.lines()
        .find(|l| l.contains("release"))
        .unwrap_or("unknown")
        .trim()
        .to_owned()
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

/// Panics with a clear message unless NVRTC can be loaded: cudarc's loader searches
/// `LD_LIBRARY_PATH` for `libnvrtc.so.12`, which `scripts/env.sh` sets up.
pub fn require_nvrtc() {
    let dir = std::env::var_os("IKP_NVRTC_LIB")
        .unwrap_or_else(|| panic!("IKP_NVRTC_LIB is not set ({SETUP})"));
    let lib = Path::new(&dir).join("libnvrtc.so.12");
    assert!(lib.is_file(), "{} does not exist ({SETUP})", lib.display());
    let ld = std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default();
    assert!(
        std::env::split_paths(&ld).any(|p| p == Path::new(&dir)),
        "LD_LIBRARY_PATH does not contain IKP_NVRTC_LIB={} ({SETUP})",
        Path::new(&dir).display()
    );
}
