#!/usr/bin/env python3
"""Where the source-free probes' time goes (issue #34): the large fixture kernels of the
bundle's ``python/triton-probes`` check, each timed by its GPU duration (CUPTI kernel
records through torch.profiler, else a CUDA graph: ``triton_probes.gpu_durations``), plain
and inside ``ikp.triton.profile()``, one thing varied at a time:

  plain                 no probes
  entry                 lane init and finalize only, every warp recording
  loops                 entry,loops, every warp recording (the check's build)
  loops/past-epochs     entry,loops, every launch past the buffer's one epoch: each warp
                        claims its launch (one atomic) and stores nothing
  loops/detached        entry,loops with the probes' symbol zeroed: no warp has a lane;
                        each branches past the init, the finalize and each loop's begin
                        and end (a deferred begin runs predicated off): what a warp
                        without a lane costs
  loops/block-lanes     entry,loops,lanes=block: a lane per program, recorded by its first
                        warp; the other warps branch past the probes
  default               entry,loops as ``ikp.triton.profile()`` opens by default: the first
                        1024 blocks of the first 16 launches record; the others' warps
                        branch past their lane's probes

so that, per kernel, the slowdown splits into what every warp pays (detached), the
entry's launch claim (past-epochs less detached) and the records' slots and stores (loops
less past-epochs) (``breakdown``). The row-wise kernels (softmax, layer norm, the while
loop) cost 1.3x to 1.4x in run 6; these say which part to cut.

Not run by the bundle: run on a GPU machine with torch, Triton and the bundle's wheel:

  python3 probe_experiment.py --wheel-dir DIR [--kernels a,b] [--out FILE.json]

Prints one table; --out writes the figures as JSON. ``--self-check`` checks the
breakdown's arithmetic (no GPU, no torch: the tests run it).
"""

import argparse
import os
import statistics
import sys
import time


from typing import Any, Dict, List, Optional, Tuple

from experiment_tools import write_figures

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = ("plain", "entry", "loops", "loops/past-epochs", "loops/detached", "loops/block-lanes", "default")
TIMED = 20


def breakdown(us: Dict[str, float]) -> Dict[str, Optional[float]]:
    """The slowdown over ``plain`` (percent) of each variant of `us` (median us per
    variant), and its split: ``instructions`` (detached), ``claim`` (past-epochs less
    detached), ``records`` (loops less past-epochs). A variant missing leaves its
    figures None."""
    base = us.get("plain")

    def pct(v: str) -> Optional[float]:
        return None if base is None or v not in us else round(100.0 * (us[v] / base - 1.0), 2)

    out: Dict[str, Optional[float]] = {v: pct(v) for v in VARIANTS if v != "plain"}

    def diff(a: Optional[float], b: Optional[float]) -> Optional[float]:
        return None if a is None or b is None else round(a - b, 2)

    out["instructions"] = out["loops/detached"]
    out["claim"] = diff(out["loops/past-epochs"], out["loops/detached"])
    out["records"] = diff(out["loops"], out["loops/past-epochs"])
    return out


def self_check() -> List[str]:
    problems = []
    b = breakdown({"plain": 100.0, "entry": 110.0, "loops": 130.0, "loops/past-epochs": 115.0, "loops/detached": 112.0})
    want = {"entry": 10.0, "loops": 30.0, "loops/past-epochs": 15.0, "loops/detached": 12.0,
            "loops/block-lanes": None, "default": None, "instructions": 12.0, "claim": 3.0, "records": 15.0}
    if b != want:
        problems.append(f"breakdown: {b}, expected {want}")
    if breakdown({"plain": 100.0, "loops": 120.0})["records"] is not None:
        problems.append("breakdown: a missing variant gave a figure")
    # The figures file the experiments share (experiment_tools.write_figures).
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "f.json")
        write_figures(path, "GPU", timed=3, kernels={"k": {"us": {"plain": 1.0}}})
        got = json.load(open(path))
        if got.get("device") != "GPU" or got.get("kernels") != {"k": {"us": {"plain": 1.0}}} or "utc" not in got:
            problems.append(f"write_figures: {got}")
    return problems


