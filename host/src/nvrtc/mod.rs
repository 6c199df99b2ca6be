//! Compiling instrumented kernels at run time with NVRTC.
//!
//! [`Compiler`] turns a kernel's CUDA C++ source into PTX or a cubin for one [`Arch`], with
//! the ikp device header available as `#include "ikp.cuh"` (handed to NVRTC in memory, so
//! nothing is written to disk) and the compile-out switch `IKP_ENABLED` set from
//! [`Compiler::profiling`].
//!
//! cudarc's safe NVRTC API produces PTX only and takes headers as include directories;
//! this module uses cudarc's lower layers (`nvrtc::result` and `nvrtc::sys`) to pass headers
//! by value and to fetch cubins, which lets a kernel be loaded for the exact architecture
//! of the device even when the driver is older than NVRTC (a driver cannot JIT PTX of a
//! newer ISA version, but it loads a cubin for its own architecture).
//!
//! NVRTC is loaded dynamically. Every entry point first checks that the library can be
//! found ([`probe`]) and returns [`NvrtcError::NotFound`] instead of letting cudarc
//! panic.
//!
//! ```no_run
//! use ikp_host::nvrtc::{Arch, Compiler};
//! let src = r#"
//!     #include "ikp.cuh"
//!     extern "C" __global__ void k(ikp::Arg prof) { }
//! "#;
//! let cubin = Compiler::new(Arch::new(8, 0)).cubin("k.cu", src)?;
//! assert!(!cubin.bytes().is_empty());
//! # Ok::<(), ikp_host::nvrtc::NvrtcError>(())
//! ```

use std::ffi::{c_char, c_int, CString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use cudarc::nvrtc::{result, sys};

/// Name under which the ikp device header is visible to kernels compiled here.
pub fn header_name() -> &'static str {
    ikp_device::cuh::FILE_NAME
}

/// Why NVRTC could not produce a kernel image.
#[derive(Debug, thiserror::Error)]
pub enum NvrtcError {
    /// `libnvrtc` could not be loaded.
    #[error(
        "NVRTC library not found (tried {}); install the CUDA NVRTC runtime and put the \
         directory holding libnvrtc.so.12 on LD_LIBRARY_PATH (in this repository: \
         `bash scripts/provision.sh && source scripts/env.sh`)",
        searched.join(", ")
    )]
    NotFound {
        /// Library names that were tried.
        searched: Vec<String>,
    },
    /// An NVRTC call other than the compilation itself failed.
    #[error("NVRTC call {call} failed with {code:?}")]
    Call {
        /// The NVRTC function.
        call: &'static str,
        /// Its status.
        code: sys::nvrtcResult,
    },
    /// The source did not compile.
    #[error(
        "NVRTC could not compile {name} for {arch} ({code:?}); options {options:?}; log:\n{log}"
    )]
    Compile {
        /// Program name.
        name: String,
        /// Target architecture (`sm_XX` or `compute_XX`).
        arch: String,
        /// The options NVRTC was given.
        options: Vec<String>,
        /// NVRTC's status.
        code: sys::nvrtcResult,
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
    /// An architecture string did not parse.
    #[error("cannot parse GPU architecture {0:?}: expected sm_XY, compute_XY (optional a/f suffix), XY or X.Y")]
    BadArch(String),
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

fn call(name: &'static str, r: Result<(), result::NvrtcError>) -> Result<(), NvrtcError> {
    r.map_err(|e| NvrtcError::Call {
        call: name,
        code: e.0,
    })
}

/// Checks that `libnvrtc` can be loaded, without panicking when it cannot.
pub fn probe() -> Result<(), NvrtcError> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: loading NVIDIA's NVRTC library runs its initialisers, which have no
    // preconditions; cudarc marks every dlopen unsafe for that reason.
    let present = *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() });
    if present {
        Ok(())
    } else {
        Err(NvrtcError::NotFound {
            searched: crate::session::lib_candidates("nvrtc"),
        })
    }
}

/// NVRTC's version `(major, minor)`.
pub fn version() -> Result<(u32, u32), NvrtcError> {
    probe()?;
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: both pointers are valid for writes of one c_int.
    call("nvrtcVersion", unsafe {
        sys::nvrtcVersion(&mut major, &mut minor).result()
    })?;
    Ok((major as u32, minor as u32))
}

