// ikp_host.hpp: the ikp in-kernel profiler, host side of a C++ launcher. Wire format v2.
//
// GENERATED from the ikp wire format (ikp_device::cuh::host_source()); do not edit. `ikp
// header -o DIR` writes it next to ikp.cuh, which it includes. In the ikp repository,
// `IKP_BLESS=1 cargo test -p ikp-device --test device cuh_golden` refreshes device/include/.
//
// What it does: ikp::HostLayout describes an instrumented launch (the C++ twin of the Rust
// ikp_device::Layout, same fields, defaults and limits), sizes its buffer, writes the
// buffer header (magic, version, grid, lanes, names, ...) and builds the kernel argument
// ikp::Arg; for a stream launch (Overflow::Stream, Overflow::StreamWait), ikp::StreamDrain
// empties the lanes' rings into a stream file (.ikps) while the kernel runs (a thread: link
// with -pthread). Plain C++17 with the standard library: no CUDA header is needed, so the
// same code serves nvcc host code, a PyTorch C++ extension and any host compiler. The ikp
// tests check, byte for byte, that it writes what the Rust encoder writes, and run the
// drain against lanes of ikp.cuh emulated on the CPU, under ThreadSanitizer.
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
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
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
constexpr unsigned STREAM_MIN_RING = 4u;  // smallest stream ring (records_per_lane of a stream layout, a power of two)

// The buffer symbol of a kernel ikp instrument instrumented (ikp_device::probe_symbol, # Format): HostLayout::probe_symbol().
constexpr unsigned PROBE_SYMBOL_WORDS = 6u;  // 64-bit words of the symbol
constexpr unsigned PROBE_SYMBOL_LANES_AT = 0u;  // word: address of epoch 0's lane 0
constexpr unsigned PROBE_SYMBOL_COUNTS_AT = 1u;  // word: address of lane 0's count word
constexpr unsigned PROBE_SYMBOL_CLAIMS_AT = 2u;  // word: address of the launch counters
constexpr unsigned PROBE_SYMBOL_STRIDE = 3u;  // word: records_per_lane << 32 | lane stride in bytes
constexpr unsigned PROBE_SYMBOL_LANES = 4u;  // word: groups_per_block << 32 | lane_count
constexpr unsigned PROBE_SYMBOL_EPOCHS = 5u;  // word: epochs

