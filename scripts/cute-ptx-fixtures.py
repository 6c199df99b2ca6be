#!/usr/bin/env python3
"""Regenerate the CuTe DSL PTX fixture of host/tests/ptx/cute/ (issue #28).

Usage:
    python3 -m venv V && V/bin/pip install nvidia-cutlass-dsl   # 4.8.1 made these
    V/bin/python scripts/cute-ptx-fixtures.py OUT_DIR [--ptxas PATH]

No GPU and no CUDA driver are needed: the kernel's arguments are fake tensors
(cute.runtime.make_fake_tensor, a dynamic length from cute.sym_int32), and
cute.compile(..., options="--gpu-arch sm_90a --generate-line-info --keep-ptx")
compiles through NVVM to PTX, which is written unchanged to OUT_DIR/<name>.ptx.
OUT_DIR/fixtures.json records the kernel's mangled entry name, block, grid,
shapes and loop trip count for those shapes. Each PTX is assembled with
`ptxas -arch=sm_90a -v` (--ptxas, else $IKP_CUDA_BIN/ptxas, else PATH).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_tensor

THREADS = 128
BLOCKS = 264  # 2 per SM of an H100 SXM
N = 1 << 24


@cute.kernel
def grid_stride_add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor):
    # C = A + B over a dynamic length with a grid-stride loop.
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    gdim, _, _ = cute.arch.grid_dim()
    n = cute.size(gA)
    for i in cutlass.range(bidx * bdim + tidx, n, gdim * bdim):
        gC[i] = gA[i] + gB[i]


@cute.jit
def grid_stride_add(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    grid_stride_add_kernel(mA, mB, mC).launch(grid=(BLOCKS, 1, 1), block=(THREADS, 1, 1))


def find_ptxas(given):
    if given:
        return given
    cuda_bin = os.environ.get("IKP_CUDA_BIN")
    if cuda_bin and os.path.exists(os.path.join(cuda_bin, "ptxas")):
        return os.path.join(cuda_bin, "ptxas")
    return shutil.which("ptxas")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--ptxas", help="ptxas to check the PTX with")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    n = cute.sym_int32(symbol="n")
    tensors = [make_fake_tensor(cutlass.Float32, (n, ), (1, ), assumed_align=16) for _ in range(3)]
    with tempfile.TemporaryDirectory() as dump:
        compiled = cute.compile(grid_stride_add, *tensors,
                                options=f"--gpu-arch sm_90a --generate-line-info --keep-ptx "
                                f"--dump-dir {dump}")
        ptx = compiled.__ptx__
    name = "grid_stride_add_kernel"
    path = os.path.join(args.out_dir, f"{name}.ptx")
    with open(path, "w") as f:
        f.write(ptx)
    ptxas = find_ptxas(args.ptxas)
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([ptxas, "-arch=sm_90a", "-v", path, "-o", os.path.join(tmp, "o.cubin")],
                           capture_output=True, text=True)
    regs = re.search(r"Used (\d+) registers", r.stderr)
    print(f"{name}: {len(ptx)} bytes, registers={regs.group(1) if regs else '?'}")
    if r.returncode != 0 or not regs:
        print(f"ptxas FAILED\n{r.stdout}{r.stderr}", file=sys.stderr)
    total = BLOCKS * THREADS
    index = dict(
        generator="scripts/cute-ptx-fixtures.py",
        cutlass_dsl_version=getattr(cutlass, "__version__", None),
        files={f"{name}.ptx": dict(
            kernel=re.search(r"\.entry\s+(\w+)\(", ptx).group(1),
            ptx_target=re.search(r"^\.target\s+(\S+)", ptx, re.M).group(1),
            ptx_version=re.search(r"^\.version\s+(\S+)", ptx, re.M).group(1),
            block_dim=[THREADS, 1, 1], grid=[BLOCKS, 1, 1], shared_bytes=0,
            shapes=dict(a=f"fp32[{N}]", b=f"fp32[{N}]", c=f"fp32[{N}]"),
            runtime_args=dict(n=N),
            ptx_params_note="each tensor is passed by value as a 16-byte .b8 array: "
            "pointer at +0, n (i32) at +8",
            loops=[dict(loop="grid-stride loop", trip_count_per_thread_min=N // total,
                        trip_count_per_thread_max=-(-N // total),
                        trip_count_total=N)],
            ptxas_registers=int(regs.group(1)) if regs else None,
            ptxas_info=[l.strip() for l in r.stderr.splitlines()
                        if l.strip() and "Compile time" not in l])})
    with open(os.path.join(args.out_dir, "fixtures.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    return 0 if r.returncode == 0 and regs else 1


if __name__ == "__main__":
    sys.exit(main())