def time_variant(torch: Any, ikp_triton: Any, tp: Any, fixture: Tuple[Any, ...], variant: str) -> float:
    """Median GPU duration (us) of TIMED launches of `fixture` built as `variant`."""
    name, fn, fargs, opts, grid, shapes, loops = fixture
    blocks = grid[0] * grid[1] * grid[2]
    args = tp._inputs(torch, fargs, shapes, seed=7)

    def launch() -> Any:
        return fn[tuple(grid)](*args, **opts)

    if variant == "plain":
        launch()
        torch.cuda.synchronize()
        return statistics.median(tp.gpu_durations(torch, launch, name, TIMED)[0])
    at = {"entry": "entry", "loops/block-lanes": "entry,loops,lanes=block"}.get(variant, "entry,loops")
    # Recording: every timed launch has its epoch (and the first, compiling, too). Past the
    # epochs: one epoch, taken by the first launch.
    launches = 1 if variant == "loops/past-epochs" else TIMED + 1
    sizes = dict(max_blocks=blocks, launches=launches)
    if variant == "default":
        sizes = dict(max_blocks=1024, launches=16)  # profile()'s defaults
    with ikp_triton.profile(at=at, kernels=[fn], records_per_warp=tp.records_per_warp(loops), **sizes) as prof:
        launch()
        torch.cuda.synchronize()
        if variant == "loops/detached":
            # The context's own switch (what it does at exit), on the variants compiled so
            # far: every probe reads a null buffer and is off.
            for v in prof.variants:
                for module in v._modules:
                    prof._device.detach(module, v.manifest)
        durations = tp.gpu_durations(torch, launch, name, TIMED)[0]
    torch.cuda.synchronize()
    return statistics.median(durations)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheel-dir", help="where the ikp wheel is installed")
    ap.add_argument("--kernels", help="comma-separated fixture names (default: all large ones)")
    ap.add_argument("--out", help="JSON file for the figures")
    ap.add_argument("--self-check", action="store_true", help="check the arithmetic only")
    args = ap.parse_args()
    if args.self_check:
        problems = self_check()
        for p in problems:
            print(p)
        print("probe_experiment.py self-check: " + ("FAILED" if problems else "ok"))
        return 1 if problems else 0
    if not args.wheel_dir:
        ap.error("--wheel-dir is required")
    sys.path.insert(0, args.wheel_dir)
    sys.path.insert(0, HERE)
    import torch

    import ikp.triton as ikp_triton
    import triton_probes as tp

    fixtures_dir = HERE if os.path.exists(os.path.join(HERE, tp.FIXTURE_SCRIPT)) else os.path.join(HERE, "../../scripts")
    fx = tp.load_fixtures(fixtures_dir)
    wanted = set(args.kernels.split(",")) if args.kernels else None
    rows: Dict[str, Dict[str, Any]] = {}
    for fixture in fx.fixtures(large=True):
        name = fixture[0]
        if wanted is not None and name not in wanted:
            continue
        us: Dict[str, float] = {}
        for variant in VARIANTS:
            t0 = time.monotonic()
            try:
                us[variant] = round(time_variant(torch, ikp_triton, tp, fixture, variant), 2)
            except Exception as e:  # noqa: BLE001
                print(f"{name} {variant}: {type(e).__name__}: {e}", flush=True)
            finally:
                torch.cuda.empty_cache()
            print(f"{name:24s} {variant:18s} {us.get(variant, float('nan')):10.2f} us ({time.monotonic() - t0:.0f} s)", flush=True)
        rows[name] = dict(us=us, pct=breakdown(us))
        if args.out:
            # After every kernel: a run the session's timeout cuts short keeps what it timed.
            write_figures(args.out, torch.cuda.get_device_name(), timed=TIMED, kernels=rows)
    cols = [v for v in VARIANTS if v != "plain"] + ["instructions", "claim", "records"]
    print("\n| kernel | plain us | " + " | ".join(cols) + " |\n|---|---|" + "---|" * len(cols))
    for name, r in rows.items():
        cells = " | ".join("" if r["pct"][c] is None else f"{r['pct'][c]:+.2f}" for c in cols)
        print(f"| {name} | {r['us'].get('plain', '')} | {cells} |")
    if args.out:
        write_figures(args.out, torch.cuda.get_device_name(), timed=TIMED, kernels=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
