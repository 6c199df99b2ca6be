//! The host header `ikp_host.hpp`: [`crate::Layout`] in C++ (`ikp::HostLayout`), so a
//! launcher written in C++ (nvcc host code, a PyTorch extension, any C++17 compiler) sizes
//! the buffer, writes its header and builds `ikp::Arg` without Rust.
//!
//! As for `ikp.cuh`, the numbers come from [`crate::wire`] at generation time (header word
//! indices, field shifts, limits) and the fields of `HostLayout` and `ClockSync` from the
//! Rust structs (an exhaustive destructuring makes a new Rust field a compile error here),
//! with their defaults taken from `Layout::default()`. The hand-written C++ (`HELPERS`,
//! `METHODS`) refers to them by name only. `ikp_host.hpp` includes `ikp.cuh` (written next
//! to it) for the format constants, `ikp::Timer`, `ikp::Overflow` and `ikp::Arg`; the ikp
//! tests compile it with the host C++ compiler and with nvcc and compare every byte it
//! writes with [`crate::Layout::header_words`] and [`crate::Layout::kernel_arg`].

use super::consts::{u32c, write_group, Const};
use crate::layout::{ClockSync, Layout};
use crate::wire::{self, hdr, TimerMode};
use std::fmt::Write as _;

/// The whole `ikp_host.hpp` text.
pub(super) fn source() -> String {
    let v = wire::FORMAT_VERSION;
    let mut out = String::with_capacity(16 * 1024);
    let _ = writeln!(
        out,
        "// ikp_host.hpp: the ikp in-kernel profiler, host side of a C++ launcher. Wire format v{v}."
    );
    out.push_str(BANNER);
    let _ = write!(
        out,
        "#ifndef IKP_HOST_HPP_V{v}\n#define IKP_HOST_HPP_V{v}\n\n{INCLUDES}\n\
         static_assert(ikp::FORMAT_VERSION == {v}u, \"ikp_host.hpp and the ikp.cuh it includes come from different ikp versions\");\n\n\
         namespace ikp {{\n\n"
    );
    for (heading, consts) in groups() {
        write_group(&mut out, "", heading, &consts);
    }
    out.push_str("/// Header word indices (ikp_device::wire::hdr).\nnamespace hdr {\n");
    write_group(
        &mut out,
        "",
        "Word i of the buffer holds the field named here.",
        &hdr_indices(),
    );
    out.push_str("}  // namespace hdr\n\n");
    out.push_str(HELPERS);
    write_clock_sync(&mut out);
    out.push_str(LAYOUT_DOC);
    out.push_str("struct HostLayout {\n");
    write_layout_fields(&mut out);
    out.push_str(METHODS);
    out.push_str("};\n\n}  // namespace ikp\n\n");
    let _ = writeln!(out, "#endif  // IKP_HOST_HPP_V{v}");
    out
}

