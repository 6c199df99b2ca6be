//! ikp-host: everything after the kernel ran.
//!
//! Data flows one way: [`buffer`] reads and validates raw bytes, [`decode`] turns them
//! into the [`model::Trace`] (integer ns, struct of arrays), and [`stats`] and the
//! writers of [`mod@write`] read the model. [`session`] and [`nvrtc`] are the GPU side of
//! the host: allocation, launch argument and read-back through cudarc, and kernel
//! compilation with an NVRTC library ikp finds and loads itself. [`sass`] measures what
//! instrumentation sites cost in SASS (nvcc + cuobjdump), [`overhead`] what they cost in
//! run time (slowdown statistics against an uninstrumented baseline).
//!
//! [`definitions`] says what the region times and percentages mean; [`shares`] computes
//! them, once, for every output.
pub mod analysis;
pub mod buffer;
pub mod decode;
pub mod definitions;
pub mod model;
pub mod nvrtc;
pub mod overhead;
mod proc_maps;
pub mod report;
pub mod sass;
pub mod session;
pub mod shares;
pub mod stats;
pub mod write;

#[cfg(test)]
mod testutil;
