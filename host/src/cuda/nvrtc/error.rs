//! What can go wrong finding NVRTC and compiling with it, and NVRTC's own status codes.

use std::fmt;
use std::path::PathBuf;

use super::search::{ENV_VAR, NAMES};
use crate::arch::Arch;

/// A status returned by an NVRTC call (`nvrtcResult` in `nvrtc.h`).
///
/// A newtype over the C enum's `int`, not a Rust enum: a newer NVRTC may return codes
/// this crate has never seen (CUDA 13 added `NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED`
/// and `NVRTC_ERROR_BUSY`), and an unknown value in a Rust enum would be undefined
/// behaviour. [`fmt::Display`] and [`fmt::Debug`] print the status name.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct NvrtcStatus(pub i32);

impl NvrtcStatus {
    /// `NVRTC_SUCCESS`.
    pub const SUCCESS: NvrtcStatus = NvrtcStatus(0);
    /// `NVRTC_ERROR_INVALID_INPUT`.
    pub const INVALID_INPUT: NvrtcStatus = NvrtcStatus(3);
    /// `NVRTC_ERROR_COMPILATION`.
    pub const COMPILATION: NvrtcStatus = NvrtcStatus(6);
    /// `NVRTC_ERROR_BUILTIN_OPERATION_FAILURE`: what every compile returns when NVRTC
    /// cannot open its builtins library.
    pub const BUILTIN_OPERATION_FAILURE: NvrtcStatus = NvrtcStatus(7);

    /// The name `nvrtc.h` gives this status (as of CUDA 13.5), or `None` for a code
    /// newer than that.
    pub fn name(self) -> Option<&'static str> {
        const NAMES: &str = "NVRTC_SUCCESS NVRTC_ERROR_OUT_OF_MEMORY \
            NVRTC_ERROR_PROGRAM_CREATION_FAILURE NVRTC_ERROR_INVALID_INPUT \
            NVRTC_ERROR_INVALID_PROGRAM NVRTC_ERROR_INVALID_OPTION NVRTC_ERROR_COMPILATION \
            NVRTC_ERROR_BUILTIN_OPERATION_FAILURE NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION \
            NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID \
            NVRTC_ERROR_INTERNAL_ERROR NVRTC_ERROR_TIME_FILE_WRITE_FAILED \
            NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED \
            NVRTC_ERROR_PCH_CREATE NVRTC_ERROR_CANCELLED NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED \
            NVRTC_ERROR_BUSY";
        let i = usize::try_from(self.0).ok()?;
        NAMES.split(' ').nth(i)
    }

    /// `Ok` for `NVRTC_SUCCESS`, else the status as an error of `call`.
    pub(crate) fn check(self, call: &'static str) -> Result<(), NvrtcError> {
        if self == NvrtcStatus::SUCCESS {
            Ok(())
        } else {
            Err(NvrtcError::Call { call, code: self })
        }
    }
}

impl fmt::Display for NvrtcStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "NVRTC status {}", self.0),
        }
    }
}