// The stream file (.ikps) StreamDrain writes (ikp_host::stream_file, # Format).
constexpr unsigned long long STREAM_FILE_MAGIC = 0x454c494653504b49ull;  // word 0 of a stream file ("IKPSFILE" little-endian)
constexpr unsigned STREAM_FILE_VERSION = 1u;  // stream file version written (low half of word 1; the header's words in the high half)
constexpr unsigned STREAM_BLOCK_RECORDS = 1u;  // block kind: records of one lane
constexpr unsigned STREAM_BLOCK_LANE = 2u;  // block kind: a lane's final state
constexpr unsigned STREAM_BLOCK_END = 3u;  // block kind: the end, with the drain's figures
constexpr unsigned STREAM_END_WORDS = 4u;  // words of the end block
constexpr unsigned STREAM_LANE_STATE_WORDS = 11u;  // words of a lane's final state without counters (+ one per counter)

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

  /// Whether the lanes stream (Overflow::Stream, Overflow::StreamWait): the buffer is a
  /// stream buffer that a StreamDrain empties while the kernel runs.
  bool is_stream() const { return overflow == Overflow::Stream || overflow == Overflow::StreamWait; }

  /// Words per lane segment: LANE_FIXED_WORDS + records_per_lane + counters (and a stream
  /// lane's STREAM_CTRL_WORDS).
  std::uint64_t lane_stride() const {
    return std::uint64_t{LANE_FIXED_WORDS} + records_per_lane + static_cast<std::uint64_t>(counters.size()) +
           (is_stream() ? STREAM_CTRL_WORDS : 0u);
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
    if (is_stream() && ((records_per_lane & (records_per_lane - 1u)) != 0u || records_per_lane < STREAM_MIN_RING)) {
      return host_detail::field("records_per_lane", records_per_lane, "a stream ring needs a power of two of at least 4");
    }
    if (is_stream() && epochs != 1u) return host_detail::field("epochs", epochs, "a stream launch records one launch");
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
    const std::uint64_t flags = overflow == Overflow::Ring         ? HEADER_FLAG_RING
                                : overflow == Overflow::StreamWait ? HEADER_FLAG_STREAM_WAIT
                                                                   : 0u;
    out[hdr::MAGIC] = is_stream() ? STREAM_MAGIC : MAGIC;
    out[hdr::VERSION] = hi(len) | (is_stream() ? STREAM_VERSION : FORMAT_VERSION);
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
    a.flags = is_stream() ? ARG_FLAG_STREAM : 0u;
    return a;
  }

  /// The same for a device pointer (cudaMalloc's, a tensor's data_ptr()).
  template <class T>
  Arg kernel_arg(T* device_ptr) const {
    return kernel_arg(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(device_ptr)));
  }

  /// The words to copy into the buffer symbol of a kernel `ikp instrument` instrumented
  /// (`ikp_buf_<kernel>`: cuModuleGetGlobal, then cuMemcpyHtoD of all PROBE_SYMBOL_WORDS)
  /// for a buffer at device address `device_ptr` laid out as this layout (ikp_device's
  /// probe_symbol::words): the lanes' addresses and counts its probes read. A null
  /// `device_ptr` gives zeros: the probes off.
  std::array<std::uint64_t, PROBE_SYMBOL_WORDS> probe_symbol(std::uint64_t device_ptr) const {
    std::array<std::uint64_t, PROBE_SYMBOL_WORDS> w{};
    if (device_ptr == 0u) return w;
    const Arg a = kernel_arg(device_ptr);
    const std::uint64_t lanes_at = a.buf + 8u * a.lane_base;
    w[PROBE_SYMBOL_LANES_AT] = lanes_at;
    w[PROBE_SYMBOL_COUNTS_AT] = lanes_at + 8u * (std::uint64_t{LANE_EVENTS} + TRAILER_COUNT + a.records_per_lane);
    w[PROBE_SYMBOL_CLAIMS_AT] = a.buf + 8u * (std::uint64_t{a.lane_base} - a.lane_count);
    w[PROBE_SYMBOL_STRIDE] = std::uint64_t{a.records_per_lane} << 32 | 8u * std::uint64_t{a.lane_stride};
    w[PROBE_SYMBOL_LANES] = std::uint64_t{a.groups_per_block} << 32 | a.lane_count;
    w[PROBE_SYMBOL_EPOCHS] = a.epochs;
    return w;
  }
};

/// What a StreamDrain did: the figures of the stream file's end block.
struct DrainStats {
  std::uint64_t records = 0u;  // records copied out of the rings (drop and stall marks included)
  std::uint64_t polls = 0u;  // passes over the lanes
  std::uint64_t wall_ns = 0u;  // from start() to finish(), ns
  std::uint64_t max_backlog = 0u;  // most records one lane had waiting at a poll (near the ring's size: the drain nearly fell behind)
};

