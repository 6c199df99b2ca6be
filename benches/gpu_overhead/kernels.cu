// Kernels of the GPU overhead bench (benches/gpu_overhead.rs): the three example kernels of
// examples/ (load / compute / store, warp-specialized producer / consumer, persistent grid),
// sized to keep a GPU busy for about a millisecond, a tiled GEMM on half data and a
// memory-bound copy. The examples fix their instrumentation; here each kernel is written
// once with switches so that every build the bench compares comes from the same code:
//
//   BENCH_BASELINE   defined: no ikp at all: no include, no marker, no ikp::Arg parameter
//   BENCH_TVM        defined: the same regions recorded the peers' way (TVM / FlashInfer
//                    CudaProfiler sequence, tvm_style.cuh), no counters, TvmArg parameter
//   BENCH_FENCE      None | Block: the lanes' fence mode (default Block)
//   BENCH_TIMER      Global | Clock: the lanes' record timer (default Global)
//   BENCH_ZONES      1: regions bracketed with begin / end (default), 0: none
//   BENCH_COUNTERS   1: spin loops counted with IKP_WAIT (default), 0: plain spin loops
//
// The compiled-out build is the default (zones and counters) with IKP_ENABLED=0; the null-Arg
// build is the default build launched with a null ikp::Arg (the runtime off switch).

#if defined(BENCH_BASELINE)
#define PROF_PARAM
#define BENCH_LANE(group, leader)
#define BEGIN(region, payload)
#define END(region, payload)
#define WAIT(counter, cond) \
  while (cond) {            \
  }
#define FINALIZE()
#elif defined(BENCH_TVM)
#include "tvm_style.cuh"
// The host's TvmArg (benches/gpu_overhead/variants.rs).
struct TvmArg {
  unsigned long long* buf;
  unsigned stride;  // lanes in the launch
  unsigned groups;  // lanes per block
};
#define PROF_PARAM , TvmArg prof
// TvmStyle::init numbers lanes by blockIdx.x; passing the group offset by the rows above
// gives 2D grids (the GEMM) one lane per block too.
#define BENCH_LANE(group, leader) \
  TvmStyle lane;                   \
  lane.init(prof.buf, prof.stride, prof.groups, (group) + prof.groups * gridDim.x * blockIdx.y, (leader))
#define BEGIN(region, payload) lane.start(region)
#define END(region, payload) lane.end(region)
#define WAIT(counter, cond) \
  while (cond) {            \
  }
#define FINALIZE() lane.finalize()
#else
#include "ikp.cuh"
#ifndef BENCH_FENCE
#define BENCH_FENCE Block
#endif
#ifndef BENCH_TIMER
#define BENCH_TIMER Global
#endif
#ifndef BENCH_ZONES
#define BENCH_ZONES 1
#endif
#ifndef BENCH_COUNTERS
#define BENCH_COUNTERS 1
#endif
#define PROF_PARAM , ikp::Arg prof
#define BENCH_LANE(group, leader) \
  ikp::Lane<ikp::Fence::BENCH_FENCE, ikp::Timer::BENCH_TIMER> lane(prof, (group), (leader))
#if BENCH_ZONES
#define BEGIN(region, payload) lane.begin((region), (payload))
#define END(region, payload) lane.end((region), (payload))
#else
#define BEGIN(region, payload) ((void)0)
#define END(region, payload) ((void)0)
#endif
#if BENCH_COUNTERS
#define WAIT(counter, cond) IKP_WAIT(lane, (counter), cond)
#else
#define WAIT(counter, cond) \
  while (cond) {            \
  }
#endif
#define FINALIZE() lane.finalize()
#endif

// ---------------------------------------------------------------------------------------
// Load / compute / store (examples/load_compute_store): one lane per block, three regions.
enum : unsigned { LCS_LOAD = 0, LCS_COMPUTE = 1, LCS_STORE = 2 };

extern "C" __global__ void load_compute_store(float* out, const float* in, unsigned n,
                                              unsigned iters PROF_PARAM) {
  BENCH_LANE(0, threadIdx.x == 0);
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = 0.0f;
  BEGIN(LCS_LOAD, 0);
  if (i < n) x = in[i];
  END(LCS_LOAD, 0);
  float acc = 0.0f;
  BEGIN(LCS_COMPUTE, 0);
  for (unsigned k = 0; k < iters; ++k) acc = acc * 1.0001f + x;
  END(LCS_COMPUTE, 0);
  BEGIN(LCS_STORE, 0);
  if (i < n) out[i] = acc;
  END(LCS_STORE, 0);
  FINALIZE();
}

