//! The CUDA device header `ikp.cuh`, generated from [`crate::wire`].
//!
//! [`source`] builds the header text at run time: the numbers (kinds, shifts, masks, lane
//! offsets, the IDS mark, flags, version) and the `ikp::Arg` struct come from the wire
//! module (the private `consts` module), the device code (`text`) uses them only by name. So the header
//! cannot disagree with the decoder, and no constant is written down twice.
//!
//! The same text is committed as `device/include/ikp.cuh` (a test keeps the two equal) and
//! written by `ikp header -o DIR` ([`write_to_dir`]).
//!
//! Beside it, [`host_source`] is `ikp_host.hpp`, the host side of a C++ launcher:
//! `ikp::HostLayout`, the C++ twin of [`crate::Layout`], sizes the buffer, writes its header
//! and builds `ikp::Arg` (plain C++17, no CUDA header), generated from the same wire module
//! and the `Layout` struct. It includes `ikp.cuh`; [`write_to_dir`] writes both, and
//! `device/include/` holds both.
//!
//! The header needs no include (NVRTC compiles it as is), requires C++17 (`if constexpr`,
//! the default of nvcc 12+ and NVRTC 12+), and compiles as plain host C++ under
//! `IKP_HOST_EMULATION` so the encoding logic can be tested without a GPU.

mod consts;
mod host;
mod text;

use crate::wire;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The header's file name.
pub const FILE_NAME: &str = "ikp.cuh";

/// The host header's file name (it includes [`FILE_NAME`] from its own directory).
pub const HOST_FILE_NAME: &str = "ikp_host.hpp";

/// The whole host header text (`ikp_host.hpp`): `ikp::HostLayout`, the buffer size, the
/// header words and `ikp::Arg` for a C++ launcher.
pub fn host_source() -> String {
    host::source()
}

/// The whole header text.
pub fn source() -> String {
    let v = wire::FORMAT_VERSION;
    let mut out = String::with_capacity(24 * 1024);
    out.push_str(&banner(v));
    out.push_str(&format!("#ifndef IKP_CUH_V{v}\n#define IKP_CUH_V{v}\n\n"));
    out.push_str(text::PLATFORM);
    out.push_str("\nnamespace ikp {\n\n");
    consts::write(&mut out);
    out.push_str("}  // namespace ikp\n\n#if IKP_DEVICE_API\nnamespace ikp {\n\n");
    out.push_str(text::DETAIL);
    text::write_registers(&mut out);
    out.push_str(text::DETAIL_REST);
    out.push_str(text::LANE);
    out.push_str("\n}  // namespace ikp\n\n");
    out.push_str(text::MACROS);
    out.push_str("\n#endif  // IKP_DEVICE_API\n");
    out.push_str(&format!("#endif  // IKP_CUH_V{v}\n"));
    out
}

fn banner(version: u32) -> String {
    format!(
        r#"// ikp.cuh: the ikp in-kernel profiler, device side. Wire format v{version}.
//
// GENERATED from the ikp wire format (ikp_device::cuh::source()); do not edit. Write a copy
// with `ikp header -o DIR`. In the ikp repository, `IKP_BLESS=1 cargo test -p ikp-device
// --test device cuh_golden` refreshes device/include/ikp.cuh.
//
// What it does: each (block, group) pair is a *lane* with one writing thread, its leader.
// The leader appends 64-bit records (timestamp low 32 bits | payload | region | kind) to
// its own fixed-size segment of a buffer the host zeroed and described; no shared cursor,
// no write ever crosses into another lane, and no atomic on the record path. When a segment
// is full, records are counted as dropped instead of written, or, in a ring lane
// (ikp::Overflow::Ring), overwrite the oldest. At init the leader stamps its start times and
// times a few back-to-back records (the record cost, for the decoder's overhead
// correction); a buffer sized for several launches (epochs) gives each launch its own
// segments, the epoch taken by one atomic add per lane. Wait loops count their spins in a
// register and add the total to a per-lane counter once. The host reads the buffer back and
// decodes it (`ikp` CLI / ikp-host crate). A C++ launcher sizes the buffer, writes its
// header and builds ikp::Arg with ikp_host.hpp, written next to this file.
//
// Usage (nvcc or NVRTC, C++17, no other include needed):
//
//   #include "ikp.cuh"
//   enum : unsigned {{ LOAD, MMA, STORE }};          // region ids = indices of the host's names
//   extern "C" __global__ void gemm(float* c, const float* a, unsigned n_tiles, ikp::Arg prof) {{
//     ikp::Lane<> lane(prof, /*group=*/0, /*leader=*/threadIdx.x == 0);
//     for (unsigned t = blockIdx.x; t < n_tiles; t += gridDim.x) {{  // persistent: many tiles
//       {{ IKP_SCOPE(lane, LOAD, t); /* ... */ }}              // payload = tile index
//       {{ IKP_SCOPE(lane, MMA, t);  /* ... */ }}
//     }}
//     lane.finalize();
//   }}
//
// Warp-specialized kernels give each warp group its own group id and leader, e.g.
// `ikp::Lane<> lane(prof, threadIdx.x / 128, threadIdx.x % 128 == 0)`, and count waits with
// `IKP_WAIT(lane, COUNTER_ID, !ready(stage))`. A range that begins in one lane and ends in
// another (a TMA load and its consumer) is `lane.range_begin(REGION, token)` /
// `other_lane.range_end(REGION, token)` for a region the host lists as async. A long or
// persistent kernel that should keep its newest records uses
// `ikp::Lane<ikp::Fence::None, ikp::Timer::Global, ikp::Overflow::Ring>` with a ring layout.
//
// Cost model (measured from SASS by the ikp test suite, figures in BENCHMARKS.md): a record
// is one branch on a warp vote taken at init. Every warp without the lane's writing leader
// (all of them when ikp::Arg is null or the lane is past the buffer: the runtime off switch)
// takes it and runs nothing else: no timer read, no store, no fence. The leader's warp reads
// the timer on every thread (one fixed-latency CS2R, a select keeps it on the leader),
// compares the cursor with the capacity, builds the tag and stores one 64-bit word from
// the leader; the address is the lane pointer plus cursor * 8, which folds into the store's
// offset in straight-line code. Fence::Block adds one block fence, on the leader's warp only.
// A ring record (Overflow::Ring) stores at the cursor masked by the capacity, so its address
// never folds. A stream record is the fixed one with the lane's limit in place of the
// capacity and a branch to its out-of-line slow path, which the leader's whole warp takes
// together (make a stream lane's records from every thread of the warp). With
// -DIKP_OFF_BRANCH=0 no warp branches: every warp issues each record predicated on the
// leader, the timer read under the store's predicate (a shorter record for the leader's warp,
// a longer one for the others). A wait-loop tick is a 64-bit register increment, and a wait
// that does not spin costs nothing. Init is paid once per lane: its record-cost calibration
// (-DIKP_CALIBRATE=0 drops it) and its epoch code (run only when the buffer holds several
// launches; -DIKP_EPOCHS=0 drops it) are the larger parts; `ikp cost` prints every figure.
// Build with -DIKP_ENABLED=0 and the SASS is exactly that of the kernel without markers.

"#
    )
}

