"""The GPU bundle's ``python/triton-probes`` check (run by gpu_clients.py): Triton kernels
that nobody edited, instrumented by ``ikp.triton``, and what the probes cost them.

The kernels and their launches are scripts/triton-ptx-fixtures.py's (the script that makes
the PTX fixtures of the test suite; the bundle carries it beside this file): the tutorials'
kernels and the loops of issue #34 (triangular rows, nested rows / columns, a while loop
whose trip count comes from the data). Each runs at the fixtures' sizes and at sizes of
100 us or more (``fixtures(large=True)``), plain, then inside ``ikp.triton.profile()`` at
``entry,loops``, on the same inputs. The check requires:

- every output buffer bit for bit the same (the probes change no result);
- the first recorded launch: one lane per warp of the grid, each loop recorded with the
  trip counts the fixture knows (``expected_trips``: per program, per loop entry), nested
  loops at depth 1, nothing dropped;
- the kernel's occupancy: one SM holds as many blocks of the instrumented kernel as of the
  plain one (the driver's ``cuOccupancyMaxActiveBlocksPerMultiprocessor`` on the compiled
  kernels, at their block size and dynamic shared memory; Triton's ``n_regs`` beside it),
  and the instrumented kernel spills no more than the plain one;
- every timed launch: ikp's kernel extent (first lane start to last lane end) no longer
  than the launch's GPU duration;
- the cost, timed by GPU duration (``timing``: CUPTI kernel records through
  torch.profiler, else a CUDA graph replaying the launches), over the large sizes: the
  median slowdown at most ``MEDIAN_LIMIT``, each at most ``ANY_LIMIT``. The small sizes'
  slowdowns are reported (a fixed cost per warp weighs more there).

Beside it, Proton: the issue's loops scoped with ``pl.enter_scope`` / ``pl.exit_scope``
under ``proton.start(backend="instrumentation")``, kernel time and wall time per launch of
plain, ikp and Proton, reported (``proton``), not judged.
"""

import importlib.util
import os
import statistics
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

FIXTURE_SCRIPT = "triton-ptx-fixtures.py"
# Launches timed per kernel and variant (all recorded: a launch past the recorded epochs
# would run its probes off, and cheaper).
TIMED = 20
MEDIAN_LIMIT = 1.03
ANY_LIMIT = 1.10
# ikp's extent may exceed the GPU duration by the timer's resolution at most.
EXTENT_SLACK_NS = 100


def records_per_warp(loops: Sequence[Dict[str, Any]]) -> int:
    """Records a warp writes per launch: a begin, an end and a trip-count sample per loop
    entry (a nested loop's per trip of the loop around it)."""
    return max(1, sum(3 * (loops[0]["trip_count"] if lp.get("per_outer_trip") else 1) for lp in loops))


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
    expected: Sequence[Sequence[Sequence[int]]],
    lanes: Dict[str, Any],
    spans: Dict[str, Any],
    counters: Dict[str, Any],
) -> List[str]:
    """What is wrong with a kernel's first recorded launch (columns as ``ikp.Trace`` gives
    them). ``expected[k][b]``: the trip-count samples of loop ``k`` each warp of block ``b``
    records."""
    out: List[str] = []
    n_lanes = len(lanes["id"])
    if n_lanes != blocks * warps:
        out.append(f"{name}: {n_lanes} lanes, expected {blocks} blocks x {warps} warps")
    dropped = int(sum(lanes["dropped"]))
    if dropped:
        out.append(f"{name}: {dropped} records dropped")
    lane_blocks = [int(b) for b in lanes["block"]]
    lane_warps = [int(w) for w in lanes["warp"]]
    regions = [int(r) for r in spans["region"]]

    def want(k: int, b: int) -> List[int]:
        return list(expected[k][b]) if b < len(expected[k]) else []

    for k, loop in enumerate(loops):
        want_spans = sum(len(want(k, b)) for b in lane_blocks)
        if regions.count(k) != want_spans:
            out.append(f"{name}: loop {k} ({loop['loop']}) has {regions.count(k)} spans, expected {want_spans}")
        depth = 1 if loop.get("per_outer_trip") else 0
        deep = [int(d) for r, d in zip(regions, spans["depth"]) if r == k and int(d) != depth]
        if deep:
            out.append(f"{name}: loop {k} spans at depth {sorted(set(deep))}, expected {depth}")
        got: Dict[Tuple[int, int], List[int]] = {}
        for c, b, w, v in zip(counters["counter"], counters["block"], counters["warp"], counters["value"]):
            if int(c) == k:
                got.setdefault((int(b), int(w)), []).append(int(v))
        bad = [(b, w) for b, w in zip(lane_blocks, lane_warps) if sorted(got.get((b, w), [])) != sorted(want(k, b))]
        if bad:
            b, w = bad[0]
            out.append(
                f"{name}: loop {k} trip counts wrong on {len(bad)} warps, e.g. block {b} warp {w}: "
                f"{sorted(got.get((b, w), []))[:8]}, expected {sorted(want(k, b))[:8]}"
            )
    return out


