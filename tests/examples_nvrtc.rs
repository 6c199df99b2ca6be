//! Every example kernel compiles with NVRTC through `ikp_host::cuda::nvrtc`, to PTX and to
//! cubins for several architectures, instrumented and compiled out, and its host-side
//! names match the ids the kernel uses. No GPU needed (CI cannot launch them; it can
//! compile them).
use crate::support;
use crate::{load_compute_store, persistent, persistent_stream, warp_specialized};
use ikp::device::Layout;
use ikp::host::{
    cuda::nvrtc::{self, Compiler},
    Arch,
};

struct Example {
    name: &'static str,
    source: &'static str,
    layout: Layout,
    regions: &'static [&'static str],
    counters: &'static [&'static str],
}

fn examples() -> Vec<Example> {
    vec![
        Example {
            name: load_compute_store::NAME,
            source: load_compute_store::KERNEL,
            layout: load_compute_store::layout(),
            regions: &load_compute_store::REGIONS,
            counters: &[],
        },
        Example {
            name: warp_specialized::NAME,
            source: warp_specialized::KERNEL,
            layout: warp_specialized::layout(),
            regions: &warp_specialized::REGIONS,
            counters: &warp_specialized::COUNTERS,
        },
        Example {
            name: persistent::NAME,
            source: persistent::KERNEL,
            layout: {
                let (blocks, tiles) = persistent::shape(132);
                persistent::layout(blocks, tiles)
            },
            regions: &persistent::REGIONS,
            counters: &[],
        },
        Example {
            name: persistent_stream::NAME,
            source: persistent_stream::KERNEL,
            layout: persistent_stream::layout(132),
            regions: &persistent_stream::REGIONS,
            counters: &[],
        },
    ]
}

/// Oldest architecture the examples are written for (`__syncwarp`, 64-bit atomics,
/// %globaltimer); CUDA 13 no longer targets it.
const OLDEST: Arch = Arch::new(7, 0);
/// Cubin targets, of which those the loaded NVRTC supports are built.
const CUBIN_ARCHS: [&str; 5] = ["sm_70", "sm_80", "sm_89", "sm_90", "sm_120"];

/// The oldest architecture both the examples and the loaded NVRTC support: sm_70 with
/// CUDA 12, sm_75 with CUDA 13 (which dropped Volta).
fn oldest() -> Arch {
    let supported = nvrtc::supported_archs().unwrap();
    let n = *supported
        .iter()
        .find(|&&a| a >= OLDEST.number())
        .unwrap_or_else(|| panic!("no architecture from {OLDEST} on in {supported:?}"));
    Arch::new(n / 10, n % 10)
}

/// The [`CUBIN_ARCHS`] the loaded NVRTC supports; sm_80 and sm_90 must be among them.
fn cubin_archs() -> Vec<Arch> {
    let supported = nvrtc::supported_archs().unwrap();
    let archs: Vec<Arch> = CUBIN_ARCHS
        .iter()
        .map(|a| a.parse().unwrap())
        .filter(|a: &Arch| supported.contains(&a.number()))
        .collect();
    for must in [Arch::new(8, 0), Arch::new(9, 0)] {
        assert!(archs.contains(&must), "{must} not supported: {supported:?}");
    }
    archs
}

fn require_nvrtc() {
    if let Err(e) = nvrtc::probe() {
        panic!("{e}");
    }
}

fn param_decl(name: &str, index: usize) -> String {
    format!(".param .align 8 .b8 {name}_param_{index}[40]")
}

/// The `enum : unsigned { A = 0, B = 1 }` of `source` whose first name is `first`.
fn kernel_enum(source: &str, first: &str) -> Vec<(String, u32)> {
    support::unsigned_enums(source)
        .into_iter()
        .find(|items| items.first().is_some_and(|(n, _)| n == first))
        .unwrap_or_else(|| panic!("no enum starting with {first} in the kernel source"))
}

fn check_names(ex: &Example) {
    assert_eq!(ex.layout.regions, ex.regions, "{}: layout names", ex.name);
    assert_eq!(
        ex.layout.counters, ex.counters,
        "{}: layout counters",
        ex.name
    );
    for names in [ex.regions, ex.counters] {
        if names.is_empty() {
            continue;
        }
        let ids = kernel_enum(ex.source, &names[0].to_uppercase());
        let expect: Vec<(String, u32)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_uppercase(), i as u32))
            .collect();
        assert_eq!(
            ids, expect,
            "{}: host names and kernel ids disagree",
            ex.name
        );
    }
    ex.layout.header_words().expect("example layout is valid");
}

