#!/usr/bin/env python3
"""ikp's Python clients on the GPU machine: the bundle's `python` step runs this script.

The Rust runner (gpucheck/src/runner/python.rs) calls it with the bundle's wheel, CLI and
header; it prints each check (the runner's format, gpucheck/src/results.rs) as one line of
JSON on standard output the moment it is decided, and everything else on standard error,
so a script stopped at its time limit still hands back the checks it finished. The checks:

- ``python/wheel``: the bundle's abi3 wheel installs with pip into a temporary directory
  (no index, no dependencies; unpacked where the Python has no pip) and imports from
  there; its version is reported. It needs no GPU.
- ``python/native``: a CUDA kernel instrumented with ikp.cuh, compiled with NVRTC through
  CuPy and launched on a buffer laid out by ``ikp.Layout`` (a CUDA tensor, or a CuPy array
  without torch), then decoded with ``ikp.decode``: every lane, region, payload and span
  count must be what the kernel was told to record, in order, with nothing dropped.
- ``python/proton``: a Triton kernel with Proton scopes, recorded by Proton's
  instrumentation backend into its Chrome trace, then decoded by the bundle's
  ``ikp decode --format proton`` and by ``ikp.load``: the scope names and counts must be
  the kernel's (programs x warps per name), and ikp's spans the file's events. Where
  Proton's instrumentation mode is missing or fails, this check is skipped with the reason
  (not counted against the GPU run); a wrong decode fails it.
- ``python/stream``: a kernel of ikp.cuh's stream lanes (``Overflow::StreamWait``), compiled
  with NVRTC through CuPy, recording far more than its rings hold into pinned host memory
  (``cupyx.zeros_pinned``) that ``ikp.StreamDrain`` empties into a stream file while it
  runs; ``ikp.load`` of the file must hold every record of every lane, in order, nothing
  dropped.
- ``python/triton-probes``: Triton kernels nobody edited (scripts/triton-ptx-fixtures.py's,
  at its shapes and at >= 100 us ones), instrumented by ``ikp.triton``: outputs bit for bit
  the plain kernels', a lane per warp, each loop's known trip counts, ikp's extent within
  each launch's GPU duration, slowdowns by GPU duration within the targets, and Proton's
  instrumentation mode on the same loops beside it (see triton_probes.py beside this
  script).
- ``python/torch-compile``: a ``torch.compile``d model, warmed up before the context, run
  inside ``ikp.triton.profile()`` as it is: every Inductor Triton kernel launched traced,
  outputs equal to the plain compiled model's (triton_compile.py beside this script).
- ``python/triton-autotune``: a kernel autotuned over num_warps 2, 4 and 8 inside the
  context, each variant traced on its own with its own warps, and a kernel compiled before
  the context compiled again and traced (triton_compile.py).

Without a GPU (``--no-gpu REASON``, or no CUDA device visible to CuPy / torch) the GPU
checks are skipped with the reason. An exception fails its own check with the exception's
last line, and the script goes on to the next.

``--only PREFIXES`` (comma-separated check-name prefixes: the runner's ``IKP_GPU_ONLY``
narrowed to this step) runs only the checks they name, besides ``python/wheel``, which
the others need; the rest are not reported. ``--seconds S`` is the script's time: a check
that would start after it is skipped with that reason, and ``python/triton-probes`` stops
timing kernels when it is spent (the runner stops the script a little later).

``--self-check`` runs the verifiers on synthetic data instead (no GPU, no CuPy, no torch;
the Proton path also decodes a synthetic trace when ``ikp`` imports): each must accept
what a correct run records and reject each kind of damage. Needs Python 3.9+.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))

# The native kernel: B blocks of G warps, one lane per warp (its thread 0 leads); each lane
# records LOAD (payload: its block), ITERS x COMPUTE (payload: the iteration), STORE
# (payload: its group), then finalizes. ikp::Arg (40 bytes) reaches the kernel through
# device memory and is copied in there: CuPy passes numbers by value, not structs (its
# kernel-argument scalar, CScalar in cupy/_core/_scalar.pyx, holds at most 32 bytes).
NATIVE_SRC = r"""
#include "ikp.cuh"
enum : unsigned { LOAD = 0, COMPUTE = 1, STORE = 2 };
extern "C" __global__ void ikp_py_native(float* data, unsigned iters, const ikp::Arg* argp) {
  const ikp::Arg prof = *argp;
  const unsigned group = threadIdx.x / 32u;
  ikp::Lane<ikp::Fence::Block> lane(prof, group, threadIdx.x % 32u == 0u);
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  lane.begin(LOAD, blockIdx.x);
  float x = data[i];
  lane.end(LOAD, blockIdx.x);
  for (unsigned k = 0; k < iters; ++k) {
    lane.begin(COMPUTE, k);
    for (int j = 0; j < 256; ++j) x = x * 0.999f + 1.0f;
    lane.end(COMPUTE, k);
  }
  lane.begin(STORE, group);
  data[i] = x;
  lane.end(STORE, group);
  lane.finalize();
}
"""
NATIVE_REGIONS = ["load", "compute", "store"]

# The stream kernel: STREAM_BLOCKS blocks of STREAM_GROUPS warps, one stream lane per warp
# waiting for room, each recording STREAM_PAIRS begin / end pairs of region 0 (payload: the
# pair's index) through a ring of STREAM_RING records, far fewer than it records.
STREAM_SRC = r"""
#include "ikp.cuh"
extern "C" __global__ void ikp_py_stream(float* data, unsigned pairs, const ikp::Arg* argp) {
  const ikp::Arg prof = *argp;
  ikp::Lane<ikp::Fence::None, ikp::Timer::Global, ikp::Overflow::StreamWait> lane(
      prof, threadIdx.x / 32u, threadIdx.x % 32u == 0u);
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = data[i];
  for (unsigned k = 0; k < pairs; ++k) {
    lane.begin(0u, k);
    for (int j = 0; j < 16; ++j) x = x * 0.999f + 1.0f;
    lane.end(0u, k);
  }
  data[i] = x;
  lane.finalize();
}
"""
STREAM_BLOCKS = 8
STREAM_GROUPS = 2
STREAM_PAIRS = 100_000
STREAM_RING = 512
NATIVE_BLOCKS = 8
NATIVE_GROUPS = 2
NATIVE_ITERS = 4

# The Triton kernel: PROTON_PROGRAMS programs of PROTON_WARPS warps; every warp records
# each scope once (Proton records per warp), the two inner ones nested in the outer one.
PROTON_SCOPES = ["ikp_outer", "ikp_load", "ikp_store"]
PROTON_PROGRAMS = 8
PROTON_WARPS = 4
PROTON_BLOCK = 512


NO_IKP = "the wheel did not install or import (python/wheel), so ikp cannot decode"


def check(
    name: str, status: str, detail: str, gpu: bool = True, figures: Optional[Dict[str, Any]] = None
) -> Dict[str, Any]:
    """One check in the runner's format."""
    return {
        "name": name,
        "status": status,
        "gpu": gpu,
        "detail": detail,
        "figures": dict(figures or {}),
    }


