// Loops of the shapes ikp's probes must leave as ptxas lays them out (tests/instrument_ptx.rs,
// `loops_keep_their_code_in_sass`). Each loop carries `#pragma unroll 1` so that NVVM leaves
// it rolled in the PTX; the test deletes the `.pragma "nounroll"` it emits, so the PTX loop
// reaches ptxas as Triton's do: a runtime loop ptxas is free to unroll (or not).

// Triangular row loop: row r sums x[r][0..=r] (a trip count per row). ptxas unrolls it.
extern "C" __global__ void triangular_rows(const float* __restrict__ x, float* out, int n) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    float acc = 0.f;
#pragma unroll 1
    for (int j = 0; j <= r; ++j) acc += x[(size_t)r * n + j];
    out[r] = acc;
}

// Nested row / column loops, the column step a constant. ptxas unrolls both.
extern "C" __global__ void nested_rows_cols(const float* __restrict__ x, float* out, int rows, int cols) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.f;
#pragma unroll 1
    for (int i = 0; i < rows; ++i) {
#pragma unroll 1
        for (int j = t; j < cols; j += 128) acc += x[(size_t)i * cols + j];
    }
    out[t] = acc;
}

// A data-dependent while loop (pointer chasing): ptxas leaves it alone.
extern "C" __global__ void chase(const int* __restrict__ next, int* out, int start) {
    int i = start + threadIdx.x, hops = 0;
#pragma unroll 1
    while (i >= 0) {
        i = next[i];
        ++hops;
    }
    out[threadIdx.x] = hops;
}

#if __CUDA_ARCH__ >= 900
// A TMA (bulk copy) K loop: each iteration copies a tile into shared memory through the
// tensor memory accelerator, waits on its mbarrier and reduces it.
extern "C" __global__ void tma_tiles(const float* __restrict__ x, float* out, int tiles) {
    __shared__ alignas(128) float tile[1024];
    __shared__ alignas(8) unsigned long long bar;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar);
    unsigned s = (unsigned)__cvta_generic_to_shared(tile);
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b));
    __syncthreads();
    float acc = 0.f;
    unsigned phase = 0;
#pragma unroll 1
    for (int k = 0; k < tiles; ++k) {
        if (threadIdx.x == 0)
            asm volatile(
                "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 4096;\n\t"
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%1], [%2], 4096, [%0];"
                ::"r"(b), "r"(s), "l"(x + (size_t)k * 1024) : "memory");
        asm volatile(
            "{\n\t.reg .pred p;\n\tWAIT:\n\t"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t@!p bra WAIT;\n\t}"
            ::"r"(b), "r"(phase) : "memory");
        phase ^= 1;
        acc += tile[threadIdx.x];
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
#endif
