"""What the hand-run GPU experiments beside the bundle share (stream_experiment.py,
overhead_experiment.py, probe_experiment.py): the compile check the tests run on their
kernels, and the JSON file of figures each writes with ``--out``."""

import json
import os
import re
import subprocess
import tempfile
import time
from typing import Any, Optional, Sequence


def compile_check(nvcc: str, src: str, what: str, header: Optional[str] = None, include: Optional[str] = None,
                  defines: Sequence[str] = (), arch: str = "sm_90") -> str:
    """Compiles `src` with `nvcc` (for `arch`, to a cubin) against an ``ikp.cuh``: the text
    `header`, or the one in directory `include`; exits naming `what` when it does not
    compile. Returns what ``cuobjdump -sass -res-usage`` (from `nvcc`'s directory) prints
    of the cubin: each function's resources, then its SASS (`sass_functions`,
    `registers`)."""
    with tempfile.TemporaryDirectory() as d:
        if header is not None:
            with open(os.path.join(d, "ikp.cuh"), "w") as f:
                f.write(header)
            include = d
        path = os.path.join(d, "k.cu")
        with open(path, "w") as f:
            f.write(src)
        cubin = os.path.join(d, "k.cubin")
        cmd = [nvcc, "-cubin", f"-arch={arch}", "-std=c++17", "-I", include, *defines, "-o", cubin, path]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{what}: the kernels do not compile:\n{r.stderr}")
        cuobjdump = os.path.join(os.path.dirname(nvcc), "cuobjdump")
        r = subprocess.run([cuobjdump, "-sass", "-res-usage", cubin], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{what}: cuobjdump failed:\n{r.stderr}")
        return r.stdout


def sass_functions(text: str) -> dict:
    """The SASS of each function in `cuobjdump -sass` output, by name."""
    parts = re.split(r"^\s+Function : (\S+)\s*$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def registers(text: str) -> dict:
    """Each function's registers in `cuobjdump -res-usage` output, by name."""
    return {f: int(n) for f, n in re.findall(r"Function (\S+):\s*\n\s*REG:(\d+)", text)}


def write_figures(path: str, device: str, **figures: Any) -> None:
    """Writes `figures` to `path` as JSON, with the device's name and the UTC time."""
    with open(path, "w") as f:
        json.dump(dict(device=device, utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **figures), f, indent=1)