def verdict(name: str, problems: List[str], passed: str, figures: Dict[str, Any]) -> Dict[str, Any]:
    """A fail naming the first problems, or a pass with the sentence `passed`."""
    if problems:
        detail = f"{len(problems)} problems: " + "; ".join(problems[:5])
        return check(name, "fail", detail, figures=figures)
    return check(name, "pass", passed, figures=figures)


def log(msg: str) -> None:
    print(f"gpu_clients: {msg}", file=sys.stderr, flush=True)


def last_line(e: BaseException) -> str:
    """The exception as the last line of its traceback ("TypeError: ...")."""
    lines = traceback.format_exception_only(type(e), e)
    return " ".join(lines[-1].split()) if lines else repr(e)


# ---------------------------------------------------------------------------------------
# Verifiers: pure functions over columns (sequences), so --self-check runs them anywhere.
# Each returns the list of problems found (empty: it holds).
# ---------------------------------------------------------------------------------------


def native_problems(
    spans: Dict[str, Sequence[Any]],
    lanes: Dict[str, Sequence[Any]],
    summary: Dict[str, Any],
    blocks: int,
    groups: int,
    iters: int,
) -> List[str]:
    """What is wrong with a decoded native trace of the kernel in NATIVE_SRC."""
    problems: List[str] = []
    for key in (
        "unmatched_begin",
        "unmatched_end",
        "dropped",
        "unfinalized_lanes",
        "after_finalize",
        "unknown_records",
        "backward_steps",
    ):
        if summary.get(key, 0) != 0:
            problems.append(f"summary {key} = {summary.get(key)}, expected 0")
    if summary.get("set_aside_lanes"):
        problems.append(f"{len(summary['set_aside_lanes'])} lanes set aside")
    want_lanes = {(b, g) for b in range(blocks) for g in range(groups)}
    got_lanes = {(int(b), int(g)) for b, g in zip(lanes["block"], lanes["group"])}
    if got_lanes != want_lanes:
        problems.append(
            f"lanes (block, group): {len(got_lanes)} found, {len(want_lanes)} expected; "
            f"missing {sorted(want_lanes - got_lanes)[:4]}, "
            f"extra {sorted(got_lanes - want_lanes)[:4]}"
        )
    for b, g, w, d in zip(lanes["block"], lanes["group"], lanes["warp"], lanes["dropped"]):
        if int(d) != 0:
            problems.append(f"lane ({b}, {g}) dropped {d} records")
        if int(w) != int(g):
            problems.append(f"lane ({b}, {g}) was written by warp {w}, expected warp {g}")
    by_lane: Dict[Tuple[int, int], List[Tuple[int, int, str, int]]] = {}
    for b, g, name, payload, begin, end in zip(
        spans["block"],
        spans["group"],
        spans["name"],
        spans["payload"],
        spans["begin_ns"],
        spans["end_ns"],
    ):
        by_lane.setdefault((int(b), int(g)), []).append(
            (int(begin), int(end), str(name), int(payload))
        )
    for lane in sorted(want_lanes):
        b, g = lane
        got = by_lane.get(lane, [])
        got.sort()
        want = [("load", b)] + [("compute", k) for k in range(iters)] + [("store", g)]
        seen = [(n, p) for _, _, n, p in got]
        if seen != want:
            problems.append(f"lane ({b}, {g}) recorded {seen}, expected {want}")
            continue
        for (b0, e0, n0, _), (b1, _, n1, _) in zip(got, got[1:]):
            if e0 > b1:
                problems.append(
                    f"lane ({b}, {g}): {n0} ends at {e0} ns after {n1} begins at {b1} ns"
                )
        for begin, end, n, _ in got:
            if end < begin:
                problems.append(f"lane ({b}, {g}): {n} ends before it begins")
    extra = set(by_lane) - want_lanes
    if extra:
        problems.append(f"spans in unexpected lanes {sorted(extra)[:4]}")
    return problems


