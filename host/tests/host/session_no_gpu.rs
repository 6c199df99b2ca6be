//! The GPU side of the host on machines without a GPU, for real: once with no CUDA driver
//! library at all, once with NVIDIA's real `libcuda.so.1` (Debian's libcuda1, unpacked by
//! scripts/provision.sh into `$IKP_LIBCUDA_DIR`) and no device, once with a stub driver
//! whose `cuInit` answers `CUDA_ERROR_STUB_LIBRARY` (as the toolkit's link stub does), and
//! once with such a stub named `libcuda.so` ahead of the real `libcuda.so.1` (cudarc tries
//! `libcuda.so` first; ikp must name both files instead of running on the stub). Each
//! scenario runs in a child process with its own `LD_LIBRARY_PATH`, from which every other
//! directory holding a driver library is removed; the child must get a typed error, not a
//! cudarc panic, and the GPU tests' gate must skip only for "no GPU".
//!
//! Where a GPU is present, or the dynamic loader finds a driver library by itself (its
//! cache or default directories, which no `LD_LIBRARY_PATH` hides), these scenarios
//! cannot be set up and the tests skip, saying so.

use std::path::{Path, PathBuf};

use crate::session_support::*;
use ikp_host::cuda::cudarc::driver::{sys::CUresult, DeviceRepr, DriverError};
use ikp_host::cuda::{
    device_count, driver_library, driver_version, open_device, probe_driver, HostSession, IkpArg,
    SessionError,
};

const LIBCUDA: &str = "libcuda.so.1";

/// Why a scenario that needs to control which driver library loads cannot run here: a
/// GPU (the fake drivers are pointless where the real one runs, and the GPU tests cover
/// it), or a driver library the dynamic loader finds without `LD_LIBRARY_PATH`.
fn real_driver_here() -> Option<String> {
    if machine_has_gpu() {
        return Some("this machine has an NVIDIA GPU and its driver (CI has neither)".into());
    }
    system_libcuda().map(|name| {
        format!(
            "the dynamic loader finds a system {name} by itself, which no LD_LIBRARY_PATH \
             hides (CI has none)"
        )
    })
}

/// The current `LD_LIBRARY_PATH` without any directory holding a driver library, with
/// `prepend` in front.
fn path_with_only(prepend: &[&Path]) -> String {
    let others = libcuda_dirs_on_library_path();
    let remove: Vec<&Path> = others.iter().map(PathBuf::as_path).collect();
    library_path(&remove, prepend)
}

fn no_driver_child() {
    let probe = probe_driver().expect_err("probe_driver found a driver");
    let open = open_device(0).expect_err("open_device succeeded without a driver");
    let count = device_count().expect_err("device_count succeeded without a driver");
    for e in [&probe, &open, &count] {
        match e {
            SessionError::NoDriver { searched } => {
                assert!(searched.iter().any(|s| s == LIBCUDA), "{searched:?}")
            }
            other => panic!("expected NoDriver, got {other:?}"),
        }
        assert_eq!(e.driver_code(), None);
        assert!(!e.is_no_device());
    }
    assert!(matches!(
        driver_version(),
        Err(SessionError::NoDriver { .. })
    ));
    assert_eq!(driver_library(), None);
    let msg = open.to_string();
    assert!(msg.starts_with("no CUDA driver found"), "{msg}");
    assert!(
        msg.contains(LIBCUDA) && msg.contains("LD_LIBRARY_PATH"),
        "{msg}"
    );
    println!("{CHILD_DONE}: {msg}");
}

fn no_device_child() {
    probe_driver().expect("the provisioned libcuda.so.1 should load");
    // Without a device the driver still says which CUDA it supports and which file it is.
    let (major, minor) = driver_version().expect("cuDriverGetVersion needs no device");
    assert!(major >= 11 && minor < 100, "driver CUDA {major}.{minor}");
    let lib = driver_library().expect("the loaded libcuda appears in /proc/self/maps");
    let want = std::env::var_os("IKP_LIBCUDA_DIR").expect("inherited from the parent");
    assert_eq!(
        lib.parent().unwrap().canonicalize().unwrap(),
        std::path::Path::new(&want).canonicalize().unwrap(),
        "libcuda loaded from {}",
        lib.display()
    );
    println!("driver CUDA {major}.{minor} from {}", lib.display());
    let e = open_device(0).expect_err("open_device succeeded without a GPU");
    assert!(e.is_no_device(), "expected CUDA_ERROR_NO_DEVICE, got {e:?}");
    assert_eq!(e.driver_code(), Some(CUresult::CUDA_ERROR_NO_DEVICE));
    let msg = e.to_string();
    assert!(
        msg.contains("cuInit") && msg.contains("CUDA_ERROR_NO_DEVICE"),
        "message should name the call and the code: {msg}"
    );
    // Same driver, other entry points: no panic, and "no device" means zero devices.
    assert_eq!(device_count().expect("device_count with a driver"), 0);
    assert!(open_device(3).unwrap_err().is_no_device());
    println!("{CHILD_DONE}: {msg}");
}