/// The real architectures this NVRTC can compile for, as `major * 10 + minor` ascending
/// (e.g. `[50, 52, ..., 120]`).
pub fn supported_archs() -> Result<Vec<u32>, NvrtcError> {
    probe()?;
    let mut n: c_int = 0;
    // SAFETY: `n` is valid for one write.
    call("nvrtcGetNumSupportedArchs", unsafe {
        sys::nvrtcGetNumSupportedArchs(&mut n).result()
    })?;
    let mut archs = vec![0 as c_int; n.max(0) as usize];
    if !archs.is_empty() {
        // SAFETY: `archs` holds the `n` ints NVRTC reported it will write.
        call("nvrtcGetSupportedArchs", unsafe {
            sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()).result()
        })?;
    }
    let mut archs: Vec<u32> = archs.into_iter().map(|a| a as u32).collect();
    archs.sort_unstable();
    Ok(archs)
}

/// A GPU architecture: compute capability `major.minor` plus an optional feature-set
/// suffix (`a` for architecture-specific, `f` for family-specific features).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    /// Compute capability major.
    pub major: u32,
    /// Compute capability minor.
    pub minor: u32,
    /// `Some('a')` or `Some('f')` for `sm_90a`-style targets.
    pub suffix: Option<char>,
}

impl Arch {
    /// Compute capability `major.minor`, no suffix.
    pub const fn new(major: u32, minor: u32) -> Arch {
        Arch {
            major,
            minor,
            suffix: None,
        }
    }

    /// The architecture of the device behind `ctx`.
    pub fn of_device(
        ctx: &cudarc::driver::CudaContext,
    ) -> Result<Arch, cudarc::driver::DriverError> {
        let (major, minor) = ctx.compute_capability()?;
        Ok(Arch::new(major as u32, minor as u32))
    }

    /// `major * 10 + minor`, the number NVRTC lists in [`supported_archs`].
    pub const fn number(self) -> u32 {
        self.major * 10 + self.minor
    }

    fn suffix_str(self) -> String {
        self.suffix.map(String::from).unwrap_or_default()
    }

    /// The real architecture name, e.g. `sm_80` (cubin target).
    pub fn sm(self) -> String {
        format!("sm_{}{}", self.number(), self.suffix_str())
    }

    /// The virtual architecture name, e.g. `compute_80` (PTX target).
    pub fn compute(self) -> String {
        format!("compute_{}{}", self.number(), self.suffix_str())
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sm())
    }
}

impl FromStr for Arch {
    type Err = NvrtcError;

    /// Accepts `sm_80`, `compute_90a`, `sm_100f`, `86` and `8.6`.
    fn from_str(s: &str) -> Result<Arch, NvrtcError> {
        let bad = || NvrtcError::BadArch(s.to_owned());
        let t = s.trim();
        if let Some((ma, mi)) = t.split_once('.') {
            let major = ma.parse().map_err(|_| bad())?;
            let minor: u32 = mi.parse().map_err(|_| bad())?;
            if minor > 9 {
                return Err(bad());
            }
            return Ok(Arch::new(major, minor));
        }
        let body = t
            .strip_prefix("sm_")
            .or_else(|| t.strip_prefix("compute_"))
            .unwrap_or(t);
        let (digits, suffix) = match body.chars().last() {
            Some(c @ ('a' | 'f')) => (&body[..body.len() - 1], Some(c)),
            _ => (body, None),
        };
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let n: u32 = digits.parse().map_err(|_| bad())?;
        Ok(Arch {
            major: n / 10,
            minor: n % 10,
            suffix,
        })
    }
}

/// What to produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// PTX for the virtual architecture (`--gpu-architecture=compute_XY`): portable to
    /// newer GPUs, JIT-compiled by the driver, which must know the PTX ISA version.
    Ptx,
    /// A cubin for the real architecture (`--gpu-architecture=sm_XY`): loads only on that
    /// architecture, needs no JIT.
    Cubin,
}