def proton_file_events(doc: Dict[str, Any]) -> List[Tuple[str, int, int, int]]:
    """The X events of a Proton Chrome trace: (name, CTA, warp, dur in cycles)."""
    out = []
    for ev in doc.get("traceEvents", []):
        if ev.get("ph") != "X":
            continue
        cta = int(str(ev["pid"]).split(" CTA")[-1].split()[0])
        warp = int(str(ev["tid"]).split()[1])
        out.append((str(ev["name"]), cta, warp, int(round(float(ev["dur"]) * 1000))))
    return out


def proton_problems(
    file_events: List[Tuple[str, int, int, int]],
    spans: Dict[str, Sequence[Any]],
    cli_counts: Optional[Dict[str, int]],
    scopes: Sequence[str],
    programs: int,
    warps: int,
) -> List[str]:
    """What is wrong with ikp's decode of a Proton trace of the kernel: the file must hold
    one event per scope, program and warp; ikp's spans (Python) must be the file's events
    (name, CTA, warp, duration: 1 cycle = 1 ns at Proton's assumed 1000 MHz); the CLI's
    summary counts must be the file's."""
    problems: List[str] = []
    want = sorted((s, p, w) for s in scopes for p in range(programs) for w in range(warps))
    got_file = sorted((n, c, w) for n, c, w, _ in file_events)
    if got_file != want:
        problems.append(
            f"the trace file holds {len(got_file)} events of "
            f"{sorted(set(n for n, *_ in file_events))}, "
            f"expected {len(want)} ({programs} programs x {warps} warps x {list(scopes)})"
        )
    ours = sorted(
        (str(n), int(b), int(w), int(e) - int(s))
        for n, b, w, s, e in zip(
            spans["name"], spans["block"], spans["warp"], spans["begin_ns"], spans["end_ns"]
        )
    )
    theirs = sorted(file_events)
    if ours != theirs:
        diff = sorted(set(ours) ^ set(theirs))[:3]
        problems.append(
            f"ikp.load decoded {len(ours)} spans, the file has {len(theirs)} events; "
            f"first differences (name, CTA, warp, ns): {diff}"
        )
    if cli_counts is not None:
        file_counts: Dict[str, int] = {}
        for n, *_ in file_events:
            file_counts[n] = file_counts.get(n, 0) + 1
        if cli_counts != file_counts:
            problems.append(f"`ikp decode --summary` counts {cli_counts}, the file {file_counts}")
    return problems


# ---------------------------------------------------------------------------------------
# The checks.
# ---------------------------------------------------------------------------------------


def wheel_check(wheel: str, tmp: str) -> Tuple[Dict[str, Any], Optional[Any]]:
    """Installs the wheel into `tmp`, imports ikp from there; (check, module or None)."""
    t0 = time.monotonic()
    name = "python/wheel"
    figures: Dict[str, Any] = {"wheel": os.path.basename(wheel), "python": sys.version.split()[0]}
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-index",
        "--no-deps",
        "--quiet",
        "--disable-pip-version-check",
        "--target",
        tmp,
        wheel,
    ]
    log("$ " + " ".join(cmd))
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stderr.write(r.stdout)
    figures["installed_with"] = "pip"
    if r.returncode != 0 and "No module named pip" in r.stdout:
        # A venv made without pip (uv's, say): a wheel is a zip of what --target holds.
        log("no pip in this Python: unpacking the wheel instead")
        with zipfile.ZipFile(wheel) as z:
            z.extractall(tmp)
        figures["installed_with"] = "zipfile (this Python has no pip)"
    elif r.returncode != 0:
        tail = " / ".join(r.stdout.strip().splitlines()[-3:])
        return (
            check(
                name,
                "fail",
                f"pip could not install the wheel (exit {r.returncode}): {tail}",
                gpu=False,
                figures=figures,
            ),
            None,
        )
    sys.path.insert(0, tmp)
    import importlib
    import importlib.metadata

    try:
        ikp = importlib.import_module("ikp")
    except Exception as e:  # noqa: BLE001
        log(traceback.format_exc())
        return (
            check(
                name,
                "fail",
                f"the wheel installed, but `import ikp` failed: {last_line(e)}",
                gpu=False,
                figures=figures,
            ),
            None,
        )
    where = os.path.dirname(os.path.abspath(ikp.__file__))
    if not where.startswith(os.path.abspath(tmp)):
        return (
            check(
                name,
                "fail",
                f"`import ikp` found {where}, not the wheel installed in {tmp}",
                gpu=False,
                figures=figures,
            ),
            None,
        )
    dists = list(importlib.metadata.distributions(name="ikp", path=[tmp]))
    version = dists[0].version if dists else "?"
    with zipfile.ZipFile(wheel) as z:
        native = [n for n in z.namelist() if n.startswith("ikp/_ikp")]
    figures.update(
        version=version,
        native_module=native[0] if native else None,
        numpy=__import__("numpy").__version__,
        seconds=round(time.monotonic() - t0, 2),
    )
    return (
        check(
            name,
            "pass",
            f"ikp {version} installed from {os.path.basename(wheel)} with "
            f"{figures['installed_with']} and imported under Python {figures['python']}",
            gpu=False,
            figures=figures,
        ),
        ikp,
    )


