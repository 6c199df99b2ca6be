// Warp-specialized producer / consumer: warp 0 of each block copies tiles from global
// memory into a shared-memory ring of STAGES slots, warp 1 consumes them with a long FMA
// chain. The warps hand slots over through shared-memory counters they spin on, and each
// spin is counted: WAIT_EMPTY (producer waiting for a free slot) and WAIT_FULL (consumer
// waiting for data, also sampled per wait). Each warp is its own lane (group = warp), and
// every region carries the tile index as its payload.
#include "ikp.cuh"

enum : unsigned { PRODUCE = 0, CONSUME = 1 };      // region ids (REGIONS in main.rs)
enum : unsigned { WAIT_FULL = 0, WAIT_EMPTY = 1 };  // counter ids (COUNTERS in main.rs)

constexpr unsigned STAGES = 2;
constexpr unsigned TILE = 32;  // floats per tile: one per thread of a warp

// blockDim.x must be 64: warp 0 produces, warp 1 consumes.
extern "C" __global__ void warp_specialized(float* out, const float* in, unsigned n_tiles,
                                            unsigned iters, ikp::Arg prof) {
  __shared__ float ring[STAGES][TILE];
  __shared__ unsigned filled[STAGES];    // tiles published into each slot so far
  __shared__ unsigned drained[STAGES];   // tiles consumed from each slot so far
  const unsigned warp = threadIdx.x / 32u;
  const unsigned tid = threadIdx.x % 32u;
  if (threadIdx.x < STAGES) {
    filled[threadIdx.x] = 0u;
    drained[threadIdx.x] = 0u;
  }
  __syncthreads();
  volatile unsigned* vfilled = filled;
  volatile unsigned* vdrained = drained;

  ikp::Lane<> lane(prof, /*group=*/warp, /*leader=*/tid == 0u);
  const float* src = in + static_cast<unsigned long long>(blockIdx.x) * n_tiles * TILE;

  if (warp == 0u) {
    for (unsigned t = 0; t < n_tiles; ++t) {
      const unsigned s = t % STAGES, round = t / STAGES;
      IKP_WAIT(lane, WAIT_EMPTY, vdrained[s] < round);  // the consumer still holds slot s
      __threadfence_block();
      lane.begin(PRODUCE, t);
      ring[s][tid] = src[t * TILE + tid];
      __syncwarp();
      if (tid == 0u) {
        __threadfence_block();
        vfilled[s] = round + 1u;
      }
      lane.end(PRODUCE, t);
    }
  } else {
    float acc = 0.0f;
    for (unsigned t = 0; t < n_tiles; ++t) {
      const unsigned s = t % STAGES, round = t / STAGES;
      IKP_WAIT_SAMPLED(lane, WAIT_FULL, vfilled[s] < round + 1u);  // tile t not there yet
      __threadfence_block();
      lane.begin(CONSUME, t);
      const float x = static_cast<volatile float*>(ring[s])[tid];
      for (unsigned k = 0; k < iters; ++k) acc = acc * 1.0001f + x;
      __syncwarp();
      if (tid == 0u) {
        __threadfence_block();
        vdrained[s] = round + 1u;
      }
      lane.end(CONSUME, t);
    }
    out[blockIdx.x * TILE + tid] = acc;
  }
  lane.finalize();
}
