//! Opening the first NVRTC library of the [search](super::search) that loads, once per
//! process, with the builtins library beside it ("NVRTC's builtins library" in the
//! [module documentation](super)), and reporting which files they were.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libloading::os::unix::{Library as UnixLibrary, RTLD_GLOBAL, RTLD_NOW};

use super::api::Api;
use super::error::NvrtcError;
use super::search::{search, FoundBy, Search, SearchEnv, NAMES};
use crate::cuda::proc_maps::mapped_library;

/// The NVRTC library this process compiles with: which file, which version, which rule
/// of the search found it, and which builtins library was loaded beside it. Results files
/// record it, so a measurement says which compiler produced its kernels.
pub struct NvrtcLibrary {
    path: PathBuf,
    version: (u32, u32),
    found_by: FoundBy,
    builtins: Option<PathBuf>,
    pub(crate) api: Api,
    // After `api`: dropped (only ever in tests; the process's library is never dropped)
    // after the NVRTC that may use it.
    _builtins_lib: Option<UnixLibrary>,
}

impl NvrtcLibrary {
    /// The file loaded. For a library the dynamic loader found by name, the file it
    /// mapped (from `/proc/self/maps`), or the bare name when that cannot be read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// NVRTC's version `(major, minor)`, from `nvrtcVersion`.
    pub fn version(&self) -> (u32, u32) {
        self.version
    }

    /// The rule of the search that found it.
    pub fn found_by(&self) -> FoundBy {
        self.found_by
    }

    /// The builtins library loaded from this library's directory before the first
    /// compile (see the [module documentation](super)), or `None` when that directory
    /// holds none: NVRTC then looks for it by name itself, and a compile fails with
    /// `NVRTC_ERROR_BUILTIN_OPERATION_FAILURE` if the dynamic loader cannot find it.
    pub fn builtins(&self) -> Option<&Path> {
        self.builtins.as_deref()
    }

    /// The file name NVRTC asks the dynamic loader for: `libnvrtc-builtins.so.13.0`.
    pub fn builtins_name(&self) -> String {
        builtins_name(self.version)
    }
}

impl fmt::Debug for NvrtcLibrary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NvrtcLibrary")
            .field("path", &self.path)
            .field("version", &self.version)
            .field("found_by", &self.found_by)
            .field("builtins", &self.builtins)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for NvrtcLibrary {
    /// `NVRTC 13.5 at /path/libnvrtc.so.13 (found on LD_LIBRARY_PATH; builtins
    /// /path/libnvrtc-builtins.so.13.5)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ((major, minor), path, by) = (self.version, self.path.display(), self.found_by);
        write!(f, "NVRTC {major}.{minor} at {path} ({by}; ")?;
        match &self.builtins {
            Some(b) => write!(f, "builtins {})", b.display()),
            None => {
                let name = self.builtins_name();
                write!(f, "no {name} beside it: left to the dynamic loader)")
            }
        }
    }
}

/// A copy of a load error of [`load`] (one of `NotFound`, `BadOverride`, `Builtins`),
/// so that every later call reports the same failure ([`NvrtcError`] may hold an
/// `io::Error` and is not `Clone`).
fn again(e: &NvrtcError) -> NvrtcError {
    match e {
        NvrtcError::NotFound {
            places,
            names,
            failed,
        } => NvrtcError::NotFound {
            places: places.clone(),
            names: names.clone(),
            failed: failed.clone(),
        },
        NvrtcError::BadOverride { value, tried } => NvrtcError::BadOverride {
            value: value.clone(),
            tried: tried.clone(),
        },
        NvrtcError::Builtins {
            library,
            builtins,
            reason,
        } => NvrtcError::Builtins {
            library: library.clone(),
            builtins: builtins.clone(),
            reason: reason.clone(),
        },
        other => unreachable!("not a load error: {other}"),
    }
}

/// `libnvrtc-builtins.so.<major>.<minor>`, the name NVRTC `major.minor` asks the
/// dynamic loader for.
fn builtins_name((major, minor): (u32, u32)) -> String {
    format!("libnvrtc-builtins.so.{major}.{minor}")
}