/// Writes [`source`] to `dir/ikp.cuh` and [`host_source`] to `dir/ikp_host.hpp`, creating
/// `dir` if needed, and returns the path of `ikp.cuh`.
///
/// Each file is written to a temporary name in `dir` and renamed over the target, so a
/// concurrent reader (a build including the header) sees the old or the new header, never a
/// partial one.
pub fn write_to_dir(dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = write_file(dir, FILE_NAME, &source())?;
    write_file(dir, HOST_FILE_NAME, &host_source())?;
    Ok(path)
}

fn write_file(dir: &Path, name: &str, text: &str) -> std::io::Result<PathBuf> {
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    })();
    result
        .inspect_err(|_| drop(std::fs::remove_file(&tmp)))
        .map(|()| path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_is_ascii_and_guarded() {
        let s = source();
        assert!(s.is_ascii(), "NVRTC sources should stay ASCII");
        let guard = format!("IKP_CUH_V{}", crate::wire::FORMAT_VERSION);
        assert!(
            s.contains(&format!("#ifndef {guard}"))
                && s.trim_end().ends_with(&format!("#endif  // {guard}"))
        );
        assert!(
            !s.lines().any(|l| l.trim_start().starts_with("#include")),
            "the header must not include anything"
        );
    }

    #[test]
    fn every_wire_constant_is_emitted_with_its_value() {
        let s = source();
        for (name, v) in [
            ("KIND_END", wire::Kind::End as u64),
            ("PAYLOAD_SHIFT", wire::PAYLOAD_SHIFT as u64),
            ("REGION_MASK", wire::REGION_MASK as u64),
            ("LANE_EVENTS", wire::lane::EVENTS as u64),
            ("LANE_CALIB", wire::lane::CALIB as u64),
            ("LANE_FLAG_RING", wire::lane_flags::RING as u64),
            ("HEADER_FLAG_RING", wire::header_flags::RING as u64),
            ("CALIB_RECORDS", wire::CALIB_RECORDS as u64),
            ("MAX_EPOCHS", wire::MAX_EPOCHS as u64),
            ("TRAILER_COUNTERS", wire::lane::T_COUNTERS as u64),
            ("LANE_MARK", wire::LANE_MARK as u64),
            (
                "LANE_FLAG_BLOCK_FENCE",
                wire::lane_flags::BLOCK_FENCE as u64,
            ),
            ("FORMAT_VERSION", wire::FORMAT_VERSION as u64),
        ] {
            let line = if v >= 256 {
                format!("constexpr unsigned {name} = {v:#x}u;")
            } else {
                format!("constexpr unsigned {name} = {v}u;")
            };
            assert!(s.contains(&line), "missing `{line}`");
        }
        assert!(s.contains(&format!("MAGIC = {:#018x}ull;", wire::MAGIC)));
        assert!(s.contains(&format!(
            "enum class Overflow : unsigned {{ DropNewest = {}u, Ring = {}u, Stream = {}u, StreamWait = {}u }};",
            wire::Overflow::DropNewest as u32,
            wire::Overflow::Ring as u32,
            wire::Overflow::Stream as u32,
            wire::Overflow::StreamWait as u32
        )));
    }

    #[test]
    fn write_to_dir_creates_the_dir_and_replaces_the_file() {
        let dir = std::env::temp_dir().join(format!("ikp-cuh-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let nested = dir.join("a/b");
        let p = write_to_dir(&nested).unwrap();
        assert_eq!(p, nested.join(FILE_NAME));
        std::fs::write(&p, "stale").unwrap();
        std::fs::write(nested.join(HOST_FILE_NAME), "stale").unwrap();
        write_to_dir(&nested).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), source());
        assert_eq!(
            std::fs::read_to_string(nested.join(HOST_FILE_NAME)).unwrap(),
            host_source()
        );
        let leftovers: Vec<_> = std::fs::read_dir(&nested).unwrap().collect();
        assert_eq!(leftovers.len(), 2, "temporary file left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
