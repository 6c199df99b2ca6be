//! `ikp summary BUF`: the terminal table of where the time went.
use super::decode::Input;
use anyhow::Context;
use ikp_host::write::{table, TraceWriteOptions};

/// Arguments of `ikp summary`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub input: Input,
}

/// Runs `ikp summary`.
pub fn run(a: Args) -> anyhow::Result<()> {
    let opt = TraceWriteOptions {
        block_filter: a.input.filter()?,
        ..Default::default()
    };
    let trace = a.input.load()?;
    let mut out = std::io::stdout().lock();
    table::write_table(&trace, &opt, &mut out).context("writing to stdout")
}