def extent_problems(name: str, extents_ns: Sequence[int], durations_us: Sequence[float]) -> List[str]:
    """ikp's extent of each timed launch against its GPU duration, launch by launch."""
    if len(extents_ns) != len(durations_us):
        return [f"{name}: {len(extents_ns)} launches recorded, {len(durations_us)} timed"]
    over = [(i, e, d) for i, (e, d) in enumerate(zip(extents_ns, durations_us)) if e > d * 1e3 + EXTENT_SLACK_NS]
    return [f"{name}: launch {i}: ikp's extent {e / 1e3:.2f} us > the GPU duration {d:.2f} us" for i, e, d in over[:3]]


def occupancy_problems(name: str, plain: Dict[str, Any], probed: Dict[str, Any]) -> List[str]:
    """Blocks per SM and spills of the instrumented kernel against the plain one's."""
    out = []
    if plain.get("blocks_per_sm") is None or probed.get("blocks_per_sm") is None:
        return [f"{name}: occupancy not measured: {probed.get('error') or plain.get('error')}"]
    if probed["blocks_per_sm"] < plain["blocks_per_sm"]:
        out.append(
            f"{name}: {probed['blocks_per_sm']} blocks per SM instrumented, {plain['blocks_per_sm']} plain "
            f"({probed.get('registers')} registers, {plain.get('registers')} plain)"
        )
    if (probed.get("spills") or 0) > (plain.get("spills") or 0):
        out.append(f"{name}: spills {probed.get('spills')} instrumented, {plain.get('spills')} plain")
    return out


def occupancy(kernel: Any, threads: int) -> Dict[str, Any]:
    """What one compiled Triton kernel (the object a launch returns) asks of an SM, and the
    blocks of ``threads`` threads one SM holds, as the driver says."""
    import ctypes

    shared = int(getattr(kernel.metadata, "shared", 0) or 0)
    out: Dict[str, Any] = dict(
        registers=getattr(kernel, "n_regs", None), spills=getattr(kernel, "n_spills", None), shared=shared
    )
    try:
        blocks = ctypes.c_int(0)
        rc = ctypes.CDLL("libcuda.so.1").cuOccupancyMaxActiveBlocksPerMultiprocessor(
            ctypes.byref(blocks), ctypes.c_void_p(int(kernel.function)), ctypes.c_int(threads), ctypes.c_size_t(shared)
        )
        if rc != 0:
            raise RuntimeError(f"cuOccupancyMaxActiveBlocksPerMultiprocessor returned {rc}")
        out["blocks_per_sm"] = blocks.value
    except Exception as e:  # noqa: BLE001
        out["error"] = f"{type(e).__name__}: {e}"
    return out


def slowdown_problems(slowdowns: Dict[str, float]) -> List[str]:
    """The cost targets over the large sizes: the median and each kernel."""
    if not slowdowns:
        return ["no kernel timed at the large sizes"]
    out = []
    median = statistics.median(slowdowns.values())
    if median > MEDIAN_LIMIT:
        out.append(f"median slowdown at entry,loops {median:.3f}x > {MEDIAN_LIMIT}x")
    for name, s in sorted(slowdowns.items()):
        if s > ANY_LIMIT:
            out.append(f"{name}: slowdown at entry,loops {s:.3f}x > {ANY_LIMIT}x")
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


