// A kernel nobody instrumented, for `ikp instrument`'s tests (host/tests/host/session_gpu.rs
// runs it on a GPU; tests/instrument_ptx.rs assembles it): nested loops with run-time trip
// counts, and a loop only the odd threads of each warp run (a divergent warp).
// `#pragma unroll 1` keeps each loop one loop in the PTX.
extern "C" __global__ void __launch_bounds__(128) plain_loops(float* out, const float* in,
                                                              unsigned outer, unsigned inner) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = in[i];
#pragma unroll 1
  for (unsigned o = 0; o < outer; ++o) {
#pragma unroll 1
    for (unsigned j = 0; j < inner; ++j) {
      acc = acc * 0.999f + (float)(o ^ j);
    }
  }
  if (threadIdx.x % 2u) {
#pragma unroll 1
    for (unsigned j = 0; j < inner + threadIdx.x % 4u; ++j) {
      acc += 1.0f;
    }
  }
  out[i] = acc;
}