/// The builtins libraries that may serve the NVRTC library `library` of `version`, in
/// the order to try them: `libnvrtc-builtins.so.<major>.<minor>` in the library's
/// directory (as named, then the directory of the file a link resolves to), then the
/// other `libnvrtc-builtins.so*` there (`.so.13.0.88`, the unversioned `.so`), sorted.
/// Files named for another version are left out: NVRTC asks for its own version's
/// soname, which they cannot answer. A relative `library` (a bare name) gives none.
fn builtins_candidates(library: &Path, version: (u32, u32)) -> Vec<PathBuf> {
    // A bare name (the loader's mapping unreadable) has no directory to look in.
    if !library.is_absolute() {
        return Vec::new();
    }
    let real = library.canonicalize().ok();
    let mut dirs: Vec<&Path> = [library.parent(), real.as_deref().and_then(Path::parent)]
        .into_iter()
        .flatten()
        .collect();
    dirs.dedup();
    let exact = builtins_name(version);
    let same_version = |rest: &str| {
        let v = format!("{}.{}", version.0, version.1);
        rest.is_empty() || rest == format!(".{v}") || rest.starts_with(&format!(".{v}."))
    };
    let mut found: Vec<PathBuf> = dirs
        .iter()
        .map(|d| d.join(&exact))
        .filter(|p| p.is_file())
        .collect();
    for dir in &dirs {
        let mut others: Vec<PathBuf> = (std::fs::read_dir(dir).into_iter())
            .flatten()
            .flatten()
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name != exact
                    && (name.strip_prefix("libnvrtc-builtins.so")).is_some_and(same_version)
            })
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        others.sort();
        found.extend(others);
    }
    found
}

/// Opens the first of [`builtins_candidates`] with `RTLD_NOW | RTLD_GLOBAL` (see the
/// [module documentation](super)): `Ok(None)` when there is none, an error naming the
/// file when it is there but does not load.
fn load_builtins(
    library: &Path,
    version: (u32, u32),
) -> Result<Option<(PathBuf, UnixLibrary)>, NvrtcError> {
    let Some(path) = builtins_candidates(library, version).into_iter().next() else {
        return Ok(None);
    };
    // SAFETY: loading a shared library runs its initialisers; NVRTC's builtins library
    // has none with preconditions, and NVRTC would load the same file itself.
    match unsafe { UnixLibrary::open(Some(&path), RTLD_NOW | RTLD_GLOBAL) } {
        Ok(lib) => Ok(Some((path, lib))),
        Err(e) => Err(NvrtcError::Builtins {
            library: library.to_owned(),
            builtins: path,
            reason: e.to_string(),
        }),
    }
}

/// Tries the candidates of `search` in order and keeps the first that loads, resolves
/// every function and answers `nvrtcVersion`, then loads its builtins library (a file
/// there that does not load is an error, not a reason to try the next candidate: the
/// search chose this NVRTC).
pub(crate) fn load(search: &Search) -> Result<NvrtcLibrary, NvrtcError> {
    let mut failed = Vec::new();
    for c in &search.candidates {
        let opened = Api::open(&c.path).and_then(|api| {
            let version = api.version().map_err(|e| e.to_string())?;
            Ok((api, version))
        });
        match opened {
            Ok((api, version)) => {
                let by_name = c.found_by == FoundBy::DynamicLoader;
                let mapped = by_name.then(|| mapped_library(&c.path.to_string_lossy()));
                let path = mapped.flatten().unwrap_or_else(|| c.path.clone());
                let (builtins, builtins_lib) = load_builtins(&path, version)?.unzip();
                return Ok(NvrtcLibrary {
                    path,
                    version,
                    found_by: c.found_by,
                    builtins,
                    api,
                    _builtins_lib: builtins_lib,
                });
            }
            // A bare name the loader does not know is the expected case, not a failure
            // worth reporting.
            Err(_) if c.found_by == FoundBy::DynamicLoader => {}
            Err(e) => failed.push(format!("{}: {e}", c.path.display())),
        }
    }
    Err(match &search.override_value {
        Some(value) => NvrtcError::BadOverride {
            value: value.clone(),
            tried: failed,
        },
        None => NvrtcError::NotFound {
            places: search.places.clone(),
            names: NAMES.iter().map(|n| n.to_string()).collect(),
            failed,
        },
    })
}