def gpu_durations(torch: Any, launch: Callable[[], Any], kernel: str, n: int) -> Tuple[List[float], str]:
    """GPU duration (us) of each of `n` back-to-back launches, and how it was taken: CUPTI's
    kernel records through torch.profiler (``cupti``); where those are missing, a CUDA graph
    of the `n` launches replayed (``cuda-graph``: its time over `n`, the same for each)."""
    try:
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(n):
                launch()
            torch.cuda.synchronize()
        events = [e for e in prof.events() if e.device_type == DeviceType.CUDA and e.name.startswith(kernel)]
        events.sort(key=lambda e: e.time_range.start)
        if len(events) == n:
            return [e.time_range.elapsed_us() for e in events], "cupti"
    except Exception:  # noqa: BLE001
        pass
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(n):
                launch()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return [start.elapsed_time(end) * 1e3 / n] * n, "cuda-graph"


def wall_per_launch(torch: Any, launch: Callable[[], Any], n: int) -> float:
    """Host wall time per launch (us) of `n` back-to-back launches and the wait for them."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        launch()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e6 / n


def run_kernel(torch: Any, ikp_triton: Any, fx: Any, fixture: Tuple[Any, ...]) -> Tuple[List[str], Dict[str, Any]]:
    """One fixture at one size: outputs, trip counts, extents, timings."""
    name, fn, fargs, opts, grid, shapes, loops = fixture
    blocks = grid[0] * grid[1] * grid[2]
    problems: List[str] = []

    def launcher(args: List[Any]) -> Callable[[], Any]:
        return lambda: fn[tuple(grid)](*args, **opts)

    threads = opts["num_warps"] * 32
    plain_args = _inputs(torch, fargs, shapes, seed=7)
    plain_occupancy = occupancy(launcher(plain_args)(), threads)
    torch.cuda.synchronize()
    plain, timing = gpu_durations(torch, launcher(plain_args), name, TIMED)
    plain_args = _inputs(torch, fargs, shapes, seed=7)
    launcher(plain_args)()
    # Every launch recorded: the first (checked) and the TIMED timed ones.
    with ikp_triton.profile(
        kernels=[fn], records_per_warp=records_per_warp(loops), max_blocks=blocks, launches=TIMED + 1
    ) as prof:
        args = _inputs(torch, fargs, shapes, seed=7)
        probed_occupancy = occupancy(launcher(args)(), threads)
        torch.cuda.synchronize()
        probed, probed_timing = gpu_durations(torch, launcher(args), name, TIMED)
    torch.cuda.synchronize()
    equal = all(
        bool(torch.equal(a.view(torch.uint8), b.view(torch.uint8)))
        for a, b in zip(plain_args, args)
        if hasattr(a, "dtype")
    )
    if not equal:
        problems.append(f"{name}: outputs differ from the plain kernel's")
    problems += occupancy_problems(name, plain_occupancy, probed_occupancy)
    traces = prof.traces.get(name, [])
    if not traces:
        return problems + [f"{name}: no trace recorded"], {}
    t = traces[0]
    expected = fx.expected_trips(name, loops, grid, args)
    problems += trace_problems(name, opts["num_warps"], blocks, loops, expected, t.lanes(), t.spans(), t.counters())
    extents = []
    for tr in traces[1:]:
        la = tr.lanes()
        extents.append(int(max(la["end_ns"]) - min(la["start_ns"])) if len(la["id"]) else 0)
    cupti = timing == probed_timing == "cupti"
    if cupti:
        problems += extent_problems(name, extents, probed)
    p, q = statistics.median(plain), statistics.median(probed)
    return problems, dict(
        grid=list(grid),
        timing=timing if timing == probed_timing else f"{timing} / {probed_timing}",
        plain_us=round(p, 2),
        instrumented_us=round(q, 2),
        slowdown=round(q / p, 4) if p > 0 else None,
        extent_over_duration_max=round(max(e / (d * 1e3) for e, d in zip(extents, probed)), 4)
        if extents and cupti
        else None,
        loops=len(loops),
        occupancy=dict(plain=plain_occupancy, instrumented=probed_occupancy),
        lanes=len(t.lanes()["id"]),
        launches_recorded=len(traces),
    )


# Triton's modules for the Proton-scoped kernels: module globals, where Triton's JIT looks
# up the names a kernel uses.
triton: Any = None
tl: Any = None
pl: Any = None


def proton_kernels() -> Dict[str, Any]:
    """The issue's loops as triton-ptx-fixtures.py writes them, each loop scoped for Proton
    (same arguments, same results)."""

    @triton.jit
    def triangular_rows_kernel(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        pl.enter_scope("rows")
        for start in range(0, row + 1, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + row * stride + offs, mask=offs <= row, other=0.0)
        pl.exit_scope("rows")
        tl.store(out_ptr + row, tl.sum(acc, axis=0))

    @triton.jit
    def nested_loops_kernel(x_ptr, out_ptr, rows_per_program, n_cols, stride, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        pl.enter_scope("rows")
        for r in range(0, rows_per_program):
            row = pid * rows_per_program + r
            pl.enter_scope("cols")
            for start in range(0, n_cols, BLOCK):
                offs = start + tl.arange(0, BLOCK)
                acc += tl.load(x_ptr + row * stride + offs, mask=offs < n_cols, other=0.0)
            pl.exit_scope("cols")
        pl.exit_scope("rows")
        tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)

    @triton.jit
    def while_loop_kernel(x_ptr, out_ptr, window, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        steps = (tl.load(x_ptr + pid) * 4.0).to(tl.int32) + 5
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        i = 0
        pl.enter_scope("while")
        while i < steps:
            acc += tl.load(x_ptr + ((pid * 8 + i) % window) * BLOCK + offs)
            i += 1
        pl.exit_scope("while")
        tl.store(out_ptr + pid * BLOCK + offs, acc)

    return {
        "triangular_rows_kernel": triangular_rows_kernel,
        "nested_loops_kernel": nested_loops_kernel,
        "while_loop_kernel": while_loop_kernel,
    }


def proton_side_by_side(torch: Any, ikp_triton: Any, fixtures: Sequence[Tuple[Any, ...]], work: str) -> Dict[str, Any]:
    """Kernel time (GPU duration, as the check times it) and wall time per launch of each
    of the issue's loops: plain, ikp (entry,loops), Proton's instrumentation mode."""
    global triton, tl, pl
    import triton
    import triton.language as tl
    import triton.profiler as proton
    import triton.profiler.language as pl

    if hasattr(pl, "enable_semantic"):
        pl.enable_semantic("triton")
    scoped = proton_kernels()
    out: Dict[str, Any] = {}
    for name, fn, fargs, opts, grid, shapes, loops in fixtures:
        if name not in scoped:
            continue
        blocks = grid[0] * grid[1] * grid[2]
        args = _inputs(torch, fargs, shapes, seed=7)
        row: Dict[str, Any] = {}

        def timed(kernel: Any, label: str) -> None:
            launch = lambda: kernel[tuple(grid)](*args, **opts)  # noqa: E731
            launch()
            torch.cuda.synchronize()
            try:
                d, how = gpu_durations(torch, launch, name, TIMED)
                row[f"{label}_kernel_us"] = round(statistics.median(d), 2)
                row[f"{label}_timing"] = how
            except Exception as e:  # noqa: BLE001
                row[f"{label}_kernel_us"] = None
                row[f"{label}_timing"] = f"not timed: {_last_line(e)}"
            row[f"{label}_wall_us"] = round(wall_per_launch(torch, launch, TIMED), 2)

        timed(fn, "plain")
        # Every launch recorded: the first, TIMED timed, TIMED for the wall time.
        with ikp_triton.profile(
            kernels=[fn], records_per_warp=records_per_warp(loops), max_blocks=blocks, launches=2 * TIMED + 2
        ):
            timed(fn, "ikp")
        proton.start(os.path.join(work, f"proton_{name}"), backend="instrumentation", data="trace")
        try:
            timed(scoped[name], "proton")
        finally:
            proton.finalize()
        out[name] = row
    return out


def run_kernels(
    sizes: Sequence[Tuple[str, Sequence[Tuple[Any, ...]]]],
    run_one: Callable[[Tuple[Any, ...]], Tuple[List[str], Dict[str, Any]]],
    deadline: Optional[float],
    now: Callable[[], float] = time.monotonic,
) -> Tuple[List[str], Dict[str, Any]]:
    """Runs ``run_one`` on each fixture (its name first) of each ``(size, fixtures)`` in
    order; (problems, figures): ``kernels_<size>`` per kernel, the large sizes' median
    slowdown and the targets' verdict on them. A kernel that raises is a problem of its own
    and the others still run; past ``deadline`` (by ``now``) no kernel starts, and the ones
    left are named (``not_run``) as a problem."""
    problems: List[str] = []
    figures: Dict[str, Any] = {}
    large: Dict[str, float] = {}
    not_run: List[str] = []
    for size, fixtures in sizes:
        per_kernel: Dict[str, Any] = {}
        for fixture in fixtures:
            if deadline is not None and now() >= deadline:
                not_run.append(f"{size} {fixture[0]}")
                continue
            try:
                p, f = run_one(fixture)
            except Exception as e:  # noqa: BLE001
                p, f = [f"{fixture[0]}: {_last_line(e)}"], {"error": _last_line(e)}
            problems += [f"{size}: {x}" for x in p]
            per_kernel[fixture[0]] = f
            if size == "large" and f.get("slowdown") is not None:
                large[fixture[0]] = f["slowdown"]
        figures[f"kernels_{size}"] = per_kernel
    if not_run:
        figures["not_run"] = not_run
        problems.append(f"the time was spent before {len(not_run)} kernels ran: {', '.join(not_run)}")
    if large:
        figures["large_median_slowdown"] = round(statistics.median(large.values()), 4)
    return problems + slowdown_problems(large), figures


def run_check(
    ikp: Any, here: str, work: Optional[str] = None, deadline: Optional[float] = None
) -> Tuple[List[str], Dict[str, Any]]:
    """Runs every fixture kernel plain and instrumented, large then small, then the Proton
    comparison; (problems, figures). The large sizes come first: the targets are judged on
    them. A kernel that raises is a problem of its own and the others still run. Past
    ``deadline`` (``time.monotonic()``) no kernel starts: the ones left are named as not
    run, which fails the check, and what was measured is kept."""
    import torch
    import triton as triton_mod

    import ikp.triton as ikp_triton

    version = ".".join(triton_mod.__version__.split(".")[:2])
    figures: Dict[str, Any] = {"triton": triton_mod.__version__, "torch": torch.__version__}
    if version not in ikp_triton.SUPPORTED_TRITON:
        # Tried all the same, and said: the check is how a new version gets named.
        figures["untested_triton"] = True
        ikp_triton.SUPPORTED_TRITON = ikp_triton.SUPPORTED_TRITON + (version,)
    fx = load_fixtures(here)

    def run_one(fixture: Tuple[Any, ...]) -> Tuple[List[str], Dict[str, Any]]:
        try:
            return run_kernel(torch, ikp_triton, fx, fixture)
        finally:
            torch.cuda.empty_cache()

    sizes = [(size, fx.fixtures(large=size == "large")) for size in ("large", "small")]
    problems, per_size = run_kernels(sizes, run_one, deadline)
    figures.update(per_size)
    if deadline is not None and time.monotonic() >= deadline:
        figures["proton"] = "not run: the time was spent"
        return problems, figures
    try:
        with tempfile.TemporaryDirectory(prefix="ikp-proton-") as tmp:
            figures["proton"] = proton_side_by_side(torch, ikp_triton, fx.fixtures(large=True), work or tmp)
    except Exception as e:  # noqa: BLE001
        figures["proton"] = f"not run: {_last_line(e)}"
    return problems, figures


def _last_line(e: BaseException) -> str:
    """``Type: the message's last line``."""
    return f"{type(e).__name__}: {str(e).splitlines()[-1] if str(e) else ''}"