/// NVRTC options and in-memory headers for compiling instrumented kernels.
///
/// Defaults: C++17, `IKP_ENABLED=1`, the ikp header available as `ikp.cuh`.
#[derive(Clone, Debug)]
pub struct Compiler {
    arch: Arch,
    profiling: bool,
    line_info: bool,
    std: String,
    defines: Vec<(String, Option<String>)>,
    include_paths: Vec<PathBuf>,
    headers: Vec<(String, String)>,
    options: Vec<String>,
}

impl Compiler {
    /// A compiler for `arch` with the defaults above.
    pub fn new(arch: Arch) -> Compiler {
        Compiler {
            arch,
            profiling: true,
            line_info: false,
            std: "c++17".into(),
            defines: Vec::new(),
            include_paths: Vec::new(),
            headers: Vec::new(),
            options: Vec::new(),
        }
    }

    /// The target architecture.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// Turns the ikp instrumentation on (`IKP_ENABLED=1`, the default) or compiles it out
    /// (`IKP_ENABLED=0`: every marker becomes a no-op, the kernel keeps its signature).
    pub fn profiling(mut self, on: bool) -> Compiler {
        self.profiling = on;
        self
    }

    /// Emits line information (`-lineinfo`) for profilers and debuggers.
    pub fn line_info(mut self, on: bool) -> Compiler {
        self.line_info = on;
        self
    }

    /// The C++ dialect (`-std=`), `c++17` by default.
    pub fn std(mut self, std: impl Into<String>) -> Compiler {
        self.std = std.into();
        self
    }

    /// Defines a macro (`-DNAME` or `-DNAME=VALUE`).
    pub fn define(mut self, name: impl Into<String>, value: Option<&str>) -> Compiler {
        self.defines.push((name.into(), value.map(str::to_owned)));
        self
    }

    /// Adds an include directory.
    pub fn include_path(mut self, dir: impl Into<PathBuf>) -> Compiler {
        self.include_paths.push(dir.into());
        self
    }

    /// Makes `source` includable as `#include "name"` (besides `ikp.cuh`, always present).
    pub fn header(mut self, name: impl Into<String>, source: impl Into<String>) -> Compiler {
        self.headers.push((name.into(), source.into()));
        self
    }

    /// Passes a raw NVRTC option through.
    pub fn option(mut self, option: impl Into<String>) -> Compiler {
        self.options.push(option.into());
        self
    }

    /// The exact option list NVRTC receives for `target`.
    pub fn options(&self, target: Target) -> Vec<String> {
        let arch = match target {
            Target::Ptx => self.arch.compute(),
            Target::Cubin => self.arch.sm(),
        };
        let mut o = vec![
            format!("--gpu-architecture={arch}"),
            format!("-std={}", self.std),
            format!("-DIKP_ENABLED={}", u8::from(self.profiling)),
        ];
        if self.line_info {
            o.push("-lineinfo".into());
        }
        for (name, value) in &self.defines {
            o.push(match value {
                Some(v) => format!("-D{name}={v}"),
                None => format!("-D{name}"),
            });
        }
        for dir in &self.include_paths {
            o.push(format!("--include-path={}", dir.display()));
        }
        o.extend(self.options.iter().cloned());
        o
    }

    /// Compiles `source` (named `name` in diagnostics) to PTX.
    pub fn ptx(&self, name: &str, source: &str) -> Result<Compiled, NvrtcError> {
        self.compile(name, source, Target::Ptx)
    }

    /// Compiles `source` to a cubin for [`Compiler::arch`].
    pub fn cubin(&self, name: &str, source: &str) -> Result<Compiled, NvrtcError> {
        self.compile(name, source, Target::Cubin)
    }

