//! ikp-host's stream drain ([`ikp_host::drain::Drain`]) against `ikp.cuh`'s stream lanes
//! under ThreadSanitizer, both instrumented, in one process: the Rust side of the race
//! check whose C++ side (the lanes with `ikp_host.hpp`'s drain) runs in ikp-host's tests.
//! Run with `bash scripts/tsan.sh`.

use ikp_device::wire::KernelArg;

extern "C" {
    /// Runs `blocks` emulated stream lanes of `pairs` begin / end pairs each, one thread a
    /// lane, into the stream buffer `arg` describes (`host/tests/kernels/emulate_stream.cpp`).
    pub fn ikp_emu_stream_run(
        arg: *const KernelArg,
        blocks: u32,
        pairs: u32,
        wait: i32,
        slow_every: u32,
    ) -> i32;
}
