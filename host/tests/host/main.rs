//! The library's integration tests that need no GPU and no CUDA library: one test binary
//! (linked once). Where a new test goes:
//!
//! - decoding ikp's own buffers: `decode` (rules and errors), `formats` (every file shape
//!   the loader takes), `ring_epochs`, `async_ranges`, `set_aside` (lanes whose stamps are
//!   not of the launch), `big_buffer`;
//! - the peers' buffers: `decode_peers`, `golden_peers` (pinned outputs), `peer_decoders`
//!   (the peers' own decoders, run on the same buffers), `set_aside_formats`, with their
//!   re-implemented encoders in `peers`;
//! - writers and analyses: `perfetto`, `parquet`, `merge` (host traces), `shares`
//!   (against the brute-force `shares_oracle`), `golden` (pinned outputs of every writer,
//!   compared by `golden_check`);
//! - property tests: `proptest_roundtrip` (encode -> decode), `proptest_peers`,
//!   `proptest_seeds` (the fuzz corpus replayed).
//!
//! Tests that load NVRTC or the CUDA driver are separate binaries (`nvrtc_compile`,
//! `session_gpu`, `session_no_gpu`): the GPU bundle carries them, and each needs a process
//! of its own for the library's once-per-process driver and NVRTC loading.

mod golden_check;
#[path = "../fixtures/nested_lanes.rs"]
mod nested_lanes;
mod peers;
mod shares_oracle;

mod async_ranges;
mod big_buffer;
mod decode;
mod decode_peers;
mod formats;
mod golden;
mod golden_peers;
mod merge;
#[cfg(feature = "parquet")]
mod parquet;
mod peer_decoders;
mod perfetto;
mod proptest_peers;
mod proptest_roundtrip;
mod proptest_seeds;
mod ring_epochs;
mod set_aside;
mod set_aside_formats;
mod shares;
mod stream_emulation;