namespace host_detail {

// The drain reads words the GPU writes while it runs: HEAD with acquire (the records before
// it are then visible), the records relaxed; it writes TAIL with release (its copies are
// done before a lane reuses those slots). GCC and Clang (nvcc's host compilers) have
// atomic builtins for plain memory; elsewhere volatile accesses with fences.
#if defined(__GNUC__) || defined(__clang__)
inline std::uint64_t load_acquire(const std::uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
inline std::uint64_t load_relaxed(const std::uint64_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
inline void store_release(std::uint64_t* p, std::uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
#else
inline std::uint64_t load_relaxed(const std::uint64_t* p) { return *static_cast<const volatile std::uint64_t*>(p); }
inline std::uint64_t load_acquire(const std::uint64_t* p) {
  const std::uint64_t v = load_relaxed(p);
  std::atomic_thread_fence(std::memory_order_acquire);
  return v;
}
inline void store_release(std::uint64_t* p, std::uint64_t v) {
  std::atomic_thread_fence(std::memory_order_release);
  *static_cast<volatile std::uint64_t*>(p) = v;
}
#endif

}  // namespace host_detail

/// Empties the rings of a stream launch (HostLayout::overflow = Overflow::Stream or
/// Overflow::StreamWait) into a stream file (.ikps) while the kernel runs, for launchers
/// without Rust; every ikp command reads the file (`ikp decode run.ikps --perfetto ...`).
/// A thread polls each lane's HEAD, appends the records it published to the file and hands
/// the slots back (TAIL); finish(), after the kernel, copies what is left, appends every
/// lane's final state and the end block, and renames the file into place, so a file that
/// exists is whole. It holds one ring of records at a time, whatever the kernel's length.
/// In drop mode a drain that falls behind costs the kernel only drops (counted and marked);
/// in wait mode lanes wait for it. After a write error it keeps handing slots back without
/// copying, so a waiting lane never hangs on it, and finish() reports the error.
///
/// The buffer is memory the host reads while the kernel runs, with the header at its start
/// and zeros after: mapped pinned host memory, as ikp's StreamSession uses (error checks
/// left out; the words are little-endian, as on every CUDA host):
///
///   layout.overflow = ikp::Overflow::Stream;       // a ring of records_per_lane (a power of two)
///   std::uint64_t* host = nullptr;
///   cudaHostAlloc(reinterpret_cast<void**>(&host), layout.buffer_bytes(), cudaHostAllocMapped);
///   std::fill(host, host + layout.buffer_words(), 0u);
///   const std::vector<std::uint64_t> header = layout.header_words();
///   std::copy(header.begin(), header.end(), host);
///   void* dev = nullptr;
///   cudaHostGetDevicePointer(&dev, host, 0);
///   ikp::StreamDrain drain;
///   if (std::string err = drain.start(layout, host, "run.ikps"); !err.empty()) { /* report */ }
///   persistent<<<sms, 256, 0, stream>>>(..., layout.kernel_arg(dev));
///   cudaStreamSynchronize(stream);                 // the kernel's writes are visible
///   ikp::DrainStats stats;
///   if (std::string err = drain.finish(&stats); !err.empty()) { /* report */ }
///
/// Destroying a drain that was started and not finished stops its thread and removes the
/// partial file: do it only once the kernel has ended (a waiting lane would wait forever).
class StreamDrain {
 public:
  StreamDrain() = default;
  StreamDrain(const StreamDrain&) = delete;
  StreamDrain& operator=(const StreamDrain&) = delete;
  ~StreamDrain() {
    if (!running_) return;
    done_.store(true, std::memory_order_release);
    thread_.join();
    std::fclose(file_);
    std::remove(part_.c_str());
  }

  /// Starts the drain of `buffer` (the host address of the launch's buffer, laid out by
  /// `layout`, its header written and the rest zero) into `path` (written as `path.part`
  /// until finish()); `idle` is how long the thread sleeps after a pass that found nothing.
  /// Returns "" or why not (layout.validate()'s message, a layout that does not stream, a
  /// buffer whose header is not the layout's, a file that cannot be created).
  std::string start(const HostLayout& layout, std::uint64_t* buffer, const std::string& path,
                    std::chrono::microseconds idle = std::chrono::microseconds(20)) {
    if (running_) return "ikp::StreamDrain::start: the drain is already running";
    std::string err = layout.validate();
    if (!err.empty()) return err;
    if (!layout.is_stream()) {
      return "ikp::StreamDrain::start: the layout does not stream (its overflow is not Overflow::Stream or "
             "Overflow::StreamWait)";
    }
    if (buffer == nullptr) return "ikp::StreamDrain::start: no buffer";
    const std::vector<std::uint64_t> header = layout.header_words();
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (host_detail::load_relaxed(buffer + i) != header[i]) {
        return "ikp::StreamDrain::start: word " + std::to_string(i) +
               " of the buffer is not the layout's header: copy layout.header_words() to its start, the rest "
               "zeroed, before start()";
      }
    }
    part_ = path + ".part";
    file_ = std::fopen(part_.c_str(), "wb");
    if (file_ == nullptr) return "ikp::StreamDrain::start: cannot create " + part_ + ": " + std::strerror(errno);
    std::setvbuf(file_, nullptr, _IOFBF, std::size_t{1} << 20);
    path_ = path;
    buf_ = buffer;
    lane_base_ = layout.lane_base();
    stride_ = layout.lane_stride();
    cap_ = layout.records_per_lane;
    state_words_ = STREAM_LANE_STATE_WORDS + static_cast<std::uint64_t>(layout.counters.size());
    consumed_.assign(static_cast<std::size_t>(layout.lane_count()), 0u);
    scratch_.assign(cap_, 0u);
    stats_ = DrainStats{};
    error_.clear();
    started_ = std::chrono::steady_clock::now();
    put(STREAM_FILE_MAGIC);
    put((static_cast<std::uint64_t>(header.size()) << 32u) | STREAM_FILE_VERSION);
    put(header.data(), header.size());
    if (!error_.empty()) {
      std::fclose(file_);
      std::remove(part_.c_str());
      return error_;
    }
    done_.store(false, std::memory_order_relaxed);
    running_ = true;
    thread_ = std::thread([this, idle] {
      while (!done_.load(std::memory_order_acquire)) {
        if ((error_.empty() ? poll() : release_all()) == 0u) std::this_thread::sleep_for(idle);
      }
    });
    return std::string();
  }

  /// Once the kernel has ended and its writes are visible (cudaStreamSynchronize): stops
  /// the thread, copies the records left, appends each lane's final state and the end block,
  /// and renames the file to its path. Returns "" or the first error (the file is then
  /// removed); `stats`, if given, gets the drain's figures either way.
  std::string finish(DrainStats* stats = nullptr) {
    if (!running_) return "ikp::StreamDrain::finish: the drain was not started";
    done_.store(true, std::memory_order_release);
    thread_.join();
    running_ = false;
    if (error_.empty()) poll();
    for (std::uint64_t l = 0; l < consumed_.size() && error_.empty(); ++l) {
      // The lane's segment without its ring: prologue and control words, then the trailer.
      const std::uint64_t* seg = buf_ + lane_base_ + l * stride_;
      const std::uint64_t head = LANE_EVENTS + STREAM_CTRL_WORDS;
      std::vector<std::uint64_t> state(static_cast<std::size_t>(state_words_));
      for (std::uint64_t i = 0; i < state_words_; ++i) {
        state[i] = host_detail::load_acquire(seg + (i < head ? i : i + cap_));
      }
      block(STREAM_BLOCK_LANE, l, 0u, state.data(), state.size());
    }
    stats_.wall_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started_).count());
    const std::uint64_t end[STREAM_END_WORDS] = {stats_.records, stats_.polls, stats_.wall_ns, stats_.max_backlog};
    block(STREAM_BLOCK_END, 0u, 0u, end, STREAM_END_WORDS);
    if (std::fclose(file_) != 0) fail_write();
    file_ = nullptr;
    if (error_.empty() && std::rename(part_.c_str(), path_.c_str()) != 0) {
      error_ = "ikp::StreamDrain: cannot rename " + part_ + " to " + path_ + ": " + std::strerror(errno);
    }
    if (!error_.empty()) std::remove(part_.c_str());
    if (stats != nullptr) *stats = stats_;
    return error_;
  }

