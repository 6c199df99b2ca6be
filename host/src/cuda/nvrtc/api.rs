//! The NVRTC functions ikp calls, resolved once from a library opened by path, and a
//! program handle that is destroyed on drop.
//!
//! The prototypes are those of `nvrtc.h`, identical in CUDA 12 and 13 for every function
//! here; statuses come back as [`NvrtcStatus`] (an `int`, like the C enum).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;

use libloading::Library;

use super::error::{NvrtcError, NvrtcStatus};

/// `nvrtcProgram`: an opaque handle.
type RawProgram = *mut c_void;

/// The NVRTC entry points of one loaded library. The library stays loaded as long as
/// this value lives (the loader keeps it for the life of the process).
pub(crate) struct Api {
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> NvrtcStatus,
    get_num_supported_archs: unsafe extern "C" fn(*mut c_int) -> NvrtcStatus,
    get_supported_archs: unsafe extern "C" fn(*mut c_int) -> NvrtcStatus,
    create_program: unsafe extern "C" fn(
        *mut RawProgram,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> NvrtcStatus,
    compile_program: unsafe extern "C" fn(RawProgram, c_int, *const *const c_char) -> NvrtcStatus,
    get_program_log_size: unsafe extern "C" fn(RawProgram, *mut usize) -> NvrtcStatus,
    get_program_log: unsafe extern "C" fn(RawProgram, *mut c_char) -> NvrtcStatus,
    get_ptx_size: unsafe extern "C" fn(RawProgram, *mut usize) -> NvrtcStatus,
    get_ptx: unsafe extern "C" fn(RawProgram, *mut c_char) -> NvrtcStatus,
    get_cubin_size: unsafe extern "C" fn(RawProgram, *mut usize) -> NvrtcStatus,
    get_cubin: unsafe extern "C" fn(RawProgram, *mut c_char) -> NvrtcStatus,
    destroy_program: unsafe extern "C" fn(*mut RawProgram) -> NvrtcStatus,
    // Last: the function pointers above point into it.
    _lib: Library,
}

impl Api {
    /// Opens the library at `path` (a bare name goes through the dynamic loader's search)
    /// and resolves every function. The error is the loader's message, or the first
    /// missing symbol.
    pub(crate) fn open(path: &Path) -> Result<Api, String> {
        // SAFETY: loading a shared library runs its initialisers. NVRTC's have no
        // preconditions; a file that only carries NVRTC's name runs whatever it
        // contains, which is inherent to loading the library the user installed or named.
        let lib = unsafe { Library::new(path) }.map_err(|e| e.to_string())?;
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the field this initialises has the function's prototype from
                // nvrtc.h; the pointer is copied out of the symbol and used only while
                // `_lib`, stored in the same `Api`, keeps the library loaded.
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("{} is missing: {e}", $name))?
            };
        }
        Ok(Api {
            version: sym!("nvrtcVersion"),
            get_num_supported_archs: sym!("nvrtcGetNumSupportedArchs"),
            get_supported_archs: sym!("nvrtcGetSupportedArchs"),
            create_program: sym!("nvrtcCreateProgram"),
            compile_program: sym!("nvrtcCompileProgram"),
            get_program_log_size: sym!("nvrtcGetProgramLogSize"),
            get_program_log: sym!("nvrtcGetProgramLog"),
            get_ptx_size: sym!("nvrtcGetPTXSize"),
            get_ptx: sym!("nvrtcGetPTX"),
            get_cubin_size: sym!("nvrtcGetCUBINSize"),
            get_cubin: sym!("nvrtcGetCUBIN"),
            destroy_program: sym!("nvrtcDestroyProgram"),
            _lib: lib,
        })
    }

    /// `nvrtcVersion`: `(major, minor)`.
    pub(crate) fn version(&self) -> Result<(u32, u32), NvrtcError> {
        let (mut major, mut minor): (c_int, c_int) = (0, 0);
        // SAFETY: both pointers are valid for writes of one c_int.
        unsafe { (self.version)(&mut major, &mut minor) }.check("nvrtcVersion")?;
        Ok((major.max(0) as u32, minor.max(0) as u32))
    }

    /// `nvrtcGetSupportedArchs`, ascending.
    pub(crate) fn supported_archs(&self) -> Result<Vec<u32>, NvrtcError> {
        let mut n: c_int = 0;
        // SAFETY: `n` is valid for one write.
        unsafe { (self.get_num_supported_archs)(&mut n) }.check("nvrtcGetNumSupportedArchs")?;
        let mut archs = vec![0 as c_int; n.max(0) as usize];
        if !archs.is_empty() {
            // SAFETY: `archs` holds the `n` ints NVRTC reported it will write.
            unsafe { (self.get_supported_archs)(archs.as_mut_ptr()) }
                .check("nvrtcGetSupportedArchs")?;
        }
        let mut archs: Vec<u32> = archs.into_iter().map(|a| a.max(0) as u32).collect();
        archs.sort_unstable();
        Ok(archs)
    }
}

