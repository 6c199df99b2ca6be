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

/// The Rust blocks of the front page and the reference, compiled (and run, unless
/// `no_run`) as doctests; cli/tests/cli/docs runs or compiles their other blocks and
/// checks that every page with a Rust block is included here.
#[cfg(doctest)]
pub mod docs {
    #[doc = include_str!("../README.md")]
    pub struct Readme;
    #[doc = include_str!("../docs/modes.md")]
    pub struct Modes;
    #[doc = include_str!("../docs/rust.md")]
    pub struct Rust;
}
