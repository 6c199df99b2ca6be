//! `ikp cost [--arch sm_80,sm_90]`: the SASS instructions each kind of instrumentation site
//! costs (records, ring records, async ranges, a lane's init with its epoch code and
//! record-cost calibration, the wait tick), per architecture, next to the TVM
//! CudaProfiler record sequence.
//!
//! Needs `nvcc` and `cuobjdump` (from `IKP_CUDA_BIN`, else `PATH`), not a GPU: the kernels
//! are compiled to cubins and disassembled, and the counts are differences between builds
//! that differ in one site (see `ikp_host::sass::cost`).
use anyhow::Context;
use ikp_host::sass::{CostReport, CudaTools, SassCompiler};
use ikp_host::Arch;
use std::io::Write;

/// Arguments of `ikp cost`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Architectures to compile for, comma-separated (sm_XY, XY or X.Y).
    #[arg(long, value_delimiter = ',', default_values = ["sm_80", "sm_90"])]
    pub arch: Vec<Arch>,
}

/// What the table's numbers are, printed under it.
const EXPLAINED: &str = "\
Each figure is SASS instructions per site: the growth of a kernel's instruction count
(`nvcc -cubin`, `cuobjdump -sass`) between two builds that differ only in that site,
divided by the number of sites added. A record is measured twice: adding 8 records to a
kernel that has 1 (\"first 8 added\"), then 8 more (\"next 8 added\"). The first step also
holds a one-off change elsewhere in the kernel (finalize's record count stops being the
constant 1), and dividing it by 8 gives a fraction; the second figure, the steady state,
is the cost of one more record. Ring records and async-range records are measured the
same way. The lane's init + finalize is the whole kernel's count against the build with
IKP_ENABLED=0, and its calibration and epoch code are the counts IKP_CALIBRATE=0 and
IKP_EPOCHS=0 save: static counts, once per lane, not per record (the epoch code only runs
when the buffer holds several epochs).";

/// Runs `ikp cost`: measures and prints the Markdown table.
pub fn run(args: Args) -> anyhow::Result<()> {
    anyhow::ensure!(
        !args.arch.is_empty(),
        "--arch: give at least one architecture"
    );
    let tools = CudaTools::discover().map_err(|e| {
        anyhow::anyhow!(
            "{e} (in an ikp checkout, `bash scripts/provision.sh && source scripts/env.sh` provides both)"
        )
    })?;
    let compiler = SassCompiler::new(tools)?;
    let report = CostReport::measure(&compiler, &args.arch)
        .context("ikp cost: measuring the SASS cost of the instrumentation sites")?;
    let mut o = std::io::stdout().lock();
    write!(o, "{}", report.markdown())?;
    writeln!(o, "{EXPLAINED}")?;
    Ok(())
}
