// Warp-specialized producer / consumer: warp 0 of each block copies tiles from global
// memory into a shared-memory ring of STAGES slots, warp 1 consumes them with a long FMA
// chain. The warps hand slots over through a pair of mbarriers per slot (`full`: the
// producer warp wrote it; `empty`: the consumer warp read it), as Hopper pipelines do, and
// each wait is a spin on the barrier's phase that is counted: WAIT_EMPTY (producer waiting
// for a free slot) and WAIT_FULL (consumer waiting for data, also sampled per wait). Each
// warp is its own lane (group = warp), and every region carries the tile index as its
// payload. mbarriers need sm_80; older GPUs hand over through shared-memory counters.
#include "ikp.cuh"

enum : unsigned { PRODUCE = 0, CONSUME = 1 };      // region ids (REGIONS in main.rs)
enum : unsigned { WAIT_FULL = 0, WAIT_EMPTY = 1 };  // counter ids (COUNTERS in main.rs)

constexpr unsigned STAGES = 2;
constexpr unsigned TILE = 32;  // floats per tile: one per thread of a warp

// One slot's hand-over point: the 32 threads of one warp arrive on it once per phase, the
// other warp waits for that phase to complete. With mbarriers (sm_80 on) arrive releases
// the arriving thread's shared-memory accesses and a completed wait acquires them, which
// compute-sanitizer's racecheck understands; before sm_80, a counter of completed phases
// that one thread bumps after a warp barrier and fence, spun on through a volatile read.
struct Handoff {
#if __CUDA_ARCH__ >= 800
  unsigned long long bar;

  __device__ unsigned addr() const {
    unsigned a;
    asm("{\n\t.reg .u64 t;\n\tcvta.to.shared.u64 t, %1;\n\tcvt.u32.u64 %0, t;\n\t}"
        : "=r"(a)
        : "l"(&bar));
    return a;
  }
  __device__ void init() {
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(addr()), "r"(32u) : "memory");
  }
  __device__ void arrive() {
    asm volatile("{\n\t.reg .b64 st;\n\tmbarrier.arrive.shared.b64 st, [%0];\n\t}" ::"r"(addr())
                 : "memory");
  }
  // Whether phase `phase` (0, 1, 2, ...) has completed: the barrier tells phases apart by
  // parity, which is enough as no warp runs two phases ahead of the other.
  __device__ bool done(unsigned phase) {
    unsigned ok;
    asm volatile(
        "{\n\t.reg .pred p;\n\tmbarrier.test_wait.parity.shared.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(ok)
        : "r"(addr()), "r"(phase & 1u)
        : "memory");
    return ok != 0u;
  }
#else
  unsigned phases;  // phases completed so far

  __device__ void init() { phases = 0u; }
  __device__ void arrive() {
    __syncwarp();
    if (threadIdx.x % 32u == 0u) {
      __threadfence_block();
      static_cast<volatile unsigned*>(&phases)[0] += 1u;
    }
  }
  __device__ bool done(unsigned phase) {
    const bool d = static_cast<volatile unsigned*>(&phases)[0] > phase;
    if (d) __threadfence_block();
    return d;
  }
#endif
};

// blockDim.x must be 64: warp 0 produces, warp 1 consumes.
extern "C" __global__ void warp_specialized(float* out, const float* in, unsigned n_tiles,
                                            unsigned iters, ikp::Arg prof) {
  __shared__ float ring[STAGES][TILE];
  __shared__ Handoff full[STAGES];   // phase r completes when round r of the slot is written
  __shared__ Handoff empty[STAGES];  // phase r completes when round r of the slot is read
  const unsigned warp = threadIdx.x / 32u;
  const unsigned tid = threadIdx.x % 32u;
  if (threadIdx.x < STAGES) {
    full[threadIdx.x].init();
    empty[threadIdx.x].init();
  }
  __syncthreads();

  ikp::Lane<> lane(prof, /*group=*/warp, /*leader=*/tid == 0u);
  const float* src = in + static_cast<unsigned long long>(blockIdx.x) * n_tiles * TILE;

  if (warp == 0u) {
    for (unsigned t = 0; t < n_tiles; ++t) {
      const unsigned s = t % STAGES, round = t / STAGES;
      // Round r reuses the slot once the consumer has read round r - 1.
      if (round > 0u) IKP_WAIT(lane, WAIT_EMPTY, !empty[s].done(round - 1u));
      lane.begin(PRODUCE, t);
      ring[s][tid] = src[t * TILE + tid];
      full[s].arrive();
      lane.end(PRODUCE, t);
    }
  } else {
    float acc = 0.0f;
    for (unsigned t = 0; t < n_tiles; ++t) {
      const unsigned s = t % STAGES, round = t / STAGES;
      IKP_WAIT_SAMPLED(lane, WAIT_FULL, !full[s].done(round));  // tile t not there yet
      lane.begin(CONSUME, t);
      const float x = ring[s][tid];
      for (unsigned k = 0; k < iters; ++k) acc = acc * 1.0001f + x;
      empty[s].arrive();
      lane.end(CONSUME, t);
    }
    out[blockIdx.x * TILE + tid] = acc;
  }
  lane.finalize();
}
