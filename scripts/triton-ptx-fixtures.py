#!/usr/bin/env python3
"""Regenerate the Triton PTX fixtures of host/tests/ptx/triton/ (issue #28).

Usage:
    python3 -m venv V && V/bin/pip install triton==3.6.0
    V/bin/python scripts/triton-ptx-fixtures.py OUT_DIR [--ptxas PATH]

No GPU and no CUDA driver are needed: each kernel is compiled ahead of time with
triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32)), the way
triton/tools/compile.py does, and asm["ptx"] is written unchanged to
OUT_DIR/<name>.ptx (Triton's default debug line info, .file/.loc, is kept).
OUT_DIR/fixtures.json records, per file, what a later GPU run needs to check a
profile against: kernel name, num_warps, shared memory, Triton version, target,
launch grid, shapes, constexprs and the trip count of every source loop.

The kernels are small re-writings of the ideas of Triton's tutorials (vector
add, fused softmax, matmul, layer norm, fused attention); they are not the
tutorial code. Argument values equal to 1 are compiled as constexprs and the
pointers and 16-multiple integers get tt.divisibility=16, as Triton's JIT
specialises them at launch for the shapes given here.

Each PTX is assembled with `ptxas -arch=sm_90a -v` (the ptxas of --ptxas,
else $IKP_CUDA_BIN/ptxas, else ptxas on PATH, else the one in the Triton wheel)
and its register count printed. The .file line holds this script's absolute
path, so regenerating from another checkout changes that line only.
"""
import argparse
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

if "TRITON_CACHE_DIR" not in os.environ:  # compile afresh, leave no cache behind
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-fixtures-")
    atexit.register(shutil.rmtree, os.environ["TRITON_CACHE_DIR"], True)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402


def cdiv(a, b):
    return (a + b - 1) // b


# --------------------------------------------------------------------- kernels

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    # One row per program, the whole row in registers: no loop.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def softmax_looped_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    # One row per program, in column blocks: an online max/sum loop, then a
    # normalise-and-store loop.
    row = tl.program_id(0)
    src = in_ptr + row * in_stride
    dst = out_ptr + row * out_stride
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(src + cols, mask=cols < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(src + cols, mask=mask, other=-float("inf"))
        tl.store(dst + cols, tl.exp(x - row_max) / row_sum, mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # C = A @ B, fp16 in, fp32 accumulate, fp16 out; grouped tile order for L2.
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    group = pid // (GROUP_M * grid_n)
    first_m = group * GROUP_M
    group_m = min(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * grid_n)) % group_m
    pid_n = (pid % (GROUP_M * grid_n)) // group_m
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.float16), mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def layer_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, N, eps,
                          BLOCK: tl.constexpr):
    # One row per program; three loops over column blocks: mean, variance,
    # normalise + affine + store.
    row = tl.program_id(0)
    x_ptr += row * stride
    y_ptr += row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        d = tl.where(cols < N, x - mean, 0.0)
        acc += d * d
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_ptr + cols, y.to(tl.float16), mask=mask)


@triton.jit
def attn_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, stride_z, stride_h, stride_n, H, N_CTX,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Non-causal flash attention forward: Q, K, V, O are [Z, H, N_CTX, HEAD_DIM]
    # fp16, contiguous. One BLOCK_M tile of queries per program; loop over K/V
    # blocks with an online softmax (base 2).
    start_m = tl.program_id(0)
    off_zh = tl.program_id(1)
    base = (off_zh // H) * stride_z + (off_zh % H) * stride_h
    rm = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + rm[:, None] * stride_n + rd[None, :])
    k_ptrs = k_ptr + base + rn[None, :] * stride_n + rd[:, None]  # K^T tile
    v_ptrs = v_ptr + base + rn[:, None] * stride_n + rd[None, :]
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.44269504  # 1/ln(2)
    for start_n in range(0, N_CTX, BLOCK_N):
        kt = tl.load(k_ptrs + start_n * stride_n)
        qk = tl.dot(q, kt) * qk_scale
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptrs + start_n * stride_n)
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(o_ptr + base + rm[:, None] * stride_n + rd[None, :], acc.to(tl.float16))


@triton.jit
def triangular_rows_kernel(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    # Row r sums its columns 0..=r: a trip count per program (cdiv(r + 1, BLOCK)), a loop
    # ptxas unrolls.
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, row + 1, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + offs, mask=offs <= row, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def nested_loops_kernel(x_ptr, out_ptr, rows_per_program, n_cols, stride, BLOCK: tl.constexpr):
    # Each program sums `rows_per_program` rows, each a column loop: nested loops.
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for r in range(0, rows_per_program):
        row = pid * rows_per_program + r
        for start in range(0, n_cols, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + row * stride + offs, mask=offs < n_cols, other=0.0)
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)


