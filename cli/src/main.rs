//! `ikp`: the command-line front end. Thin: parses arguments, calls the libraries, maps
//! errors to exit codes. Each subcommand lives in its own module under `cmd/`.
use clap::{Parser, Subcommand};

mod cmd;

/// ikp: an in-kernel profiler for CUDA.
#[derive(Debug, Parser)]
#[command(name = "ikp", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write the device header ikp.cuh into a directory (for nvcc users).
    Header(cmd::header::Args),
    /// Decode a buffer (ikp or TVM format) into Chrome trace, summary JSON, CSV or Perfetto.
    Decode(cmd::decode::Args),
    /// Print a table of regions by total time, with unmatched and dropped counts.
    Summary(cmd::summary::Args),
    /// Where the time goes: timeline breakdown, compute isolation, imbalance, gaps, links.
    Analyze(cmd::analyze::Args),
    /// Write a self-contained HTML report (tables, histograms, SM heat map, imbalance).
    Report(cmd::report::Args),
    /// Write a sample buffer (attention-shaped kernel) to try the other commands on.
    Sample(cmd::sample::Args),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Header(a) => cmd::header::run(a),
        Command::Decode(a) => cmd::decode::run(a),
        Command::Summary(a) => cmd::summary::run(a),
        Command::Sample(a) => cmd::sample::run(a),
        Command::Analyze(a) => cmd::analyze::run(a),
        Command::Report(a) => cmd::report::run(a),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ikp: error: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}