def cupy_device() -> Tuple[Optional[Any], str]:
    """CuPy and its device 0's name, or None and why not."""
    try:
        import cupy as cp
    except Exception as e:  # noqa: BLE001 (any import failure is a reason to skip)
        return None, f"CuPy is not importable here ({last_line(e)})"
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001
        return None, f"no CUDA device visible to CuPy ({last_line(e)})"
    if n == 0:
        return None, "no CUDA device visible to CuPy (0 devices)"
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return cp, name


def cupy_for(name: str, ikp: Any) -> Tuple[Any, str, Optional[Dict[str, Any]]]:
    """CuPy and its device 0 for the CuPy check `name`, or that check's result where it
    cannot run: skipped without CuPy or a device, failed without ikp."""
    cp, device = cupy_device()
    if cp is None:
        return None, device, check(name, "skip", device)
    if ikp is None:
        return None, device, check(name, "fail", NO_IKP)
    return cp, device, None


def native_check(ikp: Any, include: str, work: str) -> Dict[str, Any]:
    name = "python/native"
    cp, device, cannot = cupy_for(name, ikp)
    if cannot is not None:
        return cannot
    import numpy as np

    t0 = time.monotonic()
    figures: Dict[str, Any] = {"device": device, "cupy": cp.__version__}
    header = os.path.join(include, "ikp.cuh")
    if not os.path.isfile(header):
        return check(name, "fail", f"the bundle lacks {header}", figures=figures)
    layout = ikp.Layout(
        grid=(NATIVE_BLOCKS, 1, 1),
        groups_per_block=NATIVE_GROUPS,
        records_per_lane=16,
        regions=NATIVE_REGIONS,
    )
    # NVRTC 12 and later compile C++17 by default, which ikp.cuh needs.
    module = cp.RawModule(code=NATIVE_SRC, options=(f"--include-path={include}",))
    kernel = module.get_function("ikp_py_native")
    figures["compile_s"] = round(time.monotonic() - t0, 2)
    # The buffer: a CUDA tensor as docs/python.md shows (shared with CuPy through DLPack, read
    # back by ikp.decode with .cpu()), or a CuPy array where torch is missing.
    try:
        import torch

        tensor = torch.from_numpy(layout.buffer().view(np.int64)).cuda()
        buf = cp.from_dlpack(tensor)
        figures["buffer"] = "torch.Tensor on cuda (int64 words)"
    except ImportError:
        tensor, buf = None, cp.asarray(layout.buffer())
        figures["buffer"] = "cupy.ndarray"
    arg = cp.asarray(np.frombuffer(layout.kernel_arg(buf.data.ptr), dtype=np.uint8))
    threads = 32 * NATIVE_GROUPS
    data = cp.zeros(NATIVE_BLOCKS * threads, dtype=cp.float32)
    kernel((NATIVE_BLOCKS,), (threads,), (data, np.uint32(NATIVE_ITERS), arg))
    cp.cuda.Device().synchronize()
    trace = ikp.decode(tensor if tensor is not None else buf.get())
    host = tensor.cpu().numpy() if tensor is not None else buf.get()
    with open(os.path.join(work, "native.ikp"), "wb") as f:
        f.write(host.view("<u8").tobytes())
    spans, lanes, summary = trace.spans(), trace.lanes(), trace.summary()
    problems = []
    if trace.format != "ikp" or tuple(trace.grid) != (NATIVE_BLOCKS, 1, 1):
        problems.append(f"decoded as {trace.format}, grid {trace.grid}")
    if list(trace.region_names) != NATIVE_REGIONS:
        problems.append(f"region names {trace.region_names}")
    problems += native_problems(spans, lanes, summary, NATIVE_BLOCKS, NATIVE_GROUPS, NATIVE_ITERS)
    counts = {n: int((spans["name"] == n).sum()) for n in NATIVE_REGIONS}
    durs = spans["dur_ns"]
    figures.update(
        lanes=len(lanes["block"]),
        spans=len(durs),
        spans_by_region=counts,
        compute_median_ns=float(np.median(durs[spans["name"] == "compute"])) if len(durs) else None,
        seconds=round(time.monotonic() - t0, 2),
    )
    return verdict(
        name,
        problems,
        f"an NVRTC-compiled kernel (CuPy) recorded {len(durs)} spans into a buffer of ikp.Layout "
        f"({figures['buffer']}); ikp.decode found every lane, region, payload and order as "
        f"recorded ({NATIVE_BLOCKS} blocks x {NATIVE_GROUPS} lanes x {NATIVE_ITERS + 2} "
        "spans), nothing dropped",
        figures=figures,
    )


def stream_problems(
    spans: Dict[str, Any], lanes: Dict[str, Any], lanes_expected: int, pairs: int
) -> List[str]:
    """What is wrong with a wait-mode stream capture of the stream kernel: every lane, every
    pair, in order, nothing dropped."""
    problems = []
    if len(lanes["block"]) != lanes_expected:
        problems.append(f"{len(lanes['block'])} lanes, expected {lanes_expected}")
    dropped = [int(d) for d in lanes["dropped"]]
    if any(dropped):
        problems.append(f"records dropped in wait mode: {dropped}")
    for b, g in zip(lanes["block"], lanes["group"]):
        mine = [int(p) for p, sb, sg in zip(spans["payload"], spans["block"], spans["group"])
                if sb == b and sg == g]
        if mine != list(range(pairs)):
            problems.append(f"lane (block {b}, group {g}): {len(mine)} spans, not pairs 0..{pairs} in order")
            break
    return problems