@triton.jit
def while_loop_kernel(x_ptr, out_ptr, window, BLOCK: tl.constexpr):
    # A while loop whose trip count comes from the data: 5 + trunc(4 x[pid]), 2 to 8.
    pid = tl.program_id(0)
    steps = (tl.load(x_ptr + pid) * 4.0).to(tl.int32) + 5
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    i = 0
    while i < steps:
        acc += tl.load(x_ptr + ((pid * 8 + i) % window) * BLOCK + offs)
        i += 1
    tl.store(out_ptr + pid * BLOCK + offs, acc)


# ------------------------------------------------------------------- fixtures

PIPELINED = ("software-pipelined (num_stages): cp.async loads for later iterations are issued "
             "before the loop and predicated off in the last ones; the PTX loop still runs "
             "trip_count times per program")


def fixtures(large=False):
    """(file name, kernel, args, options, grid, shapes, loops): args maps every
    parameter to (type, value); ints of value 1 become constexprs, constexprs
    have type "constexpr". `large`: the loop kernels at sizes that run 100 us or more
    on an H100 / H200 (the GPU bundle times both; the fixtures are the small ones)."""
    out = []

    n = (1 << 26) if large else 98432
    out.append(("add_kernel", add_kernel,
                dict(x_ptr=("*fp32", None), y_ptr=("*fp32", None), out_ptr=("*fp32", None),
                     n=("i32", n), BLOCK=("constexpr", 1024)),
                dict(num_warps=4, num_stages=3), [cdiv(n, 1024), 1, 1],
                dict(x=f"fp32[{n}]", y=f"fp32[{n}]", out=f"fp32[{n}]"), []))

    rows, cols = 1823 * (32 if large else 1), 781
    out.append(("softmax_kernel", softmax_kernel,
                dict(out_ptr=("*fp32", None), in_ptr=("*fp32", None), in_stride=("i32", cols),
                     out_stride=("i32", cols), n_cols=("i32", cols), BLOCK=("constexpr", 1024)),
                dict(num_warps=8, num_stages=1), [rows, 1, 1],
                dict(input=f"fp32[{rows},{cols}]", output=f"fp32[{rows},{cols}]"), []))

    rows, cols, blk = 16384 if large else 1024, 8000, 1024
    out.append(("softmax_looped_kernel", softmax_looped_kernel,
                dict(out_ptr=("*fp32", None), in_ptr=("*fp32", None), in_stride=("i32", cols),
                     out_stride=("i32", cols), n_cols=("i32", cols), BLOCK=("constexpr", blk)),
                dict(num_warps=4, num_stages=1), [rows, 1, 1],
                dict(input=f"fp32[{rows},{cols}]", output=f"fp32[{rows},{cols}]"),
                [dict(loop="online max/sum over column blocks", trip_count=cdiv(cols, blk)),
                 dict(loop="normalise and store over column blocks", trip_count=cdiv(cols, blk))]))

    M = N = 8192 if large else 1024
    K = 1024
    bm, bn, bk = 128, 128, 64
    out.append(("matmul_kernel", matmul_kernel,
                dict(a_ptr=("*fp16", None), b_ptr=("*fp16", None), c_ptr=("*fp16", None),
                     M=("i32", M), N=("i32", N), K=("i32", K),
                     stride_am=("i32", K), stride_ak=("i32", 1), stride_bk=("i32", N),
                     stride_bn=("i32", 1), stride_cm=("i32", N), stride_cn=("i32", 1),
                     BLOCK_M=("constexpr", bm), BLOCK_N=("constexpr", bn),
                     BLOCK_K=("constexpr", bk), GROUP_M=("constexpr", 8)),
                dict(num_warps=4, num_stages=3), [cdiv(M, bm) * cdiv(N, bn), 1, 1],
                dict(a=f"fp16[{M},{K}] row-major", b=f"fp16[{K},{N}] row-major",
                     c=f"fp16[{M},{N}] row-major"),
                [dict(loop="K loop (tl.dot per iteration)", trip_count=cdiv(K, bk), note=PIPELINED)]))

    M, N, blk = 1151 * (16 if large else 1), 8192, 1024
    out.append(("layer_norm_fwd_kernel", layer_norm_fwd_kernel,
                dict(x_ptr=("*fp16", None), y_ptr=("*fp16", None), w_ptr=("*fp16", None),
                     b_ptr=("*fp16", None), mean_ptr=("*fp32", None), rstd_ptr=("*fp32", None),
                     stride=("i32", N), N=("i32", N), eps=("fp32", 1e-5), BLOCK=("constexpr", blk)),
                dict(num_warps=8, num_stages=1), [M, 1, 1],
                dict(x=f"fp16[{M},{N}]", y=f"fp16[{M},{N}]", w=f"fp16[{N}]", b=f"fp16[{N}]",
                     mean=f"fp32[{M}]", rstd=f"fp32[{M}]"),
                [dict(loop="mean over column blocks", trip_count=cdiv(N, blk)),
                 dict(loop="variance over column blocks", trip_count=cdiv(N, blk)),
                 dict(loop="normalise and store over column blocks", trip_count=cdiv(N, blk))]))

    Z, H, n_ctx, d, bm, bn = 16 if large else 2, 16 if large else 4, 1024, 64, 128, 64
    out.append(("attn_fwd_kernel", attn_fwd_kernel,
                dict(q_ptr=("*fp16", None), k_ptr=("*fp16", None), v_ptr=("*fp16", None),
                     o_ptr=("*fp16", None), sm_scale=("fp32", 0.125),
                     stride_z=("i32", H * n_ctx * d), stride_h=("i32", n_ctx * d),
                     stride_n=("i32", d), H=("i32", H), N_CTX=("i32", n_ctx),
                     HEAD_DIM=("constexpr", d), BLOCK_M=("constexpr", bm),
                     BLOCK_N=("constexpr", bn)),
                dict(num_warps=4, num_stages=3), [cdiv(n_ctx, bm), Z * H, 1],
                {t: f"fp16[{Z},{H},{n_ctx},{d}]" for t in "qkvo"},
                [dict(loop="K/V blocks (two tl.dot + online softmax per iteration)",
                      trip_count=cdiv(n_ctx, bn), note=PIPELINED)]))

    rows, blk = 12288 if large else 512, 128
    out.append(("triangular_rows_kernel", triangular_rows_kernel,
                dict(x_ptr=("*fp32", None), out_ptr=("*fp32", None), stride=("i32", rows),
                     BLOCK=("constexpr", blk)),
                dict(num_warps=4, num_stages=1), [rows, 1, 1],
                dict(x=f"fp32[{rows},{rows}]", out=f"fp32[{rows}]"),
                [dict(loop="columns up to the diagonal", trip_count=None,
                      trips="program r: cdiv(r + 1, BLOCK)")]))

    programs, per, cols, blk = (1024, 16, 8192, 1024) if large else (64, 4, 2048, 1024)
    out.append(("nested_loops_kernel", nested_loops_kernel,
                dict(x_ptr=("*fp32", None), out_ptr=("*fp32", None), rows_per_program=("i32", per),
                     n_cols=("i32", cols), stride=("i32", cols), BLOCK=("constexpr", blk)),
                dict(num_warps=4, num_stages=1), [programs, 1, 1],
                dict(x=f"fp32[{programs * per},{cols}]", out=f"fp32[{programs},{blk}]"),
                [dict(loop="rows of the program", trip_count=per),
                 dict(loop="column blocks of a row (nested)", trip_count=cdiv(cols, blk),
                      per_outer_trip=True)]))

    programs, window, blk = (131072, 4096, 256) if large else (512, 4096, 256)
    out.append(("while_loop_kernel", while_loop_kernel,
                dict(x_ptr=("*fp32", None), out_ptr=("*fp32", None), window=("i32", window),
                     BLOCK=("constexpr", blk)),
                dict(num_warps=2, num_stages=1), [programs, 1, 1],
                dict(x=f"fp32[{window * blk}]", out=f"fp32[{programs},{blk}]"),
                [dict(loop="while i < steps (steps from the data)", trip_count=None,
                      trips="program p: 5 + trunc(4 * x[p])")]))
    return out


