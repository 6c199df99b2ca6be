#!/usr/bin/env python3
"""What the persistent kernel's lane init and finalize cost (issue #36): run 6 measured its
counters-only build at +2.68 % and its null-Arg build at +3.23 %, with no record and no
wait in its tile loop, whose SASS is the baseline's instruction for instruction. The
overhead bench's persistent kernel (one block of 256 threads per SM, 64 tiles a block of
`iters * (1 + t % 4)` dependent multiply-adds after one load), one thing varied at a time:

  bare                no ikp and no ikp::Arg parameters (the bench's baseline)
  off                 ikp compiled out (Lane<..., On = false>), the Arg's parameters passed
  init                the lane constructed (start stamps, vote, calibration), no finalize
  init+finalize       the bench's counters-only build
  null-arg            init+finalize with a null ikp::Arg (the off switch)
  no-calibration      init+finalize built with -DIKP_CALIBRATE=0
  no-vote             init+finalize built with -DIKP_OFF_BRANCH=0

The Arg travels as five 64-bit kernel parameters (CuPy passes numbers, not structs), so
the kernel reads it from the parameter bank as the bench's does, with no load of its own.
Each variant is launched in interleaved rounds and timed by CUDA events around each round
of LAUNCHES back-to-back launches (the kernel's GPU time, not Python's launch).

Not run by the bundle: run on a GPU machine with CuPy and the bundle's wheel and header:

  python3 overhead_experiment.py --wheel-dir DIR --include DIR [--out FILE.json]

`--check --include DIR --nvcc PATH` compiles the kernels against DIR/ikp.cuh with each
variant's defines (no GPU, no CuPy: the tests run it).
"""

import argparse
import statistics
import sys

from experiment_tools import compile_check, write_figures

SRC = r"""
#include "ikp.cuh"
template <bool On, bool Finalize>
__device__ __forceinline__ void body(float* out, const float* in, unsigned n_tiles, unsigned iters,
                                     unsigned long long a0, unsigned long long a1, unsigned long long a2,
                                     unsigned long long a3, unsigned long long a4) {
  const unsigned long long words[5] = {a0, a1, a2, a3, a4};
  ikp::Arg prof;
  memcpy(&prof, words, sizeof(prof));
  ikp::Lane<ikp::Fence::None, ikp::Timer::Global, ikp::Overflow::DropNewest, On> lane(prof, 0, threadIdx.x == 0);
  for (unsigned t = blockIdx.x; t < n_tiles; t += gridDim.x) {
    const unsigned i = t * blockDim.x + threadIdx.x;
    const float x = in[i];
    float acc = 0.0f;
    const unsigned work = iters * (1u + t % 4u);
    for (unsigned k = 0; k < work; ++k) acc = acc * 1.0001f + x;
    out[i] = acc;
  }
  if (Finalize) lane.finalize();
}
#define IKP_EXP_KERNEL(name, on, fin)                                                              \
  extern "C" __global__ void name(float* out, const float* in, unsigned n, unsigned iters,         \
                                  unsigned long long a0, unsigned long long a1, unsigned long long a2, \
                                  unsigned long long a3, unsigned long long a4) {                  \
    body<on, fin>(out, in, n, iters, a0, a1, a2, a3, a4);                                          \
  }
IKP_EXP_KERNEL(k_off, false, false)
extern "C" __global__ void k_bare(float* out, const float* in, unsigned n, unsigned iters) {
  body<false, false>(out, in, n, iters, 0ull, 0ull, 0ull, 0ull, 0ull);
}
IKP_EXP_KERNEL(k_init, true, false)
IKP_EXP_KERNEL(k_counters, true, true)
"""

# (variant, defines, kernel, Arg: "words" (the layout's), "null" (all zero) or "none"
# (no Arg parameters))
VARIANTS = [
    ("bare", (), "k_bare", "none"),
    ("off", (), "k_off", "words"),
    ("init", (), "k_init", "words"),
    ("init+finalize", (), "k_counters", "words"),
    ("null-arg", (), "k_counters", "null"),
    ("no-calibration", ("-DIKP_CALIBRATE=0",), "k_counters", "words"),
    ("no-vote", ("-DIKP_OFF_BRANCH=0",), "k_counters", "words"),
]
ROUNDS = 15
LAUNCHES = 4
ITERS = 512
THREADS = 256


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheel-dir", help="where the ikp wheel is installed (not for --check)")
    ap.add_argument("--include", required=True, help="directory holding ikp.cuh")
    ap.add_argument("--out", help="JSON file for the figures")
    ap.add_argument("--check", action="store_true", help="only compile the kernels (with --nvcc)")
    ap.add_argument("--nvcc", help="with --check: the nvcc to compile with")
    args = ap.parse_args()
    if args.check:
        if not args.nvcc:
            ap.error("--check needs --nvcc")
        for defines in sorted({v[1] for v in VARIANTS}):
            compile_check(args.nvcc, SRC, f"defines {list(defines)}", include=args.include, defines=defines)
        print(f"overhead_experiment.py: {len(VARIANTS)} variants compile against {args.include}/ikp.cuh")
        return 0
    if not args.wheel_dir:
        ap.error("--wheel-dir is required")
    sys.path.insert(0, args.wheel_dir)
    import cupy as cp
    import numpy as np

    import ikp

    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    tiles = 64 * sms
    modules = {}
    for defines in sorted({v[1] for v in VARIANTS}):
        modules[defines] = cp.RawModule(code=SRC, options=(f"--include-path={args.include}", "-std=c++17", *defines))
    layout = ikp.Layout(grid=(sms, 1, 1), groups_per_block=1, records_per_lane=16, regions=["tile"])
    buf = cp.asarray(layout.buffer())
    words = [np.uint64(w) for w in np.frombuffer(layout.kernel_arg(buf.data.ptr), dtype=np.uint64)]
    null = [np.uint64(0)] * 5
    src = cp.random.rand(tiles * THREADS, dtype=cp.float32)
    dst = cp.zeros_like(src)

    def launch_round(name: str, defines, kernel: str, arg: str) -> float:
        f = modules[defines].get_function(kernel)
        a = {"words": words, "null": null, "none": []}[arg]
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(LAUNCHES):
            f((sms,), (THREADS,), (dst, src, np.uint32(tiles), np.uint32(ITERS), *a))
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) * 1e3 / LAUNCHES  # us per launch

    for v in VARIANTS:  # warm-up (module load, clocks)
        launch_round(*v)
    times = {v[0]: [] for v in VARIANTS}
    for _ in range(ROUNDS):
        for v in VARIANTS:
            times[v[0]].append(launch_round(*v))
    med = {k: statistics.median(t) for k, t in times.items()}
    base = med["off"]
    print(f"{sms} SMs, {tiles} tiles, iters {ITERS}: medians of {ROUNDS} interleaved rounds of {LAUNCHES} launches")
    print("| variant | us per launch | vs off |\n|---|---|---|")
    for k, t in med.items():
        print(f"| {k} | {t:.2f} | {100 * (t / base - 1):+.2f} % |")
    if args.out:
        device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
        write_figures(args.out, device, sms=sms, rounds=ROUNDS, launches=LAUNCHES, us_per_launch=times, median_us=med)
    return 0


if __name__ == "__main__":
    sys.exit(main())
