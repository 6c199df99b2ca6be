//! The `ikp` binary: [`ikp_cli::run`] on the process's command line.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(ikp_cli::run(std::env::args_os()))
}
