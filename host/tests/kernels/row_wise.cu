// A row-wise kernel laid out as the Liger norms are: a block per row, no loop, tens of
// thousands of short warps in a real launch (tests/instrument_ptx.rs,
// `the_epoch_claim_waits_behind_the_kernels_first_loads`). Each thread loads four elements
// of its row and four weights, the row's sum of squares is reduced across the warp
// (shuffles) and the block (shared memory), and the row is scaled and stored.
extern "C" __global__ void __launch_bounds__(256)
rms_norm_rows(const float4* __restrict__ x, const float4* __restrict__ w, float4* __restrict__ y,
              float eps) {
    __shared__ float partial[8];
    const int t = threadIdx.x;
    const size_t at = (size_t)blockIdx.x * blockDim.x + t;
    const float4 v = x[at];
    const float4 g = w[t];
    float s = v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((t & 31) == 0) partial[t >> 5] = s;
    __syncthreads();
    s = 0.f;
#pragma unroll
    for (int i = 0; i < 8; ++i) s += partial[i];
    const float r = rsqrtf(s / (float)(blockDim.x * 4) + eps);
    y[at] = make_float4(v.x * r * g.x, v.y * r * g.y, v.z * r * g.z, v.w * r * g.w);
}