    /// Compiles `source` for `target`.
    pub fn compile(
        &self,
        name: &str,
        source: &str,
        target: Target,
    ) -> Result<Compiled, NvrtcError> {
        probe()?;
        let supported = supported_archs()?;
        if !supported.contains(&self.arch.number()) {
            let (ma, mi) = version()?;
            return Err(NvrtcError::UnsupportedArch {
                arch: self.arch,
                version: format!("{ma}.{mi}"),
                supported: supported
                    .iter()
                    .map(|a| format!("sm_{a}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        let cstr = |what: &str, s: &str| {
            CString::new(s).map_err(|_| NvrtcError::Nul { what: what.into() })
        };
        let c_source = cstr(&format!("source of {name}"), source)?;
        let c_name = cstr("program name", name)?;
        let mut header_names = vec![cstr("header name", header_name())?];
        let mut header_srcs = vec![cstr("ikp header", &ikp_device::cuh::source())?];
        for (hname, hsrc) in &self.headers {
            header_names.push(cstr("header name", hname)?);
            header_srcs.push(cstr(&format!("header {hname}"), hsrc)?);
        }
        let options = self.options(target);
        for o in &options {
            cstr(&format!("option {o:?}"), o)?;
        }

        let name_ptrs: Vec<*const c_char> = header_names.iter().map(|c| c.as_ptr()).collect();
        let src_ptrs: Vec<*const c_char> = header_srcs.iter().map(|c| c.as_ptr()).collect();
        let mut raw: sys::nvrtcProgram = std::ptr::null_mut();
        // SAFETY: every pointer is a NUL-terminated string owned by a CString that outlives
        // the program (they are dropped at the end of this function, after `Program`);
        // both header arrays hold `name_ptrs.len()` entries.
        call("nvrtcCreateProgram", unsafe {
            sys::nvrtcCreateProgram(
                &mut raw,
                c_source.as_ptr(),
                c_name.as_ptr(),
                name_ptrs.len() as c_int,
                src_ptrs.as_ptr(),
                name_ptrs.as_ptr(),
            )
            .result()
        })?;
        let prog = Program(raw);

        // SAFETY: `prog` is a live program created above; options contain no NUL.
        let compiled = unsafe { result::compile_program(prog.0, &options) };
        let log = prog.log()?;
        if let Err(e) = compiled {
            return Err(NvrtcError::Compile {
                name: name.into(),
                arch: options[0].trim_start_matches("--gpu-architecture=").into(),
                options,
                code: e.0,
                log,
            });
        }
        let image = match target {
            Target::Ptx => {
                // SAFETY: `prog` compiled successfully.
                let raw = unsafe { result::get_ptx(prog.0) }.map_err(|e| NvrtcError::Call {
                    call: "nvrtcGetPTX",
                    code: e.0,
                })?;
                Image::Ptx(c_chars_to_string(&raw))
            }
            Target::Cubin => Image::Cubin(prog.cubin()?),
        };
        Ok(Compiled {
            name: name.into(),
            arch: self.arch,
            options,
            image,
            log,
        })
    }
}

fn c_chars_to_string(raw: &[c_char]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// An NVRTC program, destroyed on drop.
struct Program(sys::nvrtcProgram);

impl Program {
    fn log(&self) -> Result<String, NvrtcError> {
        // SAFETY: `self.0` is a live program.
        let raw = unsafe { result::get_program_log(self.0) }.map_err(|e| NvrtcError::Call {
            call: "nvrtcGetProgramLog",
            code: e.0,
        })?;
        Ok(c_chars_to_string(&raw).trim_end().to_owned())
    }

    fn cubin(&self) -> Result<Vec<u8>, NvrtcError> {
        let mut size = 0usize;
        // SAFETY: `self.0` is a live, compiled program; `size` is valid for one write.
        call("nvrtcGetCUBINSize", unsafe {
            sys::nvrtcGetCUBINSize(self.0, &mut size).result()
        })?;
        if size == 0 {
            // NVRTC reports size 0 when it compiled for a virtual architecture.
            return Err(NvrtcError::Call {
                call: "nvrtcGetCUBINSize (no cubin for a virtual architecture)",
                code: sys::nvrtcResult::NVRTC_ERROR_INVALID_INPUT,
            });
        }
        let mut out = vec![0u8; size];
        // SAFETY: `out` has the `size` bytes NVRTC reported.
        call("nvrtcGetCUBIN", unsafe {
            sys::nvrtcGetCUBIN(self.0, out.as_mut_ptr().cast()).result()
        })?;
        Ok(out)
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram and destroyed only here. A failure to
        // free leaks the program, which is all that can be done in drop.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Image {
    Ptx(String),
    Cubin(Vec<u8>),
}

/// A compiled kernel image (PTX text or cubin), ready to load with [`Compiled::load`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compiled {
    name: String,
    arch: Arch,
    options: Vec<String>,
    image: Image,
    log: String,
}

impl Compiled {
    /// The program name it was compiled under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The architecture it was compiled for.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// What it is.
    pub fn target(&self) -> Target {
        match self.image {
            Image::Ptx(_) => Target::Ptx,
            Image::Cubin(_) => Target::Cubin,
        }
    }

    /// The options NVRTC was given.
    pub fn options(&self) -> &[String] {
        &self.options
    }

    /// NVRTC's log (warnings), empty when it had nothing to say.
    pub fn log(&self) -> &str {
        &self.log
    }

    /// The PTX text, if this is PTX.
    pub fn ptx(&self) -> Option<&str> {
        match &self.image {
            Image::Ptx(s) => Some(s),
            Image::Cubin(_) => None,
        }
    }

    /// The cubin (an ELF image), if this is a cubin.
    pub fn cubin(&self) -> Option<&[u8]> {
        match &self.image {
            Image::Cubin(b) => Some(b),
            Image::Ptx(_) => None,
        }
    }

    /// The image bytes: PTX text or cubin.
    pub fn bytes(&self) -> &[u8] {
        match &self.image {
            Image::Ptx(s) => s.as_bytes(),
            Image::Cubin(b) => b,
        }
    }

    /// The image in cudarc's form, for [`cudarc::driver::CudaContext::load_module`].
    pub fn to_cudarc(&self) -> cudarc::nvrtc::Ptx {
        match &self.image {
            Image::Ptx(s) => cudarc::nvrtc::Ptx::from_src(s.clone()),
            Image::Cubin(b) => cudarc::nvrtc::Ptx::from_binary(b.clone()),
        }
    }

    /// Loads the image as a module into `ctx`.
    pub fn load(
        &self,
        ctx: &Arc<cudarc::driver::CudaContext>,
    ) -> Result<Arc<cudarc::driver::CudaModule>, crate::session::SessionError> {
        ctx.load_module(self.to_cudarc())
            .map_err(|e| crate::session::SessionError::driver("cuModuleLoadData", e))
    }

    /// Writes the image to `path` (`.ptx` or `.cubin`).
    pub fn write_to(&self, path: impl AsRef<Path>) -> Result<(), NvrtcError> {
        let path = path.as_ref();
        std::fs::write(path, self.bytes()).map_err(|source| NvrtcError::Io {
            what: "writing kernel image",
            path: path.to_owned(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_parses_every_spelling() {
        assert_eq!("sm_80".parse::<Arch>().unwrap(), Arch::new(8, 0));
        assert_eq!("compute_86".parse::<Arch>().unwrap(), Arch::new(8, 6));
        assert_eq!("8.9".parse::<Arch>().unwrap(), Arch::new(8, 9));
        assert_eq!("120".parse::<Arch>().unwrap(), Arch::new(12, 0));
        let a: Arch = "sm_90a".parse().unwrap();
        assert_eq!((a.major, a.minor, a.suffix), (9, 0, Some('a')));
        assert_eq!(a.sm(), "sm_90a");
        assert_eq!(a.compute(), "compute_90a");
        for bad in ["", "sm_", "sm_8", "8.10", "sm_8x", "gfx90a", "x.y"] {
            assert!(
                matches!(bad.parse::<Arch>(), Err(NvrtcError::BadArch(_))),
                "{bad:?} parsed"
            );
        }
    }

    #[test]
    fn options_carry_arch_switch_and_defines() {
        let c = Compiler::new(Arch::new(8, 0))
            .profiling(false)
            .line_info(true)
            .define("TILE", Some("64"))
            .define("FAST", None)
            .include_path("/inc")
            .option("--use_fast_math");
        assert_eq!(
            c.options(Target::Cubin),
            [
                "--gpu-architecture=sm_80",
                "-std=c++17",
                "-DIKP_ENABLED=0",
                "-lineinfo",
                "-DTILE=64",
                "-DFAST",
                "--include-path=/inc",
                "--use_fast_math",
            ]
        );
        let p = Compiler::new(Arch::new(9, 0)).options(Target::Ptx);
        assert_eq!(p[0], "--gpu-architecture=compute_90");
        assert_eq!(p[2], "-DIKP_ENABLED=1");
    }
}
