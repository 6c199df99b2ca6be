//! `ikp header -o DIR`: writes the generated device header.
use anyhow::Context;
use std::path::PathBuf;

/// Arguments of `ikp header`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to write ikp.cuh into (created if missing).
    #[arg(short = 'o', long = "out-dir", default_value = ".")]
    pub out_dir: PathBuf,
}

/// Runs `ikp header`.
pub fn run(args: Args) -> anyhow::Result<()> {
    anyhow::bail!(
        "ikp header: the device header generator has not landed yet (out dir {})",
        args.out_dir.display()
    )
    .context("ikp header")
}
