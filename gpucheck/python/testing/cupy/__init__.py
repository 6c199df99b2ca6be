"""A stand-in for CuPy with just what the GPU experiments' launch paths use, for the tests
to run those paths on a machine without a GPU (scripts/test-python.sh): no kernel runs;
each launch is recorded, checked against the kernel's parameter count, and timed by a
rule (`launch_us`), so a script's arithmetic and plumbing run as on the device."""

import re
import types
from typing import Any, List

import numpy as np

float32 = np.float32
# Every launch so far: (kernel name, grid, block, argument count).
launches: List[tuple] = []


def launch_us(name: str) -> float:
    """A launch's pretend GPU time: 300 us, 1 % more for a kernel that holds ikp's lane."""
    return 300.0 if name.startswith(("k_off_", "k_bare_")) else 303.0


class _Array:
    def __init__(self, a: np.ndarray) -> None:
        self.host = a
        self.data = types.SimpleNamespace(ptr=0x7F0000000000 + 0x1000 * len(launches))


def asarray(a: Any) -> _Array:
    return _Array(np.asarray(a))


def zeros_like(a: _Array) -> _Array:
    return _Array(np.zeros_like(a.host))


random = types.SimpleNamespace(rand=lambda n, dtype=np.float32: _Array(np.random.rand(n).astype(dtype)))


class _Function:
    def __init__(self, name: str, params: int) -> None:
        self.name, self.params = name, params

    def __call__(self, grid: tuple, block: tuple, args: tuple) -> None:
        if len(args) != self.params:
            raise TypeError(f"{self.name} takes {self.params} arguments, launched with {len(args)}")
        launches.append((self.name, grid, block, len(args)))


class RawModule:
    """Finds a kernel by name in the source: written out (`void NAME(`), or made by a
    kernel macro the experiments use (`IKP_EXP_KERNELS(shape, ...)` defining
    `k_<variant>_##shape`). A bare kernel (`k_bare_*`) takes 4 parameters, the others 9."""

    def __init__(self, code: str, options: tuple = ()) -> None:
        self.code, self.options = code, options

    def _defines(self, name: str) -> bool:
        if f"void {name}(" in self.code:
            return True
        for shape in re.findall(r"IKP_EXP_KERNELS\((\w+),", self.code):
            stem = name[: -len(shape) - 1]
            if name.endswith("_" + shape) and f"void {stem}_##shape(" in self.code:
                return True
        return False

    def get_function(self, name: str) -> _Function:
        if not self._defines(name):
            raise KeyError(f"no kernel {name} in the module")
        return _Function(name, 4 if name.startswith("k_bare_") else 9)


class _Event:
    def record(self) -> None:
        self.at = len(launches)

    def synchronize(self) -> None:
        pass


def _elapsed_ms(start: _Event, end: _Event) -> float:
    return sum(launch_us(name) for name, *_ in launches[start.at:end.at]) / 1e3


cuda = types.SimpleNamespace(
    Device=lambda *_: types.SimpleNamespace(attributes={"MultiProcessorCount": 4}, compute_capability="90"),
    Event=_Event,
    get_elapsed_time=_elapsed_ms,
    runtime=types.SimpleNamespace(getDeviceProperties=lambda i: {"name": b"stand-in GPU"}),
)
