"""Runs FlashInfer's own Perfetto exporter (`export_to_perfetto_trace` in
flashinfer/profiler/__init__.py, loaded from the file given) on a buffer and prints what it
exported as JSON, for host/tests/peer_decoders.rs to compare with ikp's decode.

The exporter needs two packages this machine does not install, so minimal stand-ins are
registered under their names first, each doing only what the exporter asks of it:
- `torch`: the dtypes it names, and `Tensor`, a numpy array with `.cpu()` (the slicing,
  `.view()`, comparisons and `int()` it applies are numpy's);
- `tg4perfetto`: a `TraceGenerator` whose groups and tracks record the exporter's calls
  (`open`, `close`, `instant`) instead of writing protobuf. Slices on a track nest, as
  Perfetto's do: a close ends the innermost open slice of its track.

Usage: python flashinfer_export.py PROFILER_INIT_PY BUFFER NAMES_FILE
"""
import importlib.util
import json
import sys
import types

import numpy as np

torch = types.ModuleType("torch")
torch.uint64, torch.int32, torch.uint32 = np.uint64, np.int32, np.uint32


class Tensor(np.ndarray):
    def cpu(self):
        return self


torch.Tensor = Tensor


class Track:
    def __init__(self, group, name):
        self.group, self.name, self.open_slices = group, name, []

    def open(self, ts, name):
        self.open_slices.append((name, ts))

    def close(self, ts):
        name, begin = self.open_slices.pop()
        SPANS.append([self.group, self.name, name, begin, ts])

    def instant(self, ts, name):
        INSTANTS.append([self.group, self.name, name, ts])


class Group:
    def __init__(self, name):
        self.name = name

    def create_track(self, name=""):
        return Track(self.name, name)

    def create_group(self, name):
        return Group(name)


class TraceGenerator:
    def __init__(self, file_name):
        pass

    def create_group(self, name):
        return Group(name)

    def flush(self):
        pass


SPANS, INSTANTS = [], []
tg = types.ModuleType("tg4perfetto")
tg.TraceGenerator = TraceGenerator
sys.modules["torch"], sys.modules["tg4perfetto"] = torch, tg

spec = importlib.util.spec_from_file_location("flashinfer_profiler", sys.argv[1])
profiler = importlib.util.module_from_spec(spec)
spec.loader.exec_module(profiler)

words = np.fromfile(sys.argv[2], dtype="<u8").view(Tensor)
with open(sys.argv[3]) as f:
    names = [line.rstrip("\n") for line in f]
profiler.export_to_perfetto_trace(words, names, "unused.perfetto-trace")
json.dump({"spans": SPANS, "instants": INSTANTS}, sys.stdout)
