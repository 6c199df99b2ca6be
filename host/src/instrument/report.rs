//! What the probes cost a kernel: `ptxas -v` registers and spills, and SASS instructions,
//! before and after instrumenting, per kernel (`ikp instrument --report`).
//!
//! The tools are the SASS measurements' ([`crate::sass::CudaTools`]: `IKP_CUDA_BIN`, else
//! `PATH`); `ptxas` is taken from nvcc's directory.

use std::path::PathBuf;
use std::process::Command;

use crate::sass::{tools, CudaTools, Sass, SassError};

/// A module assembled for one architecture.
#[derive(Clone, Debug)]
pub struct Assembled {
    /// Per kernel, in `ptxas -v` order: (name, registers, spill store bytes, spill load bytes).
    pub usage: Vec<Usage>,
    /// The cubin's SASS.
    pub sass: Sass,
}

/// One kernel's resources as `ptxas -v` states them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// The kernel.
    pub kernel: String,
    /// Registers per thread.
    pub registers: u32,
    /// Bytes of spill stores.
    pub spill_stores: u32,
    /// Bytes of spill loads.
    pub spill_loads: u32,
    /// Bytes of static shared memory (`N bytes smem`; a launch's dynamic shared memory
    /// comes on top).
    pub shared_bytes: u32,
}

/// One kernel before and after instrumenting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelCost {
    /// Resources of the input.
    pub before: Usage,
    /// Resources of the instrumented module.
    pub after: Usage,
    /// SASS instructions before and after.
    pub instructions: (usize, usize),
    /// Blocks one SM holds before and after, with the threads per block they are counted
    /// for: the kernel's `.reqntid` / `.maxntid`, and its static shared memory only (a
    /// launch's dynamic shared memory is not in the PTX). `None` where the PTX gives no
    /// block size or the architecture's limits are not tabled
    /// ([`crate::sass::occupancy::blocks_per_sm`]).
    pub blocks_per_sm: Option<(u32, u32, u32)>,
}

/// Assembles `ptx` for `arch` (`sm_90a`) with `ptxas -v` and disassembles it.
pub fn assemble(tools: &CudaTools, ptx: &str, arch: &str) -> Result<Assembled, SassError> {
    let dir = tempfile::tempdir().map_err(|source| SassError::Io {
        what: "cannot create a temporary directory",
        path: std::env::temp_dir(),
        source,
    })?;
    let input = dir.path().join("in.ptx");
    let cubin = dir.path().join("out.cubin");
    std::fs::write(&input, ptx).map_err(|source| SassError::Io {
        what: "cannot write",
        path: input.clone(),
        source,
    })?;
    let mut cmd = Command::new(ptxas(tools));
    cmd.arg("-v")
        .arg(format!("-arch={arch}"))
        .arg("-o")
        .arg(&cubin)
        .arg(&input);
    // ptxas -v writes its report on stderr.
    let out = cmd.output().map_err(|source| SassError::Io {
        what: "cannot run",
        path: ptxas(tools),
        source,
    })?;
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(SassError::ToolFailed {
            command: format!("{cmd:?}"),
            status: out.status.to_string(),
            output: format!("{}{log}", String::from_utf8_lossy(&out.stdout)),
        });
    }
    let mut dump = Command::new(&tools.cuobjdump);
    dump.arg("-sass").arg(&cubin);
    let sass = Sass::parse(&tools::run(dump)?);
    Ok(Assembled {
        usage: parse_usage(&log),
        sass,
    })
}

/// `ptxas` beside nvcc.
pub fn ptxas(tools: &CudaTools) -> PathBuf {
    tools.nvcc.with_file_name("ptxas")
}

