// Kernels of the GPU checks (ikp-gpucheck, src/gpu/). Each records with ikp and, beside
// it, writes its own ground truth (raw %globaltimer / %clock64 reads by the same thread)
// into a second buffer, so the decoded trace can be compared with what really happened.
#include "ikp.cuh"

namespace gc {
__device__ __forceinline__ unsigned long long gt() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned long long clk() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
  return t;
}
}  // namespace gc

// ---------------------------------------------------------------------------------------
// Timer resolution: one thread reads %globaltimer for `duration_ns` and keeps every value
// that differs from the one before (the first `cap` of them); `stats` gets the number of
// values kept and of reads made.
extern "C" __global__ void gt_resolution(unsigned long long* changes, unsigned cap,
                                         unsigned long long duration_ns,
                                         unsigned long long* stats) {
  unsigned long long t0 = gc::gt(), prev = t0, reads = 0;
  unsigned n = 0;
  changes[n++] = t0;
  for (;;) {
    const unsigned long long t = gc::gt();
    ++reads;
    if (t != prev) {
      if (n < cap) changes[n++] = t;
      prev = t;
    }
    if (t - t0 >= duration_ns) break;
  }
  stats[0] = n;
  stats[1] = reads;
}

// ---------------------------------------------------------------------------------------
// Timing truth: one lane per block (thread 0). Two passes over the targets: a warm-up
// pass (region 1) that brings the loop's instructions and `targets` into the caches, then
// the measured pass (region 0), so that no measured region pays a cold miss (on an H100
// the first region of a cold pass took about 120 ns longer than the same region warm).
// For each i, a region with payload i around a spin of targets[i]: nanoseconds of
// %globaltimer (spin == 0) or cycles of %clock64 (spin == 1). The measured pass writes
// truth[(block * n + i) * 5 ..] = globaltimer and clock64 just before the begin, the same
// just after the end, and the spin loop's iterations.
constexpr unsigned TRUTH_WORDS = 5u;
constexpr unsigned TIMING_MEASURED = 0u, TIMING_WARM_UP = 1u;  // region ids

template <ikp::Timer T>
__device__ void spin_regions(const unsigned long long* targets, unsigned n, unsigned spin,
                             const ikp::Arg& prof, unsigned long long* truth) {
  ikp::Lane<ikp::Fence::None, T> lane(prof, 0u, threadIdx.x == 0u);
  if (threadIdx.x == 0u) {
    unsigned long long* mine = truth + static_cast<unsigned long long>(blockIdx.x) * n * TRUTH_WORDS;
    for (unsigned pass = 0; pass < 2u; ++pass) {
      const unsigned region = pass == 0u ? TIMING_WARM_UP : TIMING_MEASURED;
      for (unsigned i = 0; i < n; ++i) {
        const unsigned long long target = targets[i];
        unsigned long long iters = 0;
        const unsigned long long g0 = gc::gt(), c0 = gc::clk();
        lane.begin(region, i);
        if (spin == 0u) {
          const unsigned long long s = gc::gt();
          while (gc::gt() - s < target) ++iters;
        } else {
          const unsigned long long s = gc::clk();
          while (gc::clk() - s < target) ++iters;
        }
        lane.end(region, i);
        const unsigned long long c1 = gc::clk(), g1 = gc::gt();
        if (region == TIMING_MEASURED) {
          unsigned long long* row = mine + i * TRUTH_WORDS;
          row[0] = g0;
          row[1] = c0;
          row[2] = g1;
          row[3] = c1;
          row[4] = iters;
        }
      }
    }
  }
  lane.finalize();
}

extern "C" __global__ void timing_globaltimer(const unsigned long long* targets, unsigned n,
                                              unsigned spin, ikp::Arg prof,
                                              unsigned long long* truth) {
  spin_regions<ikp::Timer::Global>(targets, n, spin, prof, truth);
}

extern "C" __global__ void timing_clock(const unsigned long long* targets, unsigned n,
                                        unsigned spin, ikp::Arg prof,
                                        unsigned long long* truth) {
  spin_regions<ikp::Timer::Clock>(targets, n, spin, prof, truth);
}

