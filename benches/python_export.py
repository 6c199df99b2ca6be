"""ikp.export_to_perfetto_trace against FlashInfer's own exporter on the same buffer.

FlashInfer's exporter is flashinfer/profiler/__init__.py from the pinned flashinfer-python
wheel (scripts/provision.sh unpacks it into .deps/), run as host/tests/host/peers/flashinfer_
export.py runs it (torch replaced by a numpy stand-in: a Tensor with .cpu()), but writing
with the real tg4perfetto (PyPI; its sdist needs protoc). The buffer is synthetic, in
FlashInfer's format (one group per block, where FlashInfer's exporter reads the block
field right): BLOCKS blocks on 132 SMs, PAIRS begin/end pairs per block over 10 events.

Usage: python benches/python_export.py [BLOCKS] [PAIRS] [REPEATS]
(needs numpy, tg4perfetto and the ikp package; BENCHMARKS.md, "Python export").
"""
import importlib.util
import os
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

import ikp

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = int(sys.argv[1]) if len(sys.argv) > 1 else 528
PAIRS = int(sys.argv[2]) if len(sys.argv) > 2 else 200
REPEATS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
NAMES = [f"event{i}" for i in range(10)]


def flashinfer_buffer(blocks, pairs):
    """slot 0 = groups << 32 | blocks; record k of lane l at 1 + l + k * blocks;
    record = ts << 32 | sm << 24 | block << 12 | event << 2 | type."""
    records = 2 * pairs
    w = np.zeros(1 + blocks * records, dtype=np.uint64)
    w[0] = (1 << 32) | blocks
    rng = np.random.default_rng(1)
    for b in range(blocks):
        sm = b % 132
        t = 1000 + 37 * b
        durs = rng.integers(200, 2000, pairs)
        for k in range(pairs):
            e = k % len(NAMES)
            tag = (sm << 24) | (b << 12) | (e << 2)
            w[1 + b + (2 * k) * blocks] = (t << 32) | tag  # begin
            t += int(durs[k])
            w[1 + b + (2 * k + 1) * blocks] = (t << 32) | tag | 1  # end
            t += 50
    return w


class Tensor(np.ndarray):
    def cpu(self):
        return self


def flashinfer_exporter():
    path = sorted(ROOT.glob(".deps/flashinfer-python-*/flashinfer/profiler/__init__.py"))[-1]
    torch = types.ModuleType("torch")
    torch.uint64, torch.int32, torch.uint32 = np.uint64, np.int32, np.uint32
    torch.Tensor = Tensor
    sys.modules["torch"] = torch
    spec = importlib.util.spec_from_file_location("flashinfer_profiler", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.export_to_perfetto_trace


def best(f, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    words = flashinfer_buffer(BLOCKS, PAIRS)
    spans = ikp.decode(words, names=NAMES).spans()
    assert len(spans["lane"]) == BLOCKS * PAIRS, len(spans["lane"])
    theirs = flashinfer_exporter()
    with tempfile.TemporaryDirectory() as d:
        fi_out, ikp_out = os.path.join(d, "fi.trace"), os.path.join(d, "ikp.trace")
        t_fi = best(lambda: theirs(words.view(Tensor), NAMES, fi_out), REPEATS)
        t_ikp = best(lambda: ikp.export_to_perfetto_trace(words, NAMES, ikp_out), REPEATS)
        fi_size, ikp_size = os.path.getsize(fi_out), os.path.getsize(ikp_out)
    mb = words.nbytes / 1e6
    print(f"buffer: {BLOCKS} blocks x {PAIRS} pairs = {BLOCKS * PAIRS} spans, {mb:.1f} MB")
    print(f"flashinfer (tg4perfetto): {t_fi * 1e3:9.1f} ms  {fi_size / 1e6:6.2f} MB written")
    print(f"ikp:                      {t_ikp * 1e3:9.1f} ms  {ikp_size / 1e6:6.2f} MB written")
    print(f"speed-up: {t_fi / t_ikp:.0f}x (best of {REPEATS})")


if __name__ == "__main__":
    main()
