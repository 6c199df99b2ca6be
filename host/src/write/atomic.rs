//! All-or-nothing output files and directories, one or several at a time.
//!
//! A writer that fails halfway (bad input found late, disk full) must not leave a
//! truncated file that looks like a result, and a command that writes several outputs
//! must not leave some of them behind when another fails. Each output goes to a hidden
//! temporary name in its target's own directory (so the final rename stays on one file
//! system and is atomic); [`Outputs::commit`] renames them all into place only once every
//! one of them was written and flushed. Dropping an [`Outputs`] without committing removes
//! its temporary files.
//!
//! Every writer of this crate fits: `atomic::write_file(path, |w| write_chrome(w, ..))`.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::{WriteError, WriteErrorKind};

/// Writes `path` through `fill`, atomically: on any error nothing is left at `path` (an
/// existing file there is untouched) and the temporary file is removed.
///
/// An existing target that is not a regular file (`/dev/null`, a FIFO, a terminal) is
/// written in place: renaming over it would replace the device with a file.
pub fn write_file<T, E: Into<WriteError>>(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<T, E>,
) -> Result<T, WriteError> {
    let mut outs = Outputs::new();
    let t = outs.file(path, fill)?;
    outs.commit()?;
    Ok(t)
}

/// Creates directory `dir` through `fill` (which receives a temporary directory to fill),
/// atomically: the finished directory replaces any previous one at `dir` (the old one is
/// moved aside first and deleted after); on error nothing changes.
pub fn write_dir<T, E: Into<WriteError>>(
    dir: &Path,
    fill: impl FnOnce(&Path) -> Result<T, E>,
) -> Result<T, WriteError> {
    let mut outs = Outputs::new();
    let t = outs.dir(dir, fill)?;
    outs.commit()?;
    Ok(t)
}

/// Outputs written now and put in place together by [`Outputs::commit`].
///
/// ```
/// # let d = tempfile::tempdir().unwrap();
/// # let (a, b) = (d.path().join("a.txt"), d.path().join("b.txt"));
/// use ikp_host::atomic::Outputs;
/// use std::io::Write;
/// let mut outs = Outputs::new();
/// outs.file(&a, |w| w.write_all(b"first"))?;
/// let failed = outs.file(&b, |_| Err::<(), _>(std::io::Error::other("no")));
/// assert!(failed.is_err());
/// drop(outs); // not committed: neither file exists
/// assert!(!a.exists() && !b.exists());
/// # Ok::<(), ikp_host::WriteError>(())
/// ```
#[derive(Debug, Default)]
pub struct Outputs {
    staged: Vec<Staged>,
}

/// One output waiting for its rename.
#[derive(Debug)]
struct Staged {
    target: PathBuf,
    /// The temporary file or directory; `None` for a device written in place.
    tmp: Option<PathBuf>,
    dir: bool,
}

impl Outputs {
    /// No outputs yet.
    pub fn new() -> Outputs {
        Outputs::default()
    }

    /// Writes the file `path` through `fill` into a temporary sibling (creating missing
    /// directories above it), to be renamed into place by [`Outputs::commit`]. A device
    /// (`/dev/null`, a FIFO) is written in place at once. On error the temporary file is
    /// removed; the outputs staged before stay staged.
    pub fn file<T, E: Into<WriteError>>(
        &mut self,
        path: &Path,
        fill: impl FnOnce(&mut BufWriter<File>) -> Result<T, E>,
    ) -> Result<T, WriteError> {
        self.check_new(path)?;
        let meta = std::fs::metadata(path);
        if meta.as_ref().is_ok_and(|m| m.is_dir()) {
            // Found now rather than at the rename, after the outputs before it were put
            // in place.
            let e = io::Error::new(io::ErrorKind::IsADirectory, "it is a directory");
            return Err(WriteError::from(e).at(path));
        }
        let device = meta.is_ok_and(|m| !m.is_file());
        if !device {
            create_parent(path).map_err(|e| WriteError::from(e).at(path))?;
        }
        let tmp = (!device).then(|| temp_sibling(path));
        let written = (|| {
            let f = match &tmp {
                Some(tmp) => File::create_new(tmp)?,
                None => std::fs::OpenOptions::new().write(true).open(path)?,
            };
            let mut w = BufWriter::with_capacity(1 << 20, f);
            let t = fill(&mut w).map_err(Into::into)?;
            w.flush()?;
            drop(w.into_inner().map_err(|e| e.into_error())?);
            Ok::<T, WriteError>(t)
        })();
        self.keep(path, tmp, false, written)
    }

    /// Fills a temporary directory through `fill`, to replace `dir` whole at
    /// [`Outputs::commit`]. On error the temporary directory is removed.
    pub fn dir<T, E: Into<WriteError>>(
        &mut self,
        dir: &Path,
        fill: impl FnOnce(&Path) -> Result<T, E>,
    ) -> Result<T, WriteError> {
        self.check_new(dir)?;
        create_parent(dir).map_err(|e| WriteError::from(e).at(dir))?;
        let tmp = temp_sibling(dir);
        let written = (|| {
            std::fs::create_dir(&tmp)?;
            fill(&tmp).map_err(Into::into)
        })();
        self.keep(dir, Some(tmp), true, written)
    }

