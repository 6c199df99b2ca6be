//! How many blocks of a kernel one SM holds at once, from what ptxas says the kernel uses:
//! the CUDA occupancy calculator's arithmetic (`cuda_occupancy.h`), limits from the CUDA C++
//! Programming Guide's table of compute capabilities.
//!
//! A probe that costs a kernel registers can cost it resident warps, a step function of the
//! register count: an SM's 64 Ki registers sit in four sub-partitions and a warp's are
//! allocated 256 at a time, so a 128-thread block at 32 registers keeps sixteen blocks on an
//! SM and at 33 twelve. The tests hold instrumented kernels to the blocks per SM of the
//! kernels as they were (`tests/instrument_ptx.rs`, `tests/gpu_overhead_nvrtc.rs`).

use crate::arch::Arch;

/// What one SM of an architecture offers a kernel's blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SmLimits {
    threads: u32,
    blocks: u32,
    shared_bytes: u32,
}

fn limits(arch: Arch) -> Option<SmLimits> {
    let (threads, blocks, shared_kib) = match (arch.major, arch.minor) {
        (8, 0) => (2048, 32, 164),
        (8, 6) => (1536, 16, 100),
        (8, 9) => (1536, 24, 100),
        (9, 0) | (10, 0) => (2048, 32, 228),
        _ => return None,
    };
    Some(SmLimits {
        threads,
        blocks,
        shared_bytes: shared_kib * 1024,
    })
}

/// Blocks of `threads` threads using `registers` registers per thread and `shared_bytes` of
/// shared memory (static and dynamic) resident on one SM of `arch` at once, or `None` for an
/// architecture whose limits are not tabled here (8.0, 8.6, 8.9, 9.0 and 10.0 are).
/// Registers: 16 Ki per sub-partition, four sub-partitions, a warp's allocated 256 at a
/// time. Shared memory: 1 KiB of it reserved per block, allocated 128 bytes at a time. The
/// GPU overhead bench prints what the driver says for the same
/// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`, "blocks_per_sm").
///
/// ```
/// use ikp_host::{sass::occupancy::blocks_per_sm, Arch};
/// // 128 threads: sixteen blocks at 32 registers, twelve at 40.
/// assert_eq!(blocks_per_sm(Arch::new(9, 0), 128, 32, 0), Some(16));
/// assert_eq!(blocks_per_sm(Arch::new(9, 0), 128, 40, 0), Some(12));
/// ```
pub fn blocks_per_sm(arch: Arch, threads: u32, registers: u32, shared_bytes: u32) -> Option<u32> {
    let sm = limits(arch)?;
    let warps = threads.div_ceil(32).max(1);
    let regs_per_warp = (registers * 32).div_ceil(256) * 256;
    let by_regs = 16384u32
        .checked_div(regs_per_warp)
        .map_or(u32::MAX, |per_sub_partition| per_sub_partition * 4 / warps);
    let by_shared = sm.shared_bytes / ((shared_bytes + 1024).div_ceil(128) * 128);
    Some(
        by_regs
            .min(sm.threads / (warps * 32))
            .min(sm.blocks)
            .min(by_shared),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arithmetic_matches_the_drivers_figures_of_the_h200_run() {
        // docs/gpu-runs/2026-11-27-h200-3/overhead.json: registers and the driver's blocks
        // per SM on an H200 (sm_90) for the GPU overhead bench's kernels.
        let sm90 = |threads, regs, shared| blocks_per_sm(Arch::new(9, 0), threads, regs, shared);
        assert_eq!(sm90(256, 64, 8320), Some(4));
        assert_eq!(sm90(256, 56, 8320), Some(4));
        assert_eq!(sm90(64, 27, 0), Some(32));
        assert_eq!(sm90(256, 24, 0), Some(8));
        // One register past 64 loses the GEMM a block. 32 registers is the most a 256-thread
        // block may take and keep eight; at 33 a warp is given 1280 (registers go 256 to a
        // warp), twelve warps fit a sub-partition and six blocks the SM.
        assert_eq!(sm90(256, 65, 8320), Some(3));
        assert_eq!(sm90(256, 32, 0), Some(8));
        assert_eq!(sm90(256, 33, 0), Some(6));
        // Shared memory limits too: 100 KiB blocks, two to an sm_90 SM, one to an sm_80 SM.
        assert_eq!(sm90(128, 32, 100 * 1024), Some(2));
        assert_eq!(blocks_per_sm(Arch::new(8, 0), 128, 32, 100 * 1024), Some(1));
    }

    #[test]
    fn thread_limits_differ_by_architecture_and_unknown_ones_say_so() {
        // 1536 threads on an sm_86 SM: six blocks of 256 where an sm_80 SM holds eight.
        assert_eq!(blocks_per_sm(Arch::new(8, 6), 256, 32, 0), Some(6));
        assert_eq!(blocks_per_sm(Arch::new(8, 0), 256, 32, 0), Some(8));
        // Small blocks meet the block limit first: 16 on sm_86, 24 on sm_89, 32 on sm_90.
        assert_eq!(blocks_per_sm(Arch::new(8, 6), 32, 16, 0), Some(16));
        assert_eq!(blocks_per_sm(Arch::new(8, 9), 32, 16, 0), Some(24));
        assert_eq!(blocks_per_sm(Arch::new(9, 0), 32, 16, 0), Some(32));
        assert_eq!(blocks_per_sm(Arch::new(7, 5), 128, 32, 0), None);
    }
}
