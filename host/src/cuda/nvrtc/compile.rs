//! Compiling one kernel source with NVRTC: the options, the in-memory headers, and the
//! image that comes out.

use std::ffi::CString;
use std::path::{Path, PathBuf};

use super::api::Program;
use super::error::{NvrtcError, NvrtcStatus};
use super::{header_name, library};
use crate::arch::Arch;

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
/// Defaults: C++17, `IKP_ENABLED=1`, the ikp header available as `ikp.cuh`, and functions
/// without an execution space taken as device functions (`-default-device`: NVRTC compiles
/// no host code, and the lambda a kernel hands `Lane::dispatch` has no annotation).
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
            "-default-device".into(),
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
        let lib = library()?;
        let supported = lib.api.supported_archs()?;
        if !supported.contains(&self.arch.number()) {
            let (ma, mi) = lib.version();
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
        let mut headers = vec![(
            cstr("header name", header_name())?,
            cstr("ikp header", &ikp_device::cuh::source())?,
        )];
        for (hname, hsrc) in &self.headers {
            headers.push((
                cstr("header name", hname)?,
                cstr(&format!("header {hname}"), hsrc)?,
            ));
        }
        let options = self.options(target);
        let c_options = options
            .iter()
            .map(|o| cstr(&format!("option {o:?}"), o))
            .collect::<Result<Vec<_>, _>>()?;

        let prog = Program::create(&lib.api, &c_source, &c_name, &headers)?;
        let status = prog.compile(&c_options);
        let log = prog.log()?;
        if status == NvrtcStatus::BUILTIN_OPERATION_FAILURE {
            return Err(NvrtcError::BuiltinsFailed {
                name: name.into(),
                arch: options[0].trim_start_matches("--gpu-architecture=").into(),
                library: lib.to_string(),
                log,
            });
        }
        if status != NvrtcStatus::SUCCESS {
            return Err(NvrtcError::Compile {
                name: name.into(),
                arch: options[0].trim_start_matches("--gpu-architecture=").into(),
                options,
                code: status,
                log,
            });
        }
        let image = match target {
            Target::Ptx => Image::Ptx(prog.ptx()?),
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
                "-default-device",
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
        assert_eq!(p[3], "-DIKP_ENABLED=1");
    }
}
