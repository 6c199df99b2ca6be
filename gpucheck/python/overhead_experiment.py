#!/usr/bin/env python3
"""What a lane's init and finalize cost where no record is made (issue #36). Run 6 measured
the overhead bench's persistent kernel at +2.68 % in its counters-only build and +3.23 %
with a null Arg, and load / compute / store at +0.51 % counters only (more than the whole
TVM-style instrumentation there, +0.19 %), though neither has a record or a wait in its
loops and their loops' SASS is the baseline's but for the loop counter's add (read with
NVRTC 13.0.88, BENCHMARKS.md section 8). Two kernel shapes, the bench's, one lane per
block:

  persistent   one block of 256 threads per SM, 64 tiles a block of `iters * (1 + t % 4)`
               dependent multiply-adds after one load (iters 512)
  one-wave     load / compute / store: 8 blocks of 256 threads per SM, one load, 32,768
               dependent multiply-adds, one store

and for each, one thing varied at a time:

  bare                no ikp and no ikp::Arg parameters (the bench's baseline)
  off                 ikp compiled out (Lane<..., On = false>), the Arg's parameters passed
  unreached           init and finalize compiled in behind a branch no launch takes (the
                      code is there, none of it runs: what its presence alone costs)
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
import os
import re
import shutil
import statistics
import sys

from experiment_tools import compile_check, registers, sass_functions, write_figures

SRC = r"""
#include "ikp.cuh"
// Vary: the persistent kernel's work per tile (iters * (1 + t % 4)); else iters a tile.
template <bool On, bool Finalize, bool Vary>
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
    const unsigned work = Vary ? iters * (1u + t % 4u) : iters;
    for (unsigned k = 0; k < work; ++k) acc = acc * 1.0001f + x;
    out[i] = acc;
  }
  if (Finalize) lane.finalize();
}
// What each kernel runs: the loop alone (OFF), with the lane's init and finalize compiled
// in behind a branch on a0 (the buffer's address, never 1) that no launch takes
// (UNREACHED), after the lane's init (INIT), between its init and finalize (COUNTERS).
enum Mode { OFF, UNREACHED, INIT, COUNTERS };
template <int M, bool Vary>
__device__ __forceinline__ void run(float* out, const float* in, unsigned n_tiles, unsigned iters,
                                    unsigned long long a0, unsigned long long a1, unsigned long long a2,
                                    unsigned long long a3, unsigned long long a4) {
  if (M == UNREACHED && a0 == 1ull) {
    body<true, true, Vary>(out, in, 0u, iters, a0, a1, a2, a3, a4);
    return;
  }
  body<M == INIT || M == COUNTERS, M == COUNTERS, Vary>(out, in, n_tiles, iters, a0, a1, a2, a3, a4);
}
#define IKP_EXP_KERNEL(name, mode, vary)                                                          \
  extern "C" __global__ void name(float* out, const float* in, unsigned n, unsigned iters,        \
                                  unsigned long long a0, unsigned long long a1, unsigned long long a2, \
                                  unsigned long long a3, unsigned long long a4) {                 \
    run<mode, vary>(out, in, n, iters, a0, a1, a2, a3, a4);                                       \
  }