// ---------------------------------------------------------------------------------------
// One time axis: every block (one thread each; the grid fits on the GPU at once) adds
// itself to `arrived`, spins until all have, then stamps an instant (region 0, payload =
// round) and reads %globaltimer itself into raw[block * rounds + round]. Rounds reuse the
// counter: round r is complete at (r + 1) * gridDim.x arrivals.
extern "C" __global__ void rendezvous(unsigned* arrived, unsigned rounds, ikp::Arg prof,
                                      unsigned long long* raw) {
  ikp::Lane<> lane(prof, 0u, threadIdx.x == 0u);
  if (threadIdx.x == 0u) {
    volatile unsigned* v = arrived;
    for (unsigned r = 0; r < rounds; ++r) {
      atomicAdd(arrived, 1u);
      const unsigned goal = (r + 1u) * gridDim.x;
      while (*v < goal) {
      }
      lane.instant(0u, r);
      raw[static_cast<unsigned long long>(blockIdx.x) * rounds + r] = gc::gt();
    }
  }
  lane.finalize();
}

// ---------------------------------------------------------------------------------------
// Device-side overflow: lane (block, warp) records attempts[lane] instants (payload = index)
// and adds the same number to wait counter 0, whatever its capacity.
extern "C" __global__ void overflow(const unsigned* attempts, ikp::Arg prof) {
  const unsigned group = threadIdx.x / 32u;
  ikp::Lane<> lane(prof, group, threadIdx.x % 32u == 0u);
  const unsigned n = attempts[blockIdx.x * prof.groups_per_block + group];
  for (unsigned i = 0; i < n; ++i) lane.instant(0u, i);
  lane.count(0u, n);
  lane.finalize();
}

// ---------------------------------------------------------------------------------------
// Host-clock alignment: one thread stores %globaltimer into out[i]; the host reads its
// clocks before the launch and after the synchronize, and maps the stamp by the session's
// clock sync.
extern "C" __global__ void host_clock_stamp(unsigned long long* out, unsigned i) {
  out[i] = gc::gt();
}

// ---------------------------------------------------------------------------------------
// Ring lanes (wire v2): lane (block, warp) records attempts[lane] instants (payload =
// index) into an 8-slot ring; the ring keeps the newest.
extern "C" __global__ void ring_wrap(const unsigned* attempts, ikp::Arg prof) {
  const unsigned group = threadIdx.x / 32u;
  ikp::Lane<ikp::Fence::None, ikp::Timer::Global, ikp::Overflow::Ring> lane(prof, group,
                                                                           threadIdx.x % 32u == 0u);
  const unsigned n = attempts[blockIdx.x * prof.groups_per_block + group];
  for (unsigned i = 0; i < n; ++i) lane.instant(0u, i);
  lane.finalize();
}

// ---------------------------------------------------------------------------------------
// Epochs: each lane records one instant whose payload is `tag`. Captured once into a CUDA
// Graph and replayed: every replay is a launch with the same arguments, so only the
// device's epoch counters tell the replays apart. Blocks of 96 threads in three lanes of
// every shape a warp's epoch hand-off meets: two lanes in warp 0 (threads 0-15 and 16-31,
// two leaders in one warp), and one lane over warps 1 and 2 (leader thread 32; warp 2 has
// no leader).
extern "C" __global__ void epoch_replay(unsigned tag, ikp::Arg prof) {
  const unsigned t = threadIdx.x;
  const unsigned group = t < 16u ? 0u : (t < 32u ? 1u : 2u);
  ikp::Lane<> lane(prof, group, t == 0u || t == 16u || t == 32u);
  lane.instant(0u, tag);
  lane.finalize();
}

// ---------------------------------------------------------------------------------------
// Async ranges across warps: in each block warp 0 (lane group 0) begins `n` ranges of
// region 0 (token = block << 8 | k) and publishes them through shared memory; warp 1
// (group 1) ends each once it sees it, in the opposite order.
extern "C" __global__ void async_ranges(unsigned n, ikp::Arg prof) {
  __shared__ volatile unsigned issued;
  const unsigned warp = threadIdx.x / 32u;
  ikp::Lane<> lane(prof, warp, threadIdx.x % 32u == 0u);
  if (threadIdx.x == 0u) issued = 0u;
  __syncthreads();
  if (warp == 0u) {
    for (unsigned k = 0; k < n; ++k) {
      lane.range_begin(0u, blockIdx.x << 8 | k);
      __threadfence_block();
      if (threadIdx.x == 0u) issued = k + 1u;
    }
  } else if (warp == 1u) {
    if (threadIdx.x == 32u) {
      while (issued < n) {
      }
    }
    __syncwarp();
    for (unsigned k = n; k-- > 0;) lane.range_end(0u, blockIdx.x << 8 | k);
  }
  lane.finalize();
}