#[test]
fn without_libcuda_every_entry_point_reports_no_driver() {
    if let Some(mode) = child_mode() {
        assert_eq!(mode, "no-driver");
        return no_driver_child();
    }
    if let Some(why) = real_driver_here() {
        skip(&format!(
            "{why}, so a machine without a driver cannot be simulated"
        ));
        return;
    }
    let Some(libcuda_dir) = provisioned_dir("IKP_LIBCUDA_DIR", LIBCUDA) else {
        return;
    };
    // Every directory holding a driver library goes, the provisioned one too.
    let others = libcuda_dirs_on_library_path();
    let mut remove: Vec<&Path> = others.iter().map(PathBuf::as_path).collect();
    remove.push(&libcuda_dir);
    let path = library_path(&remove, &[]);
    let out = run_child("no-driver", &path);
    let stdout = assert_child_passed("the no-driver scenario", &out);
    assert!(stdout.contains("no CUDA driver found"), "{stdout}");
}

#[test]
fn real_libcuda_without_gpu_reports_cuda_error_no_device() {
    if let Some(mode) = child_mode() {
        assert_eq!(mode, "no-device");
        return no_device_child();
    }
    if machine_has_gpu() {
        skip(
            "this machine has an NVIDIA GPU, so the driver will not answer \
             CUDA_ERROR_NO_DEVICE (CI has none)",
        );
        return;
    }
    let Some(libcuda_dir) = provisioned_dir("IKP_LIBCUDA_DIR", LIBCUDA) else {
        return;
    };
    // A system libcuda.so.1 is harmless (the provisioned one comes first on the path), a
    // system libcuda.so is not when the provisioned directory has none to come first.
    if !libcuda_dir.join("libcuda.so").exists() && system_has_library("libcuda.so") {
        skip(&format!(
            "the dynamic loader finds a system libcuda.so, which cudarc tries before \
                 libcuda.so.1, and {} has no libcuda.so to come first",
            libcuda_dir.display()
        ));
        return;
    }
    let path = path_with_only(&[&libcuda_dir]);
    let out = run_child("no-device", &path);
    let stdout = assert_child_passed("the no-device scenario", &out);
    assert!(stdout.contains("CUDA_ERROR_NO_DEVICE"), "{stdout}");
}

#[test]
fn driver_errors_keep_call_and_code() {
    // Constructing the error must not touch libcuda (absent in this process).
    let e = SessionError::driver(
        "cuMemAlloc",
        DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY),
    );
    assert_eq!(e.driver_code(), Some(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
    assert!(!e.is_no_device());
    let msg = e.to_string();
    assert!(
        msg.contains("cuMemAlloc") && msg.contains("CUDA_ERROR_OUT_OF_MEMORY"),
        "{msg}"
    );
    assert!(SessionError::NotReadBack
        .to_string()
        .contains("read_back()"));
}

fn assert_device_repr<T: DeviceRepr>() {}

#[test]
fn ikp_arg_has_the_layout_of_kernel_arg() {
    assert_device_repr::<IkpArg>();
    assert_eq!(std::mem::size_of::<IkpArg>(), 40);
    assert_eq!(std::mem::align_of::<IkpArg>(), 8);
    let layout = ikp_device::Layout {
        grid: [3, 2, 1],
        groups_per_block: 2,
        records_per_lane: 10,
        timer: ikp_device::TimerMode::Globaltimer,
        regions: vec!["a".into(), "b".into()],
        counters: vec!["w".into()],
        ..ikp_device::Layout::default()
    };
    let arg = IkpArg::from(layout.kernel_arg(0x7f00_dead_beef_0000));
    // The bytes the driver copies into the parameter space, field by field at the offsets
    // of ikp::Arg.
    let bytes: [u8; 40] = unsafe { std::mem::transmute(arg) };
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    assert_eq!(
        u64::from_le_bytes(bytes[..8].try_into().unwrap()),
        0x7f00_dead_beef_0000
    );
    assert_eq!(
        u32_at(8) as u64,
        layout.header_len() + 12,
        "after the launch counters"
    );
    assert_eq!(u32_at(12) as u64, layout.lane_stride());
    assert_eq!(u32_at(16), 10);
    assert_eq!(u32_at(20), 2);
    assert_eq!(u32_at(24), 12);
    assert_eq!(u32_at(28), 1);
    assert_eq!((u32_at(32), u32_at(36)), (1, 0), "epochs, reserved");
    assert_eq!(arg.lane_count, 12, "Deref to KernelArg");
}

#[test]
fn host_session_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<HostSession>();
    check::<SessionError>();
}

