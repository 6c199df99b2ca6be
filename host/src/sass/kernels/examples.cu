// Example kernels instrumented with ikp.cuh, compiled by the NVRTC and nvcc tests.
//
// Each kernel is written twice: instrumented (default) and, under -DIKP_BASELINE, the same
// kernel without any marker and without the ikp::Arg parameter (it is the last parameter,
// so no other parameter moves). The SASS test compiles the instrumented source with
// -DIKP_ENABLED=0 and requires the baseline's SASS, instruction for instruction.
#ifndef IKP_BASELINE
#include "ikp.cuh"
#define PROF_PARAM , ikp::Arg prof
#else
#define PROF_PARAM
#endif

enum : unsigned { R_LOAD = 0, R_COMPUTE = 1, R_STORE = 2, R_PRODUCE = 3, R_CONSUME = 4, R_TILE = 5, R_SLOT = 6 };
enum : unsigned { C_EMPTY = 0, C_FULL = 1 };

// Load / compute / store, one lane per block (1D grid). The fenced variant brackets each
// region's memory traffic like the TVM CudaProfiler; the plain one only stamps.
template <class L>
__device__ __forceinline__ void lcs_body(float* out, const float* in, unsigned iters, L* lane) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float x, acc = 0.f;
#ifndef IKP_BASELINE
  lane->begin(R_LOAD);
#endif
  x = in[i];
#ifndef IKP_BASELINE
  lane->end(R_LOAD);
  lane->begin(R_COMPUTE);
#endif
  for (unsigned k = 0; k < iters; ++k) acc = acc * 1.0001f + x;
#ifndef IKP_BASELINE
  lane->end(R_COMPUTE);
  {
    IKP_SCOPE(*lane, R_STORE, blockIdx.x);
#endif
    out[i] = acc;
#ifndef IKP_BASELINE
  }
  lane->finalize();
#endif
}

#ifndef IKP_BASELINE
#define LCS_LANE(F) ikp::Lane<F> lane(prof, 0, threadIdx.x == 0); lcs_body(out, in, iters, &lane)
#else
#define LCS_LANE(F) lcs_body(out, in, iters, (int*)0)
#endif

extern "C" __global__ void lcs_fence(float* out, const float* in, unsigned iters PROF_PARAM) {
  LCS_LANE(ikp::Fence::Block);
}

extern "C" __global__ void lcs_plain(float* out, const float* in, unsigned iters PROF_PARAM) {
  LCS_LANE(ikp::Fence::None);
}

// Warp-specialized producer / consumer through one shared-memory slot: warp 0 produces,
// warp 1 consumes; each warp is a group (lane) with its lane 0 as leader, and both count
// how long they spin on the slot's flags. The slot's lifetime is an async range (R_SLOT,
// token = stage) that the producer begins and the consumer ends.
extern "C" __global__ void producer_consumer(float* out, const float* in, unsigned n_stages PROF_PARAM) {
  __shared__ float slot[32];
  __shared__ volatile unsigned full, empty;
  const unsigned warp = threadIdx.x / 32, l = threadIdx.x % 32;
#ifndef IKP_BASELINE
  ikp::Lane<> lane(prof, warp, l == 0);
#endif
  if (threadIdx.x == 0) {
    full = 0;
    empty = 0;
  }
  __syncthreads();
  float acc = 0.f;
  for (unsigned s = 0; s < n_stages; ++s) {
    if (warp == 0) {
#ifndef IKP_BASELINE
      IKP_WAIT(lane, C_EMPTY, empty != s);
      IKP_SCOPE(lane, R_PRODUCE, s);
#else
      while (empty != s) {
      }
#endif
      slot[l] = in[(blockIdx.x * n_stages + s) * 32 + l];
      __threadfence_block();
      __syncwarp();
#ifndef IKP_BASELINE
      lane.range_begin(R_SLOT, s);
#endif
      if (l == 0) full = s + 1;
    } else if (warp == 1) {
#ifndef IKP_BASELINE
      IKP_WAIT_SAMPLED(lane, C_FULL, full != s + 1);
      IKP_SCOPE(lane, R_CONSUME, s);
#else
      while (full != s + 1) {
      }
#endif
      acc += slot[l];
      __syncwarp();
#ifndef IKP_BASELINE
      lane.range_end(R_SLOT, s);
#endif
      if (l == 0) empty = s + 1;
    }
  }
  if (warp == 1) out[blockIdx.x * 32 + l] = acc;
#ifndef IKP_BASELINE
  lane.finalize();
#endif
}

// Persistent grid: each block loops over tiles; its one lane records every tile with the
// tile index as payload, in clock mode, as a ring (keeps the last tiles of a long run).
extern "C" __global__ void persistent(float* out, const float* in, unsigned n_tiles PROF_PARAM) {
#ifndef IKP_BASELINE
  ikp::Lane<ikp::Fence::None, ikp::Timer::Clock, ikp::Overflow::Ring> lane(prof, 0, threadIdx.x == 0);
#endif
  for (unsigned t = blockIdx.x; t < n_tiles; t += gridDim.x) {
#ifndef IKP_BASELINE
    IKP_SCOPE(lane, R_TILE, t);
#endif
    const unsigned i = t * blockDim.x + threadIdx.x;
    out[i] = in[i] * 2.f + 1.f;
  }
#ifndef IKP_BASELINE
  lane.instant(R_TILE, 0xFFFFF);
  lane.finalize();
#endif
}