 private:
  /// Lane `l`'s control words.
  std::uint64_t* ctrl(std::uint64_t l) const { return buf_ + lane_base_ + l * stride_ + LANE_EVENTS; }

  /// Records lane `l` has published (HEAD's stored count, read with acquire).
  std::uint32_t stored(std::uint64_t l) const {
    return static_cast<std::uint32_t>(host_detail::load_acquire(ctrl(l) + STREAM_HEAD));
  }

  /// Tells lane `l` the drain has consumed up to record `upto` (TAIL, release).
  void hand_back(std::uint64_t l, std::uint32_t upto) {
    consumed_[l] = upto;
    host_detail::store_release(ctrl(l) + STREAM_TAIL, upto);
  }

  /// One pass over the lanes: appends every record published since the last and hands the
  /// slots back. Returns the records copied.
  std::uint64_t poll() {
    std::uint64_t copied = 0u;
    for (std::uint64_t l = 0; l < consumed_.size(); ++l) {
      const std::uint32_t s = stored(l), c = consumed_[l], n = s - c;
      if (n == 0u) continue;
      if (n > cap_) {
        error_ = "ikp::StreamDrain: lane " + std::to_string(l) + " published " + std::to_string(s) +
                 " stored records with " + std::to_string(c) + " consumed, more than its ring of " +
                 std::to_string(cap_) + ": the lane is not an ikp stream lane, or its words were overwritten";
        break;
      }
      const std::uint64_t* ring = ctrl(l) + STREAM_CTRL_WORDS;
      for (std::uint32_t i = 0; i < n; ++i) scratch_[i] = host_detail::load_relaxed(ring + ((c + i) & (cap_ - 1u)));
      block(STREAM_BLOCK_RECORDS, l, c, scratch_.data(), n);
      if (!error_.empty()) break;
      hand_back(l, s);
      stats_.max_backlog = n > stats_.max_backlog ? n : stats_.max_backlog;
      copied += n;
    }
    stats_.records += copied;
    stats_.polls += 1u;
    return copied;
  }

