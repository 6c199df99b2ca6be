//! The NVRTC helper against the real libnvrtc (provisioned by scripts/provision.sh; no GPU
//! needed): the ikp header is found, PTX and cubins come out for the requested
//! architecture, the compile-out switch removes every marker, errors are typed.
mod session_support;

use ikp_host::nvrtc::{self, Arch, Compiler, NvrtcError, Target};
use session_support::*;

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
}
"#;

fn require_nvrtc() {
    if let Err(e) = nvrtc::probe() {
        panic!("{e}");
    }
}

/// `needle` occurs as a whole token (`%clock` does not match `%clock64`).
fn has_token(text: &str, needle: &str) -> bool {
    text.match_indices(needle).any(|(i, _)| {
        !text[i + needle.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    })
}

#[test]
fn nvrtc_reports_its_version_and_architectures() {
    require_nvrtc();
    let (major, _minor) = nvrtc::version().unwrap();
    assert!(major >= 12, "NVRTC {major}.x: the provisioned one is 12.9");
    let archs = nvrtc::supported_archs().unwrap();
    assert!(archs.windows(2).all(|w| w[0] < w[1]), "{archs:?}");
    for a in [70, 80, 90] {
        assert!(archs.contains(&a), "sm_{a} missing from {archs:?}");
    }
}

#[test]
fn the_whole_device_api_compiles_to_ptx_with_the_header_in_memory() {
    require_nvrtc();
    let ptx = Compiler::new(Arch::new(7, 0))
        .ptx("api_tour.cu", ALL_OF_THE_API)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ptx.target(), Target::Ptx);
    assert_eq!(ptx.arch(), Arch::new(7, 0));
    assert!(ptx.cubin().is_none());
    let text = ptx.ptx().unwrap();
    assert!(text.contains(".target sm_70"), "PTX for compute_70");
    assert!(text.contains(".entry api_tour("), "kernel entry missing");
    // ikp::Arg is passed by value: one 32-byte, 8-aligned parameter, like IkpArg.
    assert!(
        text.contains(".param .align 8 .b8 api_tour_param_2[32]"),
        "ikp::Arg parameter is not 32 bytes aligned 8:\n{}",
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
    for arch in ["sm_75", "sm_80", "sm_90a", "sm_120"] {
        let arch: Arch = arch.parse().unwrap();
        assert!(supported.contains(&arch.number()), "{arch} unsupported");
        let cubin = Compiler::new(arch)
            .cubin("api_tour.cu", ALL_OF_THE_API)
            .unwrap_or_else(|e| panic!("{e}"));
        let elf = cubin.cubin().unwrap();
        assert_eq!(&elf[..4], b"\x7fELF", "{arch}: not an ELF image");
        assert_eq!(elf[4], 2, "{arch}: cubins are ELF64");
        // e_machine 190 = EM_CUDA.
        assert_eq!(
            u16::from_le_bytes([elf[18], elf[19]]),
            190,
            "{arch}: not a CUDA ELF"
        );
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
    assert!(off.contains(".param .align 8 .b8 api_tour_param_2[32]"));
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

#[test]
fn without_libnvrtc_compiling_is_a_typed_error() {
    if let Some(mode) = child_mode() {
        assert_eq!(mode, "no-nvrtc");
        let e = Compiler::new(Arch::new(8, 0))
            .ptx("k.cu", "extern \"C\" __global__ void k() {}")
            .expect_err("compiled without libnvrtc");
        match &e {
            NvrtcError::NotFound { searched } => {
                assert!(
                    searched.iter().any(|s| s == "libnvrtc.so.12"),
                    "{searched:?}"
                )
            }
            other => panic!("expected NotFound, got {other:?}"),
        }
        assert!(matches!(nvrtc::version(), Err(NvrtcError::NotFound { .. })));
        assert!(matches!(
            nvrtc::supported_archs(),
            Err(NvrtcError::NotFound { .. })
        ));
        println!("{CHILD_DONE}: {e}");
        return;
    }
    let nvrtc_dir = provisioned_dir("IKP_NVRTC_LIB", "libnvrtc.so.12");
    if system_has_library("libnvrtc.so.12") {
        skip(
            "without_libnvrtc_compiling_is_a_typed_error",
            "a system libnvrtc.so.12 is installed, so its absence cannot be simulated",
        );
        return;
    }
    let out = run_child(
        "without_libnvrtc_compiling_is_a_typed_error",
        "no-nvrtc",
        &library_path(&[&nvrtc_dir], &[]),
    );
    let stdout = assert_child_passed("the no-NVRTC scenario", &out);
    assert!(stdout.contains("NVRTC library not found"), "{stdout}");
}
