//! All-or-nothing output files and directories.
//!
//! A writer that fails halfway (bad input found late, disk full) must not leave a
//! truncated file that looks like a result. Output goes to a hidden temporary name in the
//! target's own directory (so the final rename stays on one file system and is atomic),
//! and is renamed over the target only when everything was written and flushed.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why an output could not be written: the path and the problem.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {error}", path.display())]
pub struct WriteError {
    /// The output path.
    pub path: PathBuf,
    /// The I/O problem (or the writer's own, as `io::ErrorKind::Other`). Shown in the
    /// message rather than as an error source, so a printed chain says it once.
    pub error: io::Error,
}

/// Creates the directories above an output path: `--chrome out/run.json` works on a fresh
/// checkout without a `mkdir` first.
fn create_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => std::fs::create_dir_all(p),
        _ => Ok(()),
    }
}

fn temp_sibling(path: &Path) -> PathBuf {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.ikp-tmp-{}-{seq}", std::process::id()))
}

/// Writes `path` through `fill`, atomically: on any error nothing is left at `path` (an
/// existing file there is untouched) and the temporary file is removed.
///
/// An existing target that is not a regular file (`/dev/null`, a FIFO, a terminal) is
/// written in place: renaming over it would replace the device with a file.
pub fn write_file<F>(path: &Path, fill: F) -> Result<(), WriteError>
where
    F: FnOnce(&mut BufWriter<File>) -> io::Result<()>,
{
    let err = |error| WriteError {
        path: path.to_path_buf(),
        error,
    };
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let direct = (|| {
            let mut w = BufWriter::with_capacity(
                1 << 20,
                std::fs::OpenOptions::new().write(true).open(path)?,
            );
            fill(&mut w)?;
            w.flush()
        })();
        return direct.map_err(err);
    }
    create_parent(path).map_err(err)?;
    let tmp = temp_sibling(path);
    let result = (|| {
        let f = File::create_new(&tmp)?;
        let mut w = BufWriter::with_capacity(1 << 20, f);
        fill(&mut w)?;
        w.flush()?;
        drop(w.into_inner().map_err(|e| e.into_error())?);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(err)
}

/// Creates directory `dir` through `fill` (which receives a temporary directory to fill),
/// atomically: the finished directory replaces any previous one at `dir` in one rename
/// (the old one is moved aside first and deleted after); on error nothing changes.
pub fn write_dir<F>(dir: &Path, fill: F) -> Result<(), WriteError>
where
    F: FnOnce(&Path) -> io::Result<()>,
{
    let err = |error| WriteError {
        path: dir.to_path_buf(),
        error,
    };
    create_parent(dir).map_err(err)?;
    let tmp = temp_sibling(dir);
    let result = (|| {
        std::fs::create_dir(&tmp)?;
        fill(&tmp)?;
        if dir.exists() {
            let old = temp_sibling(dir);
            std::fs::rename(dir, &old)?;
            std::fs::rename(&tmp, dir)?;
            let _ = std::fs::remove_dir_all(&old);
            Ok(())
        } else {
            std::fs::rename(&tmp, dir)
        }
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result.map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_write_leaves_no_file_and_keeps_the_old_one() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out.json");
        write_file(&p, |w| w.write_all(b"first")).unwrap();
        let e = write_file(&p, |w| {
            w.write_all(b"partial")?;
            Err(io::Error::other("boom"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("out.json") && e.to_string().contains("boom"));
        assert_eq!(std::fs::read(&p).unwrap(), b"first");
        assert_eq!(
            std::fs::read_dir(d.path()).unwrap().count(),
            1,
            "temp file left behind"
        );
        let q = d.path().join("never.json");
        assert!(write_file(&q, |_| Err(io::Error::other("x"))).is_err());
        assert!(!q.exists());
    }

    #[test]
    fn missing_parent_directories_are_created_and_errors_say_the_cause_once() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out/nested/run.json");
        write_file(&p, |w| w.write_all(b"x")).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"x");
        write_dir(&d.path().join("more/dists"), |t| {
            std::fs::write(t.join("a"), "1")
        })
        .unwrap();
        assert!(d.path().join("more/dists/a").is_file());
        // A parent that is a file cannot be created: one clear message, no error chain.
        std::fs::write(d.path().join("file"), "").unwrap();
        let e = write_file(&d.path().join("file/x.json"), |_| Ok(())).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("file/x.json"), "{msg}");
        assert!(std::error::Error::source(&e).is_none());
    }

    #[cfg(unix)]
    #[test]
    fn devices_are_written_in_place_not_replaced() {
        let null = Path::new("/dev/null");
        write_file(null, |w| w.write_all(b"discarded")).unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata(null)
            .unwrap()
            .file_type()
            .is_char_device());
    }

    #[test]
    fn directories_are_replaced_whole() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("dists");
        write_dir(&p, |t| std::fs::write(t.join("a.json"), "1")).unwrap();
        write_dir(&p, |t| std::fs::write(t.join("b.json"), "2")).unwrap();
        assert!(!p.join("a.json").exists() && p.join("b.json").exists());
        assert!(write_dir(&p, |_| Err(io::Error::other("x"))).is_err());
        assert!(p.join("b.json").exists());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }
}
