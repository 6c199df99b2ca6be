"""The GPU bundle's ``python/torch-compile`` and ``python/triton-autotune`` checks (run by
gpu_clients.py): ``ikp.triton.profile()`` around what Python users run, as they run it.

- ``python/torch-compile``: a small model (Linear, GELU, LayerNorm, softmax: Inductor
  fuses all but the Linear into Triton kernels) compiled with ``torch.compile`` and run
  once *before* the context, as users warm up; then run inside ``profile()``, left as it
  is. Required: every Triton kernel Inductor launched inside the context traced (no
  ``untraced`` launch, no buffer that failed to decode, every variant that launched has a
  trace with lanes), at least one kernel traced, the outputs equal to the plain compiled
  model's (bit for bit, or within 1e-5 where Inductor picked another reduction config; the
  figures say which), and the model plain again after the context (its output equal).
- ``python/triton-autotune``: a kernel autotuned over num_warps 2, 4 and 8 (autotuning
  runs inside the context), and a plain kernel launched once before the context: every
  autotuned variant traced on its own, named by its configuration, a lane per warp of
  *its* warps per block; the warm kernel compiled again and traced; the outputs right.

The verifiers (``compile_problems``, ``autotune_problems``) are pure functions over plain
data, so ``self_check`` runs them anywhere.
"""

from typing import Any, Dict, List, Sequence, Tuple

try:
    import triton
    import triton.language as tl
except ImportError:  # the verifiers need neither
    triton = None

AUTOTUNE_WARPS = (2, 4, 8)
AUTOTUNE_BLOCKS = 16
BLOCK = 1024
TOLERANCE = 1e-5