def self_check() -> List[str]:
    """The verifiers on synthetic correct runs and on damaged ones; returns failures."""
    loops = [dict(loop="l0", trip_count=8), dict(loop="l1", trip_count=3, per_outer_trip=True)]
    blocks, warps = 3, 2
    n = blocks * warps
    expected = [[[8]] * blocks, [[3, 3]] * blocks]
    lanes = {
        "id": list(range(n)),
        "block": [b for b in range(blocks) for _ in range(warps)],
        "warp": [w for _ in range(blocks) for w in range(warps)],
        "dropped": [0] * n,
    }
    spans = {"region": [0, 1, 1] * n, "depth": [0, 1, 1] * n}
    counters = {
        "counter": [0, 1, 1] * n,
        "block": [b for b in lanes["block"] for _ in range(3)],
        "warp": [w for w in lanes["warp"] for _ in range(3)],
        "value": [8, 3, 3] * n,
    }
    fails = []
    wrong = trace_problems("k", warps, blocks, loops, expected, lanes, spans, counters)
    if wrong:
        fails.append(f"a correct run was rejected: {wrong}")
    damaged = [
        ("a wrong trip count", lanes, spans, dict(counters, value=[8, 3, 3] * (n - 1) + [8, 3, 2])),
        ("a lane missing", {k: v[:-1] for k, v in lanes.items()}, spans, counters),
        ("a drop", dict(lanes, dropped=[0] * (n - 1) + [1]), spans, counters),
        ("an inner loop at depth 0", lanes, dict(spans, depth=[0] * (3 * n)), counters),
        ("a span missing", lanes, {k: v[:-1] for k, v in spans.items()}, counters),
    ]
    for what, la, sp, co in damaged:
        if not trace_problems("k", warps, blocks, loops, expected, la, sp, co):
            fails.append(f"{what} was accepted")
    if extent_problems("k", [900, 1000], [1.0, 1.0]):
        fails.append("extents within the durations were rejected")
    if not extent_problems("k", [900, 1200], [1.0, 1.0]):
        fails.append("an extent past its launch's GPU duration was accepted")
    if not extent_problems("k", [900], [1.0, 1.0]):
        fails.append("a launch missing from the trace was accepted")
    if slowdown_problems({"a": 1.01, "b": 1.02, "c": 1.05}):
        fails.append("slowdowns within the targets were rejected")
    if not slowdown_problems({"a": 1.04, "b": 1.05, "c": 1.01}):
        fails.append("a median slowdown over 3 % was accepted")
    if not slowdown_problems({"a": 1.0, "b": 1.0, "c": 1.11}):
        fails.append("a kernel over 10 % was accepted")
    same = dict(registers=32, spills=0, blocks_per_sm=16)
    if occupancy_problems("k", same, dict(same, registers=30)):
        fails.append("an instrumented kernel with the plain kernel's occupancy was rejected")
    if not occupancy_problems("k", same, dict(same, registers=40, blocks_per_sm=12)):
        fails.append("a kernel that lost blocks per SM was accepted")
    if not occupancy_problems("k", same, dict(same, spills=8)):
        fails.append("an instrumented kernel that spills was accepted")
    if not occupancy_problems("k", same, dict(error="no driver")):
        fails.append("an unmeasured occupancy was accepted")
    if records_per_warp(loops) != 3 + 3 * 8 or records_per_warp([]) != 1:
        fails.append("records per warp miscounted")
    fails += _run_kernels_self_check()
    return fails


