// Runs an ikp-instrumented "kernel" on the CPU through ikp.cuh's host emulation
// (IKP_HOST_EMULATION): every thread of every block executes the program one after the
// other, with the special registers, indices, fence and atomic coming from the shims below.
//
// usage: emulate PROGRAM LAUNCH ARG_FILE BUF_FILE GX GY GZ BX BY BZ
//   PROGRAM   `basic` (drop-newest lanes, one epoch) or `ring` (ring lanes, async ranges,
//             for a buffer with several epochs);
//   LAUNCH    the launch index (0, 1, ...): one run of this program is one kernel launch,
//             and a buffer with epochs is launched into several times;
//   ARG_FILE  the kernel argument the host built (its buf field is replaced);
//   BUF_FILE  the buffer (zeroed with its header, or left by earlier launches), rewritten
//             in place with the result.
// Prints `fences=N timer_reads=M canary=OK|CLOBBERED` (fences and timer reads of all threads).
//
// The programs must stay in step with `program()` and `ring_program()` in
// device_emulation.rs, which write the same records through the Rust reference encoder.
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
bool g_vote = false;              // the current warp's warp_any so far
unsigned long long g_timer_reads = 0;  // %globaltimer and %clock reads, all threads
unsigned g_clock_reads = 0;       // %clock reads by the current thread
unsigned long long g_skew = 0;    // cycles the current thread's clock reads added
// What each %clock read adds to the SM clock, by read index mod 4: reading takes time, and
// the calibration at init (reads 1..4 of a lane) then sees deltas 9, 4 and 6: least 4.
const unsigned long long kReadCycles[4] = {6, 1, 9, 4};

unsigned linear_block() { return g_block.x + g_grid.x * (g_block.y + g_grid.y * g_block.z); }
}  // namespace

namespace ikp {
namespace emu {
unsigned long long globaltimer() {
  ++g_timer_reads;
  return g_now;
}
// A 2 GHz SM clock with an offset; lane 0 starts 128 cycles before the low 32 bits wrap.
// Each read advances it by kReadCycles (not the globaltimer: the skew is the clock's own).
unsigned long long clock64() {
  ++g_timer_reads;
  g_skew += kReadCycles[g_clock_reads++ % 4];
  return 2 * g_now + 64 + g_skew;
}
unsigned smid() { return (linear_block() * 7 + 3) % 11; }
Dim3 block_idx() { return g_block; }
Dim3 grid_dim() { return g_grid; }
Dim3 thread_idx() { return g_thread; }
Dim3 block_dim() { return g_bdim; }
void fence_block() { ++g_fences; }
// The warps of these programs are 32 threads, each led by its first thread, and threads run
// one after the other: the first thread of a warp opens the vote, the others join it.
bool warp_any(bool p) {
  const unsigned lin = g_thread.x + g_bdim.x * (g_thread.y + g_bdim.y * g_thread.z);
  if (lin % 32 == 0) g_vote = false;
  g_vote = g_vote || p;
  return g_vote;
}
void atomic_add(unsigned long long* addr, unsigned long long value) { *addr += value; }
unsigned long long atomic_fetch_add(unsigned long long* addr, unsigned long long value) {
  const unsigned long long old = *addr;
  *addr += value;
  return old;
}
}  // namespace emu
}  // namespace ikp

enum : unsigned { LOAD = 0, COMPUTE = 1, STORE = 2, TILE = 3, COPY = 4 };
enum : unsigned { WAIT_FULL = 0, WAIT_EMPTY = 1 };

static void step(unsigned long long dt) { g_now += dt; }

// Start time of lane (block b, group g): near a 2^32 ns boundary, so the low 32
// bits wrap in the middle of most lanes and the decoder must unwrap them.
static unsigned long long lane_start(unsigned b, unsigned g) {
  return 0xFFFFFFA0ull + b * 37ull + g * 11ull;
}

