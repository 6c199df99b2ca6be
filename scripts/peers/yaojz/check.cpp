// Writes one launch's buffers through yao-jz's own HostSession (host_session.hpp, on a
// host-only CUDA stub): its Chrome trace (write_trace) and the ikp dump file.
#include <cstdio>
#include <cstdint>
#include <vector>
#include "intra_kernel_profiler/trace/host_session.hpp"
namespace ikpt = intra_kernel_profiler::trace;

static uint64_t rng = 88172645463325252ull;
static uint64_t next() { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

int main(int argc, char** argv) {
  const uint32_t cap = 8, grid_x = 3, threads = 96, wpb = (threads + 31) / 32;
  ikpt::HostSession sess;
  sess.init(cap, grid_x, threads);
  sess.reset();
  ikpt::GlobalBuffer& g = sess.global_buffer();
  // What WarpContext::record / flush store, warp by warp (lane 0).
  for (uint32_t b = 0; b < grid_x; ++b)
    for (uint32_t w = 0; w < wpb; ++w) {
      const uint32_t slot = b * wpb + w, smid = 5 + 3 * b;
      const uint32_t info = b | (uint32_t(ikpt::pack_warp_smid(w, smid)) << 16);
      uint64_t t = 1700000000000000000ull + 1000 * slot;
      uint32_t cnt = 0;
      auto rec = [&](uint16_t id, uint16_t type) {
        t += 1 + next() % 500;
        uint32_t* e = reinterpret_cast<uint32_t*>(&g.events[slot * cap + (cnt & (cap - 1))]);
        e[0] = uint32_t(t); e[1] = uint32_t(t >> 32); e[2] = id | (uint32_t(type) << 16); e[3] = info;
        ++cnt;
      };
      const int iters = 1 + int(next() % 5);  // up to 22 records: rings of 8 wrap
      rec(0, 0);
      for (int i = 0; i < iters; ++i) {
        rec(1, 0); rec(2, 0); rec(2, 1); rec(3, 2); rec(1, 1);
      }
      if (slot % 4 != 3) rec(0, 1);  // some warps leave region 0 open
      if (slot != 4) g.counters[slot] = cnt;  // slot 4 never flushes
    }
  sess.set_region_names({"kernel", "tile", "mma", "mark"});
  sess.write_trace(argv[1]);
  // The dump, as ikp_host::decode::yaojz documents it.
  uint32_t slots = grid_x * wpb;
  std::vector<uint32_t> counts(slots);
  std::vector<ikpt::Event> events(size_t(slots) * cap);
  cudaMemcpy(counts.data(), g.counters, 4 * counts.size(), cudaMemcpyDeviceToHost);
  cudaMemcpy(events.data(), g.events, 16 * events.size(), cudaMemcpyDeviceToHost);
  uint32_t head[4] = {1, cap, grid_x, wpb};
  std::vector<char> pad((16 - (24 + 4 * size_t(slots)) % 16) % 16, 0);
  FILE* f = std::fopen(argv[2], "wb");
  std::fwrite("YJZRING", 1, 8, f);
  std::fwrite(head, 4, 4, f);
  std::fwrite(counts.data(), 4, counts.size(), f);
  std::fwrite(pad.data(), 1, pad.size(), f);
  std::fwrite(events.data(), 16, events.size(), f);
  std::fclose(f);
  return 0;
}