// ---------------------------------------------------------------------------------------
// Warp-specialized producer / consumer (examples/warp_specialized): warp 0 copies tiles into
// a shared-memory ring, warp 1 consumes them; both spin on shared counters. blockDim.x = 64.
enum : unsigned { WS_PRODUCE = 0, WS_CONSUME = 1 };
enum : unsigned { WS_WAIT_FULL = 0, WS_WAIT_EMPTY = 1 };
constexpr unsigned WS_STAGES = 2;
constexpr unsigned WS_TILE = 32;

extern "C" __global__ void warp_specialized(float* out, const float* in, unsigned n_tiles,
                                            unsigned iters PROF_PARAM) {
  __shared__ float ring[WS_STAGES][WS_TILE];
  __shared__ unsigned filled[WS_STAGES];
  __shared__ unsigned drained[WS_STAGES];
  const unsigned warp = threadIdx.x / 32u;
  const unsigned tid = threadIdx.x % 32u;
  if (threadIdx.x < WS_STAGES) {
    filled[threadIdx.x] = 0u;
    drained[threadIdx.x] = 0u;
  }
  __syncthreads();
  volatile unsigned* vfilled = filled;
  volatile unsigned* vdrained = drained;
  BENCH_LANE(warp, tid == 0u);
  const float* src = in + static_cast<unsigned long long>(blockIdx.x) * n_tiles * WS_TILE;
  if (warp == 0u) {
    for (unsigned t = 0; t < n_tiles; ++t) {
      const unsigned s = t % WS_STAGES, round = t / WS_STAGES;
      WAIT(WS_WAIT_EMPTY, vdrained[s] < round);
      __threadfence_block();
      BEGIN(WS_PRODUCE, t);
      ring[s][tid] = src[t * WS_TILE + tid];
      __syncwarp();
      if (tid == 0u) {
        __threadfence_block();
        vfilled[s] = round + 1u;
      }
      END(WS_PRODUCE, t);
    }
  } else {
    float acc = 0.0f;
    for (unsigned t = 0; t < n_tiles; ++t) {
      const unsigned s = t % WS_STAGES, round = t / WS_STAGES;
      WAIT(WS_WAIT_FULL, vfilled[s] < round + 1u);
      __threadfence_block();
      BEGIN(WS_CONSUME, t);
      const float x = static_cast<volatile float*>(ring[s])[tid];
      for (unsigned k = 0; k < iters; ++k) acc = acc * 1.0001f + x;
      __syncwarp();
      if (tid == 0u) {
        __threadfence_block();
        vdrained[s] = round + 1u;
      }
      END(WS_CONSUME, t);
    }
    out[blockIdx.x * WS_TILE + tid] = acc;
  }
  FINALIZE();
}

// ---------------------------------------------------------------------------------------
// Persistent grid (examples/persistent): blocks loop over tiles, each a TILE region with
// nested LOAD / COMPUTE / STORE, work varying with the tile index.
enum : unsigned { P_TILE = 0, P_LOAD = 1, P_COMPUTE = 2, P_STORE = 3 };

extern "C" __global__ void persistent(float* out, const float* in, unsigned n_tiles,
                                      unsigned iters PROF_PARAM) {
  BENCH_LANE(0, threadIdx.x == 0);
  for (unsigned t = blockIdx.x; t < n_tiles; t += gridDim.x) {
    BEGIN(P_TILE, t);
    const unsigned i = t * blockDim.x + threadIdx.x;
    BEGIN(P_LOAD, t);
    const float x = in[i];
    END(P_LOAD, t);
    float acc = 0.0f;
    BEGIN(P_COMPUTE, t);
    const unsigned work = iters * (1u + t % 4u);
    for (unsigned k = 0; k < work; ++k) acc = acc * 1.0001f + x;
    END(P_COMPUTE, t);
    BEGIN(P_STORE, t);
    out[i] = acc;
    END(P_STORE, t);
    END(P_TILE, t);
  }
  FINALIZE();
}

