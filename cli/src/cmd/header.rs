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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_the_generated_header_into_a_new_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        run(Args {
            out_dir: dir.clone(),
        })
        .unwrap();
        let text = std::fs::read_to_string(dir.join("ikp.cuh")).unwrap();
        assert_eq!(text, ikp_device::cuh::source());
        let host = std::fs::read_to_string(dir.join("ikp_host.hpp")).unwrap();
        assert_eq!(host, ikp_device::cuh::host_source());
    }

    #[test]
    fn failure_names_the_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("not-a-dir");
        std::fs::write(&file, "x").unwrap();
        let err = run(Args {
            out_dir: file.clone(),
        })
        .unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains(&file.display().to_string()), "{msg}");
    }
}
