#!/usr/bin/env python3
"""Where a stream lane's time goes (issue #35 item 1): the stream checks' persistent kernel
(one block of four one-warp lanes per SM, a begin / end pair around `work` dependent FMAs
of every thread, twice per pair), timed by CUDA events around the launch, one thing varied
at a time:

  off            ikp compiled out (Lane<..., On = false>)
  fixed/device   records into a buffer in device memory large enough for all (DropNewest)
  fixed/host     the same buffer in pinned, mapped host memory
  stream/512/host+drain      Overflow::Stream, rings of 512 in pinned host memory, drained
                             by ikp.StreamDrain while the kernel runs (the bundle's check)
  stream/64Ki/host+drain     rings that hold every record (no wrap, no drop), drained
  stream/64Ki/host           the same rings, no drain thread
  stream/64Ki/device         the same rings in device memory, no drain
  stream/64Ki/device+syncwarp  the same kernel with __syncwarp() after each record
  stream/64Ki/device+leader-records  the records made by the lane's leader alone (inside
                             `if (lane == 0)`), so it takes the slow path alone
  stream/null-arg            the stream kernel with a null ikp::Arg

then the stream kernel with rings in device memory and no drain, its header patched by this
script, one change a variant (what each says of the record path is in VARIANTS):

  variant/as-is              the header unchanged (the reference for the variants)
  variant/no-slow-path       the first limit is the whole ring, so no record reaches the
                             out-of-line slow path (its call is still compiled in)
  variant/no-call            the same, and the call taken out
  variant/inlined            the slow path inlined instead of __noinline__
  variant/leader-call        the slow path called from the leader alone, as before issue
                             #35's fix (the rest of the warp waits at the reconvergence
                             point); its first call comes at a quarter of each ring
  variant/leader-call-half   the same, the first call at half of each ring
  variant/leader-call-inlined  the leader's call with the slow path inlined: no call, no
                             callee's YIELD (whether those are what leaves the warp split)

If the leader's call leaves the warp split for the rest of the kernel (each part then runs
the work), leader-call costs about 1 + (52,000 - 16,384) / 52,000 = 1.69x the fixed
build and leader-call-half 1 + (52,000 - 32,768) / 52,000 = 1.37x; as-is (the whole warp
calls) about the fixed build's time.

Not run by the bundle: run on a GPU machine with CuPy and the bundle's wheel and header:

  python3 stream_experiment.py --wheel-dir DIR --include DIR [--out FILE.json]

Prints one table; --out writes the figures as JSON. `--check-variants --include DIR` only
checks that every patch of VARIANTS applies to DIR/ikp.cuh, and with `--nvcc PATH` that the
kernels compile against each patched header (sm_90; no GPU, no CuPy: the tests run it).
"""

import argparse
import os
import sys
import tempfile

from experiment_tools import compile_check, write_figures

SRC = r"""
#include "ikp.cuh"
template <ikp::Overflow O, bool On, bool Sync = false, bool LeaderRecords = false>
__device__ __forceinline__ void body(float* sink, unsigned pairs, unsigned work, const ikp::Arg* argp) {
  const ikp::Arg prof = *argp;
  const bool leader = threadIdx.x % 32u == 0u;
  ikp::Lane<ikp::Fence::None, ikp::Timer::Global, O, On> lane(prof, threadIdx.x / 32u, leader);
  float x = threadIdx.x * 1e-3f;
  const float y = 1.0000001f;
  for (unsigned i = 0; i < pairs; ++i) {
    if (!LeaderRecords || leader) lane.begin(0u, i);
    if (Sync) __syncwarp();
    for (unsigned k = 0; k < work; ++k) x = fmaf(x, y, 1e-7f);
    if (!LeaderRecords || leader) lane.end(0u, i);
    if (Sync) __syncwarp();
    for (unsigned k = 0; k < work; ++k) x = fmaf(x, y, 1e-7f);
  }
  lane.finalize();
  if (x == 12345.0f) sink[threadIdx.x] = x;
}
extern "C" __global__ void k_off(float* s, unsigned p, unsigned w, const ikp::Arg* a) {
  body<ikp::Overflow::DropNewest, false>(s, p, w, a);
}
extern "C" __global__ void k_fixed(float* s, unsigned p, unsigned w, const ikp::Arg* a) {
  body<ikp::Overflow::DropNewest, true>(s, p, w, a);
}
extern "C" __global__ void k_stream(float* s, unsigned p, unsigned w, const ikp::Arg* a) {
  body<ikp::Overflow::Stream, true>(s, p, w, a);
}
// The same with the warp made to reconverge after each record: if the stream record left
// the warp split, the work after it ran once per part.
extern "C" __global__ void k_stream_sync(float* s, unsigned p, unsigned w, const ikp::Arg* a) {
  body<ikp::Overflow::Stream, true, true>(s, p, w, a);
}
// The records made by the leader alone: it takes the slow path alone (docs/modes.md).
extern "C" __global__ void k_stream_leader(float* s, unsigned p, unsigned w, const ikp::Arg* a) {
  body<ikp::Overflow::Stream, true, false, true>(s, p, w, a);
}
"""

