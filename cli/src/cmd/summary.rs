//! `ikp summary BUF`: the terminal table of where the time went.
use crate::input::InputArgs;
use ikp_host::{write_table, TraceWriteOptions};
use std::path::PathBuf;

/// Arguments of `ikp summary`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The buffer file (ikp native, TVM, FlashInfer or Mirage format).
    pub buf: PathBuf,
    #[command(flatten)]
    pub input: InputArgs,
}

/// Runs `ikp summary`.
pub fn run(a: Args) -> anyhow::Result<()> {
    let trace = a.input.load(&a.buf)?;
    write_table(
        std::io::stdout().lock(),
        &trace,
        &TraceWriteOptions::default(),
    )?;
    Ok(())
}
