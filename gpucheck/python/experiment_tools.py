"""What the hand-run GPU experiments beside the bundle share (stream_experiment.py,
overhead_experiment.py, probe_experiment.py): the compile check the tests run on their
kernels, and the JSON file of figures each writes with ``--out``."""

import json
import os
import subprocess
import tempfile
import time
from typing import Any, Optional, Sequence


def compile_check(nvcc: str, src: str, what: str, header: Optional[str] = None, include: Optional[str] = None,
                  defines: Sequence[str] = ()) -> None:
    """Compiles `src` with `nvcc` (sm_90, to a cubin) against an ``ikp.cuh``: the text
    `header`, or the one in directory `include`; exits naming `what` when it does not
    compile."""
    with tempfile.TemporaryDirectory() as d:
        if header is not None:
            with open(os.path.join(d, "ikp.cuh"), "w") as f:
                f.write(header)
            include = d
        path = os.path.join(d, "k.cu")
        with open(path, "w") as f:
            f.write(src)
        cmd = [nvcc, "-cubin", "-arch=sm_90", "-std=c++17", "-I", include, *defines, "-o", os.path.join(d, "k.cubin"), path]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{what}: the kernels do not compile:\n{r.stderr}")


def write_figures(path: str, device: str, **figures: Any) -> None:
    """Writes `figures` to `path` as JSON, with the device's name and the UTC time."""
    with open(path, "w") as f:
        json.dump(dict(device=device, utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **figures), f, indent=1)
