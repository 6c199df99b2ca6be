//! `ikp header -o DIR`: writes the generated device header `ikp.cuh` and the C++ host
//! helper `ikp_host.hpp` into DIR.
//!
//! The headers are generated from the wire format compiled into this binary, so the files
//! it writes always match what this `ikp` decodes.
use anyhow::Context;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `ikp header`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to write ikp.cuh and ikp_host.hpp into (created if missing).
    #[arg(short = 'o', long = "out-dir", default_value = ".")]
    pub out_dir: PathBuf,
}

/// Runs `ikp header`: writes the files atomically and prints their paths, one a line.
pub fn run(args: Args) -> anyhow::Result<()> {
    let path = ikp_device::cuh::write_to_dir(&args.out_dir).with_context(|| {
        format!(
            "ikp header: cannot write {} and {} into {}",
            ikp_device::cuh::FILE_NAME,
            ikp_device::cuh::HOST_FILE_NAME,
            args.out_dir.display()
        )
    })?;
    let host = path.with_file_name(ikp_device::cuh::HOST_FILE_NAME);
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", path.display())?;
    writeln!(out, "{}", host.display())?;
    Ok(())
}
