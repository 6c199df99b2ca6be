//! Taking a session's clock sync on the GPU: a one-thread kernel stores `%globaltimer`
//! between two reads of the host clocks (see [`crate::clock_sync`] for the selection).

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use ikp_device::ClockSync;

use crate::clock_sync::{host_now, select, SyncReading};
use crate::cuda::SessionError;

/// `out[i] = %globaltimer`. PTX 6.0 for sm_50 so that every driver and GPU ikp runs on
/// can JIT it; no NVRTC needed.
const PTX: &str = r#".version 6.0
.target sm_50
.address_size 64

.visible .entry ikp_globaltimer(.param .u64 out, .param .u32 i)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [i];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r1, 8;
    add.s64 %rd2, %rd2, %rd3;
    mov.u64 %rd4, %globaltimer;
    st.global.u64 [%rd2], %rd4;
    ret;
}
"#;

/// The probe kernel loaded in a context, and its output slots.
pub(super) struct ClockProbe {
    func: CudaFunction,
    out: CudaSlice<u64>,
}

impl ClockProbe {
    /// Loads the probe into `stream`'s context with room for `samples` readings.
    pub(super) fn new(stream: &Arc<CudaStream>, samples: u32) -> Result<ClockProbe, SessionError> {
        let module = stream
            .context()
            .load_module(Ptx::from_src(PTX))
            .map_err(|e| SessionError::driver("cuModuleLoadData (ikp clock probe)", e))?;
        let func = module
            .load_function("ikp_globaltimer")
            .map_err(|e| SessionError::driver("cuModuleGetFunction (ikp clock probe)", e))?;
        let out = stream
            .alloc_zeros::<u64>(samples.max(1) as usize)
            .map_err(|e| SessionError::driver("cuMemAlloc (ikp clock probe)", e))?;
        Ok(ClockProbe { func, out })
    }

    /// Takes `out.len()` readings on `stream` (read host clocks, launch, synchronize, read
    /// host clocks) and keeps the tightest.
    pub(super) fn sync(&mut self, stream: &Arc<CudaStream>) -> Result<ClockSync, SessionError> {
        let n = self.out.len();
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut readings = Vec::with_capacity(n);
        for i in 0..n as u32 {
            let before = host_now();
            // SAFETY: the kernel takes (u64*, u32) and writes out[i], i < out.len().
            unsafe {
                stream
                    .launch_builder(&self.func)
                    .arg(&mut self.out)
                    .arg(&i)
                    .launch(cfg)
            }
            .map_err(|e| SessionError::driver("cuLaunchKernel (ikp clock probe)", e))?;
            stream
                .synchronize()
                .map_err(|e| SessionError::driver("cuStreamSynchronize (ikp clock probe)", e))?;
            let after = host_now();
            readings.push(SyncReading {
                before,
                device_ns: 0,
                after,
            });
        }
        let device = stream
            .clone_dtoh(&self.out)
            .map_err(|e| SessionError::driver("cuMemcpyDtoH (ikp clock probe)", e))?;
        for (r, g) in readings.iter_mut().zip(device) {
            r.device_ns = g;
        }
        select(&readings).ok_or(SessionError::ClockSync { samples: n as u32 })
    }
}

#[cfg(test)]
mod tests {
    use super::PTX;

    /// The probe's hand-written PTX assembles for Ampere and Hopper (ptxas from
    /// `IKP_CUDA_BIN` or `PATH`; skipped with a notice where there is none).
    #[test]
    fn probe_ptx_assembles() {
        let ptxas = std::env::var_os("IKP_CUDA_BIN")
            .map(|d| std::path::PathBuf::from(d).join("ptxas"))
            .filter(|p| p.exists())
            .unwrap_or_else(|| "ptxas".into());
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("probe.ptx");
        std::fs::write(&src, PTX).unwrap();
        for arch in ["sm_80", "sm_90"] {
            let out = dir.path().join(format!("{arch}.cubin"));
            let o = match std::process::Command::new(&ptxas)
                .args(["-arch", arch, "-o"])
                .arg(&out)
                .arg(&src)
                .output()
            {
                Ok(o) => o,
                Err(e) => {
                    eprintln!("SKIPPED probe_ptx_assembles: no ptxas ({e})");
                    return;
                }
            };
            assert!(
                o.status.success(),
                "{arch}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(std::fs::metadata(&out).unwrap().len() > 0);
        }
    }
}
