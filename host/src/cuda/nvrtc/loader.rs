//! Opening the first NVRTC library of the [search](super::search) that loads, once per
//! process, and reporting which file it was.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::api::Api;
use super::error::NvrtcError;
use super::search::{search, FoundBy, Search, SearchEnv, NAMES};

/// The NVRTC library this process compiles with: which file, which version, and which
/// rule of the search found it. Results files record it, so a measurement says which
/// compiler produced its kernels.
pub struct NvrtcLibrary {
    path: PathBuf,
    version: (u32, u32),
    found_by: FoundBy,
    pub(crate) api: Api,
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
}

impl fmt::Debug for NvrtcLibrary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NvrtcLibrary")
            .field("path", &self.path)
            .field("version", &self.version)
            .field("found_by", &self.found_by)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for NvrtcLibrary {
    /// `NVRTC 13.5 at /path/libnvrtc.so.13 (found on LD_LIBRARY_PATH)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "NVRTC {}.{} at {} ({})",
            self.version.0,
            self.version.1,
            self.path.display(),
            self.found_by
        )
    }
}

/// Why no library was loaded; kept (unlike [`NvrtcError`], which may hold an
/// `io::Error`) so every later call reports the same failure.
#[derive(Clone, Debug)]
pub(crate) enum LoadFailure {
    NotFound {
        places: Vec<String>,
        failed: Vec<String>,
    },
    BadOverride {
        value: PathBuf,
        tried: Vec<String>,
    },
}

impl LoadFailure {
    pub(crate) fn to_error(&self) -> NvrtcError {
        match self {
            LoadFailure::NotFound { places, failed } => NvrtcError::NotFound {
                places: places.clone(),
                names: NAMES.iter().map(|n| n.to_string()).collect(),
                failed: failed.clone(),
            },
            LoadFailure::BadOverride { value, tried } => NvrtcError::BadOverride {
                value: value.clone(),
                tried: tried.clone(),
            },
        }
    }
}

/// Tries the candidates of `search` in order and keeps the first that loads, resolves
/// every function and answers `nvrtcVersion`.
pub(crate) fn load(search: &Search) -> Result<NvrtcLibrary, LoadFailure> {
    let mut failed = Vec::new();
    for c in &search.candidates {
        let opened = Api::open(&c.path).and_then(|api| {
            let version = api.version().map_err(|e| e.to_string())?;
            Ok((api, version))
        });
        match opened {
            Ok((api, version)) => {
                let path = if c.found_by == FoundBy::DynamicLoader {
                    let name = c.path.to_string_lossy();
                    crate::cuda::proc_maps::mapped_library(&name).unwrap_or_else(|| c.path.clone())
                } else {
                    c.path.clone()
                };
                return Ok(NvrtcLibrary {
                    path,
                    version,
                    found_by: c.found_by,
                    api,
                });
            }
            // A bare name the loader does not know is the expected case, not a failure
            // worth reporting.
            Err(_) if c.found_by == FoundBy::DynamicLoader => {}
            Err(e) => failed.push(format!("{}: {e}", c.path.display())),
        }
    }
    Err(match &search.override_value {
        Some(value) => LoadFailure::BadOverride {
            value: value.clone(),
            tried: failed,
        },
        None => LoadFailure::NotFound {
            places: search.places.clone(),
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
    static LOADED: OnceLock<Result<NvrtcLibrary, LoadFailure>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let driver_major = crate::cuda::libcuda::version()
                .and_then(Result::ok)
                .map(|(major, _)| major);
            load(&search(&SearchEnv::from_process(), driver_major))
        })
        .as_ref()
        .map_err(LoadFailure::to_error)
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
        let err = load(&s).unwrap_err().to_error();
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
        let msg = failure.to_error().to_string();
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
}