# Header patches, (name, [(text, replacement)]): each text must occur in ikp.cuh.
FIRST_LIMIT = "limit_ = cap_ >> STREAM_PUBLISH_SHIFT;"
NO_SLOW = (FIRST_LIMIT, "limit_ = cap_;")
INLINED = ("#define IKP_NOINLINE __device__ __noinline__", "#define IKP_NOINLINE __device__ __forceinline__")
# The record path's branch to the slow path as it is, and as it was before issue #35's fix.
WHOLE_WARP_CALL = """    if (__builtin_expect(cursor_ == limit_, 0)) {
      if (live_) slow<Timed>(value, tag);
    } else {
      detail::store_record_if(on_, ev_, cursor_, word);
      ++cursor_;
    }"""
LEADER_CALL = """    if (on_ && cursor_ != limit_) {
      detail::store_record(ev_, cursor_, word);
      ++cursor_;
    } else if (on_) {
      slow<Timed>(value, tag);
    }"""
VARIANTS = [
    ("variant/as-is", []),
    ("variant/no-slow-path", [NO_SLOW]),
    ("variant/no-call", [NO_SLOW, ("      if (live_) slow<Timed>(value, tag);", "      (void)value;")]),
    ("variant/inlined", [INLINED]),
    ("variant/leader-call", [(WHOLE_WARP_CALL, LEADER_CALL)]),
    ("variant/leader-call-half", [(WHOLE_WARP_CALL, LEADER_CALL), (FIRST_LIMIT, "limit_ = cap_ >> 1;")]),
    ("variant/leader-call-inlined", [(WHOLE_WARP_CALL, LEADER_CALL), INLINED]),
]


def patched(header: str, name: str, patches) -> str:
    """The header with one variant's patches applied; each text must occur in it."""
    for old, new in patches:
        if old not in header:
            raise SystemExit(f"{name}: {old!r} is not in ikp.cuh: update VARIANTS")
        header = header.replace(old, new)
    return header