impl fmt::Debug for NvrtcStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// Why NVRTC could not produce a kernel image.
#[derive(Debug, thiserror::Error)]
pub enum NvrtcError {
    /// No NVRTC library could be loaded from any of the places searched (see the
    /// [module documentation](super) for the search).
    #[error(
        "NVRTC library not found: looked for {} in {}, then by name through the dynamic \
         loader{}. Install the CUDA NVRTC runtime (CUDA 12 or 13, e.g. `pip install \
         nvidia-cuda-nvrtc`) or set {ENV_VAR} to the library file or its directory",
        names.join(", "),
        places.join(", "),
        if failed.is_empty() { String::new() } else {
            format!(" (found but could not load: {})", failed.join("; "))
        }
    )]
    NotFound {
        /// The directories (or directory patterns that matched nothing) searched, in
        /// order.
        places: Vec<String>,
        /// The file names looked for in each, newest CUDA first.
        names: Vec<String>,
        /// Files that exist but did not load, with the loader's reason.
        failed: Vec<String>,
    },
    /// `IKP_NVRTC` is set but names nothing that loads. There is no fallback to the
    /// other places: the variable is an explicit choice, and silently using another
    /// NVRTC would compile with a compiler the user did not ask for.
    #[error(
        "{ENV_VAR}={} names no loadable NVRTC library ({}); set it to the libnvrtc file or \
         the directory holding it, or unset it to search the usual places",
        value.display(),
        if tried.is_empty() { format!("none of {} is there", NAMES.join(", ")) } else {
            tried.join("; ")
        }
    )]
    BadOverride {
        /// The value of `IKP_NVRTC`.
        value: PathBuf,
        /// Each file tried there, with why it did not load.
        tried: Vec<String>,
    },
    /// The NVRTC library loaded, but the builtins library beside it (which NVRTC needs at
    /// every compile, see [`NvrtcLibrary::builtins`](super::NvrtcLibrary::builtins)) is
    /// there and does not load. Not a reason to fall back to another NVRTC: the search
    /// chose this one.
    #[error(
        "NVRTC at {} cannot use its builtins library {}: it does not load ({reason}), so \
         every compile would fail with NVRTC_ERROR_BUILTIN_OPERATION_FAILURE; reinstall \
         that NVRTC, or set {ENV_VAR} to another",
        library.display(),
        builtins.display()
    )]
    Builtins {
        /// The NVRTC library.
        library: PathBuf,
        /// The builtins library that did not load.
        builtins: PathBuf,
        /// The dynamic loader's message.
        reason: String,
    },
    /// An NVRTC call other than the compilation itself failed.
    #[error("NVRTC call {call} failed with {code}")]
    Call {
        /// The NVRTC function.
        call: &'static str,
        /// Its status.
        code: NvrtcStatus,
    },
    /// The source did not compile.
    #[error(
        "NVRTC could not compile {name} for {arch} ({code}); options {options:?}; log:\n{log}"
    )]
    Compile {
        /// Program name.
        name: String,
        /// Target architecture (`sm_XX` or `compute_XX`).
        arch: String,
        /// The options NVRTC was given.
        options: Vec<String>,
        /// NVRTC's status.
        code: NvrtcStatus,
        /// The compiler log.
        log: String,
    },
    /// The compile failed with `NVRTC_ERROR_BUILTIN_OPERATION_FAILURE`: NVRTC could not
    /// use its builtins library. `library` is the NVRTC library as
    /// [`NvrtcLibrary`](super::NvrtcLibrary) prints it, which says which builtins library
    /// ikp loaded beside it, if any ([`NvrtcLibrary::builtins`](super::NvrtcLibrary::builtins)).
    #[error(
        "NVRTC could not compile {name} for {arch}: NVRTC_ERROR_BUILTIN_OPERATION_FAILURE, \
         it could not use its builtins library ({library}); put the directory holding this \
         NVRTC version's libnvrtc-builtins.so on LD_LIBRARY_PATH, or set {ENV_VAR} to an \
         NVRTC installed with it; log:\n{log}"
    )]
    BuiltinsFailed {
        /// Program name.
        name: String,
        /// Target architecture (`sm_XX` or `compute_XX`).
        arch: String,
        /// The NVRTC library and its builtins, as [`NvrtcLibrary`](super::NvrtcLibrary)
        /// prints them.
        library: String,
        /// The compiler log.
        log: String,
    },
    /// A string handed to NVRTC contains a NUL byte.
    #[error("{what} contains a NUL byte and cannot be passed to NVRTC")]
    Nul {
        /// Which input.
        what: String,
    },
    /// This NVRTC cannot target the architecture.
    #[error("NVRTC {version} cannot target {arch}; it supports {supported}")]
    UnsupportedArch {
        /// The requested architecture.
        arch: Arch,
        /// NVRTC version, `major.minor`.
        version: String,
        /// Supported `sm_XX`, comma separated.
        supported: String,
    },
    /// Reading or writing an image file failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_print_their_names_and_unknown_codes_their_number() {
        assert_eq!(NvrtcStatus(6).to_string(), "NVRTC_ERROR_COMPILATION");
        assert_eq!(NvrtcStatus::SUCCESS.to_string(), "NVRTC_SUCCESS");
        assert_eq!(format!("{:?}", NvrtcStatus(18)), "NVRTC_ERROR_BUSY");
        assert_eq!(NvrtcStatus(99).to_string(), "NVRTC status 99");
        assert_eq!(NvrtcStatus(-1).name(), None);
        assert!(NvrtcStatus::SUCCESS.check("x").is_ok());
        let e = NvrtcStatus::INVALID_INPUT.check("nvrtcGetPTX").unwrap_err();
        assert_eq!(
            e.to_string(),
            "NVRTC call nvrtcGetPTX failed with NVRTC_ERROR_INVALID_INPUT"
        );
    }

    #[test]
    fn not_found_names_places_names_and_the_override() {
        let e = NvrtcError::NotFound {
            places: vec![
                "/a/lib64".into(),
                "/venv/lib/python3*/site-packages/nvidia/*/lib".into(),
            ],
            names: vec!["libnvrtc.so.13".into(), "libnvrtc.so.12".into()],
            failed: vec!["/a/lib64/libnvrtc.so.12: bad ELF".into()],
        };
        let msg = e.to_string();
        for part in [
            "/a/lib64, /venv/lib/python3*/site-packages/nvidia/*/lib",
            "libnvrtc.so.13, libnvrtc.so.12",
            "could not load: /a/lib64/libnvrtc.so.12: bad ELF",
            "pip install nvidia-cuda-nvrtc",
            "set IKP_NVRTC to the library file or its directory",
        ] {
            assert!(msg.contains(part), "{part:?} missing from {msg}");
        }
        let e = NvrtcError::BadOverride {
            value: "/nowhere".into(),
            tried: vec![],
        };
        let msg = e.to_string();
        assert!(
            msg.starts_with("IKP_NVRTC=/nowhere names no loadable"),
            "{msg}"
        );
        assert!(
            msg.contains("none of libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so is there"),
            "{msg}"
        );
    }

    #[test]
    fn a_builtins_failure_names_the_library_and_what_to_do() {
        let e = NvrtcError::BuiltinsFailed {
            name: "k.cu".into(),
            arch: "sm_90".into(),
            library: "NVRTC 13.0 at /n/libnvrtc.so.13 (named by IKP_NVRTC; no \
                      libnvrtc-builtins.so.13.0 beside it: left to the dynamic loader)"
                .into(),
            log: String::new(),
        };
        let msg = e.to_string();
        for part in [
            "NVRTC could not compile k.cu for sm_90: NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
            "(NVRTC 13.0 at /n/libnvrtc.so.13 (named by IKP_NVRTC; no libnvrtc-builtins.so.13.0",
            "on LD_LIBRARY_PATH, or set IKP_NVRTC",
        ] {
            assert!(msg.contains(part), "{part:?} missing from {msg}");
        }
        assert_eq!(
            NvrtcStatus::BUILTIN_OPERATION_FAILURE.to_string(),
            "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE"
        );
    }
}
