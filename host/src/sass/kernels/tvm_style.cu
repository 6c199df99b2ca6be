// The record sequence of the TVM CudaProfiler, rewritten from its documented behaviour (the
// TVM CudaProfiler tutorial, docs/references.md) to measure it the way ikp's own sites are
// measured: per-thread write offset and tag (local scratch the compiler keeps in
// registers), a leader-only
// `buf[off] = (globaltimer_lo << 32) | (tag | event_bits); off += stride;`,
// and a block fence after a start / before an end on every thread. No capacity check,
// no payload: event ids are compile-time constants.
//
// ikp_host::sass::cost appends one IKP_TVM_RECORDS(extra) line per variant: kernel
// `tvm_records_<extra>` holds 1 + extra starts.

struct TvmStyle {
  unsigned long long* buf;
  unsigned off[1];
  unsigned tag[1];
  unsigned stride;
  bool leader;

  __device__ __forceinline__ static unsigned stamp() {
    unsigned t;
    asm volatile("mov.u32 %0, %%globaltimer_lo;" : "=r"(t));
    return t;
  }
  __device__ __forceinline__ void init(unsigned long long* b, unsigned s, unsigned groups, unsigned group, bool lead) {
    buf = b;
    stride = s;
    leader = lead;
    const unsigned lane = blockIdx.x * groups + group;
    off[0] = 1 + lane;
    tag[0] = lane << 12;
    if (blockIdx.x == 0 && threadIdx.x == 0) buf[0] = ((unsigned long long)groups << 32) | gridDim.x;
  }
  __device__ __forceinline__ void write(unsigned bits) {
    if (leader) {
      buf[off[0]] = ((unsigned long long)stamp() << 32) | (tag[0] | bits);
      off[0] += stride;
    }
  }
  __device__ __forceinline__ void start(unsigned ev) {
    write(ev << 2);
    __threadfence_block();
  }
  __device__ __forceinline__ void end(unsigned ev) {
    __threadfence_block();
    write(ev << 2 | 1);
  }
  __device__ __forceinline__ void finalize() {
    __threadfence_block();
    write(3);
  }
};

template <unsigned EXTRA>
__device__ __forceinline__ void tvm_records_body(unsigned long long* prof, unsigned stride, unsigned groups) {
  TvmStyle p;
  p.init(prof, stride, groups, 0, threadIdx.x == 0);
  p.start(0);
#pragma unroll
  for (unsigned k = 1; k < EXTRA + 1; ++k) p.start(k);
  p.finalize();
}

#define IKP_TVM_RECORDS(EXTRA)                                                              \
  extern "C" __global__ void tvm_records_##EXTRA(unsigned long long* prof, unsigned stride, \
                                                 unsigned groups) {                         \
    tvm_records_body<EXTRA>(prof, stride, groups);                                          \
  }
