//! What the run finds out about the machine before any check: whether it has an NVIDIA
//! GPU at all, whether ikp can open it (and if not, why), and the facts a reader of the
//! results needs to compare runs: GPU, SMs, driver, NVRTC, the library files loaded
//! (`libcuda`, `nvrtc_library` and how ikp's search found it, `nvrtc_builtins`), clocks.
//!
//! "Has a GPU" and "ikp can open it" are told apart on purpose: a machine whose kernel
//! lists an NVIDIA GPU but whose driver library is missing or a stub must fail the run,
//! not skip every check (which would report a green run with nothing measured).

use std::path::Path;
use std::process::Command;

use ikp_host::cuda::cudarc::driver::sys;
use ikp_host::cuda::{self, SessionError};
use serde_json::{json, Map, Value};

/// Whether ikp can run GPU checks here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Availability {
    /// Device 0 opened.
    Gpu,
    /// No GPU for ikp to use; the reason (no driver library, or `CUDA_ERROR_NO_DEVICE`).
    NoGpu(String),
    /// The driver is there but failed in another way (a stub library, a driver too old for
    /// the device): a failure, not a skip.
    Broken(String),
}

/// Evidence that the operating system sees an NVIDIA GPU, independent of libcuda: the
/// kernel module's GPU list, or the device node of GPU 0.
pub fn os_sees_gpu() -> Vec<String> {
    let mut seen: Vec<String> = std::fs::read_dir("/proc/driver/nvidia/gpus")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().display().to_string())
        .collect();
    if Path::new("/dev/nvidia0").exists() {
        seen.push("/dev/nvidia0".into());
    }
    seen
}

/// Classifies the result of asking the driver for devices. "No GPU" reasons are short (each
/// skipped check repeats one); the machine's `gpu_unavailable` has the driver's full error.
pub fn classify(count: &Result<usize, SessionError>) -> Availability {
    match count {
        Ok(n) if *n > 0 => Availability::Gpu,
        Ok(_) => Availability::NoGpu("the CUDA driver reports no device".into()),
        Err(SessionError::NoDriver { .. }) => {
            Availability::NoGpu("no CUDA driver library (libcuda) could be loaded".into())
        }
        Err(e) if e.is_no_device() => {
            Availability::NoGpu("the CUDA driver reports no device (CUDA_ERROR_NO_DEVICE)".into())
        }
        Err(e) => Availability::Broken(e.to_string()),
    }
}

/// Probes the driver and describes the machine. Opens device 0 (and drops the context)
/// only when the driver reports one.
pub fn describe() -> (Availability, Map<String, Value>) {
    let count = cuda::device_count();
    let avail = classify(&count);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease");
    let driver = cuda::driver_version().map(|(major, minor)| format!("{major}.{minor}"));
    let Value::Object(mut m) = json!({
        "os_gpu_evidence": os_sees_gpu(),
        "kernel": kernel.as_deref().map(str::trim).ok(),
        "host_cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "libcuda": cuda::driver_library().map(|p| p.display().to_string()),
        "driver_cuda_version": driver.ok(),
    }) else {
        unreachable!("an object")
    };
    // An unreadable kernel release or driver version is left out, not null.
    m.retain(|k, v| !v.is_null() || k == "libcuda");
    match &avail {
        Availability::Gpu => describe_device(&mut m),
        Availability::NoGpu(why) | Availability::Broken(why) => {
            m.insert("gpu".into(), Value::Null);
            let full = count
                .as_ref()
                .err()
                .map_or_else(|| why.clone(), |e| e.to_string());
            m.insert("gpu_unavailable".into(), json!(full));
        }
    }
    describe_nvrtc(&mut m);
    if let Some(smi) = nvidia_smi() {
        m.extend(smi);
    }
    (avail, m)
}

fn describe_device(m: &mut Map<String, Value>) {
    let ctx = match cuda::open_device(0) {
        Ok(c) => c,
        Err(e) => {
            m.insert("gpu_unavailable".into(), json!(e.to_string()));
            return;
        }
    };
    m.insert("gpu".into(), json!(ctx.name().ok()));
    if let Ok((ma, mi)) = ctx.compute_capability() {
        m.insert("compute_capability".into(), json!(format!("{ma}.{mi}")));
    }
    m.insert(
        "gpu_memory_mib".into(),
        json!(ctx.total_mem().ok().map(|b| b >> 20)),
    );
    use sys::CUdevice_attribute as A;
    #[rustfmt::skip]
    let attrs = [
        ("sm_count", A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        ("sm_clock_max_khz", A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        ("memory_clock_max_khz", A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        ("l2_bytes", A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
        ("max_threads_per_sm", A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
        ("cooperative_launch", A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH),
    ];
    for (key, a) in attrs {
        // Some attributes are deprecated in newer drivers: "when readable".
        m.insert(key.into(), json!(ctx.attribute(a).ok()));
    }
}

fn describe_nvrtc(m: &mut Map<String, Value>) {
    let found = match ikp_host::cuda::nvrtc::library() {
        Ok(lib) => json!({
            "nvrtc_version": format!("{}.{}", lib.version().0, lib.version().1),
            "nvrtc_library": lib.path().display().to_string(),
            "nvrtc_found_by": lib.found_by().to_string(),
            "nvrtc_builtins": lib.builtins().map(|p| p.display().to_string()),
        }),
        Err(e) => json!({"nvrtc_version": null, "nvrtc_error": e.to_string()}),
    };
    if let Value::Object(o) = found {
        m.extend(o);
    }
}

/// Driver version, current and maximum clocks, power state and temperature as
/// `nvidia-smi` reports them for GPU 0 (`None` when it is not installed).
pub fn nvidia_smi() -> Option<Map<String, Value>> {
    const FIELDS: &str = "driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,\
                          pstate,temperature.gpu,power.draw,pcie.link.gen.current,\
                          pcie.link.width.current";
    let out = Command::new("nvidia-smi")
        .args([
            "--id=0",
            &format!("--query-gpu={FIELDS}"),
            "--format=csv,noheader,nounits",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let line = String::from_utf8_lossy(&out.stdout);
    let values: Vec<&str> = line.lines().next()?.split(',').map(str::trim).collect();
    Some(
        FIELDS
            .split(',')
            .zip(values)
            .map(|(k, v)| (format!("smi_{}", k.replace('.', "_")), json!(v)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ikp_host::cuda::cudarc::driver::DriverError;

    #[test]
    fn only_no_driver_and_no_device_mean_no_gpu() {
        assert_eq!(classify(&Ok(1)), Availability::Gpu);
        assert!(matches!(classify(&Ok(0)), Availability::NoGpu(_)));
        let no_driver = SessionError::NoDriver {
            searched: vec!["libcuda.so.1".into()],
        };
        assert!(matches!(classify(&Err(no_driver)), Availability::NoGpu(_)));
        let no_device =
            SessionError::driver("cuInit", DriverError(sys::CUresult::CUDA_ERROR_NO_DEVICE));
        assert!(matches!(classify(&Err(no_device)), Availability::NoGpu(_)));
        let stub = SessionError::driver(
            "cuInit",
            DriverError(sys::CUresult::CUDA_ERROR_STUB_LIBRARY),
        );
        match classify(&Err(stub)) {
            Availability::Broken(why) => assert!(why.contains("CUDA_ERROR_STUB_LIBRARY"), "{why}"),
            other => panic!("a stub driver classified as {other:?}"),
        }
    }
}