const BANNER: &str = r#"//
// GENERATED from the ikp wire format (ikp_device::cuh::host_source()); do not edit. `ikp
// header -o DIR` writes it next to ikp.cuh, which it includes. In the ikp repository,
// `IKP_BLESS=1 cargo test -p ikp-device --test device cuh_golden` refreshes device/include/.
//
// What it does: ikp::HostLayout describes an instrumented launch (the C++ twin of the Rust
// ikp_device::Layout, same fields, defaults and limits), sizes its buffer, writes the
// buffer header (magic, version, grid, lanes, names, ...) and builds the kernel argument
// ikp::Arg. Plain C++17 with the standard library: no CUDA header is needed, so the same
// code serves nvcc host code, a PyTorch C++ extension and any host compiler. The ikp tests
// check, byte for byte, that it writes what the Rust encoder writes.
//
// Usage (CUDA runtime; error checks left out):
//
//   #include "ikp_host.hpp"                      // and ikp.cuh next to it
//   ikp::HostLayout layout;
//   layout.grid = {n_blocks, 1, 1};               // as launched
//   layout.groups_per_block = 1;                  // lanes per block (warp groups)
//   layout.records_per_lane = 256;
//   layout.regions = {"load", "mma", "store"};    // region ids 0, 1, 2 in the kernel
//   if (std::string err = layout.validate(); !err.empty()) { /* report err */ }
//   const std::vector<std::uint64_t> header = layout.header_words();
//   void* buf = nullptr;
//   cudaMalloc(&buf, layout.buffer_bytes());
//   cudaMemset(buf, 0, layout.buffer_bytes());   // the whole buffer zeroed,
//   cudaMemcpy(buf, header.data(), header.size() * sizeof(std::uint64_t),
//              cudaMemcpyHostToDevice);           // then the header at its start
//   gemm<<<n_blocks, 128>>>(c, a, n_tiles, layout.kernel_arg(buf));
//   std::vector<unsigned char> bytes(layout.buffer_bytes());
//   cudaMemcpy(bytes.data(), buf, bytes.size(), cudaMemcpyDeviceToHost);
//   // write `bytes` to gemm.ikp as they are (little-endian words): `ikp decode gemm.ikp`
//
// A PyTorch C++ extension lets a tensor hold the buffer:
//
//   auto buf = torch::zeros({(int64_t)layout.buffer_words()},
//                           torch::dtype(torch::kInt64).device(torch::kCUDA));
//   auto header = layout.header_words();
//   buf.narrow(0, 0, (int64_t)header.size())
//       .copy_(torch::from_blob(header.data(), {(int64_t)header.size()}, torch::kInt64));
//   my_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
//       ..., layout.kernel_arg(buf.data_ptr()));
//   // Python: buf.cpu().numpy().tofile("k.ikp"), then `ikp decode k.ikp`
//
// Launching again into the same buffer overwrites the previous launch unless it was zeroed
// and given its header again, or the layout has epochs (layout.epochs = N: N launches, one
// segment each, no host action in between). write_header() writes into a host array the
// caller owns (a pinned staging copy of the whole buffer, say). A clock sync (the host's
// clocks read with the GPU's %globaltimer, HostLayout::clock_sync) is optional: without it
// the trace is on the GPU's clock only.

"#;

const INCLUDES: &str = r#"#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ikp.cuh"
"#;

/// Host-side constants that `ikp.cuh` does not declare.
#[rustfmt::skip]
fn groups() -> Vec<(&'static str, Vec<Const>)> {
    vec![
        (
            "Buffer header fields: bit positions inside header words (see hdr below).",
            vec![
                u32c("HDR_HI_SHIFT", wire::HDR_HI_SHIFT, "high half of a two-field word (words 1, 2, 4, 5, 6, 7)"),
                u32c("HDR_TIMER_SHIFT", wire::HDR_TIMER_SHIFT, "word 3: the timer id (ikp::Timer), 8 bits"),
                u32c("HDR_FLAGS_SHIFT", wire::HDR_FLAGS_SHIFT, "word 3: the header flags (HEADER_FLAG_RING), 8 bits"),
                u32c("HDR_COUNTERS_SHIFT", wire::HDR_COUNTERS_SHIFT, "word 3: n_counters, 16 bits"),
                u32c("SYNC_SAMPLES_SHIFT", wire::SYNC_SAMPLES_SHIFT, "clock-sync word: the sample count (the round trip is the low half)"),
            ],
        ),
        (
            "Limits HostLayout::validate() checks (with MAX_REGIONS, MAX_COUNTERS and MAX_EPOCHS).",
            vec![
                u32c("MAX_LANES", wire::MAX_LANES, "largest lane count, and epochs x lanes"),
                u32c("MAX_RECORDS_PER_LANE", wire::MAX_RECORDS_PER_LANE, "largest records_per_lane"),
                u32c("MAX_NAMES_BYTES", wire::MAX_NAMES_BYTES, "largest name table, in bytes"),
            ],
        ),
    ]
}

fn index(name: &'static str, value: usize, doc: &'static str) -> Const {
    u32c(name, value as u32, doc)
}