// ---------------------------------------------------------------------------------------
// Overhead correction: in each block warp 0 records CORRECTION_INNER instants inside region
// 0, then waits `spin` cycles; warp 1 records region 0 around the same wait with nothing
// inside. Warp 1's span is the duration without the inner records; warp 0's raw span adds
// their cost, which the decoder's correction should remove. Clock stamps, so a record's
// cost is resolved.
#define CORRECTION_INNER 16
extern "C" __global__ void correction_probe(unsigned spin, ikp::Arg prof) {
  const unsigned group = threadIdx.x / 32u;
  ikp::Lane<ikp::Fence::None, ikp::Timer::Clock> lane(prof, group, threadIdx.x % 32u == 0u);
  lane.begin(0u);
  if (group == 0u) {
#pragma unroll
    for (unsigned i = 0; i < CORRECTION_INNER; ++i) lane.instant(1u, i);
  }
  const long long t0 = clock64();
  while (clock64() - t0 < static_cast<long long>(spin)) {
  }
  lane.end(0u);
  lane.finalize();
}

// ---------------------------------------------------------------------------------------
// Clock warm-up: every thread of every block runs an FMA chain until %globaltimer has
// advanced `ns`, so an idle GPU (SM clock ~345 MHz on an H100) is at its working clock
// before a check times anything. Block 0's thread 0 writes the clock64 and globaltimer
// deltas of its last tenth into out[0], out[1] (the SM clock at the end of the warm-up),
// and `sink` keeps the FMAs alive.
extern "C" __global__ void warm_up(unsigned long long ns, unsigned long long* out, float* sink) {
  const unsigned long long g0 = gc::gt();
  unsigned long long tail_g = 0, tail_c = 0;
  float a = static_cast<float>(threadIdx.x), b = 1.0001f;
  for (;;) {
    for (int k = 0; k < 256; ++k) a = fmaf(a, b, 0.5f);
    const unsigned long long g = gc::gt();
    if (tail_g == 0 && g - g0 >= ns - ns / 10) {
      tail_g = g;
      tail_c = gc::clk();
    }
    if (g - g0 >= ns) break;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    out[0] = gc::clk() - tail_c;
    out[1] = gc::gt() - tail_g;
  }
  if (a == 0.123f) sink[0] = a;
}

// ---------------------------------------------------------------------------------------
// Stream launches: a persistent kernel of one block per SM, four warps a block, each warp a
// lane whose leader records `pairs` begin / end pairs of region 0 (payload = pair index)
// around `work` dependent FMA steps of every thread, 1 to 3 s in all. The same body with
// recording compiled out (On = false), into a buffer large enough for every record
// (DropNewest), and into stream rings (Stream, StreamWait).
template <ikp::Overflow O, bool On>
__device__ __forceinline__ void persistent_body(float* sink, unsigned pairs, unsigned work, ikp::Arg prof) {
  ikp::Lane<ikp::Fence::None, ikp::Timer::Global, O, On> lane(prof, threadIdx.x / 32u, threadIdx.x % 32u == 0u);
  float x = threadIdx.x * 1e-3f;
  const float y = 1.0000001f;
  for (unsigned i = 0; i < pairs; ++i) {
    lane.begin(0u, i);
    for (unsigned k = 0; k < work; ++k) x = fmaf(x, y, 1e-7f);
    lane.end(0u, i);
    for (unsigned k = 0; k < work; ++k) x = fmaf(x, y, 1e-7f);
  }
  lane.finalize();
  if (x == 12345.0f) sink[threadIdx.x] = x;  // keeps the work
}

extern "C" __global__ void persistent_off(float* sink, unsigned pairs, unsigned work, ikp::Arg prof) {
  persistent_body<ikp::Overflow::DropNewest, false>(sink, pairs, work, prof);
}
extern "C" __global__ void persistent_fixed(float* sink, unsigned pairs, unsigned work, ikp::Arg prof) {
  persistent_body<ikp::Overflow::DropNewest, true>(sink, pairs, work, prof);
}
extern "C" __global__ void persistent_stream(float* sink, unsigned pairs, unsigned work, ikp::Arg prof) {
  persistent_body<ikp::Overflow::Stream, true>(sink, pairs, work, prof);
}
extern "C" __global__ void persistent_stream_wait(float* sink, unsigned pairs, unsigned work, ikp::Arg prof) {
  persistent_body<ikp::Overflow::StreamWait, true>(sink, pairs, work, prof);
}
