// Stream lanes of ikp.cuh run on the CPU (IKP_HOST_EMULATION), one real thread per lane, so
// that a drain can empty their rings while they record, as the host does while a kernel runs.
//
// Built two ways by the ikp tests (host/tests/host/stream_emulation.rs):
// - as a shared library exporting ikp_emu_stream_run(), which the Rust test calls while
//   ikp-host's own Drain runs on another thread;
// - with IKP_EMU_MAIN, as a C++ launcher whose drain is ikp_host.hpp's ikp::StreamDrain,
//   built with -fsanitize=thread, so ThreadSanitizer checks the header's publication order
//   against the drain C++ users run.
//
// Every lane records `pairs` begin / end pairs of region 0 with payload = pair index mod
// 2^20, its globaltimer advancing 8 ns per read from 2^20 + 640 ns x lane, then finalizes. Lanes
// whose index is a multiple of `slow_every` (0: none) sleep 50 us every 64 pairs, so lanes
// publish at different paces. A lane may have followers (ikp_emu_stream_run_followers):
// threads of the leader's warp that are not its leader, run in step with it on the lane's
// own thread, each record right after the leader's (their timer reads do not advance the
// clock, so the leader's records are the same with them or without).
#define IKP_HOST_EMULATION 1
#define IKP_EMU_SYSTEM_SCOPE_HOOK 1
#include "ikp.cuh"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace {
thread_local ikp::emu::Dim3 t_block{0, 0, 0};
thread_local unsigned long long t_now = 0;
thread_local ikp::emu::Dim3 t_grid{1, 1, 1};  // per lane thread: runs may overlap
thread_local bool t_vote = false;       // the lane's warp vote so far
thread_local bool t_following = false;  // a follower runs: its timer reads take no time
// A host played by the lane's own thread while it waits for room (run_lane's
// `slow_every == ~2u`): each sleep hands back one chunk of what the lane published.
thread_local unsigned long long* t_sleep_host_ctrl = nullptr;
thread_local unsigned long long t_sleep_host_chunk = 0;
const ikp::emu::Dim3 kBlockDim{32, 1, 1};
}  // namespace

namespace ikp {
namespace emu {
unsigned long long globaltimer() { return t_following ? t_now : (t_now += 8); }
unsigned long long clock64() { return 2 * t_now; }
unsigned smid() { return t_block.x % 7; }
Dim3 block_idx() { return t_block; }
Dim3 grid_dim() { return t_grid; }
Dim3 thread_idx() { return Dim3{0, 0, 0}; }
Dim3 block_dim() { return kBlockDim; }
void fence_block() {}
// The leader votes first (run_lane opens the vote), its followers join it.
bool warp_any(bool p) { return t_vote = t_vote || p; }
void atomic_add(unsigned long long* addr, unsigned long long value) {
  __atomic_fetch_add(addr, value, __ATOMIC_RELAXED);
}
unsigned long long atomic_fetch_add(unsigned long long* addr, unsigned long long value) {
  return __atomic_fetch_add(addr, value, __ATOMIC_RELAXED);
}
void nanosleep(unsigned ns) {
  if (t_sleep_host_ctrl != nullptr) {
    unsigned long long* const ctrl = t_sleep_host_ctrl;
    const unsigned long long head = __atomic_load_n(ctrl + STREAM_HEAD, __ATOMIC_ACQUIRE) & 0xFFFFFFFFull;
    const unsigned long long tail = __atomic_load_n(ctrl + STREAM_TAIL, __ATOMIC_RELAXED);
    const unsigned long long next = tail + t_sleep_host_chunk < head ? tail + t_sleep_host_chunk : head;
    __atomic_store_n(ctrl + STREAM_TAIL, next, __ATOMIC_RELEASE);
    return;
  }
  std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
}
// System-scope accesses of all lanes, for ikp_emu_system_scope_counts().
std::atomic<unsigned long long> g_releases{0}, g_acquires{0};
void system_scope(bool acquire) { (acquire ? g_acquires : g_releases).fetch_add(1); }
}  // namespace emu
}  // namespace ikp

// Releases (HEAD publishes) and acquires (TAIL reads) of every lane since the last call;
// resets them.
extern "C" void ikp_emu_system_scope_counts(unsigned long long* releases, unsigned long long* acquires) {
  *releases = ikp::emu::g_releases.exchange(0);
  *acquires = ikp::emu::g_acquires.exchange(0);
}

