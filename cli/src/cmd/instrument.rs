//! `ikp instrument IN.ptx -o OUT.ptx [--at entry,loops,lines=FILE:A-B] [--report]`:
//! ikp probes written into a PTX module (see `ikp_host::instrument`), and the probe
//! manifest beside it (`OUT.probes.json`, or `--manifest`), both written whole or not at
//! all. `--report` assembles the module before and after with `ptxas -v` and prints each
//! kernel's registers, spills and SASS instructions.
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use ikp_host::atomic;
use ikp_host::instrument::{instrument, report, target_of, ProbeSet};
use ikp_host::sass::CudaTools;

/// Arguments of `ikp instrument`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The PTX module to instrument (nvcc --ptx / -keep, Triton, CuTe DSL output).
    pub input: PathBuf,
    /// Where to write the instrumented PTX.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Probes: a comma-separated list of `entry` (lane init and finalize, always in),
    /// `loops` (a region per loop, its trip count as a sample of the loop's counter),
    /// `lines=FILE:FIRST[-LAST]` (an instant per basic block at those source lines; may
    /// repeat) and `lanes=block` (a lane per block, recorded by its first warp, instead of
    /// one per warp: for kernels of many short blocks).
    #[arg(long, default_value = "entry,loops")]
    pub at: ProbeSet,
    /// Where to write the probe manifest (default: OUTPUT with extension .probes.json).
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// Assemble before and after with ptxas -v and print registers, spills and SASS
    /// instructions per kernel (needs ptxas and cuobjdump: IKP_CUDA_BIN or PATH).
    #[arg(long)]
    pub report: bool,
    /// Architecture for --report (default: the module's .target).
    #[arg(long)]
    pub arch: Option<String>,
}

/// `OUT.ptx` -> `OUT.probes.json`.
pub fn manifest_path(output: &Path) -> PathBuf {
    output.with_extension("probes.json")
}

/// Runs `ikp instrument`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let ptx = std::fs::read_to_string(&args.input)
        .with_context(|| format!("cannot read {}", args.input.display()))?;
    let out = instrument(&ptx, &args.at).with_context(|| format!("{}", args.input.display()))?;
    let manifest = args
        .manifest
        .clone()
        .unwrap_or_else(|| manifest_path(&args.output));
    let mut outputs = atomic::Outputs::new();
    outputs.file(&args.output, |w| w.write_all(out.ptx.as_bytes()))?;
    outputs.file(&manifest, |w| {
        w.write_all(out.manifest.to_json().as_bytes())
    })?;
    outputs.commit()?;
    let mut o = std::io::stdout().lock();
    for k in &out.manifest.kernels {
        let warps = k
            .warps_per_block
            .map_or("unknown (give it to the host)".to_string(), |w| {
                w.to_string()
            });
        let lanes = match k.lanes {
            ikp_host::instrument::LaneUnit::Warp => "",
            ikp_host::instrument::LaneUnit::Block => ", a lane per block (its first warp's)",
        };
        writeln!(
            o,
            "{}: {} probes, {} regions, warps per block {warps}{lanes}, buffer symbol {}",
            k.name,
            k.probes.len(),
            k.regions.len(),
            k.symbol
        )?;
    }
    writeln!(
        o,
        "wrote {} and {}",
        args.output.display(),
        manifest.display()
    )?;
    if args.report {
        let tools = CudaTools::discover().map_err(|e| {
            anyhow::anyhow!("--report: {e} (in an ikp checkout, `bash scripts/provision.sh && source scripts/env.sh` provides the tools)")
        })?;
        let arch = match args.arch {
            Some(a) => a,
            None => target_of(&ptx)?,
        };
        let costs = report::compare(&tools, &ptx, &out.ptx, &arch).context("--report")?;
        write!(o, "\n{}", report::markdown(&arch, &costs))?;
    }
    Ok(())
}
