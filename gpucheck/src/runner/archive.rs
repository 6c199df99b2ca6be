//! Packs the run's files into [`super::ARCHIVE`], held under [`LIMIT`] whatever the checks
//! wrote, so that it always comes back from the GPU machine (which hands back no file over
//! 16 MiB: an H200 run whose stream examples wrote their full traces lost its archive, and
//! with it every log).
//!
//! Before packing, [`fit`] trims the folder to [`BUDGET`] bytes of content, counting each
//! file's tar header and padding, so the gzip'd archive is under [`LIMIT`] even where
//! nothing compresses. What is kept first:
//!
//! 1. the logs (`logs/`), smallest first, each cut to its first and last [`LOG_KEEP`] / 2
//!    bytes where longer (the head says what started, the tail how it ended);
//! 2. every other file of at most [`SMALL`] bytes (per-check data, summaries), smallest
//!    first;
//! 3. the bulky files (the examples' raw buffers, stream files and traces), smallest first,
//!    whole, while they fit.
//!
//! A file that does not fit is left out; a log that does not fit whole is cut to what is
//! left. Every file left out or cut is listed in [`MANIFEST`] (path, bytes written, bytes
//! kept), which is itself kept.

use std::fs;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The largest archive the GPU machine hands back, bytes.
pub const LIMIT: u64 = 16 * 1024 * 1024;
/// Content bytes kept (tar headers and padding included): a MiB under [`LIMIT`], for the
/// archive's end blocks and gzip's framing (at most a few bytes per 32 KiB block where
/// nothing compresses).
pub const BUDGET: u64 = LIMIT - 1024 * 1024;
/// A log longer than this is cut to its first and last half of it.
pub const LOG_KEEP: u64 = 1024 * 1024;
/// Files up to this size are per-check data, kept before any bulky file.
pub const SMALL: u64 = 1024 * 1024;
/// The list of files left out or cut, at the top of the archived folder.
pub const MANIFEST: &str = "trimmed.txt";
/// Bytes reserved for the manifest.
const MANIFEST_RESERVE: u64 = 64 * 1024;
/// What tar adds to a file: its 512-byte header, and up to 511 bytes of padding.
const TAR_OVERHEAD: u64 = 1024;

/// What [`fit`] did to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trimmed {
    /// Path under the folder.
    pub path: PathBuf,
    /// Its size as written.
    pub bytes: u64,
    /// Bytes kept (0: left out).
    pub kept: u64,
}

/// Trims the folder `dir` to [`BUDGET`] (see the module's doc); returns what it left out
/// or cut, also written to `dir/`[`MANIFEST`] when not empty.
pub fn fit(dir: &Path) -> io::Result<Vec<Trimmed>> {
    let mut files = Vec::new();
    walk(dir, dir, &mut files)?;
    // (class, size): logs, then small files, then bulky ones, smallest first in each.
    let class = |p: &Path, len: u64| {
        if p.starts_with("logs") {
            0
        } else if len <= SMALL {
            1
        } else {
            2
        }
    };
    files.sort_by_key(|(p, len)| (class(p, *len), *len, p.clone()));
    let mut left = BUDGET - MANIFEST_RESERVE;
    let mut trimmed = Vec::new();
    for (rel, len) in files {
        let path = dir.join(&rel);
        let is_log = class(&rel, len) == 0;
        let want = if is_log { len.min(LOG_KEEP) } else { len };
        let kept = if want + TAR_OVERHEAD <= left {
            Some(want)
        } else if is_log && left > 2 * TAR_OVERHEAD {
            Some(left - TAR_OVERHEAD)
        } else {
            None
        };
        match kept {
            None => fs::remove_file(&path)?,
            Some(k) => {
                left -= k + TAR_OVERHEAD;
                if k < len {
                    cut(&path, len, k)?;
                }
            }
        }
        let kept = kept.unwrap_or(0);
        if kept < len {
            trimmed.push(Trimmed {
                path: rel,
                bytes: len,
                kept,
            });
        }
    }
    if !trimmed.is_empty() {
        let mut m = String::from(
            "# files the run wrote that the archive keeps in part (a log's head and tail) or \
             not at all, to stay under 16 MiB\n# path\tbytes written\tbytes kept\n",
        );
        for t in &trimmed {
            m.push_str(&format!("{}\t{}\t{}\n", t.path.display(), t.bytes, t.kept));
        }
        m.truncate((MANIFEST_RESERVE - TAR_OVERHEAD) as usize);
        fs::write(dir.join(MANIFEST), m)?;
    }
    Ok(trimmed)
}

