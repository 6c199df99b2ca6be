"""The GPU bundle's ``python/triton-probes`` check (run by gpu_clients.py): Triton kernels
that nobody edited, instrumented by ``ikp.triton``.

The kernels and their launches are scripts/triton-ptx-fixtures.py's (the script that makes
the PTX fixtures of the test suite; the bundle carries it beside this file), run on the GPU
at the fixtures' shapes. Each kernel runs plain, then inside ``ikp.triton.profile()``, on
the same inputs; the check requires:

- every output buffer bit for bit the same (the probes change no result);
- the first recorded launch: one lane per warp of the grid, each loop recorded once per
  warp (a span of depth 0: the fixtures' loops are not nested) with its trip count (the
  loop counter's samples) equal to the fixture's known one, nothing dropped or unpaired;
- the slowdown per kernel (median launch time, CUDA events, instrumented / plain) is
  reported, not judged.
"""

import importlib.util
import os
import statistics
from typing import Any, Dict, List, Sequence, Tuple

FIXTURE_SCRIPT = "triton-ptx-fixtures.py"
REPS = 20


def load_fixtures(here: str) -> Any:
    spec = importlib.util.spec_from_file_location("triton_ptx_fixtures", os.path.join(here, FIXTURE_SCRIPT))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def trace_problems(
    name: str,
    warps: int,
    blocks: int,
    loops: Sequence[Dict[str, Any]],
    lanes: Dict[str, Any],
    spans: Dict[str, Any],
    counters: Dict[str, Any],
) -> List[str]:
    """What is wrong with a kernel's first recorded launch (columns as ``ikp.Trace``
    gives them)."""
    out: List[str] = []
    n_lanes = len(lanes["id"])
    if n_lanes != blocks * warps:
        out.append(f"{name}: {n_lanes} lanes, expected {blocks} blocks x {warps} warps")
    dropped = int(sum(lanes["dropped"]))
    if dropped:
        out.append(f"{name}: {dropped} records dropped")
    regions = [int(r) for r in spans["region"]]
    for k, loop in enumerate(loops):
        count = regions.count(k)
        if count != n_lanes:
            out.append(f"{name}: loop {k} ({loop['loop']}) has {count} spans, expected one per warp ({n_lanes})")
        trips = [int(v) for c, v in zip(counters["counter"], counters["value"]) if int(c) == k]
        want = loop["trip_count"]
        bad = [t for t in trips if t != want]
        if len(trips) != n_lanes or bad:
            out.append(
                f"{name}: loop {k} trip counts {sorted(set(trips))[:5]} over {len(trips)} samples, "
                f"expected {want} once per warp ({n_lanes})"
            )
    if any(int(d) != 0 for d in spans["depth"]):
        out.append(f"{name}: a loop span nested in another (the fixtures' loops are not nested)")
    if len(regions) != n_lanes * len(loops):
        out.append(f"{name}: {len(regions)} spans, expected {n_lanes * len(loops)}")
    return out


def _inputs(torch: Any, fargs: Dict[str, Tuple[str, Any]], shapes: Dict[str, str], seed: int) -> List[Any]:
    """The launch's arguments: a tensor per pointer (sized for the largest of the
    fixture's shapes, random in [-1, 1) from `seed`), the fixture's values otherwise."""
    numel = 1
    for shape in shapes.values():
        dims = shape[shape.index("[") + 1 : shape.index("]")].split(",")
        n = 1
        for d in dims:
            n *= int(d)
        numel = max(numel, n)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    out = []
    for ty, val in fargs.values():
        if ty.startswith("*"):
            dtype = {"*fp32": torch.float32, "*fp16": torch.float16}[ty]
            out.append((torch.rand(numel, generator=gen, device="cuda") * 2 - 1).to(dtype))
        else:
            out.append(val)
    return out