WARPS = 4
PAIRS = 26_000
WORK = 2_100


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheel-dir", help="where the ikp wheel is installed (not for --check-variants)")
    ap.add_argument("--include", required=True, help="directory holding ikp.cuh")
    ap.add_argument("--out", help="JSON file for the figures")
    ap.add_argument("--check-variants", action="store_true", help="only check that VARIANTS apply")
    ap.add_argument("--nvcc", help="with --check-variants: compile the kernels against each variant")
    args = ap.parse_args()
    header = open(os.path.join(args.include, "ikp.cuh")).read()
    if args.check_variants:
        for name, patches in VARIANTS:
            text = patched(header, name, patches)
            if args.nvcc:
                compile_check(args.nvcc, SRC, name, header=text)
        how = " and compile" if args.nvcc else ""
        print(f"{len(VARIANTS)} variants apply{how} to {args.include}/ikp.cuh")
        return 0
    if not args.wheel_dir:
        ap.error("--wheel-dir is required")
    sys.path.insert(0, args.wheel_dir)
    import cupy as cp
    import cupyx
    import numpy as np

    import ikp

    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    mod = cp.RawModule(code=SRC, options=(f"--include-path={args.include}", "-std=c++17"))
    kernels = {n: mod.get_function(n) for n in ("k_off", "k_fixed", "k_stream", "k_stream_sync", "k_stream_leader")}
    sink = cp.zeros(32 * WARPS, dtype=cp.float32)

    def layout(overflow: str, records: int):
        return ikp.Layout(
            grid=(sms, 1, 1),
            groups_per_block=WARPS,
            records_per_lane=records,
            regions=["pair"],
            overflow=overflow,
        )

    def as_arg(raw: bytes):
        return cp.asarray(np.frombuffer(raw, dtype=np.uint8))

    def timed(kernel: str, arg) -> float:
        """Seconds of GPU time of one launch (events around it)."""
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        kernels[kernel]((sms,), (32 * WARPS,), (sink, np.uint32(PAIRS), np.uint32(WORK), arg))
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / 1e3

    def host_buffer(lay):
        buf = cupyx.zeros_pinned((lay.buffer_words,), dtype=np.uint64)
        buf[:] = lay.buffer()
        return buf

    rows = []

    def run(name: str, once) -> None:
        best = min(once() for _ in range(2))
        rows.append((name, best))
        print(f"{name:32s} {best * 1e3:10.2f} ms", flush=True)

    null = as_arg(bytes(len(layout("drop_newest", 1).kernel_arg(0))))
    run("off", lambda: timed("k_off", null))

    fixed = layout("drop_newest", 2 * PAIRS + 8)
    dev_buf = cp.asarray(fixed.buffer())
    run("fixed/device", lambda: timed("k_fixed", as_arg(fixed.kernel_arg(dev_buf.data.ptr))))
    del dev_buf
    host = host_buffer(fixed)
    run("fixed/host", lambda: timed("k_fixed", as_arg(fixed.kernel_arg(host.ctypes.data))))
    del host

    def with_drain(lay, buf) -> float:
        buf[:] = lay.buffer()
        arg = as_arg(lay.kernel_arg(buf.ctypes.data))
        with tempfile.TemporaryDirectory() as d:
            with ikp.StreamDrain(lay, buf, os.path.join(d, "s.ikps")):
                t = timed("k_stream", arg)
        return t

    small = layout("stream", 512)
    small_buf = host_buffer(small)
    run("stream/512/host+drain", lambda: with_drain(small, small_buf))
    del small_buf
    big = layout("stream", 1 << 16)
    big_buf = host_buffer(big)
    run("stream/64Ki/host+drain", lambda: with_drain(big, big_buf))

    def no_drain(buf) -> float:
        buf[:] = big.buffer()
        return timed("k_stream", as_arg(big.kernel_arg(buf.ctypes.data)))

    run("stream/64Ki/host", lambda: no_drain(big_buf))
    del big_buf

    def device_rings() -> float:
        d = cp.asarray(big.buffer())
        return timed("k_stream", as_arg(big.kernel_arg(d.data.ptr)))

    run("stream/64Ki/device", device_rings)

    def device_rings_sync() -> float:
        d = cp.asarray(big.buffer())
        return timed("k_stream_sync", as_arg(big.kernel_arg(d.data.ptr)))

    run("stream/64Ki/device+syncwarp", device_rings_sync)

    def device_rings_leader() -> float:
        d = cp.asarray(big.buffer())
        return timed("k_stream_leader", as_arg(big.kernel_arg(d.data.ptr)))

    run("stream/64Ki/device+leader-records", device_rings_leader)
    run("stream/null-arg", lambda: timed("k_stream", null))

    for name, patches in VARIANTS:
        text = patched(header, name, patches)
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "ikp.cuh"), "w") as f:
                f.write(text)
            vmod = cp.RawModule(code=SRC, options=(f"--include-path={d}", "-std=c++17"))
            kernels[name] = vmod.get_function("k_stream")

            def variant() -> float:
                dbuf = cp.asarray(big.buffer())
                return timed(name, as_arg(big.kernel_arg(dbuf.data.ptr)))

            run(name, variant)

    off = rows[0][1]
    records = sms * WARPS * 2 * PAIRS
    print(f"\n{sms} SMs x {WARPS} lanes, {PAIRS} pairs of {WORK} FMAs: {records / 1e6:.0f} M records")
    print("| launch | ms | vs off | M records/s |\n|---|---|---|---|")
    for name, t in rows:
        print(f"| {name} | {t * 1e3:.1f} | {100 * (t / off - 1):+.2f} % | {records / t / 1e6:.0f} |")
    if args.out:
        device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
        write_figures(args.out, device, sms=sms, warps=WARPS, pairs=PAIRS, work=WORK, seconds=dict(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
