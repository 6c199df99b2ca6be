//! The root package's integration tests: one test binary (`cargo test --test integration`),
//! for what needs the CUDA toolchain or the examples. Where a new test goes:
//!
//! - the generated header compiled with NVRTC, its PTX checked: `device_nvrtc`;
//! - its SASS measured with nvcc + cuobjdump and held to budgets: `device_sass`
//!   (`cargo test --test integration device_sass::print_sass_cost_table -- --nocapture`
//!   prints the table of BENCHMARKS.md);
//! - the examples compiled with NVRTC (`examples_nvrtc`) and run on a GPU, with their
//!   checks tried on synthetic buffers without one (`examples_gpu`);
//! - `ikp instrument` on Triton, CuTe DSL and nvcc PTX (assembles, parameters unchanged,
//!   probe operations and costs in SASS, loops keep their loads and body size, the entry
//!   adds no global load and its epoch claim waits behind the kernel's first loads):
//!   `instrument_ptx`; the probes run on the CPU by a small PTX
//!   interpreter and their buffer decoded: `ptx_emulator`;
//! - the GPU overhead bench's kernels: `gpu_overhead_nvrtc`;
//! - the benches' inputs: `bench_inputs`;
//! - helpers: [`support`].
//!
//! The GPU bundle (`scripts/gpu-bundle.sh`) carries this binary and runs the modules named
//! in `ikp_gpucheck::runner::tests::SUITES`, each as its own check group. The map of every
//! crate's tests is in CONTRIBUTING.md.

// Each example carries its own copy of examples/common (as it does when built alone).
#![allow(clippy::duplicate_mod)]

mod support;

// The example launchers, as `cargo run --example` builds them.
#[path = "../examples/load_compute_store/main.rs"]
mod load_compute_store;
#[path = "../examples/persistent/main.rs"]
mod persistent;
#[path = "../examples/persistent_stream/main.rs"]
mod persistent_stream;
#[path = "../examples/warp_specialized/main.rs"]
mod warp_specialized;

mod bench_inputs;
mod device_nvrtc;
mod device_sass;
mod examples_gpu;
mod examples_nvrtc;
mod gpu_overhead_nvrtc;
mod instrument_ptx;
mod ptx_emulator;