fn check_example(ex: &Example) {
    require_nvrtc();
    check_names(ex);
    let file = format!("{}.cu", ex.name);
    let entry = format!(".entry {}(", ex.name);
    // ikp::Arg is the fifth parameter of every example kernel.
    let arg = param_decl(ex.name, 4);

    let newest = *nvrtc::supported_archs().unwrap().last().unwrap();
    for arch in [oldest(), Arch::new(newest / 10, newest % 10)] {
        let on = Compiler::new(arch)
            .ptx(&file, ex.source)
            .unwrap_or_else(|e| panic!("{e}"));
        let on = on.ptx().unwrap();
        assert!(
            on.contains(&entry) && on.contains(&arg),
            "{} {arch}: entry / ikp::Arg",
            ex.name
        );
        assert!(
            on.contains("%globaltimer_lo"),
            "{} {arch}: no timestamps",
            ex.name
        );
        if !ex.counters.is_empty() {
            assert!(
                on.contains("red.") || on.contains("atom."),
                "{}: no counter add",
                ex.name
            );
        }
        let off = Compiler::new(arch)
            .profiling(false)
            .ptx(&file, ex.source)
            .unwrap_or_else(|e| panic!("{e}"));
        let off = off.ptx().unwrap();
        assert!(
            off.contains(&entry) && off.contains(&arg),
            "{} {arch} off: signature",
            ex.name
        );
        for marker in ["%globaltimer", "%smid", "%clock"] {
            assert!(
                !off.contains(marker),
                "{} {arch}: compiled-out PTX has {marker}",
                ex.name
            );
        }
    }
    for arch in cubin_archs() {
        let cubin = Compiler::new(arch)
            .cubin(&file, ex.source)
            .unwrap_or_else(|e| panic!("{e}"));
        let elf = cubin.cubin().unwrap();
        assert_eq!(&elf[..4], b"\x7fELF", "{} {arch}: not ELF", ex.name);
        assert_eq!(
            u16::from_le_bytes([elf[18], elf[19]]),
            190,
            "{} {arch}: not EM_CUDA",
            ex.name
        );
        assert!(
            elf.windows(ex.name.len()).any(|w| w == ex.name.as_bytes()),
            "{} {arch}: kernel symbol missing from the cubin",
            ex.name
        );
    }
}

#[test]
fn load_compute_store_kernel_compiles() {
    check_example(&examples()[0]);
}

#[test]
fn warp_specialized_kernel_compiles() {
    check_example(&examples()[1]);
    // The hand-over is through mbarriers from sm_80 on (what racecheck understands), and
    // through shared-memory counters before.
    let ptx = |arch: Arch| {
        Compiler::new(arch)
            .ptx("warp_specialized.cu", warp_specialized::KERNEL)
            .unwrap_or_else(|e| panic!("{e}"))
            .ptx()
            .unwrap()
            .to_owned()
    };
    for arch in [Arch::new(8, 0), Arch::new(9, 0)] {
        let p = ptx(arch);
        for op in [
            "mbarrier.init.shared.b64",
            "mbarrier.arrive.shared.b64",
            "mbarrier.test_wait.parity.shared.b64",
        ] {
            assert!(p.contains(op), "{arch}: no {op}");
        }
    }
    assert!(!ptx(oldest()).contains("mbarrier"), "{}", oldest());
}

#[test]
fn persistent_kernel_compiles() {
    check_example(&examples()[2]);
}

#[test]
fn every_example_directory_is_covered() {
    let mut dirs: Vec<String> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("kernel.cu").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    let mut covered: Vec<String> = examples().iter().map(|e| e.name.to_owned()).collect();
    covered.sort();
    assert_eq!(
        dirs, covered,
        "an example kernel is not compiled by this test"
    );
}

#[test]
fn readme_kernel_compiles() {
    require_nvrtc();
    let readme = include_str!("../README.md");
    let section = &readme[readme
        .find("## A Rust launcher with `HostSession`")
        .expect("README section `A Rust launcher with HostSession`")..];
    let start = section
        .find("r#\"")
        .expect("kernel source in the README example")
        + 3;
    let source = &section[start..start + section[start..].find("\"#").unwrap()];
    let cubin = Compiler::new(Arch::new(8, 0))
        .cubin("readme.cu", source)
        .unwrap_or_else(|e| panic!("the README kernel does not compile: {e}"));
    assert!(
        cubin.bytes().windows(2).any(|w| w == b"k\0"),
        "kernel k missing"
    );
}

/// The C++ launcher of persistent_stream (`launcher.cu`: `ikp_host.hpp`'s HostLayout and
/// StreamDrain around the same kernel) builds with nvcc for sm_80 and sm_90 against the
/// generated headers, warnings as errors, as the GPU bundle builds it on the GPU machine;
/// run here, without a GPU, it stops with the CUDA runtime's error, named, and exit 1.
#[test]
fn the_cpp_stream_launcher_builds_with_nvcc() {
    let tools = match ikp::host::sass::CudaTools::discover() {
        Ok(t) => t,
        Err(e) => panic!("{e} (scripts/provision.sh installs nvcc; source scripts/env.sh)"),
    };
    let dir = tempfile::tempdir().unwrap();
    ikp::device::cuh::write_to_dir(dir.path()).unwrap();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/persistent_stream/launcher.cu");
    // One nvcc run, one host compile: device code for both architectures in one binary.
    let exe = dir.path().join("launcher");
    let out = std::process::Command::new(&tools.nvcc)
        .args(["-std=c++17", "-O2", "-Xcompiler=-Wall,-Wextra,-Werror"])
        .args([
            "-gencode=arch=compute_80,code=sm_80",
            "-gencode=arch=compute_90,code=sm_90",
        ])
        .arg("-I")
        .arg(dir.path())
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nvcc sm_80, sm_90:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if !matches!(ikp::host::cuda::device_count(), Ok(n) if n > 0) {
        let run = std::process::Command::new(&exe)
            .arg(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{err}");
        assert!(
            err.starts_with("persistent_stream_cpp: cudaDeviceGetAttribute: "),
            "{err}"
        );
    }
}
