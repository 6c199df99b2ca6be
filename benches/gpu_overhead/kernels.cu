// Kernels of the GPU overhead bench (benches/gpu_overhead.rs): the three example kernels of
// examples/ (load / compute / store, warp-specialized producer / consumer, persistent grid),
// sized to keep a GPU busy for about a millisecond, a tiled GEMM on half data, a
// memory-bound copy, a region per iteration of a multiply-add loop and a Hopper
// warp-specialized GEMM. The examples fix their instrumentation; here each kernel is written
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
#define DISPATCH(...) __VA_ARGS__
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
#define DISPATCH(...) __VA_ARGS__
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
// The body run through Lane::dispatch: twice compiled, the warps that record nothing run
// the copy without records (the peers' and the baseline builds run the body as it is).
#define DISPATCH(...) lane.dispatch([&](auto& lane) __VA_ARGS__)
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

// ---------------------------------------------------------------------------------------
// A region per loop iteration (issue #36's off-switch kernel, as a new user wrote it): a
// begin and an end around 64 dependent multiply-adds, one lane per block of 4 warps, four
// blocks an SM. Every warp issues a multiply-add every 4 cycles, so the SM sub-partitions
// are busy: what the records (and, with a null Arg, the off path) add is issue slots.
enum : unsigned { RL_STEP = 0 };
constexpr unsigned RL_FMAS = 64;

// The loop, a macro so that region_loop_dispatch can hand it to DISPATCH (hence _Pragma).
#define RL_LOOP                                                                        \
  for (unsigned k = 0; k < iters; ++k) {                                               \
    BEGIN(RL_STEP, k);                                                                 \
    _Pragma("unroll") for (unsigned j = 0; j < RL_FMAS; ++j) acc = acc * 1.0001f + 0.5f; \
    END(RL_STEP, k);                                                                   \
  }

extern "C" __global__ void region_loop(float* out, const float* in, unsigned iters PROF_PARAM) {
  BENCH_LANE(0, threadIdx.x == 0);
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = in[i];
  RL_LOOP
  out[i] = acc;
  FINALIZE();
}

// The same loop through Lane::dispatch (docs/device-api.md): the off switch of a hot loop.
extern "C" __global__ void region_loop_dispatch(float* out, const float* in,
                                                unsigned iters PROF_PARAM) {
  BENCH_LANE(0, threadIdx.x == 0);
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = in[i];
  DISPATCH({ RL_LOOP });
  out[i] = acc;
  FINALIZE();
}

// ---------------------------------------------------------------------------------------
// Hopper warp-specialized GEMM (sm_90a only: compiled when BENCH_HOPPER is defined), the
// shape people profile today: C (m x n, f32) = A (m x k, half, k contiguous) * B^T (B is
// n x k, half, k contiguous), accumulated in f32. A block of three warp groups computes a
// 128 x 128 tile of C: warp group 0 is the producer (setmaxnreg down to 40 registers), one
// thread of it loads 128 x 64 tiles of A and B with TMA (cp.async.bulk.tensor, 128-byte
// swizzle) into a ring of HG_STAGES stages whose "full" mbarriers count the bytes; warp
// groups 1 and 2 are the consumers (setmaxnreg up to 232), each multiplies its 64 rows with
// wgmma.mma_async m64n128k16 straight from shared memory and frees the stage on its "empty"
// mbarrier. m, n must be multiples of 128, k of 64. The TMA descriptors (CUtensorMap, 128
// bytes) come from the host as __grid_constant__ parameters. Zones: the producer's LOAD
// (wait for a free stage, issue the loads), the consumers' MMA (wait for the data, the
// wgmma group, its completion); each warp group is a lane, its first thread the leader.
// Each role finalizes where its work ends (docs/device-api.md): the producer's leader at the
// end of its single-thread branch, the rest of its warp group returning; a finalize after
// that branch made ptxas wrap the producer's loop in a reconvergence region and keep it in
// vector registers (R2UR moves before each TMA issue), in the ikp and TVM-style builds alike.
#if defined(BENCH_HOPPER)
enum : unsigned { HG_LOAD = 0, HG_MMA = 1 };
enum : unsigned { HG_WAIT_FULL = 0, HG_WAIT_EMPTY = 1 };
constexpr unsigned HG_BM = 128, HG_BN = 128, HG_BK = 64, HG_STAGES = 3;
constexpr unsigned HG_TILE_BYTES = HG_BM * HG_BK * 2;  // one 128 x 64 half tile: 16 KiB
// Dynamic shared memory: the stages (A then B per stage, 1024-byte aligned for the swizzle)
// and the mbarriers.
constexpr unsigned HG_SMEM = HG_STAGES * 2 * HG_TILE_BYTES + 1024 + 2 * HG_STAGES * 8;
static_assert(HG_SMEM <= 227u * 1024u, "the stages must fit an H100's shared memory");