// ---------------------------------------------------------------------------------------
// GEMM on half data: C (m x n, half) = A (m x k, half, row-major) * B (k x n, half,
// row-major), accumulated in fp32. 64 x 64 output tile per block of 16 x 16 threads (4 x 4
// outputs each), k in steps of 16 through shared memory. m and n must be multiples of 64,
// k of 16. One lane per block: a LOAD and an MMA region per k step, then STORE. The halves
// are converted with PTX cvt instructions, so no CUDA header is needed.
enum : unsigned { G_LOAD = 0, G_MMA = 1, G_STORE = 2 };
constexpr unsigned G_BM = 64, G_BN = 64, G_BK = 16;

__device__ __forceinline__ float h2f(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short f2h(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

extern "C" __global__ void gemm_half(unsigned short* c, const unsigned short* a,
                                     const unsigned short* b, unsigned m, unsigned n,
                                     unsigned k PROF_PARAM) {
  __shared__ float as[G_BK][G_BM + 1];
  __shared__ float bs[G_BK][G_BN + 1];
  BENCH_LANE(0, threadIdx.x == 0 && threadIdx.y == 0);
  const unsigned tx = threadIdx.x, ty = threadIdx.y;  // 16 x 16
  const unsigned tid = ty * 16u + tx;
  const unsigned row0 = blockIdx.y * G_BM, col0 = blockIdx.x * G_BN;
  float acc[4][4] = {};
  for (unsigned k0 = 0, step = 0; k0 < k; k0 += G_BK, ++step) {
    BEGIN(G_LOAD, step);
    // 64 x 16 of A and 16 x 64 of B: four elements of each per thread.
#pragma unroll
    for (unsigned e = 0; e < 4; ++e) {
      const unsigned idx = tid + e * 256u;
      const unsigned ar = idx / G_BK, ac = idx % G_BK;
      as[ac][ar] = h2f(a[(row0 + ar) * k + k0 + ac]);
      const unsigned br = idx / G_BN, bc = idx % G_BN;
      bs[br][bc] = h2f(b[(k0 + br) * n + col0 + bc]);
    }
    __syncthreads();
    END(G_LOAD, step);
    BEGIN(G_MMA, step);
#pragma unroll
    for (unsigned kk = 0; kk < G_BK; ++kk) {
      float av[4], bv[4];
#pragma unroll
      for (unsigned r = 0; r < 4; ++r) av[r] = as[kk][ty * 4u + r];
#pragma unroll
      for (unsigned q = 0; q < 4; ++q) bv[q] = bs[kk][tx * 4u + q];
#pragma unroll
      for (unsigned r = 0; r < 4; ++r)
#pragma unroll
        for (unsigned q = 0; q < 4; ++q) acc[r][q] += av[r] * bv[q];
    }
    __syncthreads();
    END(G_MMA, step);
  }
  BEGIN(G_STORE, 0);
#pragma unroll
  for (unsigned r = 0; r < 4; ++r)
#pragma unroll
    for (unsigned q = 0; q < 4; ++q)
      c[(row0 + ty * 4u + r) * n + col0 + tx * 4u + q] = f2h(acc[r][q]);
  END(G_STORE, 0);
  FINALIZE();
}

// ---------------------------------------------------------------------------------------
// Memory-bound copy: out[i] = in[i] * 2 over n floats (a multiple of 4) in float4 steps, a
// grid-stride loop; per step a LOAD and a STORE region (payload = step), so the records
// compete with the copy for the memory system.
enum : unsigned { SC_LOAD = 0, SC_STORE = 1 };

extern "C" __global__ void stream_copy(float* out, const float* in, unsigned n PROF_PARAM) {
  BENCH_LANE(0, threadIdx.x == 0);
  const unsigned n4 = n / 4u;
  const float4* in4 = reinterpret_cast<const float4*>(in);
  float4* out4 = reinterpret_cast<float4*>(out);
  unsigned step = 0;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i - threadIdx.x < n4;
       i += gridDim.x * blockDim.x, ++step) {
    BEGIN(SC_LOAD, step);
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (i < n4) v = in4[i];
    END(SC_LOAD, step);
    BEGIN(SC_STORE, step);
    if (i < n4) out4[i] = make_float4(v.x * 2.0f, v.y * 2.0f, v.z * 2.0f, v.w * 2.0f);
    END(SC_STORE, step);
  }
  FINALIZE();
}