/// An NVRTC program, destroyed on drop.
pub(crate) struct Program<'a> {
    api: &'a Api,
    raw: RawProgram,
}

impl<'a> Program<'a> {
    /// `nvrtcCreateProgram` with `headers` as `(include name, source)` pairs handed over
    /// in memory.
    pub(crate) fn create(
        api: &'a Api,
        source: &CStr,
        name: &CStr,
        headers: &[(CString, CString)],
    ) -> Result<Program<'a>, NvrtcError> {
        let names: Vec<*const c_char> = headers.iter().map(|(n, _)| n.as_ptr()).collect();
        let sources: Vec<*const c_char> = headers.iter().map(|(_, s)| s.as_ptr()).collect();
        let count = c_int::try_from(headers.len()).map_err(|_| NvrtcError::Call {
            call: "nvrtcCreateProgram (too many headers)",
            code: NvrtcStatus::INVALID_INPUT,
        })?;
        let mut raw: RawProgram = std::ptr::null_mut();
        // SAFETY: every pointer is a NUL-terminated string borrowed for this call (NVRTC
        // copies them); both header arrays hold `count` entries; `raw` is valid for one
        // write.
        unsafe {
            (api.create_program)(
                &mut raw,
                source.as_ptr(),
                name.as_ptr(),
                count,
                sources.as_ptr(),
                names.as_ptr(),
            )
        }
        .check("nvrtcCreateProgram")?;
        Ok(Program { api, raw })
    }

    /// `nvrtcCompileProgram`; the status is returned as is, the log explains it.
    pub(crate) fn compile(&self, options: &[CString]) -> NvrtcStatus {
        let ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let Ok(count) = c_int::try_from(ptrs.len()) else {
            return NvrtcStatus::INVALID_INPUT;
        };
        // SAFETY: `self.raw` is a live program; `ptrs` holds `count` NUL-terminated
        // strings that outlive the call.
        unsafe { (self.api.compile_program)(self.raw, count, ptrs.as_ptr()) }
    }

    /// The compiler log, trailing whitespace removed.
    pub(crate) fn log(&self) -> Result<String, NvrtcError> {
        let bytes = self.fetch(
            self.api.get_program_log_size,
            self.api.get_program_log,
            "nvrtcGetProgramLog",
        )?;
        Ok(text(&bytes).trim_end().to_owned())
    }

    /// The PTX of a program compiled for a virtual architecture.
    pub(crate) fn ptx(&self) -> Result<String, NvrtcError> {
        let bytes = self.fetch(self.api.get_ptx_size, self.api.get_ptx, "nvrtcGetPTX")?;
        Ok(text(&bytes))
    }

    /// The cubin of a program compiled for a real architecture.
    pub(crate) fn cubin(&self) -> Result<Vec<u8>, NvrtcError> {
        let bytes = self.fetch(self.api.get_cubin_size, self.api.get_cubin, "nvrtcGetCUBIN")?;
        if bytes.is_empty() {
            // NVRTC reports size 0 when it compiled for a virtual architecture.
            return Err(NvrtcError::Call {
                call: "nvrtcGetCUBINSize (no cubin for a virtual architecture)",
                code: NvrtcStatus::INVALID_INPUT,
            });
        }
        Ok(bytes)
    }

    /// Asks for a size, then for that many bytes.
    fn fetch(
        &self,
        size_of: unsafe extern "C" fn(RawProgram, *mut usize) -> NvrtcStatus,
        get: unsafe extern "C" fn(RawProgram, *mut c_char) -> NvrtcStatus,
        call: &'static str,
    ) -> Result<Vec<u8>, NvrtcError> {
        let mut size = 0usize;
        // SAFETY: `self.raw` is a live program; `size` is valid for one write.
        unsafe { size_of(self.raw, &mut size) }.check(call)?;
        let mut out = vec![0u8; size];
        if size > 0 {
            // SAFETY: `out` has the `size` bytes NVRTC reported it will write.
            unsafe { get(self.raw, out.as_mut_ptr().cast()) }.check(call)?;
        }
        Ok(out)
    }
}

impl Drop for Program<'_> {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram and destroyed only here. A failure to
        // free leaks the program, which is all that can be done in drop.
        let _ = unsafe { (self.api.destroy_program)(&mut self.raw) };
    }
}

/// NUL-terminated bytes as text, up to the first NUL.
fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}
