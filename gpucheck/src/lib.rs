//! ikp's GPU evidence: the checks that only a GPU can answer, and the runner that collects
//! them on a lent machine in one call.
//!
//! `scripts/gpu-bundle.sh OUT_DIR` builds (here, no GPU needed) every executable the
//! checks need and this runner; `OUT_DIR/run.sh RESULTS_DIR` runs them all on the GPU
//! machine (no Rust there) and writes `gpu-results.json` and `gpu-results.md`
//! ([`results`] has their format). Without a GPU every check reports `skip` with the
//! reason; with `IKP_GPU_TESTS=1`, or on a machine whose kernel lists an NVIDIA GPU, a
//! skipped GPU check fails the run.
//!
//! Layers: [`machine`] (what is there), [`gpu`] (the checks that launch kernels),
//! [`verify`] (what every recorded trace must satisfy), [`runner`] (children, budget,
//! files), with [`child`] and [`libtest`] as its tools.

pub mod child;
pub mod gpu;
pub mod libtest;
pub mod machine;
pub mod results;
pub mod runner;
pub mod verify;
