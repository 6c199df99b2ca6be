//! The NVRTC helper against the real libnvrtc (provisioned by scripts/provision.sh; no GPU
//! needed): the ikp header is found, PTX and cubins come out for the requested
//! architecture, the compile-out switch removes every marker, errors are typed. The
//! search for the library runs in child processes with controlled environments: CUDA
//! 13's pip package found through `VIRTUAL_ENV`, `IKP_NVRTC` naming CUDA 12.9's
//! directory, an `IKP_NVRTC` that names nothing, and nothing to find at all. CUDA 13.0's
//! NVRTC (the 13.0.88 wheel, unpacked into `.deps/nvrtc-13.0.88`), whose `libnvrtc.so.13`
//! has no RPATH, compiles with no `LD_LIBRARY_PATH` because ikp loads its builtins
//! library; the same compile through the raw NVRTC API fails, which shows the scenario
//! is real.
//!
//! The tests work with whichever NVRTC the search finds (12.9 on CI, CUDA 13 on a GPU
//! machine): the oldest architecture they target is the oldest the library supports.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::session_support::*;
use ikp_host::cuda::driver_version;
use ikp_host::{
    cuda::nvrtc::{self, Compiler, FoundBy, NvrtcError, Target},
    Arch,
};

/// Every part of the device API, so a header change that breaks any of it fails here.
const ALL_OF_THE_API: &str = r#"
#include "ikp.cuh"
enum : unsigned { OUTER = 0, INNER = 1, MARK = 2 };
extern "C" __global__ void api_tour(float* out, const unsigned* flag, ikp::Arg prof) {
  ikp::Lane<ikp::Fence::Block, ikp::Timer::Clock> lane(prof, threadIdx.x / 32u, threadIdx.x % 32u == 0u);
  lane.begin(OUTER, 7u);
  {
    IKP_SCOPE(lane, INNER, blockIdx.x);
    out[threadIdx.x] = 2.0f * threadIdx.x;
  }
  volatile const unsigned* f = flag;
  IKP_WAIT(lane, 0u, f[0] == 0u);
  IKP_WAIT_SAMPLED(lane, 1u, f[1] == 0u);
  lane.count(1u, 5u);
  lane.sample(0u, 9u);
  lane.instant(MARK);
  lane.end(OUTER, 7u);
  if (lane.active()) out[0] += 1.0f;
  lane.finalize();
  // A ring lane (a second group id) with an async range begun here and ended by `lane`'s
  // group in real code; here both ends in one lane.
  ikp::Lane<ikp::Fence::None, ikp::Timer::Global, ikp::Overflow::Ring> ring(prof, 8u + threadIdx.x / 32u, threadIdx.x % 32u == 0u);
  ring.range_begin(MARK, threadIdx.x / 32u);
  ring.range_end(MARK, threadIdx.x / 32u);
  ring.finalize();
}
"#;

fn require_nvrtc() {
    if let Err(e) = nvrtc::probe() {
        panic!("{e}");
    }
}

/// A CUDA cubin: ELF64 with e_machine 190 (EM_CUDA) holding the `api_tour` kernel.
fn assert_cuda_elf(elf: &[u8], what: &str) {
    assert_eq!(&elf[..4], b"\x7fELF", "{what}: not an ELF image");
    assert_eq!(elf[4], 2, "{what}: cubins are ELF64");
    assert_eq!(
        u16::from_le_bytes([elf[18], elf[19]]),
        190,
        "{what}: not a CUDA ELF"
    );
    assert!(
        elf.windows(9).any(|w| w == b"api_tour\0"),
        "{what}: kernel symbol missing"
    );
}

