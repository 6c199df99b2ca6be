// Runs an ikp-instrumented "kernel" on the CPU through ikp.cuh's host emulation
// (IKP_HOST_EMULATION): every thread of every block executes the program one after the
// other, with the special registers, indices, fence and atomic coming from the shims below.
//
// usage: emulate ARG_FILE BUF_FILE GX GY GZ BX BY BZ
//   ARG_FILE  the 32-byte kernel argument the host built (its buf field is replaced);
//   BUF_FILE  the zeroed buffer with its header, rewritten in place with the result.
// Prints `fences=N canary=OK|CLOBBERED`.
//
// The program must stay in step with `program()` in device_emulation.rs, which writes the
// same records through the Rust reference encoder.
#define IKP_HOST_EMULATION 1
#include "ikp.cuh"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {
ikp::emu::Dim3 g_block, g_grid, g_thread, g_bdim;
unsigned long long g_now = 0;     // the emulated globaltimer, ns
unsigned long long g_fences = 0;  // __threadfence_block() calls, all threads

unsigned linear_block() { return g_block.x + g_grid.x * (g_block.y + g_grid.y * g_block.z); }
}  // namespace

namespace ikp {
namespace emu {
unsigned long long globaltimer() { return g_now; }
// A 2 GHz SM clock with an offset; lane 0 starts 128 cycles before the low 32 bits wrap.
unsigned long long clock64() { return 2 * g_now + 64; }
unsigned smid() { return (linear_block() * 7 + 3) % 11; }
Dim3 block_idx() { return g_block; }
Dim3 grid_dim() { return g_grid; }
Dim3 thread_idx() { return g_thread; }
Dim3 block_dim() { return g_bdim; }
void fence_block() { ++g_fences; }
void atomic_add(unsigned long long* addr, unsigned long long value) { *addr += value; }
}  // namespace emu
}  // namespace ikp

enum : unsigned { LOAD = 0, COMPUTE = 1, STORE = 2, TILE = 3 };
enum : unsigned { WAIT_FULL = 0, WAIT_EMPTY = 1 };

static void step(unsigned long long dt) { g_now += dt; }

// Start time of lane (block b, group g): near a 2^32 ns boundary, so the low 32
// bits wrap in the middle of most lanes and the decoder must unwrap them.
static unsigned long long lane_start(unsigned b, unsigned g) {
  return 0xFFFFFFA0ull + b * 37ull + g * 11ull;
}

template <class L>
static void program(L& lane, unsigned b, unsigned g) {
  step(10);
  lane.begin(LOAD, b);
  step(25);
  lane.end(LOAD, b);
  {
    step(5);
    IKP_SCOPE(lane, COMPUTE, 7);
    step(100);
    {
      IKP_SCOPE(lane, STORE, 0xFFFFF);  // the largest payload
      step(3);
    }
    step(2);
    unsigned spins = 0;
    IKP_WAIT(lane, WAIT_FULL, spins++ < b + g);  // b + g spins
  }
  unsigned k = 0;
  IKP_WAIT_SAMPLED(lane, WAIT_EMPTY, k++ < 3);  // 3 spins, counted and sampled
  lane.count(WAIT_FULL, 5);
  lane.count(9, 1000);  // no such counter: ignored
  step(1);
  lane.instant(TILE, 42);
  // Persistent-style tile loop; lane (b 5, group 1) runs more tiles than it has room for.
  const unsigned n_tiles = (b == 5 && g == 1) ? 6 : 1;
  for (unsigned t = 0; t < n_tiles; ++t) {
    step(4);
    IKP_SCOPE(lane, TILE, b * 16 + t);
    step(6);
  }
  step(1);
  lane.instant(1024 + STORE, 0x100003);  // region and payload keep their low bits
  step(7);
  lane.finalize();
}

static void run_thread(const ikp::Arg& arg) {
  const unsigned lin = g_thread.x + g_bdim.x * (g_thread.y + g_bdim.y * g_thread.z);
  const unsigned group = lin / 32;
  const bool leader = lin % 32 == 0;
  const unsigned b = linear_block();
  g_now = lane_start(b, group);
  if (group == 0) {
    ikp::Lane<ikp::Fence::Block, ikp::Timer::Global> lane(arg, 0, leader);
    program(lane, b, 0);
  } else if (group == 1) {
    ikp::Lane<ikp::Fence::None, ikp::Timer::Clock> lane(arg, 1, leader);
    program(lane, b, 1);
  } else {
    // A group the host did not declare: its leader must not write anywhere.
    ikp::Lane<> lane(arg, group, leader);
    program(lane, b, group);
  }
}

static void run_block(const ikp::Arg& arg) {
  for (g_thread.z = 0; g_thread.z < g_bdim.z; ++g_thread.z)
    for (g_thread.y = 0; g_thread.y < g_bdim.y; ++g_thread.y)
      for (g_thread.x = 0; g_thread.x < g_bdim.x; ++g_thread.x) run_thread(arg);
}

static std::vector<unsigned char> read_file(const char* path) {
  std::FILE* f = std::fopen(path, "rb");
  if (!f) {
    std::perror(path);
    std::exit(2);
  }
  std::vector<unsigned char> data;
  unsigned char chunk[4096];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) data.insert(data.end(), chunk, chunk + n);
  std::fclose(f);
  return data;
}

int main(int argc, char** argv) {
  if (argc != 9) {
    std::fprintf(stderr, "usage: %s ARG BUF GX GY GZ BX BY BZ\n", argv[0]);
    return 2;
  }
  const std::vector<unsigned char> arg_bytes = read_file(argv[1]);
  if (arg_bytes.size() != sizeof(ikp::Arg)) {
    std::fprintf(stderr, "argument file has %zu bytes, ikp::Arg has %zu\n", arg_bytes.size(), sizeof(ikp::Arg));
    return 2;
  }
  ikp::Arg arg;
  std::memcpy(&arg, arg_bytes.data(), sizeof arg);

  const std::vector<unsigned char> buf_bytes = read_file(argv[2]);
  const size_t n_words = buf_bytes.size() / 8;
  const size_t canary = 64;  // zero words past the end: a stray write would land here
  std::vector<unsigned long long> words(n_words + canary, 0);
  std::memcpy(words.data(), buf_bytes.data(), n_words * 8);
  arg.buf = reinterpret_cast<unsigned long long>(words.data());

  g_grid = {unsigned(std::atoi(argv[3])), unsigned(std::atoi(argv[4])), unsigned(std::atoi(argv[5]))};
  g_bdim = {unsigned(std::atoi(argv[6])), unsigned(std::atoi(argv[7])), unsigned(std::atoi(argv[8]))};
  for (g_block.z = 0; g_block.z < g_grid.z; ++g_block.z)
    for (g_block.y = 0; g_block.y < g_grid.y; ++g_block.y)
      for (g_block.x = 0; g_block.x < g_grid.x; ++g_block.x) run_block(arg);

  // A block the host did not size the buffer for (one more z layer): its lanes are at or
  // past lane_count, so nothing may be written.
  g_grid.z += 1;
  g_block = {0, 0, g_grid.z - 1};
  run_block(arg);

  bool clean = true;
  for (size_t i = n_words; i < words.size(); ++i) clean = clean && words[i] == 0;

  std::FILE* f = std::fopen(argv[2], "wb");
  if (!f || std::fwrite(words.data(), 8, n_words, f) != n_words || std::fclose(f) != 0) {
    std::perror(argv[2]);
    return 2;
  }
  std::printf("fences=%llu canary=%s\n", g_fences, clean ? "OK" : "CLOBBERED");
  return 0;
}
