//! What an instrumentation site costs in machine code, measured with the CUDA toolkit.
//!
//! A profiler that lives inside the kernel is only usable if its sites are cheap, and the
//! honest unit for "cheap" is SASS instructions: they are what the SM issues, and unlike a
//! timing they do not need a GPU and do not vary between runs. This module compiles small
//! fixture kernels with `nvcc -cubin` for a chosen architecture, disassembles them with
//! `cuobjdump -sass` and compares instruction counts between variants that differ in one
//! site:
//!
//! - [`tools`]: where `nvcc` and `cuobjdump` are (`IKP_CUDA_BIN`, else `PATH`) and a
//!   [`SassCompiler`] that compiles CUDA source with the generated `ikp.cuh` available;
//! - [`parse`]: the `cuobjdump -sass` listing as instruction lists per kernel, and loops;
//! - [`cost`]: the measurements themselves (listed there) and the table `ikp cost` prints;
//! - [`occupancy`]: blocks per SM from a kernel's registers and shared memory.
//!
//! The fixture kernels ship inside the library ([`kernels`]), so the measurement runs from
//! an installed `ikp` as well as from the test suite, which holds the figures to budgets.

pub mod cost;
pub mod occupancy;
pub mod parse;
pub mod tools;

pub use cost::{ArchCost, CostReport};
pub use parse::Sass;
pub use tools::{CudaTools, SassCompiler};

use std::path::PathBuf;

/// The fixture kernels, as CUDA C++ source.
pub mod kernels {
    /// Kernels isolating one ikp site each (records, records in a loop, a counted spin).
    /// Variants are instantiated by appending `IKP_COST_KERNELS(fence, timer, extra)` lines.
    pub const COST: &str = include_str!("kernels/cost.cu");
    /// The TVM CudaProfiler record sequence, rewritten from its documentation; variants
    /// are instantiated by appending `IKP_TVM_RECORDS(extra)` lines.
    pub const TVM_STYLE: &str = include_str!("kernels/tvm_style.cu");
    /// Four example kernels (fenced and plain load / compute / store, a warp-specialized
    /// producer / consumer with counted waits, a persistent grid in clock mode), each also
    /// written without markers under `-DIKP_BASELINE`.
    pub const EXAMPLES: &str = include_str!("kernels/examples.cu");
    /// A lane with no record (init and finalize), compiled with and without the switches
    /// that leave out the record-cost calibration and the epoch code.
    pub const SETUP: &str = include_str!("kernels/setup.cu");
}

/// Why a SASS measurement could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SassError {
    /// A CUDA tool is neither in `IKP_CUDA_BIN` nor on `PATH`.
    #[error("{tool} not found ({where_}): install the CUDA toolkit, or set IKP_CUDA_BIN to the directory holding nvcc and cuobjdump")]
    ToolNotFound {
        /// The tool (`nvcc`, `cuobjdump`).
        tool: &'static str,
        /// Where it was looked for.
        where_: String,
    },
    /// Creating, writing or reading a file failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A tool ran but failed (a compile error, an unknown architecture, ...).
    #[error("{command} failed ({status}):\n{output}")]
    ToolFailed {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// Its stdout and stderr.
        output: String,
    },
    /// The disassembly has no kernel of that name.
    #[error("no kernel {kernel} in the SASS (kernels: {})", have.join(", "))]
    MissingKernel {
        /// The kernel looked for.
        kernel: String,
        /// The kernels present.
        have: Vec<String>,
    },
    /// A kernel expected to hold one loop holds another number of them.
    #[error("kernel {kernel}: expected exactly one loop, found {found}")]
    LoopCount {
        /// The kernel.
        kernel: String,
        /// Loops found.
        found: usize,
    },
    /// A kernel expected to hold a loop around an inner loop (each copy ptxas made alike)
    /// holds no such pair, or copies that differ.
    #[error(
        "kernel {kernel}: expected a loop around an inner loop, found {found} loops that are not"
    )]
    LoopNest {
        /// The kernel.
        kernel: String,
        /// Loops found.
        found: usize,
    },
    /// A backward branch jumps to an address that is not an instruction of the kernel.
    #[error("kernel {kernel}: branch to {target:#x}, which is not an instruction")]
    BranchTarget {
        /// The kernel.
        kernel: String,
        /// The branch target.
        target: u64,
    },
}
