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
                  defines: Sequence[str] = ()) -> str:
    """Compiles `src` with `nvcc` (sm_90, to a cubin) against an ``ikp.cuh``: the text
    `header`, or the one in directory `include`; exits naming `what` when it does not
    compile. Returns the cubin's SASS (``cuobjdump -sass``, from `nvcc`'s directory)."""
    with tempfile.TemporaryDirectory() as d:
        if header is not None:
            with open(os.path.join(d, "ikp.cuh"), "w") as f:
                f.write(header)
            include = d
        path = os.path.join(d, "k.cu")
        with open(path, "w") as f:
            f.write(src)
        cubin = os.path.join(d, "k.cubin")
        cmd = [nvcc, "-cubin", "-arch=sm_90", "-std=c++17", "-I", include, *defines, "-o", cubin, path]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{what}: the kernels do not compile:\n{r.stderr}")
        cuobjdump = os.path.join(os.path.dirname(nvcc), "cuobjdump")
        r = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{what}: cuobjdump -sass failed:\n{r.stderr}")
        return r.stdout


def sass_functions(sass: str) -> dict:
    """The SASS of each function in `cuobjdump -sass` output, by name."""
    parts = re.split(r"^\s+Function : (\S+)\s*$", sass, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def write_figures(path: str, device: str, **figures: Any) -> None:
    """Writes `figures` to `path` as JSON, with the device's name and the UTC time."""
    with open(path, "w") as f:
        json.dump(dict(device=device, utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **figures), f, indent=1)
