//! The device header and the wire format, without a GPU: one test binary (linked once).
//!
//! - `wire_format`: the v2 layout pinned (field boundaries, the version / fingerprint pair);
//! - `cuh_golden`: the committed `include/` headers are what the generator writes
//!   (`IKP_BLESS=1 cargo test -p ikp-device --test device cuh_golden` rewrites them);
//! - `emulation`: `ikp.cuh`'s encoding run on the CPU (`IKP_HOST_EMULATION`) against the
//!   Rust reference encoder, word for word;
//! - `host_helper`: `ikp_host.hpp` compiled by the host compiler against the Rust layout;
//! - `support`: compiling the C++ fixtures of `tests/kernels/`.
//!
//! Compiling the header with NVRTC and nvcc, and its SASS, is tested from the repository
//! root (`tests/`), which has the toolchain.

mod support;

mod cuh_golden;
mod emulation;
mod host_helper;
mod wire_format;