#[rustfmt::skip]
fn hdr_indices() -> Vec<Const> {
    vec![
        index("MAGIC", hdr::MAGIC, "ikp::MAGIC"),
        index("VERSION", hdr::VERSION, "header words << HDR_HI_SHIFT | FORMAT_VERSION"),
        index("LANES", hdr::LANES, "records_per_lane << HDR_HI_SHIFT | lane_count"),
        index("GROUPS", hdr::GROUPS, "n_counters << HDR_COUNTERS_SHIFT | flags << HDR_FLAGS_SHIFT | timer << HDR_TIMER_SHIFT | groups_per_block"),
        index("GRID_XY", hdr::GRID_XY, "grid_y << HDR_HI_SHIFT | grid_x"),
        index("GRID_Z", hdr::GRID_Z, "n_regions << HDR_HI_SHIFT | grid_z"),
        index("STRIDE", hdr::STRIDE, "names_bytes << HDR_HI_SHIFT | lane_stride"),
        index("EPOCHS", hdr::EPOCHS, "epochs (high half reserved, 0)"),
        index("SYNC_REALTIME", hdr::SYNC_REALTIME, "host CLOCK_REALTIME ns at the clock sync (0: none)"),
        index("SYNC_MONOTONIC", hdr::SYNC_MONOTONIC, "host CLOCK_MONOTONIC ns at the clock sync"),
        index("SYNC_GLOBALTIMER", hdr::SYNC_GLOBALTIMER, "device %globaltimer ns at the clock sync"),
        index("SYNC_ROUND_TRIP", hdr::SYNC_ROUND_TRIP, "samples << SYNC_SAMPLES_SHIFT | round trip ns of the clock sync"),
        index("ASYNC_BITMAP", hdr::ASYNC_BITMAP, "async-region bitmap (ceil(n_regions / 64) words), then the name table"),
    ]
}

/// The C++ type of an unsigned Rust integer field, by its size.
fn uint_type<T>(_: &T) -> &'static str {
    match std::mem::size_of::<T>() {
        8 => "std::uint64_t",
        4 => "std::uint32_t",
        n => panic!("no C++ field type for a {n}-byte integer"),
    }
}

fn write_clock_sync(out: &mut String) {
    // Exhaustive: a field added to the Rust struct must be added here.
    let ClockSync {
        host_realtime_ns,
        host_monotonic_ns,
        device_globaltimer_ns,
        round_trip_ns,
        samples,
    } = ClockSync::default();
    #[rustfmt::skip]
    let fields = [
        (uint_type(&host_realtime_ns), "host_realtime_ns", "host CLOCK_REALTIME, ns since the Unix epoch (non-zero)"),
        (uint_type(&host_monotonic_ns), "host_monotonic_ns", "host CLOCK_MONOTONIC, ns, read with the realtime clock"),
        (uint_type(&device_globaltimer_ns), "device_globaltimer_ns", "the GPU's %globaltimer, ns (non-zero)"),
        (uint_type(&round_trip_ns), "round_trip_ns", "the kept reading's round trip, ns: the mapping's error is at most half of it"),
        (uint_type(&samples), "samples", "readings taken, the one with the shortest round trip kept (non-zero)"),
    ];
    out.push_str(
        "/// One reading of the host's clocks and the GPU's %globaltimer taken together (header\n\
         /// words hdr::SYNC_*; ikp_device::ClockSync): device time g is host realtime\n\
         /// g - device_globaltimer_ns + host_realtime_ns, within round_trip_ns / 2.\n\
         struct ClockSync {\n",
    );
    for (ty, name, doc) in fields {
        let _ = writeln!(out, "  {ty} {name} = 0u;  // {doc}");
    }
    out.push_str("};\n\n");
}

const LAYOUT_DOC: &str = r#"/// What the host knows about an instrumented launch: ikp_device::Layout in C++, with the
/// same fields, defaults (one block of one lane with 64 records, Timer::Global,
/// Overflow::DropNewest, one epoch, no names, no async regions, no clock sync) and limits.
/// Region and counter ids in the kernel are indices into `regions` and `counters`.
///
/// The sizes (lane_count() ... buffer_bytes()) mean something only for a layout validate()
/// accepts; header_words() and write_header() validate first.
"#;

/// A C++ default member initializer for the timer field (the Overflow values are spelt as
/// the Rust variants).
fn timer_name(t: TimerMode) -> &'static str {
    match t {
        TimerMode::Globaltimer => "Timer::Global",
        TimerMode::Clock => "Timer::Clock",
    }
}

