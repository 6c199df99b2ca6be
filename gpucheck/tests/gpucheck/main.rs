//! The GPU bundle's runner and its kernels, without a GPU: one test binary.
//!
//! - `skip_mode`: the runner on stand-in bundles, as CI runs it (every check skipped with
//!   its reason, both results files complete, `IKP_GPU_TESTS=1` failing the run);
//! - `kernels_nvrtc`: the GPU checks' kernels compile with NVRTC and match their launches;
//! - `python_scripts`: `triton_probes.py` imports and its verifiers judge, without a GPU.
//!
//! The runner's parsing and the Python clients' reading are unit tests in `src/`. The map
//! of every crate's tests is in CONTRIBUTING.md.

mod kernels_nvrtc;
mod python_scripts;
mod skip_mode;
