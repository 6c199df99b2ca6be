// Load / compute / store: every thread reads one float, runs a long dependent FMA chain on
// it and writes the result. One lane per block (group 0, leader thread 0); the compute
// region should take nearly all of each lane's time.
#include "ikp.cuh"

// Region ids: indices into the host's region names (REGIONS in main.rs).
enum : unsigned { LOAD = 0, COMPUTE = 1, STORE = 2 };

extern "C" __global__ void load_compute_store(float* out, const float* in, unsigned n,
                                              unsigned iters, ikp::Arg prof) {
  // Fence::Block orders each region's memory traffic between its two stamps.
  ikp::Lane<ikp::Fence::Block> lane(prof, /*group=*/0, /*leader=*/threadIdx.x == 0);
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;

  float x = 0.0f;
  lane.begin(LOAD);
  if (i < n) x = in[i];
  lane.end(LOAD);

  float acc = 0.0f;
  lane.begin(COMPUTE);
  for (unsigned k = 0; k < iters; ++k) acc = acc * 1.0001f + x;
  lane.end(COMPUTE);

  lane.begin(STORE);
  if (i < n) out[i] = acc;
  lane.end(STORE);

  lane.finalize();
}