namespace {
template <ikp::Overflow O>
void run_lane(const ikp::Arg& arg, unsigned block, unsigned pairs, unsigned slow_every, unsigned followers) {
  using L = ikp::Lane<ikp::Fence::None, ikp::Timer::Global, O>;
  t_block = ikp::emu::Dim3{block, 0, 0};
  t_now = (1ull << 20) + 640ull * block;  // lanes overlap, a little apart, as on a GPU
  t_vote = false;
  L lane(arg, 0u, true);
  std::vector<std::unique_ptr<L>> others;
  t_following = true;
  for (unsigned f = 0; f < followers; ++f) others.emplace_back(new L(arg, 0u, false));
  t_following = false;
  // A record on the leader, then on each follower.
  const auto warp = [&](auto record) {
    record(lane);
    t_following = true;
    for (auto& o : others) record(*o);
    t_following = false;
  };
  const bool slow = slow_every != 0u && block % slow_every == 0u;
  // slow_every == ~0u: no drain runs; the lane's thread plays a host that keeps up
  // perfectly, setting TAIL to HEAD's stored count after every pair. ~1u: a host as fast
  // as the lane but late, as a drain that just keeps up is: after every pair it hands back
  // what HEAD said `delay` pairs earlier, the delay being all but half a chunk of the
  // ring (in records), which keeps the lane nearly full.
  const bool self_drained = slow_every >= ~1u;
  // ~2u: no drain, and the host hands back one chunk per sleep of a waiting lane (above).
  const bool sleep_host = slow_every == ~2u;
  const unsigned delay =
      slow_every == ~1u ? (arg.records_per_lane - (arg.records_per_lane >> ikp::STREAM_PUBLISH_SHIFT) / 2u) / 2u : 0u;
  std::vector<unsigned long long> seen(delay + 1u, 0u);
  unsigned long long* ctrl = nullptr;
  if (self_drained || sleep_host) {
    ctrl = reinterpret_cast<unsigned long long*>(arg.buf) + arg.lane_base +
           static_cast<unsigned long long>(block) * arg.lane_stride + ikp::LANE_EVENTS;
  }
  t_sleep_host_ctrl = sleep_host ? ctrl : nullptr;
  t_sleep_host_chunk = arg.records_per_lane >> ikp::STREAM_PUBLISH_SHIFT;
  for (unsigned i = 0; i < pairs; ++i) {
    warp([i](L& l) { l.begin(0u, i); });
    warp([i](L& l) { l.end(0u, i); });
    if (slow && i % 64u == 63u) std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (self_drained) {
      const unsigned long long stored = __atomic_load_n(ctrl + ikp::STREAM_HEAD, __ATOMIC_ACQUIRE) & 0xFFFFFFFFull;
      seen[i % seen.size()] = stored;
      __atomic_store_n(ctrl + ikp::STREAM_TAIL, seen[(i + 1u) % seen.size()], __ATOMIC_RELEASE);
    }
  }
  warp([](L& l) { l.finalize(); });
}
}  // namespace

// Runs `blocks` lanes (a grid of `blocks` x 1 x 1, one group per block), each on its own
// thread with `followers` threads of its warp beside its leader, into the stream buffer
// `arg.buf` describes; `wait` picks Overflow::StreamWait.
extern "C" int ikp_emu_stream_run_followers(const ikp::Arg* arg, unsigned blocks, unsigned pairs, int wait,
                                            unsigned slow_every, unsigned followers) {
  std::vector<std::thread> lanes;
  for (unsigned b = 0; b < blocks; ++b) {
    lanes.emplace_back([=] {
      t_grid = ikp::emu::Dim3{blocks, 1, 1};
      if (wait) {
        run_lane<ikp::Overflow::StreamWait>(*arg, b, pairs, slow_every, followers);
      } else {
        run_lane<ikp::Overflow::Stream>(*arg, b, pairs, slow_every, followers);
      }
    });
  }
  for (auto& t : lanes) t.join();
  return 0;
}

// ikp_emu_stream_run_followers() with each lane's leader alone.
extern "C" int ikp_emu_stream_run(const ikp::Arg* arg, unsigned blocks, unsigned pairs, int wait,
                                  unsigned slow_every) {
  return ikp_emu_stream_run_followers(arg, blocks, pairs, wait, slow_every, 0u);
}

#if defined(IKP_EMU_MAIN)
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "ikp_host.hpp"

// usage: emulate_stream OUT BLOCKS PAIRS WAIT SLOW_EVERY PAUSE_MS RING
// The launcher a C++ user writes, on the CPU: an ikp::HostLayout of BLOCKS lanes with rings
// of RING records and the region "work", its buffer with the header, and ikp::StreamDrain
// (ikp_host.hpp) writing OUT while the lanes run; the drain starts PAUSE_MS late. Prints
// `drained N records in P polls` (exit 0), or the drain's error (exit 3). The ikp test reads
// OUT back and checks every lane's records.
int main(int argc, char** argv) {
  if (argc != 8) return 2;
  const unsigned blocks = static_cast<unsigned>(std::atoi(argv[2]));
  const unsigned pairs = static_cast<unsigned>(std::atoi(argv[3]));
  const int wait = std::atoi(argv[4]);
  const unsigned slow_every = static_cast<unsigned>(std::atoi(argv[5]));
  const unsigned pause_ms = static_cast<unsigned>(std::atoi(argv[6]));
  ikp::HostLayout layout;
  layout.grid = {blocks, 1u, 1u};
  layout.records_per_lane = static_cast<std::uint32_t>(std::atoi(argv[7]));
  layout.regions = {"work"};
  layout.overflow = wait ? ikp::Overflow::StreamWait : ikp::Overflow::Stream;
  std::vector<std::uint64_t> buf(static_cast<std::size_t>(layout.buffer_words()), 0u);
  const std::vector<std::uint64_t> header = layout.header_words();
  std::copy(header.begin(), header.end(), buf.begin());
  const ikp::Arg arg = layout.kernel_arg(buf.data());
  ikp::StreamDrain drain;
  std::string started;
  std::thread starter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    started = drain.start(layout, buf.data(), argv[1]);
  });
  ikp_emu_stream_run(&arg, blocks, pairs, wait, slow_every);
  starter.join();
  if (!started.empty()) {
    std::printf("%s\n", started.c_str());
    return 3;
  }
  ikp::DrainStats stats;
  const std::string err = drain.finish(&stats);
  if (!err.empty()) {
    std::printf("%s\n", err.c_str());
    return 3;
  }
  std::printf("drained %llu records in %llu polls\n", static_cast<unsigned long long>(stats.records),
              static_cast<unsigned long long>(stats.polls));
  return 0;
}
#endif
