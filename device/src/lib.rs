//! ikp-device: everything the GPU side and the host must agree on.
//!
//! - [`wire`]: the native wire format v2 (constants, bit diagram, pack / unpack, version);
//! - [`layout`]: the buffer header the host writes and the decoder validates;
//! - [`encoder`]: a pure-Rust reference encoder that writes buffers as the device does;
//! - [`sample`]: deterministic sample buffers (an attention-shaped kernel) for docs and tests;
//! - [`tvm`]: the TVM / warpscope wire format, which ikp also reads, and its slot layout;
//! - [`flashinfer`], [`mirage`]: the peers' repackings of the TVM tag (SM ids; event
//!   numbers), which ikp also reads;
//! - [`stream`]: the stream format: lanes the host drains while the kernel runs;
//! - [`cuh`]: the CUDA device header `ikp.cuh`, generated from [`wire`].
pub mod cuh;
pub mod encoder;
pub mod flashinfer;
pub mod layout;
pub mod mirage;
pub mod probe_symbol;
pub mod sample;
pub mod stream;
pub mod tvm;
pub mod wire;

pub use layout::{ClockSync, Header, Layout, LayoutError};
pub use wire::{KernelArg, Kind, Overflow, TimerMode, FORMAT_VERSION};