/// The NVRTC library of this process, loaded on first use.
///
/// The search runs once: the environment it reads is the one at the first call, and the
/// outcome (success or failure) is kept, because a process cannot unload one NVRTC and
/// load another safely while programs may be alive.
pub fn library() -> Result<&'static NvrtcLibrary, NvrtcError> {
    static LOADED: OnceLock<Result<NvrtcLibrary, NvrtcError>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let driver_major = crate::cuda::libcuda::version()
                .and_then(Result::ok)
                .map(|(major, _)| major);
            load(&search(&SearchEnv::from_process(), driver_major))
        })
        .as_ref()
        .map_err(again)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn env(root: &Path, vars: &[(&'static str, String)]) -> SearchEnv {
        SearchEnv::new(root, vars.iter().map(|(k, v)| (*k, OsString::from(v))))
    }

    #[test]
    fn an_override_that_does_not_load_is_an_error_naming_it_without_fallback() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("opt/n");
        std::fs::create_dir_all(&dir).unwrap();
        // Not a shared object: dlopen refuses it.
        std::fs::write(dir.join("libnvrtc.so.12"), b"not an ELF file").unwrap();
        let ld = root.path().join("ld");
        std::fs::create_dir_all(&ld).unwrap();
        std::fs::write(ld.join("libnvrtc.so.12"), b"").unwrap();
        let s = search(
            &env(
                root.path(),
                &[
                    ("IKP_NVRTC", "/opt/n".into()),
                    ("LD_LIBRARY_PATH", "/ld".into()),
                ],
            ),
            None,
        );
        let err = load(&s).unwrap_err();
        match &err {
            NvrtcError::BadOverride { value, tried } => {
                assert_eq!(value, Path::new("/opt/n"));
                assert_eq!(tried.len(), 1, "{tried:?}");
                assert!(tried[0].contains("opt/n/libnvrtc.so.12: "), "{tried:?}");
            }
            other => panic!("expected BadOverride, got {other:?}"),
        }
        let msg = err.to_string();
        assert!(
            msg.starts_with("IKP_NVRTC=/opt/n names no loadable NVRTC library"),
            "{msg}"
        );
        assert!(
            !msg.contains("/ld"),
            "no fallback to LD_LIBRARY_PATH: {msg}"
        );
    }

    #[test]
    fn nothing_loadable_lists_the_places_and_the_files_that_failed() {
        let root = tempfile::tempdir().unwrap();
        let cuda = root.path().join("usr/local/cuda/lib64");
        std::fs::create_dir_all(&cuda).unwrap();
        std::fs::write(cuda.join("libnvrtc.so.13"), b"").unwrap();
        let mut s = search(
            &env(root.path(), &[("LD_LIBRARY_PATH", "/ld".into())]),
            None,
        );
        // The bare names go to the real dynamic loader, which may well find a real NVRTC
        // (LD_LIBRARY_PATH of the test run); this test is about the files of the tree.
        s.candidates
            .retain(|c| c.found_by != FoundBy::DynamicLoader);
        assert_eq!(s.candidates.len(), 1, "{:?}", s.candidates);
        let failure = load(&s).expect_err("an empty file loaded as NVRTC");
        let msg = failure.to_string();
        let r = root.path().display();
        for part in [
            format!("{r}/ld, "),
            format!("{r}/usr/local/cuda/lib64"),
            "libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so".to_owned(),
            format!("found but could not load: {r}/usr/local/cuda/lib64/libnvrtc.so.13: "),
            "set IKP_NVRTC".to_owned(),
        ] {
            assert!(msg.contains(&part), "{part:?} missing from {msg}");
        }
    }

    /// Creates `files` under `root` (`a -> b` makes a symlink), empty.
    fn tree(root: &Path, files: &[&str]) {
        for f in files {
            let (path, target) = match f.split_once(" -> ") {
                Some((p, t)) => (p, Some(t)),
                None => (*f, None),
            };
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            match target {
                Some(t) => std::os::unix::fs::symlink(t, &path).unwrap(),
                None => std::fs::write(&path, b"").unwrap(),
            }
        }
    }

    fn names(root: &Path, paths: &[PathBuf]) -> Vec<String> {
        paths
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn builtins_of_the_same_version_come_from_the_library_directory_exact_name_first() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        tree(
            r,
            &[
                "lib64/libnvrtc.so.13.0.88",
                "lib64/libnvrtc.so.13 -> libnvrtc.so.13.0.88",
                "lib64/libnvrtc-builtins.so.13.0.88",
                "lib64/libnvrtc-builtins.so.13.0 -> libnvrtc-builtins.so.13.0.88",
                "lib64/libnvrtc-builtins.so -> libnvrtc-builtins.so.13.0",
                // Another version and the `.alt` variant: never NVRTC 13.0's builtins.
                "lib64/libnvrtc-builtins.so.12.9",
                "lib64/libnvrtc-builtins.so.13.5",
                "lib64/libnvrtc-builtins.alt.so.13.0",
                "lib64/libnvrtc-builtins.so.13.0.dangling -> nowhere",
            ],
        );
        let lib = r.join("lib64/libnvrtc.so.13");
        assert_eq!(
            names(r, &builtins_candidates(&lib, (13, 0))),
            [
                "lib64/libnvrtc-builtins.so.13.0",
                "lib64/libnvrtc-builtins.so",
                "lib64/libnvrtc-builtins.so.13.0.88",
            ]
        );
        // Only the versioned file of another version: nothing for 13.1.
        std::fs::remove_file(r.join("lib64/libnvrtc-builtins.so")).unwrap();
        assert!(builtins_candidates(&lib, (13, 1)).is_empty());
        // A bare name has no directory.
        assert!(builtins_candidates(Path::new("libnvrtc.so.13"), (13, 0)).is_empty());
    }

    #[test]
    fn builtins_are_looked_for_beside_the_file_a_link_resolves_to_too() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        tree(
            r,
            &[
                "cuda/lib64/libnvrtc.so.13.0.88",
                "cuda/lib64/libnvrtc-builtins.so.13.0.88",
                "sys/libnvrtc.so.13 -> ../cuda/lib64/libnvrtc.so.13.0.88",
            ],
        );
        assert_eq!(
            names(
                r,
                &builtins_candidates(&r.join("sys/libnvrtc.so.13"), (13, 0))
            ),
            ["cuda/lib64/libnvrtc-builtins.so.13.0.88"]
        );
        // The link's own directory wins when it has the file.
        tree(r, &["sys/libnvrtc-builtins.so.13.0"]);
        assert_eq!(
            names(
                r,
                &builtins_candidates(&r.join("sys/libnvrtc.so.13"), (13, 0))
            )[0],
            "sys/libnvrtc-builtins.so.13.0"
        );
    }

    #[test]
    fn builtins_that_do_not_load_are_an_error_naming_the_file_and_none_is_no_error() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path();
        std::fs::write(dir.join("libnvrtc.so.13"), b"").unwrap();
        let lib = dir.join("libnvrtc.so.13");
        assert!(load_builtins(&lib, (13, 0)).unwrap().is_none());
        // Not a shared object: dlopen refuses it.
        std::fs::write(dir.join("libnvrtc-builtins.so.13.0"), b"not an ELF file").unwrap();
        let Err(failure) = load_builtins(&lib, (13, 0)) else {
            panic!("a file that is not a library loaded as NVRTC's builtins");
        };
        let err = failure;
        match &err {
            NvrtcError::Builtins {
                library, builtins, ..
            } => {
                assert_eq!(library, &lib);
                assert_eq!(builtins, &dir.join("libnvrtc-builtins.so.13.0"));
            }
            other => panic!("expected Builtins, got {other:?}"),
        }
        let msg = err.to_string();
        let d = dir.display();
        for part in [
            format!("NVRTC at {d}/libnvrtc.so.13 cannot use its builtins library {d}/libnvrtc-builtins.so.13.0: it does not load ("),
            "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE".to_owned(),
            "set IKP_NVRTC".to_owned(),
        ] {
            assert!(msg.contains(&part), "{part:?} missing from {msg}");
        }
    }
}
