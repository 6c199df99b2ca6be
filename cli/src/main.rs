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
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Header(a) => cmd::header::run(a),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ikp: error: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}