  /// After an error: hands every lane's published slots back without copying them.
  std::uint64_t release_all() {
    std::uint64_t released = 0u;
    for (std::uint64_t l = 0; l < consumed_.size(); ++l) {
      const std::uint32_t s = stored(l);
      released += static_cast<std::uint32_t>(s - consumed_[l]);
      hand_back(l, s);
    }
    return released;
  }

  /// Appends a block: `lane << 32 | kind`, `count << 32 | first`, then the words.
  void block(std::uint32_t kind, std::uint64_t lane, std::uint32_t first, const std::uint64_t* words,
             std::size_t count) {
    put((lane << 32u) | kind);
    put((static_cast<std::uint64_t>(count) << 32u) | first);
    put(words, count);
  }

  void put(std::uint64_t word) { put(&word, 1u); }

  void put(const std::uint64_t* words, std::size_t count) {
    if (error_.empty() && std::fwrite(words, sizeof(std::uint64_t), count, file_) != count) fail_write();
  }

  void fail_write() {
    if (error_.empty()) error_ = "ikp::StreamDrain: writing " + part_ + ": " + std::strerror(errno);
  }

  std::string path_, part_;
  std::FILE* file_ = nullptr;
  std::uint64_t* buf_ = nullptr;
  std::uint64_t lane_base_ = 0u, stride_ = 0u, state_words_ = 0u;
  std::uint32_t cap_ = 0u;
  std::vector<std::uint32_t> consumed_;
  std::vector<std::uint64_t> scratch_;
  DrainStats stats_;
  std::string error_;  // the first error; written by the thread, read after it is joined
  std::chrono::steady_clock::time_point started_;
  std::atomic<bool> done_{false};
  bool running_ = false;
  std::thread thread_;
};

}  // namespace ikp

#endif  // IKP_HOST_HPP_V2