def stream_check(ikp: Any, include: str, work: str) -> Dict[str, Any]:
    name = "python/stream"
    cp, device, cannot = cupy_for(name, ikp)
    if cannot is not None:
        return cannot
    import cupyx
    import numpy as np

    t0 = time.monotonic()
    figures: Dict[str, Any] = {"device": device}
    layout = ikp.Layout(
        grid=(STREAM_BLOCKS, 1, 1),
        groups_per_block=STREAM_GROUPS,
        records_per_lane=STREAM_RING,
        regions=["pair"],
        overflow="stream_wait",
    )
    module = cp.RawModule(code=STREAM_SRC, options=(f"--include-path={include}",))
    kernel = module.get_function("ikp_py_stream")
    # Pinned host memory: with unified addressing its host address is the kernel's too.
    buf = cupyx.zeros_pinned((layout.buffer_words,), dtype=np.uint64)
    buf[:] = layout.buffer()
    arg = cp.asarray(np.frombuffer(layout.kernel_arg(buf.ctypes.data), dtype=np.uint8))
    threads = 32 * STREAM_GROUPS
    data = cp.zeros(STREAM_BLOCKS * threads, dtype=cp.float32)
    path = os.path.join(work, "stream.ikps")
    t1 = time.monotonic()
    with ikp.StreamDrain(layout, buf, path) as drain:
        kernel((STREAM_BLOCKS,), (threads,), (data, np.uint32(STREAM_PAIRS), arg))
        cp.cuda.Device().synchronize()
    figures["kernel_and_drain_s"] = round(time.monotonic() - t1, 3)
    trace = ikp.load(path)
    spans, lanes = trace.spans(), trace.lanes()
    problems = stream_problems(spans, lanes, STREAM_BLOCKS * STREAM_GROUPS, STREAM_PAIRS)
    figures.update(
        lanes=len(lanes["block"]),
        spans=len(spans["name"]),
        drain=drain.stats,
        stall_marks=int((trace.instants()["name"] == "[ikp] waited for room (us)").sum()),
        seconds=round(time.monotonic() - t0, 2),
    )
    return verdict(
        name,
        problems,
        f"a CuPy kernel's {STREAM_BLOCKS * STREAM_GROUPS} stream lanes recorded "
        f"{2 * STREAM_PAIRS} records each through rings of {STREAM_RING} in pinned host memory; "
        "ikp.StreamDrain wrote them all to the stream file, in order, nothing dropped",
        figures=figures,
    )


# Triton's modules, imported by record_proton: module globals, where Triton's JIT looks up
# the names a kernel uses.
triton: Any = None
tl: Any = None
pl: Any = None
proton: Any = None


def proton_kernel() -> Any:
    """The Triton kernel, defined once its modules are this module's globals (Triton's JIT
    looks names up there)."""

    @triton.jit
    def ikp_proton_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        pl.enter_scope("ikp_outer")
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        pl.enter_scope("ikp_load")
        x = tl.load(x_ptr + offs, mask=mask)
        pl.exit_scope("ikp_load")
        y = x * 2.0 + 1.0
        pl.enter_scope("ikp_store")
        tl.store(y_ptr + offs, y, mask=mask)
        pl.exit_scope("ikp_store")
        pl.exit_scope("ikp_outer")

    return ikp_proton_kernel


def record_proton(stem: str) -> Tuple[Optional[str], str, Dict[str, Any]]:
    """Runs the Triton kernel under Proton's instrumentation backend; (trace path or None,
    why not, figures). A None path with a reason is a skip: Proton could not record."""
    global triton, tl, pl, proton
    figures: Dict[str, Any] = {}
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return None, f"torch is not importable here ({last_line(e)})", {"gpu_skip": True}
    if not torch.cuda.is_available():
        return None, "no CUDA device visible to torch", {"gpu_skip": True}
    try:
        import triton
        import triton.language as tl
        import triton.profiler as proton
        import triton.profiler.language as pl
    except Exception as e:  # noqa: BLE001
        return None, f"Triton's Proton is not importable ({last_line(e)})", figures
    figures.update(torch=torch.__version__, triton=triton.__version__)
    started = False
    try:
        # Proton instruments Gluon kernels only unless the Triton semantic is enabled
        # (triton.profiler.language, Triton 3.5 and later).
        if hasattr(pl, "enable_semantic"):
            pl.enable_semantic("triton")
        kernel = proton_kernel()
        n = PROTON_PROGRAMS * PROTON_BLOCK
        x = torch.arange(n, device="cuda", dtype=torch.float32)
        y = torch.empty_like(x)
        proton.start(stem, backend="instrumentation", data="trace")
        started = True
        kernel[(PROTON_PROGRAMS,)](x, y, n, BLOCK=PROTON_BLOCK, num_warps=PROTON_WARPS)
        torch.cuda.synchronize()
        proton.finalize()
        started = False
        if not torch.equal(y, x * 2.0 + 1.0):
            figures["kernel_output"] = "wrong"
    except Exception as e:  # noqa: BLE001
        if started:
            try:
                proton.finalize()
            except Exception:  # noqa: BLE001
                pass
        log(traceback.format_exc())
        return None, f"Proton's instrumentation mode failed here ({last_line(e)})", figures
    path = stem + ".chrome_trace"
    if not os.path.isfile(path):
        d = os.path.dirname(stem) or "."
        near = sorted(f for f in os.listdir(d) if f.startswith(os.path.basename(stem)))
        return None, f"Proton wrote no {os.path.basename(path)} (found {near})", figures
    return path, "", figures