/// Every regular file under `dir`, as (path relative to `root`, size).
fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, u64)>) -> io::Result<()> {
    for e in fs::read_dir(dir)? {
        let e = e?;
        let t = e.file_type()?;
        if t.is_dir() {
            walk(root, &e.path(), out)?;
        } else {
            let rel = e.path().strip_prefix(root).map(Path::to_path_buf);
            let rel = rel.map_err(io::Error::other)?;
            out.push((rel, if t.is_file() { e.metadata()?.len() } else { 0 }));
        }
    }
    Ok(())
}

/// Cuts the file `path` of `len` bytes to `keep` bytes: its first and last halves of it,
/// with a line between them saying how much was cut.
fn cut(path: &Path, len: u64, keep: u64) -> io::Result<()> {
    let note = format!("\n[... {} bytes cut for the archive ...]\n", len - keep);
    let half = keep.saturating_sub(note.len() as u64) / 2;
    let mut f = fs::File::open(path)?;
    let mut head = vec![0; half as usize];
    f.read_exact(&mut head)?;
    let mut tail = vec![0; half as usize];
    f.seek(SeekFrom::Start(len - half))?;
    f.read_exact(&mut tail)?;
    drop(f);
    let mut w = fs::File::create(path)?;
    w.write_all(&head)?;
    w.write_all(note.as_bytes())?;
    w.write_all(&tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` bytes that gzip cannot shrink (xorshift), so an archive's size is its content's.
    fn noise(n: u64, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn logs_come_first_and_a_long_log_keeps_its_head_and_tail() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("logs")).unwrap();
        let mut log = b"START\n".to_vec();
        log.extend(noise(3 * LOG_KEEP, 1));
        log.extend(b"\nTHE END\n");
        fs::write(d.path().join("logs/long.log"), &log).unwrap();
        fs::write(d.path().join("logs/short.log"), b"ok\n").unwrap();
        fs::write(d.path().join("figures.json"), b"{}").unwrap();
        fs::write(d.path().join("huge.pftrace"), noise(BUDGET, 2)).unwrap();
        let t = fit(d.path()).unwrap();
        let long = fs::read(d.path().join("logs/long.log")).unwrap();
        assert!(long.starts_with(b"START\n") && long.ends_with(b"\nTHE END\n"));
        assert!(long.len() as u64 <= LOG_KEEP);
        assert_eq!(fs::read(d.path().join("logs/short.log")).unwrap(), b"ok\n");
        assert!(d.path().join("figures.json").exists());
        assert!(!d.path().join("huge.pftrace").exists());
        let manifest = fs::read_to_string(d.path().join(MANIFEST)).unwrap();
        assert!(manifest.contains("huge.pftrace") && manifest.contains("logs/long.log"));
        assert_eq!(t.len(), 2, "{t:?}");
    }

    #[test]
    fn a_folder_within_budget_is_left_as_it_is() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("examples")).unwrap();
        fs::write(d.path().join("examples/a.ikp"), noise(3 * SMALL, 3)).unwrap();
        assert_eq!(fit(d.path()).unwrap(), vec![]);
        assert_eq!(
            fs::metadata(d.path().join("examples/a.ikp")).unwrap().len(),
            3 * SMALL
        );
        assert!(!d.path().join(MANIFEST).exists());
    }
}