/// `needle` occurs as a whole token (`%clock` does not match `%clock64`).
fn has_token(text: &str, needle: &str) -> bool {
    text.match_indices(needle).any(|(i, _)| {
        !text[i + needle.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The oldest real architecture the loaded NVRTC supports (sm_70 for CUDA 12, sm_75 for
/// CUDA 13, which dropped Volta).
fn oldest_arch() -> Arch {
    let n = nvrtc::supported_archs().unwrap()[0];
    Arch::new(n / 10, n % 10)
}

#[test]
fn nvrtc_reports_its_version_and_architectures() {
    require_nvrtc();
    let (major, minor) = nvrtc::version().unwrap();
    assert!(major >= 12, "NVRTC {major}.x: ikp needs CUDA 12 or newer");
    let lib = nvrtc::library().unwrap();
    assert_eq!(lib.version(), (major, minor));
    assert!(
        lib.path().is_absolute() && lib.path().exists(),
        "loaded file {}",
        lib.path().display()
    );
    assert!(
        lib.to_string().starts_with(&format!(
            "NVRTC {major}.{minor} at {}",
            lib.path().display()
        )),
        "{lib}"
    );
    let archs = nvrtc::supported_archs().unwrap();
    assert!(archs.windows(2).all(|w| w[0] < w[1]), "{archs:?}");
    for a in [80, 90] {
        assert!(archs.contains(&a), "sm_{a} missing from {archs:?}");
    }
    assert!(archs[0] <= 75, "oldest architecture sm_{}", archs[0]);
}

#[test]
fn the_whole_device_api_compiles_to_ptx_with_the_header_in_memory() {
    require_nvrtc();
    let oldest = oldest_arch();
    let ptx = Compiler::new(oldest)
        .ptx("api_tour.cu", ALL_OF_THE_API)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ptx.target(), Target::Ptx);
    assert_eq!(ptx.arch(), oldest);
    assert!(ptx.cubin().is_none());
    let text = ptx.ptx().unwrap();
    assert!(
        text.contains(&format!(".target {}", oldest.sm())),
        "PTX for {}",
        oldest.compute()
    );
    assert!(text.contains(".entry api_tour("), "kernel entry missing");
    // ikp::Arg is passed by value: one 40-byte, 8-aligned parameter, like IkpArg.
    assert!(
        text.contains(".param .align 8 .b8 api_tour_param_2[40]"),
        "ikp::Arg parameter is not 40 bytes aligned 8:\n{}",
        text.lines()
            .filter(|l| l.contains(".param"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    for reg in ["%globaltimer", "%clock", "%clock64", "%smid"] {
        assert!(has_token(text, reg), "no {reg} in the PTX");
    }
    assert!(
        text.contains("membar.cta"),
        "Fence::Block emits no block fence"
    );
    assert!(
        ptx.options().contains(&"-DIKP_ENABLED=1".to_string()),
        "{:?}",
        ptx.options()
    );
}

#[test]
fn cubins_come_out_for_each_real_architecture() {
    require_nvrtc();
    let supported = nvrtc::supported_archs().unwrap();
    // Those of these the loaded NVRTC supports (CUDA 13 dropped sm_70).
    let archs: Vec<Arch> = ["sm_70", "sm_75", "sm_80", "sm_90", "sm_90a", "sm_120"]
        .iter()
        .map(|a| a.parse().unwrap())
        .filter(|a: &Arch| supported.contains(&a.number()))
        .collect();
    for must in [Arch::new(8, 0), Arch::new(9, 0)] {
        assert!(archs.contains(&must), "{must} not covered: {supported:?}");
    }
    for arch in archs {
        let cubin = Compiler::new(arch)
            .cubin("api_tour.cu", ALL_OF_THE_API)
            .unwrap_or_else(|e| panic!("{e}"));
        let elf = cubin.cubin().unwrap();
        assert_cuda_elf(elf, &arch.to_string());
        assert!(cubin.ptx().is_none());
        assert_eq!(
            cubin.options()[0],
            format!("--gpu-architecture={}", arch.sm())
        );
        // The image survives a round trip through a file, byte for byte.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("api_tour.{arch}.cubin"));
        cubin.write_to(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), elf);
    }
}

#[test]
fn compiling_out_removes_every_marker_but_keeps_the_signature() {
    require_nvrtc();
    let on = Compiler::new(Arch::new(8, 0))
        .ptx("api_tour.cu", ALL_OF_THE_API)
        .unwrap();
    let off = Compiler::new(Arch::new(8, 0))
        .profiling(false)
        .ptx("api_tour.cu", ALL_OF_THE_API)
        .unwrap();
    assert!(off.options().contains(&"-DIKP_ENABLED=0".to_string()));
    let (on, off) = (on.ptx().unwrap(), off.ptx().unwrap());
    for marker in [
        "%globaltimer",
        "%globaltimer_lo",
        "%clock",
        "%clock64",
        "%smid",
        "membar.cta",
        "red.",
        "atom.",
    ] {
        assert!(!off.contains(marker), "compiled-out PTX still has {marker}");
    }
    assert!(
        on.contains("%smid") && on.contains("membar.cta"),
        "control: instrumented PTX"
    );
    assert!(off.contains(".param .align 8 .b8 api_tour_param_2[40]"));
    // The wait loops themselves stay: they are the kernel's own synchronisation.
    assert!(
        off.contains("ld.volatile"),
        "compile-out must not remove the user's waits"
    );
}

#[test]
fn extra_headers_and_defines_reach_the_program() {
    require_nvrtc();
    let src = r#"
#include "ikp.cuh"
#include "tile.h"
static_assert(TILE * SCALE == 21, "defines did not arrive");
extern "C" __global__ void k(ikp::Arg prof) { ikp::Lane<> lane(prof, 0, true); lane.finalize(); }
"#;
    let base = Compiler::new(Arch::new(8, 0)).header("tile.h", "#define TILE 7\n");
    base.clone()
        .define("SCALE", Some("3"))
        .ptx("k.cu", src)
        .unwrap_or_else(|e| panic!("{e}"));
    let err = base
        .define("SCALE", Some("4"))
        .ptx("k.cu", src)
        .unwrap_err();
    assert!(err.to_string().contains("defines did not arrive"), "{err}");
}

#[test]
fn a_compile_error_carries_program_name_options_and_log() {
    require_nvrtc();
    let src = "#include \"ikp.cuh\"\nextern \"C\" __global__ void k() { undeclared_thing(); }\n";
    match Compiler::new(Arch::new(8, 6)).cubin("broken_kernel.cu", src) {
        Err(NvrtcError::Compile {
            name,
            arch,
            options,
            log,
            ..
        }) => {
            assert_eq!(name, "broken_kernel.cu");
            assert_eq!(arch, "sm_86");
            assert!(options.contains(&"-std=c++17".to_string()));
            assert!(log.contains("undeclared_thing"), "log: {log}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

#[test]
fn unsupported_architectures_and_bad_inputs_are_typed_errors() {
    require_nvrtc();
    match Compiler::new(Arch::new(3, 5)).ptx("k.cu", "extern \"C\" __global__ void k() {}") {
        Err(NvrtcError::UnsupportedArch {
            arch, supported, ..
        }) => {
            assert_eq!(arch, Arch::new(3, 5));
            assert!(supported.contains("sm_80"), "{supported}");
        }
        other => panic!("expected UnsupportedArch, got {other:?}"),
    }
    assert!(matches!(
        Compiler::new(Arch::new(8, 0)).ptx("k.cu", "int x;\0"),
        Err(NvrtcError::Nul { .. })
    ));
    assert!(matches!(
        Compiler::new(Arch::new(8, 0))
            .option("--bogus-option")
            .ptx("k.cu", "extern \"C\" __global__ void k() {}"),
        Err(NvrtcError::Compile { .. } | NvrtcError::Call { .. })
    ));
}

// ---- The search for the library, each scenario in a child process ----

/// The environment of a search child: the search variables cleared, `LD_LIBRARY_PATH`
/// without the directories that hold an NVRTC, `HOME` an empty directory and `PATH` the
/// system's only (no other Python environment), then `set` on top.
fn search_env(
    home: &Path,
    set: &[(&'static str, OsString)],
) -> Vec<(&'static str, Option<OsString>)> {
    let nvrtc_dirs = nvrtc_dirs_on_library_path();
    let remove: Vec<&Path> = nvrtc_dirs.iter().map(PathBuf::as_path).collect();
    let mut env: Vec<(&'static str, Option<OsString>)> = vec![
        ("LD_LIBRARY_PATH", Some(library_path(&remove, &[]).into())),
        ("HOME", Some(home.into())),
        ("PATH", Some("/usr/bin:/bin".into())),
    ];
    env.extend(NVRTC_SEARCH_VARS.iter().map(|v| (*v, None)));
    for (var, value) in set {
        env.retain(|(e, _)| e != var);
        env.push((var, Some(value.clone())));
    }
    env
}

/// A variable the parent hands to its child.
fn from_parent(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| panic!("{var} not passed to the child"))
}

/// `"13.5"` as `(13, 5)`.
fn parse_version(v: &str) -> (u32, u32) {
    let (ma, mi) = v.split_once('.').unwrap();
    (ma.parse().unwrap(), mi.parse().unwrap())
}

/// The child's checks for a search that must load `IKP_TEST_WANT_PATH`, version
/// `IKP_TEST_WANT_VERSION`, by rule `found_by`, and compile a kernel with it for `arch`.
fn loaded_as_expected(found_by: FoundBy, arch: Arch) {
    let want_path = PathBuf::from(from_parent("IKP_TEST_WANT_PATH"));
    let want_version = parse_version(&from_parent("IKP_TEST_WANT_VERSION"));
    let lib = nvrtc::library().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(lib.path(), want_path, "{lib}");
    assert_eq!(lib.version(), want_version, "{lib}");
    assert_eq!(lib.found_by(), found_by, "{lib}");
    let cubin = Compiler::new(arch)
        .cubin("api_tour.cu", ALL_OF_THE_API)
        .unwrap_or_else(|e| panic!("{lib}: {e}"));
    assert_cuda_elf(cubin.cubin().unwrap(), &format!("{arch} by {lib}"));
    // ikp loads NVRTC's builtins library from NVRTC's own directory (and names it): both
    // files came from the same place, with or without an RPATH in libnvrtc.
    assert_eq!(
        lib.builtins(),
        Some(
            want_path
                .with_file_name(format!(
                    "libnvrtc-builtins.so.{}.{}",
                    want_version.0, want_version.1
                ))
                .as_path()
        ),
        "{lib}"
    );
    assert!(lib.to_string().contains("; builtins /"), "{lib}");
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let builtins = format!(
        "{}/libnvrtc-builtins.so.{}.{}",
        want_path
            .parent()
            .unwrap()
            .canonicalize()
            .unwrap()
            .display(),
        want_version.0,
        want_version.1
    );
    assert!(maps.contains(&builtins), "{builtins} not mapped");
    println!("{CHILD_DONE}: {lib}");
}

#[test]
fn pip_cuda_13_is_found_through_virtual_env_and_compiles_for_sm_90() {
    if let Some(mode) = child_mode() {
        assert_eq!(mode, "venv-cuda-13");
        return loaded_as_expected(FoundBy::PythonPackage, Arch::new(9, 0));
    }
    if let Some(found) = system_nvrtc() {
        skip(&format!(
            "a system NVRTC ({}) would be found before the venv's",
            found.display()
        ));
        return;
    }
    if let Ok((major, minor)) = driver_version() {
        if major < 13 {
            skip(&format!(
                "the driver supports CUDA {major}.{minor}, so the search rightly prefers \
                     the venv's CUDA 12 NVRTC"
            ));
            return;
        }
    }
    let Some(nvrtc_dir) = provisioned_dir("IKP_NVRTC_LIB", "libnvrtc.so.12") else {
        return;
    };
    let venv = venv_of(&nvrtc_dir);
    let site = site_packages(&venv);
    let want = site.join("nvidia/cu13/lib/libnvrtc.so.13");
    assert!(
        want.is_file(),
        "{} missing: re-run `bash scripts/provision.sh`",
        want.display()
    );
    let (major, minor) = dist_version(&site, "nvidia_cuda_nvrtc");
    let home = tempfile::tempdir().unwrap();
    let out = run_child_with(
        "venv-cuda-13",
        &search_env(
            home.path(),
            &[
                ("VIRTUAL_ENV", venv.into()),
                ("IKP_TEST_WANT_PATH", want.clone().into()),
                ("IKP_TEST_WANT_VERSION", format!("{major}.{minor}").into()),
            ],
        ),
    );
    let stdout = assert_child_passed("CUDA 13 NVRTC from the venv", &out);
    assert!(
        stdout.contains(&format!("NVRTC {major}.{minor} at {}", want.display())),
        "{stdout}"
    );
}

#[test]
fn ikp_nvrtc_naming_the_cuda_12_directory_wins_over_the_venv() {
    if let Some(mode) = child_mode() {
        assert_eq!(mode, "ikp-nvrtc-12");
        return loaded_as_expected(FoundBy::IkpNvrtc, Arch::new(9, 0));
    }
    // IKP_NVRTC overrides every other place: any machine can set this scenario up.
    let Some(nvrtc_dir) = provisioned_dir("IKP_NVRTC_LIB", "libnvrtc.so.12") else {
        return;
    };
    let venv = venv_of(&nvrtc_dir);
    let (major, minor) = dist_version(&site_packages(&venv), "nvidia_cuda_nvrtc_cu12");
    let want = nvrtc_dir.join("libnvrtc.so.12");
    let home = tempfile::tempdir().unwrap();
    let out = run_child_with(
        "ikp-nvrtc-12",
        &search_env(
            home.path(),
            &[
                ("IKP_NVRTC", nvrtc_dir.clone().into()),
                // CUDA 13 is findable too: without the override it would win.
                ("VIRTUAL_ENV", venv.into()),
                ("IKP_TEST_WANT_PATH", want.clone().into()),
                ("IKP_TEST_WANT_VERSION", format!("{major}.{minor}").into()),
            ],
        ),
    );
    let stdout = assert_child_passed("IKP_NVRTC naming the CUDA 12 directory", &out);
    assert!(
        stdout.contains(&format!("NVRTC {major}.{minor} at {}", want.display())),
        "{stdout}"
    );
}

#[test]
fn an_ikp_nvrtc_naming_nothing_is_an_error_without_fallback() {
    if let Some(mode) = child_mode() {
        assert_eq!(mode, "ikp-nvrtc-empty");
        let empty = PathBuf::from(from_parent("IKP_NVRTC"));
        let e = Compiler::new(Arch::new(8, 0))
            .ptx("k.cu", "extern \"C\" __global__ void k() {}")
            .expect_err("compiled although IKP_NVRTC names an empty directory");
        match &e {
            NvrtcError::BadOverride { value, tried } => {
                assert_eq!(value, &empty);
                assert!(tried.is_empty(), "{tried:?}");
            }
            other => panic!("expected BadOverride, got {other:?}"),
        }
        assert!(matches!(
            nvrtc::library(),
            Err(NvrtcError::BadOverride { .. })
        ));
        println!("{CHILD_DONE}: {e}");
        return;
    }
    // A loadable NVRTC on LD_LIBRARY_PATH is what a silent fallback would take.
    let Some(nvrtc_dir) = provisioned_dir("IKP_NVRTC_LIB", "libnvrtc.so.12") else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let out = run_child_with(
        "ikp-nvrtc-empty",
        &search_env(
            home.path(),
            &[
                ("IKP_NVRTC", empty.path().into()),
                ("LD_LIBRARY_PATH", nvrtc_dir.into()),
            ],
        ),
    );
    let stdout = assert_child_passed("IKP_NVRTC naming an empty directory", &out);
    assert!(
        stdout.contains(&format!(
            "IKP_NVRTC={} names no loadable NVRTC library",
            empty.path().display()
        )),
        "{stdout}"
    );
}

#[test]
fn without_libnvrtc_compiling_is_a_typed_error() {
    if let Some(mode) = child_mode() {
        assert_eq!(mode, "no-nvrtc");
        let e = Compiler::new(Arch::new(8, 0))
            .ptx("k.cu", "extern \"C\" __global__ void k() {}")
            .expect_err("compiled without libnvrtc");
        match &e {
            NvrtcError::NotFound {
                places,
                names,
                failed,
            } => {
                assert_eq!(names, &NVRTC_NAMES, "{e}");
                for place in ["/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu"] {
                    assert!(places.iter().any(|p| p == place), "{place}: {places:?}");
                }
                assert!(failed.is_empty(), "{failed:?}");
            }
            other => panic!("expected NotFound, got {other:?}"),
        }
        let msg = e.to_string();
        for part in [
            "IKP_NVRTC",
            "pip install nvidia-cuda-nvrtc",
            "libnvrtc.so.13",
        ] {
            assert!(msg.contains(part), "{part:?} missing from {msg}");
        }
        assert!(matches!(nvrtc::version(), Err(NvrtcError::NotFound { .. })));
        assert!(matches!(
            nvrtc::supported_archs(),
            Err(NvrtcError::NotFound { .. })
        ));
        println!("{CHILD_DONE}: {e}");
        return;
    }
    if let Some(found) = system_nvrtc() {
        skip(&format!(
            "this machine has a system NVRTC ({}), so its absence cannot be simulated",
            found.display()
        ));
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let out = run_child_with("no-nvrtc", &search_env(home.path(), &[]));
    let stdout = assert_child_passed("the no-NVRTC scenario", &out);
    assert!(stdout.contains("NVRTC library not found"), "{stdout}");
}

// ---- NVRTC's builtins library: CUDA 13.0's libnvrtc.so.13 has no RPATH ----

/// The provisioning variable naming the lib directory of the unpacked CUDA 13.0.88 NVRTC
/// wheel (scripts/env.sh).
const NVRTC_13_0_VAR: &str = "IKP_NVRTC_13_0_LIB";

/// The provisioned CUDA 13.0 NVRTC directory, its `major.minor` (from the wheel's
/// `.dist-info`), or `None` after a skip under `IKP_GPU_BUNDLE=1`.
fn nvrtc_13_0() -> Option<(PathBuf, (u32, u32))> {
    let dir = provisioned_dir(NVRTC_13_0_VAR, "libnvrtc.so.13")?;
    // .deps/nvrtc-13.0.88/nvidia/cu13/lib: the wheel's root is three levels up.
    let wheel = dir.ancestors().nth(3).unwrap();
    Some((dir.clone(), dist_version(wheel, "nvidia_cuda_nvrtc")))
}

/// The environment of a CUDA 13.0 child: the search's variables cleared, and no
/// `LD_LIBRARY_PATH` at all, so nothing points the dynamic loader at NVRTC's directory.
fn no_library_path_env(
    home: &Path,
    set: &[(&'static str, OsString)],
) -> Vec<(&'static str, Option<OsString>)> {
    let mut env = search_env(home, set);
    env.retain(|(var, _)| *var != "LD_LIBRARY_PATH");
    env.push(("LD_LIBRARY_PATH", None));
    env
}

#[test]
fn nvrtc_13_0_without_rpath_compiles_with_no_library_path() {
    if let Some(mode) = child_mode() {
        assert_eq!(mode, "nvrtc-13.0");
        assert_eq!(std::env::var_os("LD_LIBRARY_PATH"), None);
        return loaded_as_expected(FoundBy::IkpNvrtc, Arch::new(9, 0));
    }
    let Some((dir, (major, minor))) = nvrtc_13_0() else {
        return;
    };
    let want = dir.join("libnvrtc.so.13");
    let home = tempfile::tempdir().unwrap();
    let out = run_child_with(
        "nvrtc-13.0",
        &no_library_path_env(
            home.path(),
            &[
                ("IKP_NVRTC", dir.clone().into()),
                ("IKP_TEST_WANT_PATH", want.clone().into()),
                ("IKP_TEST_WANT_VERSION", format!("{major}.{minor}").into()),
            ],
        ),
    );
    let stdout = assert_child_passed("CUDA 13.0's NVRTC without LD_LIBRARY_PATH", &out);
    assert!(
        stdout.contains(&format!(
            "NVRTC {major}.{minor} at {} (named by IKP_NVRTC; builtins {}/libnvrtc-builtins.so.{major}.{minor})",
            want.display(),
            dir.display()
        )),
        "{stdout}"
    );
}

/// `nvrtcCreateProgram` and `nvrtcCompileProgram` straight from the library at `path`,
/// without ikp: the status of compiling a trivial kernel for sm_90.
fn raw_compile_status(path: &Path) -> i32 {
    use std::ffi::{c_char, c_int, c_void};
    type Create = unsafe extern "C" fn(
        *mut *mut c_void,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> c_int;
    type Compile = unsafe extern "C" fn(*mut c_void, c_int, *const *const c_char) -> c_int;
    type Destroy = unsafe extern "C" fn(*mut *mut c_void) -> c_int;
    // SAFETY: NVRTC's initialisers have no preconditions; the prototypes are nvrtc.h's;
    // every pointer handed over is a NUL-terminated string or array that outlives the call.
    unsafe {
        let lib = libloading::Library::new(path).unwrap();
        let create: libloading::Symbol<Create> = lib.get(b"nvrtcCreateProgram\0").unwrap();
        let compile: libloading::Symbol<Compile> = lib.get(b"nvrtcCompileProgram\0").unwrap();
        let destroy: libloading::Symbol<Destroy> = lib.get(b"nvrtcDestroyProgram\0").unwrap();
        let mut prog = std::ptr::null_mut();
        let src = c"extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }";
        let status = create(
            &mut prog,
            src.as_ptr(),
            c"k.cu".as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        );
        assert_eq!(status, 0, "nvrtcCreateProgram");
        let options = [c"--gpu-architecture=sm_90".as_ptr()];
        let status = compile(prog, 1, options.as_ptr());
        destroy(&mut prog);
        // Kept loaded: NVRTC may have started threads or registered handlers.
        std::mem::forget(lib);
        status
    }
}

#[test]
fn without_ikp_nvrtc_13_0_fails_with_builtin_operation_failure() {
    if let Some(mode) = child_mode() {
        assert_eq!(mode, "nvrtc-13.0-raw");
        let dir = PathBuf::from(from_parent("IKP_TEST_NVRTC_DIR"));
        let status = raw_compile_status(&dir.join("libnvrtc.so.13"));
        assert_eq!(
            nvrtc::NvrtcStatus(status),
            nvrtc::NvrtcStatus::BUILTIN_OPERATION_FAILURE,
            "CUDA 13.0's NVRTC found its builtins without ikp's help"
        );
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        assert!(!maps.contains("libnvrtc-builtins"), "builtins mapped");
        println!(
            "{CHILD_DONE}: raw compile status {}",
            nvrtc::NvrtcStatus(status)
        );
        return;
    }
    let Some((dir, (major, minor))) = nvrtc_13_0() else {
        return;
    };
    let builtins = format!("libnvrtc-builtins.so.{major}.{minor}");
    if system_has_library(&builtins) {
        skip(&format!(
            "the dynamic loader finds a system {builtins}, so NVRTC finds it without ikp \
                 and the failure cannot be shown"
        ));
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let out = run_child_with(
        "nvrtc-13.0-raw",
        &no_library_path_env(home.path(), &[("IKP_TEST_NVRTC_DIR", dir.into())]),
    );
    let stdout = assert_child_passed("CUDA 13.0's NVRTC through the raw API", &out);
    assert!(
        stdout.contains("raw compile status NVRTC_ERROR_BUILTIN_OPERATION_FAILURE"),
        "{stdout}"
    );
}
