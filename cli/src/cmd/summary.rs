//! `ikp summary BUF`: the terminal table of where the time went; for a buffer of several
//! launches (epochs), each launch's table under a `==> <file> · launch k <==` line.
use crate::input::{labels, InputArgs};
use anyhow::Context;
use ikp_host::{write_table, TraceStats};
use std::io::Write;
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
    let bufs = [a.buf.clone()];
    let l = a.input.load_launches(&bufs, labels(&bufs))?;
    let mut out = std::io::stdout().lock();
    let several = l.traces.len() > 1;
    for (i, (label, trace)) in l.labels.iter().zip(&l.traces).enumerate() {
        if several {
            // A buffer of several launches: each one's table under its label.
            let sep = if i == 0 { "" } else { "\n" };
            writeln!(out, "{sep}==> {label} <==").context("writing to stdout")?;
        }
        write_table(&mut out, &TraceStats::of(trace), &Default::default())?;
    }
    Ok(())
}