fn write_layout_fields(out: &mut String) {
    // Exhaustive: a field added to the Rust struct must be added here.
    let Layout {
        grid,
        groups_per_block,
        records_per_lane,
        timer,
        regions,
        counters,
        overflow,
        epochs,
        async_regions,
        clock_sync,
    } = Layout::default();
    assert!(
        regions.is_empty()
            && counters.is_empty()
            && async_regions.is_empty()
            && clock_sync.is_none(),
        "the C++ defaults of the lists and the clock sync are empty"
    );
    let u32t = uint_type(&epochs);
    #[rustfmt::skip]
    let fields = [
        (format!("std::array<{u32t}, 3>"), "grid", format!("{{{{{}u, {}u, {}u}}}}", grid[0], grid[1], grid[2]), "grid dimensions (x, y, z) in blocks, as launched"),
        (uint_type(&groups_per_block).into(), "groups_per_block", format!(" = {groups_per_block}u"), "lanes per block (warp groups, or 1)"),
        (uint_type(&records_per_lane).into(), "records_per_lane", format!(" = {records_per_lane}u"), "event records each lane may write (a ring: a power of two)"),
        ("Timer".into(), "timer", format!(" = {}", timer_name(timer)), "how the device takes timestamps (the kernel's ikp::Lane<.., T, ..>)"),
        ("std::vector<std::string>".into(), "regions", String::new(), "region names (UTF-8, no NUL), indexed by region id"),
        ("std::vector<std::string>".into(), "counters", String::new(), "wait-counter names, indexed by counter id"),
        ("Overflow".into(), "overflow", format!(" = Overflow::{overflow:?}"), "what a full lane does (the kernel's ikp::Lane<.., .., O>)"),
        (uint_type(&epochs).into(), "epochs", format!(" = {epochs}u"), "launches the buffer records, one segment per lane each (at least 1)"),
        (format!("std::vector<{}>", u32t), "async_regions", String::new(), "region ids recorded as async ranges (range_begin / range_end), each < regions.size()"),
        ("std::optional<ClockSync>".into(), "clock_sync", String::new(), "the host-clock mapping taken before launch, if any"),
    ];
    for (ty, name, init, doc) in fields {
        let _ = writeln!(out, "  {ty} {name}{init};  // {doc}");
    }
    out.push('\n');
}

/// Helpers of `HostLayout`, in `namespace ikp::host_detail`.
const HELPERS: &str = r#"namespace host_detail {

/// a * b, or the largest std::uint64_t when the product does not fit (past every limit).
inline std::uint64_t mul_sat(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t max = ~std::uint64_t{0};
  return (a != 0u && b > max / a) ? max : a * b;
}

/// The message of ikp_device::LayoutError::Field, word for word.
inline std::string field(const char* name, std::uint64_t value, const char* why) {
  return std::string("invalid header field ") + name + ": " + std::to_string(value) + " (" + why + ")";
}

/// The message of ikp_device::LayoutError::Names, word for word.
inline std::string names(const char* why) { return std::string("invalid name table: ") + why; }

/// Whether `s` is UTF-8 as a Rust str is (and as the decoder requires of a name): no
/// overlong form, no surrogate, nothing past U+10FFFF, no truncated sequence.
inline bool is_utf8(const std::string& s) {
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned c = static_cast<unsigned char>(s[i]);
    if (c < 0x80u) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned lo = 0x80u, hi = 0xBFu;  // the range of the second byte
    if (c >= 0xC2u && c <= 0xDFu) {
      len = 2;
    } else if (c == 0xE0u) {
      len = 3;
      lo = 0xA0u;
    } else if (c == 0xEDu) {
      len = 3;
      hi = 0x9Fu;
    } else if (c >= 0xE1u && c <= 0xEFu) {
      len = 3;
    } else if (c == 0xF0u) {
      len = 4;
      lo = 0x90u;
    } else if (c == 0xF4u) {
      len = 4;
      hi = 0x8Fu;
    } else if (c >= 0xF1u && c <= 0xF3u) {
      len = 4;
    } else {
      return false;
    }
    if (n - i < len) return false;
    const unsigned c1 = static_cast<unsigned char>(s[i + 1]);
    if (c1 < lo || c1 > hi) return false;
    for (std::size_t k = 2; k < len; ++k) {
      const unsigned ck = static_cast<unsigned char>(s[i + k]);
      if (ck < 0x80u || ck > 0xBFu) return false;
    }
    i += len;
  }
  return true;
}