struct alignas(64) TmaDesc {
  unsigned long long words[16];
};

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
// One try: true once the phase of parity `parity` has completed.
__device__ __forceinline__ bool mbar_ready(unsigned long long* bar, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(ok)
      : "r"(smem_u32(bar)), "r"(parity)
      : "memory");
  return ok != 0u;
}
__device__ __forceinline__ void tma_load(void* dst, const TmaDesc* map, unsigned long long* bar,
                                         int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_u32(bar)), "r"(x), "r"(y)
      : "memory");
}
// A K-major shared-memory matrix descriptor for wgmma, 128-byte swizzle: start address,
// leading byte offset 16 (unused when swizzled), stride 1024 bytes between 8-row groups.
__device__ __forceinline__ unsigned long long wgmma_desc(const void* p) {
  const unsigned long long a = smem_u32(p);
  return ((a & 0x3FFFFull) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

#define HG_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
  "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])

// d (64 x 128 f32, the wgmma fragment: 64 per thread) += A (64 x 16) * B^T (128 x 16).
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], unsigned long long a,
                                                 unsigned long long b) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, 1, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 0;\n\t}"
      : HG_D8(0), HG_D8(8), HG_D8(16), HG_D8(24), HG_D8(32), HG_D8(40), HG_D8(48), HG_D8(56)
      : "l"(a), "l"(b));
}

extern "C" __global__ void __launch_bounds__(384, 1)
    hopper_gemm(float* c, const __grid_constant__ TmaDesc tma_a,
                const __grid_constant__ TmaDesc tma_b, unsigned m, unsigned n,
                unsigned k PROF_PARAM) {
  extern __shared__ __align__(1024) unsigned char hg_smem[];
  unsigned char* base = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<unsigned long long>(hg_smem) + 1023ull) & ~1023ull);
  unsigned long long* full =
      reinterpret_cast<unsigned long long*>(base + HG_STAGES * 2 * HG_TILE_BYTES);
  unsigned long long* empty = full + HG_STAGES;
  const unsigned wg = threadIdx.x / 128u, t = threadIdx.x % 128u;
  if (threadIdx.x == 0) {
    for (unsigned s = 0; s < HG_STAGES; ++s) {
      mbar_init(&full[s], 1u);
      mbar_init(&empty[s], 2u);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  BENCH_LANE(wg, t == 0u);
  const unsigned k_tiles = k / HG_BK;
  const int row0 = static_cast<int>(blockIdx.y * HG_BM), col0 = static_cast<int>(blockIdx.x * HG_BN);
  if (wg == 0u) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (t == 0u) {
      for (unsigned kt = 0; kt < k_tiles; ++kt) {
        const unsigned s = kt % HG_STAGES, parity = ((kt / HG_STAGES) & 1u) ^ 1u;
        BEGIN(HG_LOAD, kt);
        WAIT(HG_WAIT_EMPTY, !mbar_ready(&empty[s], parity));
        unsigned char* sa = base + s * 2u * HG_TILE_BYTES;
        mbar_expect_tx(&full[s], 2u * HG_TILE_BYTES);
        tma_load(sa, &tma_a, &full[s], static_cast<int>(kt * HG_BK), row0);
        tma_load(sa + HG_TILE_BYTES, &tma_b, &full[s], static_cast<int>(kt * HG_BK), col0);
        END(HG_LOAD, kt);
      }
      FINALIZE();
    }
    return;
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    float d[64];
#pragma unroll
    for (unsigned i = 0; i < 64u; ++i) d[i] = 0.0f;
    const unsigned half = wg - 1u;  // rows [64 * half, 64 * half + 64) of the tile
    for (unsigned kt = 0; kt < k_tiles; ++kt) {
      const unsigned s = kt % HG_STAGES, parity = (kt / HG_STAGES) & 1u;
      BEGIN(HG_MMA, kt);
      WAIT(HG_WAIT_FULL, !mbar_ready(&full[s], parity));
      const unsigned char* sa = base + s * 2u * HG_TILE_BYTES + half * 64u * HG_BK * 2u;
      const unsigned char* sb = base + s * 2u * HG_TILE_BYTES + HG_TILE_BYTES;
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (unsigned kk = 0; kk < HG_BK / 16u; ++kk) {
        // 16 halves further along k: 32 bytes into each (swizzled) 128-byte row.
        wgmma_m64n128k16(d, wgmma_desc(sa + kk * 32u), wgmma_desc(sb + kk * 32u));
      }
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
      if (t == 0u) mbar_arrive(&empty[s]);
      END(HG_MMA, kt);
    }
    // The fragment: thread t of the warp group holds, for each 8-column group j, rows
    // 16 * warp + ln / 4 (+ 8) and columns 8 * j + 2 * (ln % 4) (+ 1), ln the thread's lane
    // in its warp.
    const unsigned warp = t / 32u, ln = t % 32u;
    const unsigned r = static_cast<unsigned>(row0) + half * 64u + warp * 16u + ln / 4u;
#pragma unroll
    for (unsigned j = 0; j < HG_BN / 8u; ++j) {
      const unsigned col = static_cast<unsigned>(col0) + j * 8u + 2u * (ln % 4u);
      c[static_cast<unsigned long long>(r) * n + col] = d[4u * j];
      c[static_cast<unsigned long long>(r) * n + col + 1u] = d[4u * j + 1u];
      c[static_cast<unsigned long long>(r + 8u) * n + col] = d[4u * j + 2u];
      c[static_cast<unsigned long long>(r + 8u) * n + col + 1u] = d[4u * j + 3u];
    }
    FINALIZE();
  }
  (void)m;
}
#endif