    /// Stages `tmp` (`None`: `target` itself, a device) for `target` if it was `written`,
    /// else removes it.
    fn keep<T>(
        &mut self,
        target: &Path,
        tmp: Option<PathBuf>,
        dir: bool,
        written: Result<T, WriteError>,
    ) -> Result<T, WriteError> {
        let staged = Staged {
            target: target.to_path_buf(),
            tmp,
            dir,
        };
        match written {
            Ok(t) => {
                self.staged.push(staged);
                Ok(t)
            }
            Err(e) => {
                staged.discard();
                Err(e.at(target))
            }
        }
    }

    /// The outputs staged so far, in order.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.staged.iter().map(|s| s.target.as_path())
    }

    /// Renames every staged output into place, in the order they were staged. The renames
    /// come after every output was written, so a failure while writing never leaves part
    /// of a batch behind; a rename that fails (rare: the directory went away) stops there
    /// and removes the outputs not yet renamed.
    pub fn commit(mut self) -> Result<(), WriteError> {
        let staged = std::mem::take(&mut self.staged);
        let mut rest = staged.into_iter();
        while let Some(s) = rest.next() {
            if let Err(e) = s.rename() {
                for r in rest {
                    r.discard();
                }
                return Err(WriteError::from(e).at(&s.target));
            }
        }
        Ok(())
    }

    /// Refuses a second output at the same path in one batch (the later rename would
    /// silently replace the earlier output).
    fn check_new(&self, path: &Path) -> Result<(), WriteError> {
        if self.staged.iter().any(|s| s.target == path) {
            return Err(WriteError::from(WriteErrorKind::SamePath).at(path));
        }
        Ok(())
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        for s in self.staged.drain(..) {
            s.discard();
        }
    }
}

impl Staged {
    fn rename(&self) -> io::Result<()> {
        let Some(tmp) = &self.tmp else {
            return Ok(()); // written in place
        };
        let result = if self.dir && self.target.exists() {
            // A directory cannot be renamed over a non-empty one: move the old one aside,
            // and back if the new one cannot take its place.
            let old = temp_sibling(&self.target);
            std::fs::rename(&self.target, &old).and_then(|()| {
                let renamed = std::fs::rename(tmp, &self.target);
                let _ = match renamed {
                    Ok(()) => std::fs::remove_dir_all(&old),
                    Err(_) => std::fs::rename(&old, &self.target),
                };
                renamed
            })
        } else {
            std::fs::rename(tmp, &self.target)
        };
        if result.is_err() {
            self.discard();
        }
        result
    }

    fn discard(&self) {
        if let Some(t) = &self.tmp {
            let _ = if self.dir {
                std::fs::remove_dir_all(t)
            } else {
                std::fs::remove_file(t)
            };
        }
    }
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
            Err::<(), _>(io::Error::other("boom"))
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
        assert!(write_file(&q, |_| Err::<(), _>(io::Error::other("x"))).is_err());
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
        let e = write_file(&d.path().join("file/x.json"), |_| Ok::<(), io::Error>(())).unwrap_err();
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
        assert!(write_dir(&p, |_| Err::<(), _>(io::Error::other("x"))).is_err());
        assert!(p.join("b.json").exists());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_batch_is_committed_whole_or_not_at_all() {
        let d = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            d.path().join("a.json"),
            d.path().join("b.csv"),
            d.path().join("dists"),
        );
        std::fs::write(&a, "old a").unwrap();
        // The third output fails after two were written: nothing changes on disk.
        let mut outs = Outputs::new();
        outs.file(&a, |w| w.write_all(b"new a")).unwrap();
        outs.dir(&c, |t| std::fs::write(t.join("x"), "1")).unwrap();
        assert!(outs
            .file(&b, |w| {
                w.write_all(b"half")?;
                Err::<(), _>(io::Error::other("late failure"))
            })
            .is_err());
        drop(outs);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a");
        assert!(!b.exists() && !c.exists());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        // All written: all renamed, in one commit.
        let mut outs = Outputs::new();
        outs.file(&a, |w| w.write_all(b"new a")).unwrap();
        outs.file(&b, |w| w.write_all(b"b")).unwrap();
        outs.dir(&c, |t| std::fs::write(t.join("x"), "1")).unwrap();
        assert!(!b.exists(), "nothing is in place before the commit");
        assert_eq!(outs.paths().count(), 3);
        outs.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "new a");
        assert!(b.is_file() && c.join("x").is_file());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 3);
    }

    #[test]
    fn a_directory_in_the_way_of_a_file_fails_before_anything_is_renamed() {
        let d = tempfile::tempdir().unwrap();
        let (a, dir) = (d.path().join("a"), d.path().join("dir"));
        std::fs::create_dir(&dir).unwrap();
        let mut outs = Outputs::new();
        outs.file(&a, |w| w.write_all(b"1")).unwrap();
        let e = outs.file(&dir, |w| w.write_all(b"2")).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        drop(outs);
        assert!(!a.exists());
    }

    #[test]
    fn one_path_twice_in_a_batch_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        let mut outs = Outputs::new();
        outs.file(&a, |w| w.write_all(b"1")).unwrap();
        let e = outs.file(&a, |w| w.write_all(b"2")).unwrap_err();
        assert!(matches!(e.kind, WriteErrorKind::SamePath), "{e}");
        outs.commit().unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"1");
    }
}