/// Refuses a layout where a value must be returned: throws std::invalid_argument, or, built
/// without exceptions, prints the message and aborts.
[[noreturn]] inline void fail(const std::string& message) {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
  throw std::invalid_argument(message);
#else
  std::fprintf(stderr, "ikp: %s\n", message.c_str());
  std::abort();
#endif
}

}  // namespace host_detail

"#;

/// The methods of `HostLayout`, after its fields.
const METHODS: &str = r#"  /// Blocks in the grid (saturating: a product past 2^64 - 1 reads as 2^64 - 1, refused).
  std::uint64_t blocks() const {
    return host_detail::mul_sat(host_detail::mul_sat(grid[0], grid[1]), grid[2]);
  }

  /// Lanes: blocks times groups per block.
  std::uint64_t lane_count() const { return host_detail::mul_sat(blocks(), groups_per_block); }

  /// Words per lane segment: LANE_FIXED_WORDS + records_per_lane + counters.
  std::uint64_t lane_stride() const {
    return std::uint64_t{LANE_FIXED_WORDS} + records_per_lane + static_cast<std::uint64_t>(counters.size());
  }

  /// Bytes of the name table: the region names then the counter names, each NUL-terminated.
  std::uint64_t names_bytes() const {
    std::uint64_t n = 0u;
    for (const std::string& s : regions) n += static_cast<std::uint64_t>(s.size()) + 1u;
    for (const std::string& s : counters) n += static_cast<std::uint64_t>(s.size()) + 1u;
    return n;
  }

  /// Words of the async-region bitmap: one bit per region.
  std::uint64_t bitmap_words() const { return (static_cast<std::uint64_t>(regions.size()) + 63u) / 64u; }

  /// Words of the header: the fixed words, the async bitmap and the zero-padded name table
  /// (= the word index of the first launch counter).
  std::uint64_t header_len() const { return HEADER_FIXED_WORDS + bitmap_words() + (names_bytes() + 7u) / 8u; }

  /// Word index of epoch 0's lane 0 segment (after one launch counter per lane).
  std::uint64_t lane_base() const { return header_len() + lane_count(); }

  /// Words of the whole buffer.
  std::uint64_t buffer_words() const { return lane_base() + std::uint64_t{epochs} * lane_count() * lane_stride(); }

  /// Bytes of the whole buffer: what to allocate, zeroed, on the device.
  std::uint64_t buffer_bytes() const { return buffer_words() * sizeof(std::uint64_t); }

  /// Checks every limit of the wire format, in the order ikp_device::Layout::validate does:
  /// "" when the layout is usable, else the message Layout::validate gives (the field, its
  /// value and why). A name that is not UTF-8 (which a Rust String cannot be, and the
  /// decoder refuses) is refused as well.
  std::string validate() const {
    const std::uint64_t lanes = lane_count();
    if (grid[0] == 0u || grid[1] == 0u || grid[2] == 0u) {
      return host_detail::field("grid", 0u, "every grid dimension must be at least 1");
    }
    if (groups_per_block == 0u) return host_detail::field("groups_per_block", 0u, "must be at least 1");
    if (lanes > MAX_LANES) return host_detail::field("lane_count", lanes, "more lanes than the format allows");
    if (records_per_lane == 0u || records_per_lane > MAX_RECORDS_PER_LANE) {
      return host_detail::field("records_per_lane", records_per_lane, "must be 1..=2^28");
    }
    if (overflow == Overflow::Ring && (records_per_lane & (records_per_lane - 1u)) != 0u) {
      return host_detail::field("records_per_lane", records_per_lane, "a ring needs a power of two");
    }
    if (overflow == Overflow::Stream || overflow == Overflow::StreamWait) {
      return host_detail::field("overflow", static_cast<std::uint64_t>(overflow),
                                "a stream launch needs a drain while it runs: launch it with ikp's HostSession");
    }
    if (epochs == 0u || epochs > MAX_EPOCHS) return host_detail::field("epochs", epochs, "must be 1..=65536");
    if (lanes * epochs > MAX_LANES) {
      return host_detail::field("epochs", epochs, "epochs x lanes is more segments than the format allows");
    }
    for (const std::uint32_t r : async_regions) {
      if (r >= regions.size()) {
        return host_detail::field("async_regions", r, "an async region must be one of the named regions");
      }
    }
    if (clock_sync &&
        (clock_sync->host_realtime_ns == 0u || clock_sync->device_globaltimer_ns == 0u || clock_sync->samples == 0u)) {
      return host_detail::field("clock_sync", 0u, "a clock sync has non-zero host realtime, device time and samples");
    }
    if (regions.size() > MAX_REGIONS) return host_detail::field("n_regions", regions.size(), "at most 1024 regions");
    if (counters.size() > MAX_COUNTERS) {
      return host_detail::field("n_counters", counters.size(), "at most 256 counters");
    }
    for (const std::vector<std::string>* list : {&regions, &counters}) {
      for (const std::string& s : *list) {
        if (s.find('\0') != std::string::npos) return host_detail::names("a name contains a NUL byte");
      }
    }
    for (const std::vector<std::string>* list : {&regions, &counters}) {
      for (const std::string& s : *list) {
        if (!host_detail::is_utf8(s)) return host_detail::names("a name is not UTF-8");
      }
    }
    if (names_bytes() > MAX_NAMES_BYTES) return host_detail::names("name table larger than 1 MiB");
    return std::string();
  }

  /// Writes the header (header_len() words: fixed words, async bitmap, name table) into
  /// out[0, header_len()) and leaves out[header_len(), n) as it is. Returns "" or why not
  /// (validate()'s message, or an array of fewer than header_len() words), writing nothing
  /// then. `out` is host memory: a staging copy of the buffer, say, zeroed past the header.
  std::string write_header(std::uint64_t* out, std::size_t n) const {
    std::string err = validate();
    if (!err.empty()) return err;
    const std::uint64_t len = header_len();
    if (out == nullptr || n < len) {
      return "ikp::HostLayout::write_header: the array holds " + std::to_string(out ? n : 0u) +
             " words, the header needs " + std::to_string(len);
    }
    for (std::uint64_t i = 0; i < len; ++i) out[i] = 0u;
    const auto hi = [](std::uint64_t v) { return v << HDR_HI_SHIFT; };
    const std::uint64_t flags = overflow == Overflow::Ring ? HEADER_FLAG_RING : 0u;
    out[hdr::MAGIC] = MAGIC;
    out[hdr::VERSION] = hi(len) | FORMAT_VERSION;
    out[hdr::LANES] = hi(records_per_lane) | lane_count();
    out[hdr::GROUPS] = (static_cast<std::uint64_t>(counters.size()) << HDR_COUNTERS_SHIFT) |
                       (flags << HDR_FLAGS_SHIFT) | (static_cast<std::uint64_t>(timer) << HDR_TIMER_SHIFT) |
                       groups_per_block;
    out[hdr::GRID_XY] = hi(grid[1]) | grid[0];
    out[hdr::GRID_Z] = hi(static_cast<std::uint64_t>(regions.size())) | grid[2];
    out[hdr::STRIDE] = hi(names_bytes()) | lane_stride();
    out[hdr::EPOCHS] = epochs;
    if (clock_sync) {
      out[hdr::SYNC_REALTIME] = clock_sync->host_realtime_ns;
      out[hdr::SYNC_MONOTONIC] = clock_sync->host_monotonic_ns;
      out[hdr::SYNC_GLOBALTIMER] = clock_sync->device_globaltimer_ns;
      out[hdr::SYNC_ROUND_TRIP] =
          (std::uint64_t{clock_sync->samples} << SYNC_SAMPLES_SHIFT) | clock_sync->round_trip_ns;
    }
    for (const std::uint32_t r : async_regions) out[hdr::ASYNC_BITMAP + r / 64u] |= std::uint64_t{1} << (r % 64u);
    // The name table, as little-endian bytes from the word after the bitmap; the NUL after
    // each name and the padding are the zeros already there.
    std::uint64_t at = (hdr::ASYNC_BITMAP + bitmap_words()) * sizeof(std::uint64_t);
    for (const std::vector<std::string>* list : {&regions, &counters}) {
      for (const std::string& s : *list) {
        for (const char c : s) {
          out[at / 8u] |= std::uint64_t{static_cast<unsigned char>(c)} << (8u * (at % 8u));
          ++at;
        }
        ++at;
      }
    }
    return std::string();
  }

  /// The header words (header_len() of them), to copy to the start of the zeroed buffer.
  /// A layout validate() refuses throws std::invalid_argument with its message (built
  /// without exceptions: prints it and aborts).
  std::vector<std::uint64_t> header_words() const {
    std::string err = validate();
    std::vector<std::uint64_t> words;
    if (err.empty()) {
      words.resize(static_cast<std::size_t>(header_len()));
      err = write_header(words.data(), words.size());
    }
    if (!err.empty()) host_detail::fail(err);
    return words;
  }

  /// The kernel argument for a buffer at device address `device_ptr` (ikp_device's
  /// Layout::kernel_arg): pass it by value to the kernel, which hands it to ikp::Lane.
  Arg kernel_arg(std::uint64_t device_ptr) const {
    Arg a{};
    a.buf = device_ptr;
    a.lane_base = static_cast<unsigned>(lane_base());
    a.lane_stride = static_cast<unsigned>(lane_stride());
    a.records_per_lane = records_per_lane;
    a.groups_per_block = groups_per_block;
    a.lane_count = static_cast<unsigned>(lane_count());
    a.n_counters = static_cast<unsigned>(counters.size());
    a.epochs = epochs;
    a.flags = 0u;
    return a;
  }

  /// The same for a device pointer (cudaMalloc's, a tensor's data_ptr()).
  template <class T>
  Arg kernel_arg(T* device_ptr) const {
    return kernel_arg(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(device_ptr)));
  }
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_constant_is_emitted_with_its_value() {
        let s = source();
        for (name, v) in [
            ("HDR_HI_SHIFT", wire::HDR_HI_SHIFT),
            ("HDR_TIMER_SHIFT", wire::HDR_TIMER_SHIFT),
            ("HDR_FLAGS_SHIFT", wire::HDR_FLAGS_SHIFT),
            ("HDR_COUNTERS_SHIFT", wire::HDR_COUNTERS_SHIFT),
            ("SYNC_SAMPLES_SHIFT", wire::SYNC_SAMPLES_SHIFT),
            ("MAX_LANES", wire::MAX_LANES),
            ("MAX_RECORDS_PER_LANE", wire::MAX_RECORDS_PER_LANE),
            ("MAX_NAMES_BYTES", wire::MAX_NAMES_BYTES),
            ("VERSION", hdr::VERSION as u32),
            ("GROUPS", hdr::GROUPS as u32),
            ("SYNC_ROUND_TRIP", hdr::SYNC_ROUND_TRIP as u32),
            ("ASYNC_BITMAP", hdr::ASYNC_BITMAP as u32),
        ] {
            let line = if v >= 256 {
                format!("constexpr unsigned {name} = {v:#x}u;")
            } else {
                format!("constexpr unsigned {name} = {v}u;")
            };
            assert!(s.contains(&line), "missing `{line}`");
        }
    }

    #[test]
    fn defaults_are_those_of_layout_default() {
        let s = source();
        let d = Layout::default();
        for line in [
            format!(
                "grid{{{{{}u, {}u, {}u}}}};",
                d.grid[0], d.grid[1], d.grid[2]
            ),
            format!("records_per_lane = {}u;", d.records_per_lane),
            format!("epochs = {}u;", d.epochs),
            "timer = Timer::Global;".into(),
            "overflow = Overflow::DropNewest;".into(),
        ] {
            assert!(s.contains(&line), "missing `{line}`");
        }
    }

    #[test]
    fn source_is_ascii_guarded_and_includes_the_device_header() {
        let s = source();
        assert!(s.is_ascii());
        let guard = format!("IKP_HOST_HPP_V{}", wire::FORMAT_VERSION);
        assert!(s.contains(&format!("#ifndef {guard}")));
        assert!(s.trim_end().ends_with(&format!("#endif  // {guard}")));
        assert!(s.contains(&format!("#include \"{}\"", super::super::FILE_NAME)));
    }
}