// A shape's kernels; k_bare_ takes no Arg at all (the bench's baseline).
#define IKP_EXP_KERNELS(shape, vary)                                                               \
  IKP_EXP_KERNEL(k_off_##shape, OFF, vary)                                                         \
  IKP_EXP_KERNEL(k_unreached_##shape, UNREACHED, vary)                                             \
  IKP_EXP_KERNEL(k_init_##shape, INIT, vary)                                                       \
  IKP_EXP_KERNEL(k_counters_##shape, COUNTERS, vary)                                               \
  extern "C" __global__ void k_bare_##shape(float* out, const float* in, unsigned n, unsigned iters) { \
    body<false, false, vary>(out, in, n, iters, 0ull, 0ull, 0ull, 0ull, 0ull);                      \
  }
IKP_EXP_KERNELS(persistent, true)
IKP_EXP_KERNELS(wave, false)
"""

# (variant, defines, kernel (without its shape's suffix), Arg: "words" (the layout's),
# "null" (all zero) or "none" (no Arg parameters))
VARIANTS = [
    ("bare", (), "k_bare", "none"),
    ("off", (), "k_off", "words"),
    ("unreached", (), "k_unreached", "words"),
    ("init", (), "k_init", "words"),
    ("init+finalize", (), "k_counters", "words"),
    ("null-arg", (), "k_counters", "null"),
    ("no-calibration", ("-DIKP_CALIBRATE=0",), "k_counters", "words"),
    ("no-vote", ("-DIKP_OFF_BRANCH=0",), "k_counters", "words"),
]
# (shape, kernel suffix, blocks per SM, tiles per SM, iters): the bench's persistent and
# load / compute / store launches (benches/gpu_overhead.rs).
SHAPES = [
    ("persistent", "_persistent", 1, 64, 512),
    ("one-wave", "_wave", 8, 8, 32_768),
]
ROUNDS = 15
LAUNCHES = 4
THREADS = 256


def ffma_loop(sass: str) -> list:
    """The opcodes of the multiply-add chain's loop in one function's SASS (the innermost
    loop with the most FFMAs), FFMAs left out: its counter's add, compare and branch; []
    if there is none."""
    ins = re.findall(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);", sass)
    addr = [int(a, 16) for a, _, _ in ins]
    at = {a: k for k, a in enumerate(addr)}
    loops = []
    for k, (_, op, rest) in enumerate(ins):
        m = re.search(r"0x([0-9a-f]+)", rest) if op.startswith("BRA") else None
        if m and int(m.group(1), 16) < addr[k] and int(m.group(1), 16) in at:
            loops.append((at[int(m.group(1), 16)], k))
    inner = [(lo, hi) for lo, hi in loops if not any((l2, h2) != (lo, hi) and lo <= l2 and h2 <= hi for l2, h2 in loops)]
    best: list = []
    best_ffma = 0
    for lo, hi in inner:
        body = ins[lo:hi + 1]
        ffma = sum(1 for b in body if b[1].startswith("FFMA"))
        if ffma > best_ffma:
            best_ffma, best = ffma, [b[1] for b in body if not b[1].startswith("FFMA")]
    return best


def premises(functions: dict, variants) -> list:
    """What each variant's kernel must be for its figure to mean what VARIANTS says, read from
    its SASS (`functions`: name -> SASS): every kernel launched is there; `bare`, `off` read
    no timer; `unreached` holds the lane's code (its timer reads) though no launch runs it;
    the others read the timer."""
    problems = []
    for name, _, kernel, _ in variants:
        for _, suffix, *_ in SHAPES:
            sass = functions.get(kernel + suffix)
            if sass is None:
                problems.append(f"{name}: no kernel {kernel + suffix}")
                continue
            if not ffma_loop(sass):
                problems.append(f"{name}: no multiply-add loop found in {kernel + suffix}")
            timed = "GLOBALTIMER" in sass
            if timed != (name not in ("bare", "off")):
                problems.append(f"{name}: {kernel + suffix} {'reads' if timed else 'does not read'} %globaltimer")
    return problems


def builds(nvcc: str, include: str, arch: str = "sm_90") -> dict:
    """Each define set's kernels built by `nvcc` for `arch`: (SASS by function, registers by
    function)."""
    out = {}
    for defines in sorted({v[1] for v in VARIANTS}):
        text = compile_check(nvcc, SRC, f"defines {list(defines)}", include=include, defines=defines, arch=arch)
        out[defines] = (sass_functions(text), registers(text))
    return out


def facts(built: dict) -> dict:
    """Per shape and variant: the kernel's registers and its multiply-add loop's other
    opcodes (whether the loop counter's add is an IADD3 or a VIADD, which the lane's code
    beside the loop changes)."""
    out: dict = {}
    for name, defines, kernel, _ in VARIANTS:
        functions, regs = built[defines]
        for shape, suffix, *_ in SHAPES:
            fn = kernel + suffix
            out.setdefault(shape, {})[name] = dict(regs=regs.get(fn, -1), loop=ffma_loop(functions.get(fn, "")))
    return out


def print_facts(by_shape: dict, how: str) -> None:
    for shape, by_variant in by_shape.items():
        print(f"{shape}, {how}: " + "; ".join(f"{k} {v['regs']} regs, loop {' '.join(v['loop'])}" for k, v in by_variant.items()))


def sass_facts(include: str, arch: str) -> dict:
    """`facts` of the kernels as the GPU machine's nvcc builds them for `arch` (its ptxas is
    the toolkit's, as CuPy's NVRTC is); {} where there is no nvcc or it fails."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.exists(nvcc):
        return {}
    try:
        return facts(builds(nvcc, include, arch))
    except SystemExit as e:
        print(f"nvcc's SASS left out: {e}")
        return {}


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
        built = builds(args.nvcc, args.include)
        for defines, (functions, _) in built.items():
            problems = premises(functions, [v for v in VARIANTS if v[1] == defines])
            if problems:
                raise SystemExit(f"defines {list(defines)}: " + "; ".join(problems))
        print_facts(facts(built), "sm_90 SASS")
        print(f"overhead_experiment.py: {len(VARIANTS)} variants compile against {args.include}/ikp.cuh "
              f"and their kernels are what they say ({len(SHAPES)} shapes)")
        return 0
    if not args.wheel_dir:
        ap.error("--wheel-dir is required")
    sys.path.insert(0, args.wheel_dir)
    import cupy as cp
    import numpy as np

    import ikp

    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    modules = {}
    for defines in sorted({v[1] for v in VARIANTS}):
        modules[defines] = cp.RawModule(code=SRC, options=(f"--include-path={args.include}", "-std=c++17", *defines))
    null = [np.uint64(0)] * 5
    figures = {}
    for shape, suffix, blocks_per_sm, tiles_per_sm, iters in SHAPES:
        blocks, tiles = blocks_per_sm * sms, tiles_per_sm * sms
        layout = ikp.Layout(grid=(blocks, 1, 1), groups_per_block=1, records_per_lane=16, regions=["tile"])
        buf = cp.asarray(layout.buffer())
        words = [np.uint64(w) for w in np.frombuffer(layout.kernel_arg(buf.data.ptr), dtype=np.uint64)]
        src = cp.random.rand(tiles * THREADS, dtype=cp.float32)
        dst = cp.zeros_like(src)

        def launch_round(name: str, defines, kernel: str, arg: str) -> float:
            f = modules[defines].get_function(kernel + suffix)
            a = {"words": words, "null": null, "none": []}[arg]
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(LAUNCHES):
                f((blocks,), (THREADS,), (dst, src, np.uint32(tiles), np.uint32(iters), *a))
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
        print(f"{shape}: {blocks} blocks, {tiles} tiles, iters {iters}: medians of {ROUNDS} interleaved rounds of {LAUNCHES} launches")
        print("| variant | us per launch | vs off |\n|---|---|---|")
        for k, t in med.items():
            print(f"| {k} | {t:.2f} | {100 * (t / base - 1):+.2f} % |", flush=True)
        figures[shape] = dict(blocks=blocks, tiles=tiles, iters=iters, us_per_launch=times, median_us=med)
        if args.out:
            # After each shape: a run the session's timeout cuts short keeps what it timed.
            write_figures(args.out, device, sms=sms, rounds=ROUNDS, launches=LAUNCHES, shapes=figures)
    cc = cp.cuda.Device().compute_capability
    sass = sass_facts(args.include, f"sm_{cc}a" if cc == "90" else f"sm_{cc}")
    print_facts(sass, "the machine's nvcc")
    if args.out:
        write_figures(args.out, device, sms=sms, rounds=ROUNDS, launches=LAUNCHES, shapes=figures, sass=sass)
    return 0


if __name__ == "__main__":
    sys.exit(main())