// `id` through a volatile: a counter id that is no constant to the compiler, so
// Lane::count adds it to the trailer at once instead of summing it in a register.
static unsigned runtime_id(unsigned id) {
  volatile unsigned v = id;
  return v;
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
  lane.count(runtime_id(WAIT_FULL), 2);  // an id the compiler cannot know: added at once
  unsigned r = 0;
  IKP_WAIT(lane, runtime_id(WAIT_EMPTY), r++ < 4);  // a runtime id: 4 spins, added at once
  IKP_WAIT(lane, WAIT_FULL, r == 0);                // passes at its first try: no spin
  unsigned evals = 0, s = 0;
  IKP_WAIT(lane, (++evals, WAIT_FULL), s++ < 1);            // 1 spin
  IKP_WAIT_SAMPLED(lane, (++evals, WAIT_EMPTY), s++ < 3);   // 1 spin, counted and sampled
  IKP_WAIT_SAMPLED(lane, (++evals, WAIT_EMPTY), s == 0);    // no spin, sampled
  lane.count(WAIT_FULL, evals);                             // 3: each evaluated its id once
  lane.count(9, 1000);  // no such counter: ignored
  step(1);
  lane.instant(TILE, 42);
  // Persistent-style tile loop; lane (b 5, group 1) runs more tiles than it has room for.
  // Through dispatch(): the warp of a lane that records runs it with its lane, any other
  // warp with a compiled-out one (the records the same; nothing from the others).
  const unsigned n_tiles = (b == 5 && g == 1) ? 6 : 1;
  lane.dispatch([&](auto& lane) {
    for (unsigned t = 0; t < n_tiles; ++t) {
      step(4);
      IKP_SCOPE(lane, TILE, b * 16 + t);
      step(6);
    }
  });
  step(1);
  lane.instant(1024 + STORE, 0x100003);  // region and payload keep their low bits
  step(7);
  lane.finalize();
}

// Ring lanes in a producer / consumer pair per block: group 0 issues copies (async range
// COPY begun with a token), group 1 ends them. Block b runs 5 + 3 b + launch tiles of 3
// records (4 with the consumer's wait sample), so every 8-record ring wraps 2 to 6 times.
static unsigned ring_tiles(unsigned b, unsigned launch) { return 5 + 3 * b + launch; }
static unsigned copy_token(unsigned b, unsigned launch, unsigned t) { return b << 12 | launch << 8 | t; }
static unsigned long long ring_start(unsigned b, unsigned g, unsigned launch) {
  return 5000 + 100000ull * launch + b * 37ull + g * 11ull;
}

template <class L>
static void ring_program(L& lane, unsigned b, unsigned g, unsigned launch) {
  for (unsigned t = 0; t < ring_tiles(b, launch); ++t) {
    step(3 + t % 4);
    const unsigned token = copy_token(b, launch, t);
    if (g == 0) {
      IKP_SCOPE(lane, TILE, t);
      step(2);
      lane.range_begin(COPY, token);
    } else {
      unsigned k = 0;
      IKP_WAIT_SAMPLED(lane, WAIT_FULL, k++ < t % 3);  // t % 3 spins
      step(1);
      lane.range_end(COPY, token);
      IKP_SCOPE(lane, TILE, t);
      step(5);
    }
  }
  step(1);
  lane.instant(TILE, 0xABC);
  step(2);
  lane.finalize();
}

static bool g_ring = false;
static unsigned g_launch = 0;

static void run_thread(const ikp::Arg& arg) {
  const unsigned lin = g_thread.x + g_bdim.x * (g_thread.y + g_bdim.y * g_thread.z);
  const unsigned group = lin / 32;
  const bool leader = lin % 32 == 0;
  const unsigned b = linear_block();
  g_clock_reads = 0;
  g_skew = 0;
  if (g_ring) {
    g_now = ring_start(b, group, g_launch);
    if (group == 0) {
      ikp::Lane<ikp::Fence::None, ikp::Timer::Global, ikp::Overflow::Ring> lane(arg, 0, leader);
      ring_program(lane, b, 0, g_launch);
    } else {
      ikp::Lane<ikp::Fence::Block, ikp::Timer::Clock, ikp::Overflow::Ring> lane(arg, group, leader);
      ring_program(lane, b, group, g_launch);
    }
    return;
  }
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
  if (argc != 11 || (std::strcmp(argv[1], "basic") != 0 && std::strcmp(argv[1], "ring") != 0)) {
    std::fprintf(stderr, "usage: %s basic|ring LAUNCH ARG BUF GX GY GZ BX BY BZ\n", argv[0]);
    return 2;
  }
  g_ring = std::strcmp(argv[1], "ring") == 0;
  g_launch = unsigned(std::atoi(argv[2]));
  argv += 2;
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
  // A null Arg (no lanes: the runtime off switch) keeps its null buffer, so that any write
  // through it would crash the emulator.
  if (arg.lane_count != 0) arg.buf = reinterpret_cast<unsigned long long>(words.data());

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
  std::printf("fences=%llu timer_reads=%llu canary=%s\n", g_fences, g_timer_reads, clean ? "OK" : "CLOBBERED");
  return 0;
}
