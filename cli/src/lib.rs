//! `ikp`: the command-line front end. Thin: parses arguments, picks the outputs, calls the
//! library, maps errors to exit codes. [`run`] is the whole command: the `ikp` binary
//! (`main.rs`) and the Python package's `ikp` console script (`ikp._ikp.cli_main`) both
//! call it, so the two are one program. Each subcommand lives in its own module under
//! `cmd/`; how buffers are read is [`input`], where outputs go is [`output`].
//!
//! Exit codes: 0 success (also when a reader closed the pipe: `ikp summary BUF | head`);
//! 1 error (bad input, unwritable output: the message names the file and the problem);
//! 2 invalid command line (from clap, or an [`output::UsageError`]: arguments that parse
//! but do not go together, such as several buffers with `ikp decode --chrome`); 3 `ikp
//! diff --fail-on-regression` found a regression.
use clap::{Parser, Subcommand};

mod analysis_opts;
mod cmd;
mod input;
mod output;

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
    /// Decode a buffer (ikp, TVM, FlashInfer, Mirage or yao-jz format, or a Proton trace)
    /// into Perfetto, Chrome trace, summary JSON or CSV; several buffers into one Perfetto
    /// trace.
    Decode(cmd::decode::Args),
    /// Print a table of regions by self time, its share of the lane time and inclusive time,
    /// with unmatched and dropped counts.
    Summary(cmd::summary::Args),
    /// Where the time goes: timeline breakdown, compute isolation, imbalance, gaps, links.
    Analyze(cmd::analyze::Args),
    /// Write a self-contained HTML report (tables, histograms, SM heat map, imbalance).
    Report(cmd::report::Args),
    /// Draw SVG histograms per region and per-block overlays.
    Plot(cmd::plot::Args),
    /// Compare two runs region by region and flag regressions.
    Diff(cmd::diff::Args),
    /// Write a sample buffer (attention-shaped kernel) to try the other commands on.
    Sample(cmd::sample::Args),
    /// SASS instructions per instrumentation site by mode (nvcc + cuobjdump, no GPU).
    Cost(cmd::cost::Args),
    /// Insert ikp probes into a PTX module (kernel entry and exits, loops, source lines):
    /// no source edit, no signature change.
    Instrument(cmd::instrument::Args),
    /// One Perfetto trace of ikp buffers (recorded with a host clock sync) and a host
    /// Chrome trace (e.g. the PyTorch profiler's), on the host's clock.
    Merge(cmd::merge::Args),
}

/// Runs the command line `args` (the program's name first, as `std::env::args_os` gives
/// it) and returns the exit code (see the crate's documentation). A command line clap
/// rejects, `--help` and `--version` print as clap prints them and return its code.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let code = match Cli::try_parse_from(args) {
        Ok(cli) => execute(cli),
        Err(e) => {
            // What clap's own `exit` prints, without ending a process that may not be ours.
            let _ = e.print();
            u8::try_from(e.exit_code()).unwrap_or(2)
        }
    };
    // A caller that is not a Rust `main` (the Python console script) does not flush
    // Rust's standard output at exit.
    let _ = std::io::Write::flush(&mut std::io::stdout());
    code
}

fn execute(cli: Cli) -> u8 {
    let result = match cli.command {
        Command::Header(a) => cmd::header::run(a).map(|()| 0),
        Command::Decode(a) => cmd::decode::run(a).map(|()| 0),
        Command::Summary(a) => cmd::summary::run(a).map(|()| 0),
        Command::Sample(a) => cmd::sample::run(a).map(|()| 0),
        Command::Analyze(a) => cmd::analyze::run(a).map(|()| 0),
        Command::Report(a) => cmd::report::run(a).map(|()| 0),
        Command::Plot(a) => cmd::plot::run(a).map(|()| 0),
        Command::Cost(a) => cmd::cost::run(a).map(|()| 0),
        Command::Merge(a) => cmd::merge::run(a).map(|()| 0),
        Command::Instrument(a) => cmd::instrument::run(a).map(|()| 0),
        Command::Diff(a) => cmd::diff::run(a).map(|regressed| {
            if regressed {
                cmd::diff::REGRESSION_EXIT
            } else {
                0
            }
        }),
    };
    match result {
        Ok(code) => code,
        // A reader that went away (`ikp decode BUF --chrome - | head`) is not an error.
        Err(e) if broken_pipe(&e) => 0,
        Err(e) if e.downcast_ref::<output::UsageError>().is_some() => {
            eprintln!("ikp: error: {e:#}\n\nFor more information, try '--help'.");
            2
        }
        Err(e) => {
            eprintln!("ikp: error: {e:#}");
            1
        }
    }
}

/// Whether `e` comes from writing to a pipe whose reader closed it.
fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<ikp_host::WriteError>()
                .is_some_and(ikp_host::WriteError::is_broken_pipe)
    })
}
