// A lane's fixed cost: init (lane id, stamps, epoch, record-cost calibration) and
// finalize, with no record. ikp_host::sass::cost compiles this file with and without
// -DIKP_ENABLED=0, -DIKP_CALIBRATE=0 and -DIKP_EPOCHS=0; the instruction-count differences
// are the whole setup, the calibration and the epoch code. The store keeps the kernel from
// being empty when profiling is compiled out.
#include "ikp.cuh"

extern "C" __global__ void lane_setup(unsigned* out, ikp::Arg prof) {
  ikp::Lane<> lane(prof, 0, threadIdx.x == 0);
  out[threadIdx.x] = threadIdx.x;
  lane.finalize();
}