/// Reads `ptxas -v`'s report: a `Compiling entry function 'k'` line, then `... bytes
/// spill stores, ... bytes spill loads` and `Used N registers, ... N bytes smem`.
pub fn parse_usage(log: &str) -> Vec<Usage> {
    let mut out: Vec<Usage> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or("").to_string();
            out.push(Usage {
                kernel: name,
                ..Usage::default()
            });
            continue;
        }
        let Some(cur) = out.last_mut() else { continue };
        let number_before = |what: &str| -> Option<u32> {
            let head = &line[..line.find(what)?];
            head.split_whitespace().last()?.parse().ok()
        };
        if let Some(n) = number_before(" bytes spill stores") {
            cur.spill_stores = n;
        }
        if let Some(n) = number_before(" bytes spill loads") {
            cur.spill_loads = n;
        }
        if let Some(n) = line
            .split("Used ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next()?.parse().ok())
        {
            if line.contains(" registers") {
                cur.registers = n;
            }
        }
        if let Some(n) = number_before(" bytes smem") {
            cur.shared_bytes = n;
        }
    }
    out
}

/// Assembles the module before and after for `arch`, and compares each kernel.
pub fn compare(
    tools: &CudaTools,
    before: &str,
    after: &str,
    arch: &str,
) -> Result<Vec<KernelCost>, SassError> {
    let (b, a) = (
        assemble(tools, before, arch)?,
        assemble(tools, after, arch)?,
    );
    // The block sizes the PTX declares; a module ikp cannot read has none to give.
    let declared = super::ptx::Module::parse(before)
        .map(|m| m.kernels)
        .unwrap_or_default();
    let sm: Option<crate::Arch> = arch.parse().ok();
    b.usage
        .iter()
        .map(|u| {
            let after = a
                .usage
                .iter()
                .find(|x| x.kernel == u.kernel)
                .cloned()
                .unwrap_or_default();
            let instructions = (
                b.sass.kernel(&u.kernel)?.len(),
                a.sass.kernel(&u.kernel)?.len(),
            );
            let threads = declared
                .iter()
                .find(|k| k.name == u.kernel)
                .and_then(|k| k.threads_per_block);
            let blocks = |x: &Usage| {
                crate::sass::occupancy::blocks_per_sm(sm?, threads?, x.registers, x.shared_bytes)
            };
            let blocks_per_sm = match (threads, blocks(u), blocks(&after)) {
                (Some(t), Some(b0), Some(b1)) => Some((t, b0, b1)),
                _ => None,
            };
            Ok(KernelCost {
                before: u.clone(),
                after,
                instructions,
                blocks_per_sm,
            })
        })
        .collect()
}

/// The comparison as a Markdown table. "blocks per SM" is counted at the block size the
/// PTX declares (`.reqntid` / `.maxntid`), with static shared memory only; "n/a" where it
/// declares none.
pub fn markdown(arch: &str, costs: &[KernelCost]) -> String {
    let mut s = format!(
        "| kernel ({arch}) | registers | blocks per SM | spill stores (B) | spill loads (B) | SASS instructions |\n|---|---|---|---|---|---|\n"
    );
    for c in costs {
        let blocks = c.blocks_per_sm.map_or("n/a".to_string(), |(t, b0, b1)| {
            format!("{b0} -> {b1} ({t} threads)")
        });
        s += &format!(
            "| {} | {} -> {} | {blocks} | {} -> {} | {} -> {} | {} -> {} |\n",
            c.before.kernel,
            c.before.registers,
            c.after.registers,
            c.before.spill_stores,
            c.after.spill_stores,
            c.before.spill_loads,
            c.after.spill_loads,
            c.instructions.0,
            c.instructions.1
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ptxas_verbose_output() {
        let log = "ptxas info    : 0 bytes gmem\n\
                   ptxas info    : Compiling entry function 'add_kernel' for 'sm_90a'\n\
                   ptxas info    : Function properties for add_kernel\n\
                   \x20   8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
                   ptxas info    : Used 26 registers, used 0 barriers, 384 bytes cmem[0]\n\
                   ptxas info    : Compiling entry function 'b' for 'sm_90a'\n\
                   ptxas info    : Used 8 registers, used 1 barriers, 8320 bytes smem, 400 bytes cmem[0]\n";
        let u = parse_usage(log);
        assert_eq!(
            u,
            [
                Usage {
                    kernel: "add_kernel".into(),
                    registers: 26,
                    spill_stores: 4,
                    spill_loads: 12,
                    shared_bytes: 0
                },
                Usage {
                    kernel: "b".into(),
                    registers: 8,
                    spill_stores: 0,
                    spill_loads: 0,
                    shared_bytes: 8320
                },
            ]
        );
    }
}
