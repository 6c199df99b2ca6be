//! ikp: an in-kernel profiler for CUDA.
//!
//! This root crate only re-exports the workspace crates so that integration tests,
//! benches and examples have one dependency:
//! - [`device`] (`ikp-device`): the wire format and the generated `ikp.cuh` header;
//! - [`host`] (`ikp-host`): reading buffers, decoding, writers and analysis.
pub use ikp_device as device;
pub use ikp_host as host;

#[doc(hidden)]
pub mod bench_support;
