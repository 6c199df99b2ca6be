// Persistent grid: one block per SM loops over more tiles than there are blocks
// (t = blockIdx.x, blockIdx.x + gridDim.x, ...). Each tile is a TILE region with nested
// LOAD / COMPUTE / STORE regions, all carrying the tile index as payload. The work per
// tile varies with the tile index, so blocks finish at different times.
#include "ikp.cuh"

enum : unsigned { TILE = 0, LOAD = 1, COMPUTE = 2, STORE = 3 };  // REGIONS in main.rs

extern "C" __global__ void persistent(float* out, const float* in, unsigned n_tiles,
                                      unsigned iters, ikp::Arg prof) {
  ikp::Lane<> lane(prof, /*group=*/0, /*leader=*/threadIdx.x == 0);
  for (unsigned t = blockIdx.x; t < n_tiles; t += gridDim.x) {
    IKP_SCOPE(lane, TILE, t);
    const unsigned i = t * blockDim.x + threadIdx.x;
    float x;
    {
      IKP_SCOPE(lane, LOAD, t);
      x = in[i];
    }
    float acc = 0.0f;
    {
      IKP_SCOPE(lane, COMPUTE, t);
      const unsigned work = iters * (1u + t % 4u);
      for (unsigned k = 0; k < work; ++k) acc = acc * 1.0001f + x;
    }
    {
      IKP_SCOPE(lane, STORE, t);
      out[i] = acc;
    }
  }
  lane.finalize();
}
