// ikp_host.hpp: the ikp in-kernel profiler, host side of a C++ launcher. Wire format v2.
//
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

#ifndef IKP_HOST_HPP_V2
#define IKP_HOST_HPP_V2

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ikp.cuh"

static_assert(ikp::FORMAT_VERSION == 2u, "ikp_host.hpp and the ikp.cuh it includes come from different ikp versions");

namespace ikp {

// Buffer header fields: bit positions inside header words (see hdr below).
constexpr unsigned HDR_HI_SHIFT = 32u;  // high half of a two-field word (words 1, 2, 4, 5, 6, 7)
constexpr unsigned HDR_TIMER_SHIFT = 32u;  // word 3: the timer id (ikp::Timer), 8 bits
constexpr unsigned HDR_FLAGS_SHIFT = 40u;  // word 3: the header flags (HEADER_FLAG_RING), 8 bits
constexpr unsigned HDR_COUNTERS_SHIFT = 48u;  // word 3: n_counters, 16 bits
constexpr unsigned SYNC_SAMPLES_SHIFT = 32u;  // clock-sync word: the sample count (the round trip is the low half)

// Limits HostLayout::validate() checks (with MAX_REGIONS, MAX_COUNTERS and MAX_EPOCHS).
constexpr unsigned MAX_LANES = 0x4000000u;  // largest lane count, and epochs x lanes
constexpr unsigned MAX_RECORDS_PER_LANE = 0x10000000u;  // largest records_per_lane
constexpr unsigned MAX_NAMES_BYTES = 0x100000u;  // largest name table, in bytes

/// Header word indices (ikp_device::wire::hdr).
namespace hdr {
// Word i of the buffer holds the field named here.
constexpr unsigned MAGIC = 0u;  // ikp::MAGIC
constexpr unsigned VERSION = 1u;  // header words << HDR_HI_SHIFT | FORMAT_VERSION
constexpr unsigned LANES = 2u;  // records_per_lane << HDR_HI_SHIFT | lane_count
constexpr unsigned GROUPS = 3u;  // n_counters << HDR_COUNTERS_SHIFT | flags << HDR_FLAGS_SHIFT | timer << HDR_TIMER_SHIFT | groups_per_block
constexpr unsigned GRID_XY = 4u;  // grid_y << HDR_HI_SHIFT | grid_x
constexpr unsigned GRID_Z = 5u;  // n_regions << HDR_HI_SHIFT | grid_z
constexpr unsigned STRIDE = 6u;  // names_bytes << HDR_HI_SHIFT | lane_stride
constexpr unsigned EPOCHS = 7u;  // epochs (high half reserved, 0)
constexpr unsigned SYNC_REALTIME = 8u;  // host CLOCK_REALTIME ns at the clock sync (0: none)
constexpr unsigned SYNC_MONOTONIC = 9u;  // host CLOCK_MONOTONIC ns at the clock sync
constexpr unsigned SYNC_GLOBALTIMER = 10u;  // device %globaltimer ns at the clock sync
constexpr unsigned SYNC_ROUND_TRIP = 11u;  // samples << SYNC_SAMPLES_SHIFT | round trip ns of the clock sync
constexpr unsigned ASYNC_BITMAP = 12u;  // async-region bitmap (ceil(n_regions / 64) words), then the name table

}  // namespace hdr

namespace host_detail {

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

/// One reading of the host's clocks and the GPU's %globaltimer taken together (header
/// words hdr::SYNC_*; ikp_device::ClockSync): device time g is host realtime
/// g - device_globaltimer_ns + host_realtime_ns, within round_trip_ns / 2.
struct ClockSync {
  std::uint64_t host_realtime_ns = 0u;  // host CLOCK_REALTIME, ns since the Unix epoch (non-zero)
  std::uint64_t host_monotonic_ns = 0u;  // host CLOCK_MONOTONIC, ns, read with the realtime clock
  std::uint64_t device_globaltimer_ns = 0u;  // the GPU's %globaltimer, ns (non-zero)
  std::uint32_t round_trip_ns = 0u;  // the kept reading's round trip, ns: the mapping's error is at most half of it
  std::uint32_t samples = 0u;  // readings taken, the one with the shortest round trip kept (non-zero)
};

/// What the host knows about an instrumented launch: ikp_device::Layout in C++, with the
/// same fields, defaults (one block of one lane with 64 records, Timer::Global,
/// Overflow::DropNewest, one epoch, no names, no async regions, no clock sync) and limits.
/// Region and counter ids in the kernel are indices into `regions` and `counters`.
///
/// The sizes (lane_count() ... buffer_bytes()) mean something only for a layout validate()
/// accepts; header_words() and write_header() validate first.
struct HostLayout {
  std::array<std::uint32_t, 3> grid{{1u, 1u, 1u}};  // grid dimensions (x, y, z) in blocks, as launched
  std::uint32_t groups_per_block = 1u;  // lanes per block (warp groups, or 1)
  std::uint32_t records_per_lane = 64u;  // event records each lane may write (a ring: a power of two)
  Timer timer = Timer::Global;  // how the device takes timestamps (the kernel's ikp::Lane<.., T, ..>)
  std::vector<std::string> regions;  // region names (UTF-8, no NUL), indexed by region id
  std::vector<std::string> counters;  // wait-counter names, indexed by counter id
  Overflow overflow = Overflow::DropNewest;  // what a full lane does (the kernel's ikp::Lane<.., .., O>)
  std::uint32_t epochs = 1u;  // launches the buffer records, one segment per lane each (at least 1)
  std::vector<std::uint32_t> async_regions;  // region ids recorded as async ranges (range_begin / range_end), each < regions.size()
  std::optional<ClockSync> clock_sync;  // the host-clock mapping taken before launch, if any

  /// Blocks in the grid (saturating: a product past 2^64 - 1 reads as 2^64 - 1, refused).
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
};

}  // namespace ikp

#endif  // IKP_HOST_HPP_V2
