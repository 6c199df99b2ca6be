// Stream lanes of ikp.cuh run on the CPU (IKP_HOST_EMULATION), one real thread per lane, so
// that a drain can empty their rings while they record, as the host does while a kernel runs.
//
// Built two ways by the ikp tests (host/tests/host/stream_emulation.rs):
// - as a shared library exporting ikp_emu_stream_run(), which the Rust test calls while
//   ikp-host's own Drain runs on another thread;
// - with IKP_EMU_MAIN, as a program with its own drain thread (a C++ copy of the protocol:
//   acquire HEAD, copy, release TAIL), built with -fsanitize=thread, so ThreadSanitizer
//   checks the header's publication order against a concurrent reader.
//
// Every lane records `pairs` begin / end pairs of region 0 with payload = pair index mod
// 2^20, its globaltimer advancing 8 ns per read from 2^20 + 640 ns x lane, then finalizes. Lanes
// whose index is a multiple of `slow_every` (0: none) sleep 50 us every 64 pairs, so lanes
// publish at different paces.
#define IKP_HOST_EMULATION 1
#include "ikp.cuh"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {
thread_local ikp::emu::Dim3 t_block{0, 0, 0};
thread_local unsigned long long t_now = 0;
ikp::emu::Dim3 g_grid{1, 1, 1};
const ikp::emu::Dim3 kBlockDim{32, 1, 1};
}  // namespace

namespace ikp {
namespace emu {
unsigned long long globaltimer() { return t_now += 8; }
unsigned long long clock64() { return 2 * t_now; }
unsigned smid() { return t_block.x % 7; }
Dim3 block_idx() { return t_block; }
Dim3 grid_dim() { return g_grid; }
Dim3 thread_idx() { return Dim3{0, 0, 0}; }
Dim3 block_dim() { return kBlockDim; }
void fence_block() {}
void atomic_add(unsigned long long* addr, unsigned long long value) {
  __atomic_fetch_add(addr, value, __ATOMIC_RELAXED);
}
unsigned long long atomic_fetch_add(unsigned long long* addr, unsigned long long value) {
  return __atomic_fetch_add(addr, value, __ATOMIC_RELAXED);
}
void nanosleep(unsigned ns) { std::this_thread::sleep_for(std::chrono::nanoseconds(ns)); }
}  // namespace emu
}  // namespace ikp