if triton is not None:

    @triton.autotune(
        configs=[triton.Config({"BLOCK": BLOCK}, num_warps=w) for w in AUTOTUNE_WARPS], key=["n"]
    )
    @triton.jit
    def ikp_autotuned_scale(x, y, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        for i in range(0, n, BLOCK):
            offs = pid * n + i + tl.arange(0, BLOCK)
            tl.store(y + offs, tl.load(x + offs) * 2.0 + 1.0)

    @triton.jit
    def ikp_warm_copy(x, y, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        for i in range(0, n, BLOCK):
            offs = pid * n + i + tl.arange(0, BLOCK)
            tl.store(y + offs, tl.load(x + offs))


def variant_rows(prof: Any) -> List[Dict[str, Any]]:
    """The context's variants as plain data (what the verifiers read)."""
    rows = []
    for v in prof.variants:
        rows.append(
            dict(
                kernel=v.kernel,
                label=v.label,
                num_warps=v.config.get("num_warps"),
                warps_per_block=v.manifest.get("warps_per_block"),
                launches=v.launches,
                traces=len(v.traces),
                lanes=len(v.traces[0].lanes()["id"]) if v.traces else 0,
                error=v.error,
            )
        )
    return rows


def compile_problems(
    rows: Sequence[Dict[str, Any]], untraced: Dict[str, int], max_diff: float, after_diff: float
) -> List[str]:
    """What is wrong with a torch.compile'd model's run inside profile()."""
    out: List[str] = []
    if untraced:
        out.append(f"launched without a trace: {untraced}")
    # Launches are counted by Triton's launch hook, which a launcher of Inductor's own may
    # not call: a kernel ran if it was counted or recorded.
    ran = [r for r in rows if r["launches"] > 0 or r["traces"] > 0]
    if not ran:
        out.append("no Triton kernel of the compiled model was launched inside the context and traced")
    for r in ran:
        if r["error"]:
            out.append(f"{r['label']}: its buffer did not decode: {r['error']}")
        elif r["traces"] == 0 or r["lanes"] == 0:
            out.append(f"{r['label']}: launched {r['launches']} times, {r['traces']} traces, {r['lanes']} lanes")
    for kernel in sorted({r["kernel"] for r in rows}):
        if not any(r["traces"] > 0 and r["lanes"] > 0 for r in rows if r["kernel"] == kernel):
            out.append(f"{kernel}: compiled inside the context, no variant of it traced")
    if not max_diff <= TOLERANCE:
        out.append(f"outputs differ from the plain compiled model's by {max_diff}")
    if not after_diff <= TOLERANCE:
        out.append(f"after the context the model's output differs from before it by {after_diff}")
    return out


def autotune_problems(
    rows: Sequence[Dict[str, Any]],
    untraced: Dict[str, int],
    recompiled: Sequence[str],
    warps: Sequence[int],
    blocks: int,
    outputs_right: bool,
) -> List[str]:
    """What is wrong with the autotuned and the warm kernel's run inside profile()."""
    out: List[str] = []
    tuned = [r for r in rows if r["kernel"] == "ikp_autotuned_scale"]
    got = sorted(r["num_warps"] for r in tuned)
    if got != sorted(warps):
        out.append(f"autotuned variants of num_warps {got}, expected one each of {sorted(warps)}")
    if len({r["label"] for r in tuned}) != len(tuned):
        out.append(f"variants share a name: {[r['label'] for r in tuned]}")
    for r in tuned:
        if f"num_warps={r['num_warps']}" not in r["label"]:
            out.append(f"{r['label']}: not named by its num_warps ({r['num_warps']})")
        if r["warps_per_block"] != r["num_warps"]:
            out.append(f"{r['label']}: laid out for {r['warps_per_block']} warps per block, compiled for {r['num_warps']}")
        if r["error"]:
            out.append(f"{r['label']}: its buffer did not decode: {r['error']}")
        elif r["launches"] == 0 or r["traces"] == 0:
            out.append(f"{r['label']}: {r['launches']} launches, {r['traces']} traces")
        elif r["lanes"] != blocks * r["num_warps"]:
            out.append(f"{r['label']}: {r['lanes']} lanes, expected {blocks} blocks x {r['num_warps']} warps")
    warm = [r for r in rows if r["kernel"] == "ikp_warm_copy"]
    if "ikp_warm_copy" not in recompiled:
        out.append(f"the kernel compiled before the context was not compiled again (recompiled: {list(recompiled)})")
    if len(warm) != 1 or warm[0]["traces"] == 0 or warm[0]["lanes"] == 0:
        out.append(f"the kernel compiled before the context has no trace: {warm}")
    if untraced:
        out.append(f"launched without a trace: {untraced}")
    if not outputs_right:
        out.append("the kernels' outputs are wrong inside the context")
    return out


def _diff(torch: Any, a: Any, b: Any) -> float:
    if torch.equal(a, b):
        return 0.0
    return float((a.float() - b.float()).abs().max())


def run_torch_compile(ikp: Any) -> Tuple[List[str], Dict[str, Any]]:
    import torch

    import ikp.triton as ikp_triton

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.LayerNorm(512), torch.nn.Softmax(dim=-1)
    ).cuda()
    x = torch.randn(64, 256, device="cuda")
    compiled = torch.compile(model)
    with torch.no_grad():
        plain = compiled(x)  # compiled before the context, as a user's warm-up does
        torch.cuda.synchronize()
        with ikp_triton.profile(max_blocks=4096) as prof:
            probed = compiled(x)
            torch.cuda.synchronize()
        after = compiled(x)
        torch.cuda.synchronize()
    rows = variant_rows(prof)
    max_diff, after_diff = _diff(torch, probed, plain), _diff(torch, after, plain)
    figures = dict(
        torch=torch.__version__,
        triton=triton.__version__,
        kernels=rows,
        untraced=prof.untraced,
        bitwise_equal=max_diff == 0.0,
        max_abs_diff=max_diff,
    )
    return compile_problems(rows, prof.untraced, max_diff, after_diff), figures


def run_autotune(ikp: Any) -> Tuple[List[str], Dict[str, Any]]:
    import torch

    import ikp.triton as ikp_triton

    n = 8 * BLOCK
    x = torch.randn(AUTOTUNE_BLOCKS * n, device="cuda")
    y, z = torch.empty_like(x), torch.empty_like(x)
    ikp_warm_copy[(AUTOTUNE_BLOCKS,)](x, z, n, BLOCK=BLOCK, num_warps=4)  # warm: before the context
    torch.cuda.synchronize()
    z.zero_()
    with ikp_triton.profile(records_per_warp=64, max_blocks=AUTOTUNE_BLOCKS) as prof:
        ikp_autotuned_scale[(AUTOTUNE_BLOCKS,)](x, y, n)
        ikp_warm_copy[(AUTOTUNE_BLOCKS,)](x, z, n, BLOCK=BLOCK, num_warps=4)
        torch.cuda.synchronize()
    right = bool(torch.equal(y, x * 2.0 + 1.0)) and bool(torch.equal(z, x))
    rows = variant_rows(prof)
    figures = dict(kernels=rows, untraced=prof.untraced, recompiled=prof.recompiled)
    return (
        autotune_problems(rows, prof.untraced, prof.recompiled, AUTOTUNE_WARPS, AUTOTUNE_BLOCKS, right),
        figures,
    )


def self_check() -> List[str]:
    """The verifiers on synthetic correct runs and damaged ones; returns failures."""
    fails: List[str] = []

    def row(kernel: str, warps: int, lanes: int = -1, **kw: Any) -> Dict[str, Any]:
        r = dict(
            kernel=kernel,
            label=f"{kernel}[BLOCK=1024, num_warps={warps}, num_stages=3]",
            num_warps=warps,
            warps_per_block=warps,
            launches=3,
            traces=3,
            lanes=AUTOTUNE_BLOCKS * warps if lanes < 0 else lanes,
            error=None,
        )
        r.update(kw)
        return r

    good = [row("ikp_autotuned_scale", w) for w in AUTOTUNE_WARPS] + [row("ikp_warm_copy", 4)]
    args = (AUTOTUNE_WARPS, AUTOTUNE_BLOCKS)
    if autotune_problems(good, {}, ["ikp_warm_copy"], *args, True):
        fails.append("autotune: a correct run was rejected")
    damaged = [
        ("a variant missing", good[1:], {}, ["ikp_warm_copy"], True),
        ("variants sharing one layout", [dict(good[0], warps_per_block=8)] + good[1:], {}, ["ikp_warm_copy"], True),
        ("a variant's buffer undecodable", [dict(good[0], error="x", traces=0)] + good[1:], {}, ["ikp_warm_copy"], True),
        ("a variant with the wrong lanes", [dict(good[2], lanes=32)] + good[:2] + good[3:], {}, ["ikp_warm_copy"], True),
        ("the warm kernel not recompiled", good, {}, [], True),
        ("the warm kernel untraced", good[:3], {"ikp_warm_copy": 1}, ["ikp_warm_copy"], True),
        ("wrong outputs", good, {}, ["ikp_warm_copy"], False),
    ]
    for what, rows, untraced, recompiled, right in damaged:
        if not autotune_problems(rows, untraced, recompiled, *args, right):
            fails.append(f"autotune: {what} was accepted")
    inductor = [row("triton_per_fused_gelu_native_layer_norm_0", 8, lanes=64 * 8)]
    if compile_problems(inductor, {}, 0.0, 0.0):
        fails.append("torch-compile: a correct run was rejected")
    for what, rows, untraced, d, a in [
        ("a kernel untraced", inductor, {"triton_poi_fused_1": 2}, 0.0, 0.0),
        ("nothing traced", [], {}, 0.0, 0.0),
        ("an undecodable buffer", [dict(inductor[0], error="x", traces=0)], {}, 0.0, 0.0),
        ("a launched kernel without lanes", [dict(inductor[0], lanes=0)], {}, 0.0, 0.0),
        ("a compiled kernel never traced", inductor + [dict(inductor[0], kernel="k1", launches=0, traces=0, lanes=0)], {}, 0.0, 0.0),
        ("different outputs", inductor, {}, 0.5, 0.0),
        ("outputs not plain again after", inductor, {}, 0.0, float("nan")),
    ]:
        if not compile_problems(rows, untraced, d, a):
            fails.append(f"torch-compile: {what} was accepted")
    return fails