/// A driver library named `name` whose `cuInit` fails with CUDA_ERROR_STUB_LIBRARY (34),
/// built with the system C compiler into `dir`.
fn build_stub_libcuda(dir: &std::path::Path, name: &str) {
    let src = dir.join("stub.c");
    std::fs::write(
        &src,
        "int cuInit(unsigned flags) { (void)flags; return 34; }\n\
         int cuGetErrorString(int e, const char** s) { (void)e; *s = \"stub library\"; return 0; }\n\
         int cuGetErrorName(int e, const char** s) { (void)e; *s = \"CUDA_ERROR_STUB_LIBRARY\"; return 0; }\n",
    )
    .unwrap();
    let out = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(dir.join(name))
        .arg(&src)
        .output()
        .expect("running the C compiler (cc)");
    assert!(
        out.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn stub_driver_child() {
    // The gate's own switch must not decide this scenario.
    std::env::remove_var("IKP_GPU_TESTS");
    let e = device_count().expect_err("device_count succeeded on a stub driver");
    assert_eq!(
        e.driver_code(),
        Some(CUresult::CUDA_ERROR_STUB_LIBRARY),
        "expected the stub's error, got {e:?}"
    );
    // The GPU tests' gate fails instead of skipping: a stub is not "no GPU".
    let gate = std::panic::catch_unwind(|| gpu_or_skip().is_some());
    let msg = match gate {
        Ok(opened) => panic!("gpu_or_skip returned (opened: {opened}) on a stub driver"),
        Err(p) => p
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| "non-string panic".into()),
    };
    assert!(msg.contains("CUDA_ERROR_STUB_LIBRARY"), "{msg}");
    println!("{CHILD_DONE}: {msg}");
}

#[test]
fn a_stub_driver_fails_the_gpu_gate_instead_of_skipping() {
    if let Some(mode) = child_mode() {
        assert_eq!(mode, "stub-driver");
        return stub_driver_child();
    }
    if let Some(why) = real_driver_here() {
        skip(&format!("{why}, which could be loaded instead of the stub"));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    build_stub_libcuda(dir.path(), LIBCUDA);
    let path = path_with_only(&[dir.path()]);
    let out = run_child("stub-driver", &path);
    let stdout = assert_child_passed("the stub-driver scenario", &out);
    assert!(stdout.contains("CUDA_ERROR_STUB_LIBRARY"), "{stdout}");
}

fn shadowed_driver_child() {
    std::env::remove_var("IKP_GPU_TESTS");
    let stub = PathBuf::from(std::env::var_os("IKP_TEST_STUB").expect("set by the parent"));
    let want = std::env::var_os("IKP_LIBCUDA_DIR").expect("inherited from the parent");
    let e = probe_driver().expect_err("probe_driver accepted a shadowed driver");
    match &e {
        SessionError::ShadowedDriver {
            driver,
            name,
            other,
        } => {
            assert_eq!(name, "libcuda.so");
            assert_eq!(other, &stub.canonicalize().unwrap());
            assert_eq!(
                driver.parent().unwrap(),
                Path::new(&want).canonicalize().unwrap(),
                "libcuda.so.1 resolved to {}",
                driver.display()
            );
        }
        other => panic!("expected ShadowedDriver, got {other:?}"),
    }
    let msg = e.to_string();
    assert!(
        msg.contains(&stub.canonicalize().unwrap().display().to_string()),
        "{msg}"
    );
    // Every entry point says the same and none runs on the stub.
    for other in [
        device_count().unwrap_err(),
        open_device(0).unwrap_err(),
        driver_version().unwrap_err(),
    ] {
        assert!(
            matches!(other, SessionError::ShadowedDriver { .. }),
            "{other:?}"
        );
    }
    assert_eq!(driver_library(), None);
    // Not "no GPU": the GPU tests' gate fails.
    let gate = std::panic::catch_unwind(|| gpu_or_skip().is_some());
    assert!(gate.is_err(), "gpu_or_skip passed a shadowed driver");
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    assert!(
        !maps.contains(&stub.display().to_string()),
        "the stub stayed mapped"
    );
    println!("{CHILD_DONE}: {msg}");
}

#[test]
fn a_libcuda_so_ahead_of_the_driver_is_named_not_used() {
    if let Some(mode) = child_mode() {
        assert_eq!(mode, "shadowed-driver");
        return shadowed_driver_child();
    }
    if let Some(why) = real_driver_here() {
        skip(&format!("{why}, which could be loaded instead"));
        return;
    }
    let Some(libcuda_dir) = provisioned_dir("IKP_LIBCUDA_DIR", LIBCUDA) else {
        return;
    };
    // A toolkit's lib64/stubs on the path: a libcuda.so that is not the driver, ahead of
    // the directory holding the driver's libcuda.so.1.
    let stubs = tempfile::tempdir().unwrap();
    build_stub_libcuda(stubs.path(), "libcuda.so");
    let stub = stubs.path().join("libcuda.so");
    let path = path_with_only(&[stubs.path(), &libcuda_dir]);
    let out = run_child_with(
        "shadowed-driver",
        &[
            ("LD_LIBRARY_PATH", Some(path.into())),
            ("IKP_TEST_STUB", Some(stub.clone().into())),
        ],
    );
    let stdout = assert_child_passed("the shadowed-driver scenario", &out);
    assert!(
        stdout.contains("cudarc loads libcuda.so first and that is another file"),
        "{stdout}"
    );
}
