// Kernels that isolate the SASS cost of one ikp instrumentation site. The test compiles
// each with different -D switches and compares instruction counts:
//   EXTRA        records added beyond the first (marginal cost = difference / EXTRA)
//   IKP_FENCE    None | Block        IKP_TIMER  Global | Clock
//   COUNTED      1: the spin loop counts its iterations with IKP_WAIT, 0: plain spin loop
#include "ikp.cuh"
#ifndef EXTRA
#define EXTRA 0
#endif
#ifndef IKP_FENCE
#define IKP_FENCE None
#endif
#ifndef IKP_TIMER
#define IKP_TIMER Global
#endif
#ifndef COUNTED
#define COUNTED 1
#endif
using L = ikp::Lane<ikp::Fence::IKP_FENCE, ikp::Timer::IKP_TIMER>;

// Straight-line records after init, payloads from a runtime value (pay + k), so the tag is
// computed at run time as in a real kernel.
extern "C" __global__ void records(unsigned pay, ikp::Arg prof) {
  L lane(prof, 0, threadIdx.x == 0);
  lane.begin(1, pay);
#pragma unroll
  for (unsigned k = 1; k <= EXTRA; ++k) lane.begin(1, pay + k);
  lane.finalize();
}

// One record per iteration of a runtime loop (EXTRA = 0: no record), the persistent-kernel
// case: the cursor is a loop-carried register and the address a wide multiply-add.
extern "C" __global__ void loop_records(unsigned* out, unsigned n, ikp::Arg prof) {
  L lane(prof, 0, threadIdx.x == 0);
#pragma unroll 1
  for (unsigned i = 0; i < n; ++i) {
#if EXTRA > 0
    lane.instant(1, i);
#endif
    out[i] = i;
  }
  lane.finalize();
}

// A spin wait, counted (IKP_WAIT) or not.
extern "C" __global__ void spin(volatile unsigned* flag, unsigned target, ikp::Arg prof) {
  L lane(prof, 0, threadIdx.x == 0);
#if COUNTED
  IKP_WAIT(lane, 0, *flag != target);
#else
  while (*flag != target) {
  }
#endif
  lane.finalize();
}