def expected_trips(name, loops, grid, args):
    """Per loop of kernel `name`, per program: the trip-count samples each of its warps
    records, in order. `args` are the launch's arguments (tensors on the GPU)."""
    programs = grid[0] * grid[1] * grid[2]
    out = []
    for loop in loops:
        if name == "triangular_rows_kernel":
            blk = args[-1]  # BLOCK
            out.append([[cdiv(r + 1, blk)] for r in range(programs)])
        elif name == "while_loop_kernel":
            steps = [int(v) + 5 for v in (args[0][:programs].float().cpu() * 4.0).tolist()]
            out.append([[s] for s in steps])
        elif loop.get("per_outer_trip"):
            outer = loops[0]["trip_count"]
            out.append([[loop["trip_count"]] * outer for _ in range(programs)])
        else:
            out.append([[loop["trip_count"]] for _ in range(programs)])
    return out


def ast_source(fn, fargs):
    """The kernel as Triton's JIT specializes it at a launch with these arguments: ints of
    value 1 become constexprs, pointers and multiples of 16 get tt.divisibility=16.
    Returns (ASTSource, runtime argument values, attrs, constexprs)."""
    signature, constexprs, attrs, runtime = {}, {}, {}, {}
    for i, (arg, (ty, val)) in enumerate(fargs.items()):
        if ty == "constexpr" or (ty.startswith("i") and val == 1):
            signature[arg] = "constexpr"
            constexprs[arg] = val
            continue
        signature[arg] = ty
        runtime[arg] = val if val is not None else "pointer"
        if ty.startswith("*") or (ty.startswith("i") and val % 16 == 0):
            attrs[(i, )] = [["tt.divisibility", 16]]
    src = triton.compiler.ASTSource(fn, signature=signature, constexprs=constexprs, attrs=attrs)
    return src, runtime, attrs, constexprs


