//! The buffer symbol of a kernel instrumented by `ikp instrument` (a `.const` block of
//! [`WORDS`] 64-bit words per kernel, `ikp_buf_<kernel>`): where its probes find the
//! buffer. The host writes it after loading the module (Rust `HostSession::attach_probes`,
//! Python `ikp.triton`, C++ `ikp::HostLayout::probe_symbol`); all zero, as the module
//! declares it, it turns every probe off.
//!
//! The words are the buffer's layout worked out for the probes, addresses rather than the
//! header's counts, so that a lane's addresses are one multiply-add from its index: every
//! instruction a probe runs, every warp of the kernel runs (a short-lived warp's init and
//! finalize are most of what the probes cost a row-wise kernel).
//!
//! # Format
//! Little-endian `u64` words, from [`KernelArg`] (the buffer's address and layout, as
//! [`crate::Layout::kernel_arg`] gives them; `W = 8` bytes a word):
//!
//! | word | value |
//! |---|---|
//! | [`LANES_AT`] | `buf + W * lane_base`: epoch 0's lane 0 |
//! | [`COUNTS_AT`] | lane 0's count word: `LANES_AT + W * (EVENTS + records_per_lane + T_COUNT)` ([`crate::wire::lane`]) |
//! | [`CLAIMS_AT`] | `buf + W * (lane_base - lane_count)`: the launch counters, one a lane |
//! | [`STRIDE`] | `records_per_lane << 32 \| W * lane_stride` |
//! | [`LANES`] | `groups_per_block << 32 \| lane_count` |
//! | [`EPOCHS`] | `epochs` (the high half 0: the lane that claims a warp's epoch) |
//!
//! A null `buf` gives zeros. Lane `at` (`epoch * lane_count + warp`) is at `LANES_AT +
//! at * (STRIDE & 0xFFFF_FFFF)`, its count word at `COUNTS_AT` plus the same.

use crate::wire::{lane, KernelArg};

/// Word index: the address of epoch 0's lane 0.
pub const LANES_AT: usize = 0;
/// Word index: the address of lane 0's count word (`dropped << 32 | written`).
pub const COUNTS_AT: usize = 1;
/// Word index: the address of the launch counters (one a lane of an epoch).
pub const CLAIMS_AT: usize = 2;
/// Word index: `records_per_lane << 32 | lane stride in bytes`.
pub const STRIDE: usize = 3;
/// Word index: `groups_per_block << 32 | lane_count` (lanes of one epoch).
pub const LANES: usize = 4;
/// Word index: `epochs`; its high half is 0, the lane that claims a warp's epoch.
pub const EPOCHS: usize = 5;
/// Words of the symbol.
pub const WORDS: usize = 6;

/// The symbol's words for the buffer and layout `arg` describes (zeros for a null `buf`).
pub fn words(arg: &KernelArg) -> [u64; WORDS] {
    let mut w = [0; WORDS];
    if arg.buf == 0 {
        return w;
    }
    // Addresses wrap as the device's 64-bit arithmetic does (and C++'s): a buffer near the
    // top of the address space is the caller's to avoid, not a panic here.
    let word = |n: u64| 8 * n;
    let lanes_at = arg.buf.wrapping_add(word(arg.lane_base.into()));
    w[LANES_AT] = lanes_at;
    w[COUNTS_AT] = lanes_at.wrapping_add(word(
        u64::from(lane::EVENTS + lane::T_COUNT) + u64::from(arg.records_per_lane),
    ));
    w[CLAIMS_AT] = arg
        .buf
        .wrapping_add(word(u64::from(arg.lane_base.wrapping_sub(arg.lane_count))));
    w[STRIDE] = u64::from(arg.records_per_lane) << 32 | word(arg.lane_stride.into());
    w[LANES] = u64::from(arg.groups_per_block) << 32 | u64::from(arg.lane_count);
    w[EPOCHS] = arg.epochs.into();
    w
}
