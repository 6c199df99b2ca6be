// Kernels that isolate the SASS cost of one ikp instrumentation site.
//
// ikp_host::sass::cost appends one IKP_COST_KERNELS(fence, timer, extra) line per variant it
// measures and compiles the file once per architecture. Every variant is its own kernel
// (named `records_<fence>_<timer>_<extra>` and `loop_records_<fence>_<timer>_<extra>`), and
// ptxas compiles each kernel on its own, so variants in one file do not change each other's
// code. Instruction-count differences between variants give the marginal cost of a site:
//   extra        records added beyond the first (marginal cost = difference / extra)
//   fence        None | Block        timer  Global | Clock
// `spin_counted` / `spin_plain`: the same spin loop with and without IKP_WAIT's count;
// `waits_counted` / `waits_plain`: a wait per iteration of a runtime loop, counted or not.
// `dispatched_loop_records`: the record loop through Lane::dispatch.
// IKP_RING_KERNELS(fence, timer, extra) instantiates the same two kernels for ring lanes
// (`ring_records_...`, `ring_loop_records_...`), IKP_STREAM_KERNELS for stream lanes in drop
// mode (`stream_records_...`, `stream_loop_records_...`), IKP_RANGE_KERNELS(extra) straight-line
// async-range records (`ranges_<extra>`: range_begin then alternately range_end and
// range_begin).
#include "ikp.cuh"

// Straight-line records after init, payloads from a runtime value (pay + k), so the tag is
// computed at run time as in a real kernel.
template <ikp::Fence F, ikp::Timer T, ikp::Overflow O, unsigned EXTRA>
__device__ __forceinline__ void records_body(unsigned pay, ikp::Arg prof) {
  ikp::Lane<F, T, O> lane(prof, 0, threadIdx.x == 0);
  lane.begin(1, pay);
#pragma unroll
  for (unsigned k = 1; k < EXTRA + 1; ++k) lane.begin(1, pay + k);
  lane.finalize();
}

// One record per iteration of a runtime loop (EXTRA = 0: no record), the persistent-kernel
// case: the cursor is a loop-carried register and the address a wide multiply-add.
template <ikp::Fence F, ikp::Timer T, ikp::Overflow O, unsigned EXTRA>
__device__ __forceinline__ void loop_records_body(unsigned* out, unsigned n, ikp::Arg prof) {
  ikp::Lane<F, T, O> lane(prof, 0, threadIdx.x == 0);
#pragma unroll 1
  for (unsigned i = 0; i < n; ++i) {
    if constexpr (EXTRA > 0) lane.instant(1, i);
    out[i] = i;
  }
  lane.finalize();
}

// The record loop above (one instant an iteration, Fence::None, Timer::Global) run through
// Lane::dispatch: the body twice, the writer's warp's copy and every other warp's.
extern "C" __global__ void dispatched_loop_records(unsigned* out, unsigned n, ikp::Arg prof) {
  ikp::Lane<> lane(prof, 0, threadIdx.x == 0);
  lane.dispatch([&](auto& lane) {
#pragma unroll 1
    for (unsigned i = 0; i < n; ++i) {
      lane.instant(1, i);
      out[i] = i;
    }
  });
  lane.finalize();
}

#define IKP_COST_KERNELS(F, T, EXTRA)                                                       \
  extern "C" __global__ void records_##F##_##T##_##EXTRA(unsigned pay, ikp::Arg prof) {     \
    records_body<ikp::Fence::F, ikp::Timer::T, ikp::Overflow::DropNewest, EXTRA>(pay, prof); \
  }                                                                                         \
  extern "C" __global__ void loop_records_##F##_##T##_##EXTRA(unsigned* out, unsigned n,    \
                                                              ikp::Arg prof) {              \
    loop_records_body<ikp::Fence::F, ikp::Timer::T, ikp::Overflow::DropNewest, EXTRA>(out, n, \
                                                                                 prof);     \
  }

#define IKP_RING_KERNELS(F, T, EXTRA)                                                        \
  extern "C" __global__ void ring_records_##F##_##T##_##EXTRA(unsigned pay, ikp::Arg prof) { \
    records_body<ikp::Fence::F, ikp::Timer::T, ikp::Overflow::Ring, EXTRA>(pay, prof);       \
  }                                                                                          \
  extern "C" __global__ void ring_loop_records_##F##_##T##_##EXTRA(unsigned* out, unsigned n, \
                                                                   ikp::Arg prof) {          \
    loop_records_body<ikp::Fence::F, ikp::Timer::T, ikp::Overflow::Ring, EXTRA>(out, n, prof); \
  }

#define IKP_STREAM_KERNELS(F, T, EXTRA)                                                        \
  extern "C" __global__ void stream_records_##F##_##T##_##EXTRA(unsigned pay, ikp::Arg prof) { \
    records_body<ikp::Fence::F, ikp::Timer::T, ikp::Overflow::Stream, EXTRA>(pay, prof);       \
  }                                                                                            \
  extern "C" __global__ void stream_loop_records_##F##_##T##_##EXTRA(unsigned* out, unsigned n, \
                                                                     ikp::Arg prof) {          \
    loop_records_body<ikp::Fence::F, ikp::Timer::T, ikp::Overflow::Stream, EXTRA>(out, n, prof); \
  }

template <unsigned EXTRA>
__device__ __forceinline__ void ranges_body(unsigned pay, ikp::Arg prof) {
  ikp::Lane<> lane(prof, 0, threadIdx.x == 0);
  lane.range_begin(1, pay);
#pragma unroll
  for (unsigned k = 1; k < EXTRA + 1; ++k) {
    if (k % 2 == 1) {
      lane.range_end(1, pay + k);
    } else {
      lane.range_begin(1, pay + k);
    }
  }
  lane.finalize();
}

#define IKP_RANGE_KERNELS(EXTRA)                                                  \
  extern "C" __global__ void ranges_##EXTRA(unsigned pay, ikp::Arg prof) {        \
    ranges_body<EXTRA>(pay, prof);                                                \
  }

// A spin wait, counted (IKP_WAIT) or not.
extern "C" __global__ void spin_counted(volatile unsigned* flag, unsigned target, ikp::Arg prof) {
  ikp::Lane<> lane(prof, 0, threadIdx.x == 0);
  IKP_WAIT(lane, 0, *flag != target);
  lane.finalize();
}

extern "C" __global__ void spin_plain(volatile unsigned* flag, unsigned target, ikp::Arg prof) {
  ikp::Lane<> lane(prof, 0, threadIdx.x == 0);
  while (*flag != target) {
  }
  lane.finalize();
}

// A wait per iteration of a runtime loop, counted (IKP_WAIT, a constant counter id) or not:
// what a wait costs besides its spin loop's tick (the count's add, on the waiting warp). The
// flag each thread waits on depends on the thread, as in a kernel's own waits, so that
// ptxas keeps both loops in vector registers.
extern "C" __global__ void waits_counted(volatile unsigned* flag, unsigned n, ikp::Arg prof) {
  ikp::Lane<> lane(prof, 0, threadIdx.x == 0);
#pragma unroll 1
  for (unsigned t = 0; t < n; ++t) IKP_WAIT(lane, 0, flag[(t + threadIdx.x) & 1u] < t);
  lane.finalize();
}

extern "C" __global__ void waits_plain(volatile unsigned* flag, unsigned n, ikp::Arg prof) {
  ikp::Lane<> lane(prof, 0, threadIdx.x == 0);
#pragma unroll 1
  for (unsigned t = 0; t < n; ++t) {
    while (flag[(t + threadIdx.x) & 1u] < t) {
    }
  }
  lane.finalize();
}