def _run_kernels_self_check() -> List[str]:
    """run_kernels' order, a kernel that raises, the deadline."""
    fails = []
    ran: List[str] = []
    clock = [0.0]

    def run_one(fixture: Tuple[Any, ...]) -> Tuple[List[str], Dict[str, Any]]:
        ran.append(fixture[0])
        clock[0] += 10.0
        if fixture[0] == "boom":
            raise RuntimeError("CUDA error: an illegal memory access\nwas encountered")
        return [], dict(slowdown=fixture[1])

    sizes = [("large", [("a", 1.01), ("boom", 0), ("c", 1.02)]), ("small", [("a", 1.5)])]
    problems, figures = run_kernels(sizes, run_one, None, now=lambda: clock[0])
    if ran != ["a", "boom", "c", "a"]:
        fails.append(f"run_kernels ran {ran}, expected every kernel in order")
    if len(problems) != 1 or "boom: RuntimeError: was encountered" not in problems[0]:
        fails.append(f"a kernel that raised was reported as {problems}")
    if figures.get("large_median_slowdown") != 1.015 or "error" not in figures["kernels_large"]["boom"]:
        fails.append(f"the figures of a run with a failed kernel: {figures}")
    ran.clear()
    clock[0] = 0.0
    problems, figures = run_kernels(sizes, run_one, 15.0, now=lambda: clock[0])
    if ran != ["a", "boom"] or figures.get("not_run") != ["large c", "small a"]:
        fails.append(f"past the deadline: ran {ran}, not run {figures.get('not_run')}")
    if not any("the time was spent before 2 kernels ran" in p for p in problems):
        fails.append(f"kernels left at the deadline were not a problem: {problems}")
    return fails