def proton_check(ikp: Any, cli: str, work: str) -> Dict[str, Any]:
    name = "python/proton"
    t0 = time.monotonic()
    path, why, figures = record_proton(os.path.join(work, "proton_trace"))
    if path is None:
        gpu = bool(figures.pop("gpu_skip", False))
        return check(name, "skip", why, gpu=gpu, figures=figures)
    if ikp is None:
        return check(name, "fail", NO_IKP, figures=figures)
    figures["record_s"] = round(time.monotonic() - t0, 2)
    if figures.get("kernel_output") == "wrong":
        return check(
            name,
            "skip",
            "the Triton kernel computed wrong values under Proton's " "instrumentation",
            gpu=False,
            figures=figures,
        )
    with open(path) as f:
        doc = json.load(f)
    if not any(e.get("ph") == "X" for e in doc.get("traceEvents", []) if isinstance(e, dict)):
        return check(
            name,
            "skip",
            f"Proton wrote {os.path.basename(path)} with no scope event: its "
            "instrumentation recorded nothing for the kernel",
            gpu=False,
            figures=figures,
        )
    summary_path = os.path.join(work, "proton_summary.json")
    cmd = [cli, "decode", path, "--format", "proton", "--summary", summary_path, "-q"]
    log("$ " + " ".join(cmd))
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    sys.stderr.write(r.stdout)
    if r.returncode != 0:
        tail = " / ".join(r.stdout.strip().splitlines()[-3:])
        return check(
            name,
            "fail",
            f"`ikp decode --format proton` exited {r.returncode}: {tail}",
            figures=figures,
        )
    with open(summary_path) as f:
        summary = json.load(f)
    cli_counts = {str(reg["name"]): int(reg["count"]) for reg in summary.get("regions", [])}
    try:
        events = proton_file_events(doc)
    except (KeyError, ValueError, IndexError) as e:
        first = json.dumps(doc.get("traceEvents", [None])[0])[:300]
        return check(
            name,
            "fail",
            f"ikp decoded the trace, but this script cannot read its events "
            f"({last_line(e)}); the first: {first}",
            figures=figures,
        )
    trace = ikp.load(path, format="proton")
    spans = trace.spans()
    problems = proton_problems(
        events, spans, cli_counts, PROTON_SCOPES, PROTON_PROGRAMS, PROTON_WARPS
    )
    if trace.format != "proton":
        problems.append(f"ikp.load decoded it as {trace.format}")
    figures.update(
        events=len(events),
        spans=len(spans["name"]),
        counts_by_scope=cli_counts,
        assumed_clock=summary.get("assumed_clock"),
        seconds=round(time.monotonic() - t0, 2),
    )
    return verdict(
        name,
        problems,
        f"Proton recorded {len(events)} scopes ({PROTON_PROGRAMS} programs x {PROTON_WARPS} "
        f"warps x {len(PROTON_SCOPES)} scopes); `ikp decode --format proton` and ikp.load read "
        "each as a span of the file's name, CTA, warp and duration",
        figures=figures,
    )


def triton_unavailable(ikp: Any, name: str) -> Optional[Dict[str, Any]]:
    """The check ``name`` skipped (no torch, no CUDA device, no Triton) or failed (no ikp)
    when a Triton check cannot run here; None when it can (the scripts beside this one
    then import)."""
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return check(name, "skip", f"torch is not importable here ({last_line(e)})")
    if not torch.cuda.is_available():
        return check(name, "skip", "no CUDA device visible to torch")
    try:
        import triton  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return check(name, "skip", f"Triton is not importable here ({last_line(e)})")
    if ikp is None:
        return check(name, "fail", NO_IKP)
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    return None


def triton_probes_check(ikp: Any, deadline: Optional[float]) -> Dict[str, Any]:
    name = "python/triton-probes"
    unavailable = triton_unavailable(ikp, name)
    if unavailable is not None:
        return unavailable
    import triton_probes

    t0 = time.monotonic()
    problems, figures = triton_probes.run_check(ikp, HERE, deadline=deadline)
    figures["seconds"] = round(time.monotonic() - t0, 2)
    return verdict(
        name,
        problems,
        "every fixture kernel instrumented by ikp.triton computed bit for bit what the plain "
        "kernel did, with a lane per warp and each loop's known trip counts, ikp's extent within "
        "each launch's GPU duration, and the slowdowns at entry,loops within the targets "
        f"(median <= {triton_probes.MEDIAN_LIMIT}x, each <= {triton_probes.ANY_LIMIT}x at >= 100 us)",
        figures=figures,
    )


def triton_compile_check(ikp: Any, name: str, which: str, passed: str) -> Dict[str, Any]:
    """``python/torch-compile`` (which="torch_compile") or ``python/triton-autotune``
    (which="autotune"): triton_compile.py's runs."""
    unavailable = triton_unavailable(ikp, name)
    if unavailable is not None:
        return unavailable
    import triton_compile

    t0 = time.monotonic()
    problems, figures = getattr(triton_compile, f"run_{which}")(ikp)
    figures["seconds"] = round(time.monotonic() - t0, 2)
    return verdict(name, problems, passed, figures=figures)


# The checks after python/wheel, in the order they run.
GPU_CHECKS = [
    "python/native",
    "python/stream",
    "python/proton",
    "python/triton-probes",
    "python/torch-compile",
    "python/triton-autotune",
]


def selected(name: str, only: Optional[Sequence[str]]) -> bool:
    """Whether ``--only``'s prefixes name the check ``name`` (all do without ``--only``)."""
    return only is None or any(name.startswith(p) for p in only)