def find_ptxas(given):
    if given:
        return given
    cuda_bin = os.environ.get("IKP_CUDA_BIN")
    if cuda_bin and os.path.exists(os.path.join(cuda_bin, "ptxas")):
        return os.path.join(cuda_bin, "ptxas")
    return shutil.which("ptxas") or os.path.join(os.path.dirname(triton.__file__),
                                                 "backends", "nvidia", "bin", "ptxas")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--ptxas", help="ptxas to check the PTX with")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    ptxas = find_ptxas(args.ptxas)
    ptxas_version = subprocess.run([ptxas, "--version"], capture_output=True,
                                   text=True).stdout.strip().splitlines()[-1]
    target = GPUTarget("cuda", 90, 32)
    backend = triton.compiler.make_backend(target)
    index = dict(generator="scripts/triton-ptx-fixtures.py", triton_version=triton.__version__,
                 target=dict(backend=target.backend, arch=target.arch, warp_size=target.warp_size),
                 ptxas_checked_with=ptxas_version, files={})
    failed = False
    for name, fn, fargs, opts, grid, shapes, loops in fixtures():
        src, runtime, attrs, constexprs = ast_source(fn, fargs)
        options = backend.parse_options(dict(opts)).__dict__
        k = triton.compile(src, target=target, options=options)
        ptx = k.asm["ptx"]
        path = os.path.join(args.out_dir, f"{name}.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        entry = re.search(r"\.entry\s+(\w+)\(", ptx).group(1)
        n_params = len(re.findall(r"^\s*\.param\s", ptx.split(".entry", 1)[1].split(")", 1)[0],
                                  flags=re.M))
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([ptxas, "-arch=sm_90a", "-v", path, "-o",
                                os.path.join(tmp, "out.cubin")], capture_output=True, text=True)
        regs = re.search(r"Used (\d+) registers", r.stderr)
        if r.returncode != 0 or not regs:
            failed = True
            print(f"{name}: ptxas FAILED\n{r.stdout}{r.stderr}", file=sys.stderr)
        md = k.metadata
        print(f"{name:24s} {len(ptx):8d} bytes  warps={md.num_warps} shared={md.shared}"
              f"  registers={regs.group(1) if regs else '?'}")
        index["files"][f"{name}.ptx"] = dict(
            kernel=entry, num_warps=md.num_warps, num_stages=md.num_stages, num_ctas=md.num_ctas,
            block_dim=[md.num_warps * target.warp_size, 1, 1], shared_bytes=md.shared,
            triton_version=md.triton_version, target=f"{target.backend}:{target.arch}",
            ptx_target=re.search(r"^\.target\s+(\S+)", ptx, re.M).group(1),
            ptx_version=re.search(r"^\.version\s+(\S+)", ptx, re.M).group(1),
            grid=grid, shapes=shapes, constexprs=constexprs, runtime_args=runtime,
            divisibility_16=[list(fargs)[i] for (i, ) in attrs],
            ptx_params=n_params,
            ptx_params_note="the runtime args in order, then Triton's global_scratch and "
            "profile_scratch pointers (pass 0)",
            loops=loops, ptxas_registers=int(regs.group(1)) if regs else None,
            ptxas_info=[l.strip() for l in r.stderr.splitlines()
                        if l.strip() and "Compile time" not in l])
    with open(os.path.join(args.out_dir, "fixtures.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
