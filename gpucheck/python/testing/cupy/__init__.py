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
    return 300.0 if name.startswith(("k_off", "k_bare")) else 303.0


class _Array:
    def __init__(self, a: np.ndarray) -> None:
        self.host = a
        self.data = types.SimpleNamespace(ptr=0x7F0000000000 + 0x1000 * len(launches))


def asarray(a: Any) -> _Array:
    return _Array(np.asarray(a))


def zeros_like(a: _Array) -> _Array:
    return _Array(np.zeros_like(a.host))


def zeros(shape: Any, dtype: Any = np.float64) -> _Array:
    return _Array(np.zeros(shape, dtype=dtype))


random = types.SimpleNamespace(rand=lambda n, dtype=np.float32: _Array(np.random.rand(n).astype(dtype)))


class _Function:
    def __init__(self, name: str, params: int) -> None:
        self.name, self.params = name, params

    def __call__(self, grid: tuple, block: tuple, args: tuple) -> None:
        if len(args) != self.params:
            raise TypeError(f"{self.name} takes {self.params} arguments, launched with {len(args)}")
        launches.append((self.name, grid, block, len(args)))


def _params(code: str, at: int) -> int:
    """The parameter count of the kernel whose parameter list opens at `code[at]` ('(')."""
    depth, commas, i = 0, 0, at
    while True:
        c = code[i]
        if c in "(<":
            depth += 1
        elif c in ")>":
            depth -= 1
            if depth == 0:
                return commas + 1
        elif c == "," and depth == 1:
            commas += 1
        i += 1


class RawModule:
    """Finds a kernel by name in the source and takes its parameter count from its parameter
    list: written out (`void NAME(`), or made by the experiments' kernel macros: a shape's
    kernels (`IKP_EXP_KERNELS(shape, ...)`) each declared as `void STEM_##shape(` or
    through a macro called as `MACRO(STEM_##shape, ...)` whose definition holds
    `void name(`."""

    def __init__(self, code: str, options: tuple = ()) -> None:
        self.code, self.options = code, options

    def _declaration(self, name: str) -> int:
        """Where `name`'s parameter list opens in the source ('('), or -1."""
        at = self.code.find(f"void {name}(")
        if at >= 0:
            return at + len(f"void {name}")
        for shape in re.findall(r"IKP_EXP_KERNELS\((\w+),", self.code):
            if not name.endswith("_" + shape):
                continue
            stem = name[: -len(shape) - 1] + "_##shape"
            at = self.code.find(f"void {stem}(")
            if at >= 0:
                return at + len(f"void {stem}")
            call = re.search(r"(\w+)\(" + re.escape(stem) + ",", self.code)
            if call:
                m = re.search(r"#define " + call.group(1) + r"\((\w+),[^)]*\)", self.code)
                at = self.code.find(f"void {m.group(1)}(", m.end()) if m else -1
                if at >= 0:
                    return at + len(f"void {m.group(1)}")
        return -1

    def get_function(self, name: str) -> _Function:
        at = self._declaration(name)
        if at < 0:
            raise KeyError(f"no kernel {name} in the module")
        return _Function(name, _params(self.code, at))


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
