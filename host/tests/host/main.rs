//! The library's integration tests that need no GPU and no CUDA library: one test binary
//! (linked once). Where a new test goes:
//!
//! - decoding ikp's own buffers: `decode` (rules and errors), `formats` (every file shape
//!   the loader takes), `ring_epochs`, `async_ranges`, `set_aside` (lanes whose stamps are
//!   not of the launch), `big_buffer` (the generator of the very large buffer measured
//!   in BENCHMARKS.md, `host/examples/big_buffer.rs`);
//! - the peers' buffers: `decode_peers`, `golden_peers` (pinned outputs), `peer_decoders`
//!   (the peers' own decoders, run on the same buffers), `set_aside_formats`, with their
//!   re-implemented encoders in `peers`;
//! - writers and analyses: `perfetto`, `parquet`, `merge` (host traces), `shares`
//!   (against the brute-force `shares_oracle`), `golden` (pinned outputs of every writer,
//!   compared by `golden_check`);
//! - stream launches: `stream_emulation` (stream lanes as threads, the real drain, the
//!   ThreadSanitizer build, the stream file's reader and the shipped sample);
//! - property tests: `proptest_roundtrip` (encode -> decode), `proptest_peers`,
//!   `proptest_seeds` (the fuzz corpus replayed).
//!
//! - the GPU side (`cuda` feature): `nvrtc_compile` (the NVRTC helper and its library
//!   search, no GPU), `session_no_gpu` (the driver's absence, stubs and errors, no GPU),
//!   `session_gpu` (HostSession on a GPU; skips without one), sharing `session_support`.
//!   The library loads the driver and NVRTC once per process, so a test that needs another
//!   environment re-runs itself in a child (`session_support::run_child`). The GPU bundle
//!   carries this binary and runs these three modules, each as its own check group.
//!
//! Goldens live in `host/tests/golden/` (`golden_check`; `IKP_BLESS=1` rewrites them). The
//! map of every crate's tests is in CONTRIBUTING.md.

mod golden_check;
#[path = "../fixtures/nested_lanes.rs"]
mod nested_lanes;
mod peers;
#[cfg(feature = "cuda")]
mod session_support;
mod shares_oracle;

mod async_ranges;
mod big_buffer;
mod decode;
mod decode_peers;
mod formats;
mod golden;
mod golden_peers;
mod merge;
#[cfg(feature = "cuda")]
mod nvrtc_compile;
#[cfg(feature = "parquet")]
mod parquet;
mod peer_decoders;
mod perfetto;
mod proptest_peers;
mod proptest_roundtrip;
mod proptest_seeds;
mod ring_epochs;
#[cfg(feature = "cuda")]
mod session_gpu;
#[cfg(feature = "cuda")]
mod session_no_gpu;
mod set_aside;
mod set_aside_formats;
mod shares;
mod stream_emulation;