def _timed(torch: Any, launch: Any) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(REPS):
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def run_check(ikp: Any, here: str) -> Tuple[List[str], Dict[str, Any]]:
    """Runs every fixture kernel plain and instrumented; (problems, figures)."""
    import torch
    import triton

    import ikp.triton as ikp_triton

    version = ".".join(triton.__version__.split(".")[:2])
    figures: Dict[str, Any] = {"triton": triton.__version__, "torch": torch.__version__}
    if version not in ikp_triton.SUPPORTED_TRITON:
        # Tried all the same, and said: the check is how a new version gets named.
        figures["untested_triton"] = True
        ikp_triton.SUPPORTED_TRITON = ikp_triton.SUPPORTED_TRITON + (version,)
    fx = load_fixtures(here)
    problems: List[str] = []
    per_kernel: Dict[str, Any] = {}
    for name, fn, fargs, opts, grid, shapes, loops in fx.fixtures():
        blocks = grid[0] * grid[1] * grid[2]

        def launcher(args: List[Any]) -> Any:
            return lambda: fn[tuple(grid)](*args, **opts)

        plain_args = _inputs(torch, fargs, shapes, seed=7)
        launcher(plain_args)()
        torch.cuda.synchronize()
        plain_us = _timed(torch, launcher(plain_args))
        plain_args = _inputs(torch, fargs, shapes, seed=7)
        launcher(plain_args)()
        with ikp_triton.profile(kernels=[fn], records_per_warp=16, max_blocks=blocks, launches=REPS + 2) as prof:
            args = _inputs(torch, fargs, shapes, seed=7)
            launcher(args)()
            torch.cuda.synchronize()
            probed_us = _timed(torch, launcher(args))
        torch.cuda.synchronize()
        equal = all(
            bool(torch.equal(a.view(torch.uint8), b.view(torch.uint8)))
            for a, b in zip(plain_args, args)
            if hasattr(a, "dtype")
        )
        if not equal:
            problems.append(f"{name}: outputs differ from the plain kernel's")
        traces = prof.traces.get(name, [])
        if not traces:
            problems.append(f"{name}: no trace recorded")
            continue
        t = traces[0]
        warps = opts["num_warps"]
        problems += trace_problems(name, warps, blocks, loops, t.lanes(), t.spans(), t.counters())
        per_kernel[name] = dict(
            plain_us=round(plain_us, 2),
            instrumented_us=round(probed_us, 2),
            slowdown=round(probed_us / plain_us, 3) if plain_us > 0 else None,
            loops=len(loops),
            lanes=len(t.lanes()["id"]),
            launches_recorded=len(traces),
        )
    figures["kernels"] = per_kernel
    return problems, figures


def self_check() -> List[str]:
    """The verifier on a synthetic correct run and on damaged ones; returns failures."""
    loops = [dict(loop="l0", trip_count=8), dict(loop="l1", trip_count=8)]
    n = 6
    lanes = {"id": list(range(n)), "dropped": [0] * n}
    spans = {"region": [0, 1] * n, "depth": [0] * (2 * n)}
    counters = {"counter": [0, 1] * n, "value": [8] * (2 * n)}
    fails = []
    if trace_problems("k", 2, 3, loops, lanes, spans, counters):
        fails.append("a correct run was rejected")
    damaged = [
        ("a wrong trip count", lanes, spans, {"counter": counters["counter"], "value": [8] * (2 * n - 1) + [7]}),
        ("a lane missing", {"id": list(range(n - 1)), "dropped": [0] * (n - 1)}, spans, counters),
        ("a drop", {"id": lanes["id"], "dropped": [0] * (n - 1) + [1]}, spans, counters),
        ("a nested span", lanes, {"region": spans["region"], "depth": [0] * (2 * n - 1) + [1]}, counters),
        ("a span missing", lanes, {"region": spans["region"][:-1], "depth": spans["depth"][:-1]}, counters),
    ]
    for what, la, sp, co in damaged:
        if not trace_problems("k", 2, 3, loops, la, sp, co):
            fails.append(f"{what} was accepted")
    return fails