def run(args: argparse.Namespace, emit: Callable[[Dict[str, Any]], None]) -> None:
    """Runs the checks, handing each to ``emit`` as soon as it is decided."""
    only = [p.strip() for p in args.only.split(",") if p.strip()] if args.only else None
    names = [n for n in GPU_CHECKS if selected(n, only)]
    if args.no_gpu is not None:
        figures = {"wheel": os.path.basename(args.wheel)}
        emit(check("python/wheel", "skip", args.no_gpu, gpu=False, figures=figures))
        for n in names:
            emit(check(n, "skip", args.no_gpu))
        return
    deadline = None if args.seconds is None else time.monotonic() + args.seconds
    os.makedirs(args.work, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ikp-wheel-") as tmp:
        try:
            c, ikp = wheel_check(args.wheel, tmp)
        except Exception as e:  # noqa: BLE001
            log(traceback.format_exc())
            c, ikp = check("python/wheel", "fail", last_line(e), gpu=False), None
        emit(c)
        steps: Dict[str, Callable[[], Dict[str, Any]]] = {
            "python/native": lambda: native_check(ikp, args.include, args.work),
            "python/stream": lambda: stream_check(ikp, args.include, args.work),
            "python/proton": lambda: proton_check(ikp, args.ikp, args.work),
            "python/triton-probes": lambda: triton_probes_check(ikp, deadline),
            "python/torch-compile": lambda: triton_compile_check(
                ikp,
                "python/torch-compile",
                "torch_compile",
                "a torch.compile'd model warmed up before the context, run inside "
                "ikp.triton.profile() as it is: every Inductor Triton kernel traced, outputs "
                "equal to the plain compiled model's, plain again after",
            ),
            "python/triton-autotune": lambda: triton_compile_check(
                ikp,
                "python/triton-autotune",
                "autotune",
                "each variant of a kernel autotuned over num_warps 2, 4, 8 traced on its own, "
                "named by its configuration, a lane per warp of its own; a kernel compiled "
                "before the context compiled again and traced",
            ),
        }
        for name in names:
            if deadline is not None and time.monotonic() >= deadline:
                emit(check(name, "skip", f"the Python step's {args.seconds:.0f} s were spent before this check"))
                continue
            try:
                emit(steps[name]())
            except Exception as e:  # noqa: BLE001
                log(traceback.format_exc())
                emit(check(name, "fail", last_line(e)))


# ---------------------------------------------------------------------------------------
# --self-check: the verifiers on synthetic runs, correct and damaged.
# ---------------------------------------------------------------------------------------


def _native_run(
    blocks: int, groups: int, iters: int
) -> Tuple[Dict[str, List[Any]], Dict[str, List[Any]]]:
    spans: Dict[str, List[Any]] = {
        k: [] for k in ("block", "group", "name", "payload", "begin_ns", "end_ns")
    }
    lanes: Dict[str, List[Any]] = {k: [] for k in ("block", "group", "warp", "dropped")}
    for b in range(blocks):
        for g in range(groups):
            for k, v in zip(lanes, (b, g, g, 0)):
                lanes[k].append(v)
            seq = [("load", b)] + [("compute", i) for i in range(iters)] + [("store", g)]
            for i, (n, p) in enumerate(seq):
                for k, v in zip(spans, (b, g, n, p, 100 * i, 100 * i + 50)):
                    spans[k].append(v)
    return spans, lanes


def _proton_doc(programs: int, warps: int, scopes: Sequence[str]) -> Dict[str, Any]:
    events = []
    for c in range(programs):
        for w in range(warps):
            for i, s in enumerate(scopes):
                start, dur = (0, 900) if i == 0 else (100 + 300 * (i - 1), 200)
                events.append(
                    {
                        "args": {"Frequency (MHz)": 1000.0, "Init Time (ns)": 1_000_000 + 10 * c},
                        "cat": "ikp_proton_kernel",
                        "dur": dur / 1000,
                        "name": s,
                        "ph": "X",
                        "pid": f"ikp_proton_kernel Core{c % 3} CTA{c}",
                        "tid": f"warp {w} (line {min(i, 1)})",
                        "ts": (10 * c + start) / 1000,
                    }
                )
    return {"displayTimeUnit": "ns", "traceEvents": events}


def self_check() -> int:
    failures: List[str] = []

    def expect(what: str, problems: List[str], ok: bool) -> None:
        if bool(problems) == ok:
            failures.append(
                f"{what}: {'unexpected problems ' + str(problems) if ok else 'not detected'}"
            )

    clean = {"unmatched_begin": 0, "dropped": 0}
    b, g, it = 3, 2, 4
    spans, lanes = _native_run(b, g, it)
    expect("native: a correct run", native_problems(spans, lanes, clean, b, g, it), True)
    for what, mutate in [
        ("a span lost", lambda s, l, m: [s[k].pop() for k in s]),
        ("a wrong payload", lambda s, l, m: s["payload"].__setitem__(3, 99)),
        ("two regions overlapping", lambda s, l, m: s["end_ns"].__setitem__(1, 10_000)),
        ("a dropped record", lambda s, l, m: l["dropped"].__setitem__(0, 1)),
        ("a lane missing", lambda s, l, m: [l[k].pop() for k in l]),
        ("the wrong warp", lambda s, l, m: l["warp"].__setitem__(1, 5)),
        ("an unmatched begin", lambda s, l, m: m.__setitem__("unmatched_begin", 1)),
        ("a lane set aside", lambda s, l, m: m.__setitem__("set_aside_lanes", [{"lane": 0}])),
    ]:
        s, l = _native_run(b, g, it)
        m = dict(clean)
        mutate(s, l, m)
        expect(f"native: {what}", native_problems(s, l, m, b, g, it), False)

    def stream_run(lanes_n: int, pairs: int) -> Tuple[Dict[str, List[Any]], Dict[str, List[Any]]]:
        sp: Dict[str, List[Any]] = {"payload": [], "block": [], "group": []}
        ln: Dict[str, List[Any]] = {"block": [], "group": [], "dropped": []}
        for n in range(lanes_n):
            for k, v in zip(ln, (n // 2, n % 2, 0)):
                ln[k].append(v)
            for p in range(pairs):
                for k, v in zip(sp, (p, n // 2, n % 2)):
                    sp[k].append(v)
        return sp, ln

    sp, ln = stream_run(4, 5)
    expect("stream: a correct run", stream_problems(sp, ln, 4, 5), True)
    for what, mutate in [
        ("a span lost", lambda s, l: [s[k].pop() for k in s]),
        ("two spans swapped", lambda s, l: s["payload"].__setitem__(slice(0, 2), [1, 0])),
        ("a dropped record", lambda s, l: l["dropped"].__setitem__(2, 1)),
        ("a lane missing", lambda s, l: [l[k].pop() for k in l]),
    ]:
        sp, ln = stream_run(4, 5)
        mutate(sp, ln)
        expect(f"stream: {what}", stream_problems(sp, ln, 4, 5), False)

    p, w = 2, 2
    doc = _proton_doc(p, w, PROTON_SCOPES)
    ev = proton_file_events(doc)
    as_spans = {
        "name": [e[0] for e in ev],
        "block": [e[1] for e in ev],
        "warp": [e[2] for e in ev],
        "begin_ns": [0] * len(ev),
        "end_ns": [e[3] for e in ev],
    }
    counts = {s: p * w for s in PROTON_SCOPES}
    expect(
        "proton: a correct trace", proton_problems(ev, as_spans, counts, PROTON_SCOPES, p, w), True
    )
    expect(
        "proton: a scope short in the file",
        proton_problems(ev[1:], as_spans, counts, PROTON_SCOPES, p, w),
        False,
    )
    wrong = dict(as_spans, end_ns=[d + 1 for d in as_spans["end_ns"]])
    expect(
        "proton: a wrong duration", proton_problems(ev, wrong, counts, PROTON_SCOPES, p, w), False
    )
    expect(
        "proton: wrong CLI counts",
        proton_problems(ev, as_spans, dict(counts, ikp_load=1), PROTON_SCOPES, p, w),
        False,
    )
    try:
        import ikp  # noqa: F401
    except ImportError as e:
        log(
            f"self-check: ikp is not importable ({e}): "
            "the decode of a synthetic Proton trace is not run"
        )
    else:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "synthetic.chrome_trace")
            with open(path, "w") as f:
                json.dump(doc, f)
            spans = ikp.load(path, format="proton").spans()
            expect(
                "proton: ikp.load of a synthetic trace",
                proton_problems(ev, spans, counts, PROTON_SCOPES, p, w),
                True,
            )
            doc["traceEvents"][0]["dur"] = 0.5
            with open(path, "w") as f:
                json.dump(doc, f)
            spans = ikp.load(path, format="proton").spans()
            expect(
                "proton: ikp.load of a trace changed after the file was read",
                proton_problems(ev, spans, counts, PROTON_SCOPES, p, w),
                False,
            )
    sys.path.insert(0, HERE)
    import triton_probes

    failures += [f"triton-probes: {f}" for f in triton_probes.self_check()]
    import triton_compile

    failures += [f"triton-compile: {f}" for f in triton_compile.self_check()]
    for f in failures:
        log(f"self-check FAILED: {f}")
    log(f"self-check: {'FAILED' if failures else 'passed'}")
    return 1 if failures else 0


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel", help="the ikp wheel to install")
    ap.add_argument("--ikp", help="the bundle's ikp CLI")
    ap.add_argument("--include", help="directory holding ikp.cuh")
    ap.add_argument("--work", help="directory for the traces and buffers written")
    ap.add_argument(
        "--no-gpu", metavar="REASON", help="skip every check for REASON (the runner's skip mode)"
    )
    ap.add_argument(
        "--only",
        metavar="PREFIXES",
        help="run only the checks these comma-separated name prefixes name (and python/wheel)",
    )
    ap.add_argument(
        "--seconds", type=float, help="the script's time: later checks are skipped with that reason"
    )
    ap.add_argument(
        "--self-check", action="store_true", help="test the verifiers on synthetic data, then exit"
    )
    args = ap.parse_args(argv)
    if args.self_check:
        return self_check()
    for need in ("wheel", "ikp", "include", "work"):
        if getattr(args, need) is None:
            ap.error(f"--{need.replace('_', '-')} is required")
    # Standard output carries the checks alone: whatever else writes to it (this script,
    # Triton, Proton, native libraries) goes to standard error.
    out = os.dup(1)
    os.dup2(2, 1)

    def emit(c: Dict[str, Any]) -> None:
        sys.stdout.flush()
        line = (json.dumps(c) + "\n").encode()
        while line:  # one line per check, whole, the moment it is decided
            line = line[os.write(out, line) :]

    try:
        run(args, emit)
    except BaseException as e:  # noqa: BLE001 (reported whatever happened)
        log(traceback.format_exc())
        emit(check("python/clients", "fail", f"the script stopped: {last_line(e)}", gpu=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
