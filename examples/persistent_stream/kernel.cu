// A persistent kernel recorded in stream mode: one block per SM loops over many tiles
// (t = blockIdx.x, blockIdx.x + gridDim.x, ...), each a TILE region around LOAD / COMPUTE /
// STORE regions tagged with the tile index, far more records than a fixed buffer of a few
// KiB per lane could hold. The lane is a stream lane that waits for room
// (ikp::Overflow::StreamWait): it writes into a 4 KiB ring that the host drains while the
// kernel runs, and if the host falls behind it waits (counted and timed) rather than lose
// a record. ikp::Overflow::Stream would drop and count instead, never slowing the kernel.
#include "ikp.cuh"

enum : unsigned { TILE = 0, LOAD = 1, COMPUTE = 2, STORE = 3 };  // REGIONS in main.rs

extern "C" __global__ void persistent_stream(float* out, const float* in, unsigned n_tiles,
                                             unsigned iters, ikp::Arg prof) {
  ikp::Lane<ikp::Fence::None, ikp::Timer::Global, ikp::Overflow::StreamWait> lane(prof, /*group=*/0,
                                                                                  threadIdx.x == 0);
  for (unsigned t = blockIdx.x; t < n_tiles; t += gridDim.x) {
    IKP_SCOPE(lane, TILE, t);
    const unsigned i = (t % 64u) * blockDim.x + threadIdx.x;
    float x;
    {
      IKP_SCOPE(lane, LOAD, t);
      x = in[i];
    }
    float acc = 0.0f;
    {
      IKP_SCOPE(lane, COMPUTE, t);
      for (unsigned k = 0; k < iters; ++k) acc = acc * 1.0001f + x;
    }
    {
      IKP_SCOPE(lane, STORE, t);
      out[i] += acc;
    }
  }
  lane.finalize();
}