namespace {
template <ikp::Overflow O>
void run_lane(const ikp::Arg& arg, unsigned block, unsigned pairs, unsigned slow_every) {
  t_block = ikp::emu::Dim3{block, 0, 0};
  t_now = (1ull << 20) + 640ull * block;  // lanes overlap, a little apart, as on a GPU
  ikp::Lane<ikp::Fence::None, ikp::Timer::Global, O> lane(arg, 0u, true);
  const bool slow = slow_every != 0u && block % slow_every == 0u;
  for (unsigned i = 0; i < pairs; ++i) {
    lane.begin(0u, i);
    lane.end(0u, i);
    if (slow && i % 64u == 63u) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  lane.finalize();
}
}  // namespace

// Runs `blocks` lanes (a grid of `blocks` x 1 x 1, one group per block), each on its own
// thread, into the stream buffer `arg.buf` describes; `wait` picks Overflow::StreamWait.
extern "C" int ikp_emu_stream_run(const ikp::Arg* arg, unsigned blocks, unsigned pairs, int wait,
                                  unsigned slow_every) {
  g_grid = ikp::emu::Dim3{blocks, 1, 1};
  std::vector<std::thread> lanes;
  for (unsigned b = 0; b < blocks; ++b) {
    lanes.emplace_back([=] {
      if (wait) {
        run_lane<ikp::Overflow::StreamWait>(*arg, b, pairs, slow_every);
      } else {
        run_lane<ikp::Overflow::Stream>(*arg, b, pairs, slow_every);
      }
    });
  }
  for (auto& t : lanes) t.join();
  return 0;
}

#if defined(IKP_EMU_MAIN)
#include <cstdio>
#include <cstdlib>
#include <cstring>

// usage: emulate_stream BUF_FILE ARG_FILE BLOCKS PAIRS WAIT SLOW_EVERY PAUSE_MS
// Reads the zeroed buffer with its header and the kernel argument the host built, runs the
// lanes while a drain thread empties their rings (sleeping PAUSE_MS first), and prints
// `lane L records N dropped D` per lane, then `checked`, after checking every lane's
// records arrived in order (pairs in order, drop marks summing to the drops before them).
int main(int argc, char** argv) {
  if (argc != 8) return 2;
  FILE* f = std::fopen(argv[1], "rb");
  if (!f) return 2;
  std::vector<unsigned long long> buf;
  unsigned long long w;
  while (std::fread(&w, 8, 1, f) == 1) buf.push_back(w);
  std::fclose(f);
  ikp::Arg arg{};
  f = std::fopen(argv[2], "rb");
  if (!f || std::fread(&arg, sizeof arg, 1, f) != 1) return 2;
  std::fclose(f);
  arg.buf = reinterpret_cast<unsigned long long>(buf.data());
  const unsigned blocks = std::atoi(argv[3]), pairs = std::atoi(argv[4]);
  const int wait = std::atoi(argv[5]);
  const unsigned slow_every = std::atoi(argv[6]), pause_ms = std::atoi(argv[7]);
  const unsigned cap = arg.records_per_lane;
  std::atomic<bool> done{false};
  std::vector<std::vector<unsigned long long>> got(blocks);
  auto ctrl = [&](unsigned l) { return buf.data() + arg.lane_base + l * arg.lane_stride + ikp::LANE_EVENTS; };
  auto poll = [&] {
    for (unsigned l = 0; l < blocks; ++l) {
      unsigned long long* c = ctrl(l);
      const unsigned stored = static_cast<unsigned>(__atomic_load_n(c + ikp::STREAM_HEAD, __ATOMIC_ACQUIRE));
      unsigned consumed = static_cast<unsigned>(got[l].size());
      for (; consumed != stored; ++consumed) {
        got[l].push_back(c[ikp::STREAM_CTRL_WORDS + (consumed & (cap - 1u))]);
      }
      __atomic_store_n(c + ikp::STREAM_TAIL, static_cast<unsigned long long>(consumed), __ATOMIC_RELEASE);
    }
  };
  std::thread drain([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    while (!done.load(std::memory_order_acquire)) poll();
  });
  ikp_emu_stream_run(&arg, blocks, pairs, wait, slow_every);
  done.store(true, std::memory_order_release);
  drain.join();
  poll();
  int bad = 0;
  for (unsigned l = 0; l < blocks; ++l) {
    const unsigned long long* trailer = ctrl(l) + ikp::STREAM_CTRL_WORDS + cap;
    const unsigned dropped = static_cast<unsigned>(trailer[ikp::TRAILER_COUNT] >> ikp::COUNT_DROPPED_SHIFT);
    unsigned long long next = 0, marked = 0;  // next expected record number (2 per pair)
    for (unsigned long long r : got[l]) {
      const unsigned tag = static_cast<unsigned>(r);
      if ((tag & ikp::KIND_MASK) == ikp::KIND_META) {
        const unsigned kind = (tag >> ikp::REGION_SHIFT) & ikp::REGION_MASK;
        if (kind == ikp::META_STREAM_DROPPED) {
          next += r >> ikp::TIME_SHIFT;
          marked += r >> ikp::TIME_SHIFT;
        }
        continue;
      }
      const unsigned kind = tag & ikp::KIND_MASK;
      const unsigned payload = tag >> ikp::PAYLOAD_SHIFT;
      if (kind != (next % 2 == 0 ? ikp::KIND_BEGIN : ikp::KIND_END) ||
          payload != ((next / 2) & ikp::PAYLOAD_MASK)) {
        std::printf("lane %u: record %llu out of order\n", l, next);
        bad = 1;
        break;
      }
      ++next;
    }
    if (next + (dropped - marked) != 2ull * pairs || (wait && dropped != 0)) {
      std::printf("lane %u: %llu records + %llu unmarked drops, %u attempted\n", l, next,
                  static_cast<unsigned long long>(dropped - marked), 2 * pairs);
      bad = 1;
    }
    std::printf("lane %u records %zu dropped %u\n", l, got[l].size(), dropped);
  }
  if (bad) return 1;
  std::printf("checked\n");
  return 0;
}
#endif
