"""Profile Triton kernels without editing them: ikp probes written into their PTX.

    import ikp.triton
    with ikp.triton.profile(at="entry,loops") as prof:
        my_kernel[grid](x, y, n, BLOCK=1024)
    trace = prof.traces["my_kernel"][0]       # its first launch: an ikp.Trace, a lane per warp
    trace.write_perfetto("my_kernel.trace")

While the context is open, every ``@triton.jit`` kernel that Triton compiles goes through
ikp's PTX instrumenter (``ikp instrument``: a lane init and finalize per warp, a region per
loop with its trip count, instants at chosen source lines), by Triton's own compiler hook
``triton.knobs.runtime.add_stages_inspection_hook`` wrapping the ``ptx`` stage. The kernel's
signature does not change: when Triton loads an instrumented module, the context allocates
the kernel's buffer (a torch tensor on the current device) and writes its address into the
module's buffer symbol (``cuModuleGetGlobal``), so Triton's launcher, autotuning and CUDA
Graph capture work as before. At exit it waits for the device and decodes each buffer,
a trace per launch.

Triton's caches: inside the context Triton compiles every kernel anew
(``knobs.compilation.always_compile``) into a private cache directory, so instrumented
binaries never reach the user's cache. Kernels that this process compiled *before* the
context are in Triton's in-memory cache and are not recompiled unless passed as
``kernels=[...]`` (their caches are cleared at entry and at exit). Kernels compiled inside
the context stay instrumented in the in-memory cache after it, with their probes switched
off (the buffer symbol is set back to 0 at exit): pass them as ``kernels=`` to have them
compiled plain again.

Supported Triton versions: 3.6 (tested with 3.6.0 in the test suite, without a GPU: the
hook, the instrumented PTX and Triton's own ptxas on it; on a GPU by the GPU bundle).
"""

from __future__ import annotations

import ctypes
import json
import tempfile
from typing import Any, Dict, Iterable, List, Optional, Tuple

from . import Layout, Trace, _ikp, decode_launches

__all__ = ["SUPPORTED_TRITON", "instrument", "profile"]

#: Triton versions (major.minor) whose compiler hooks this module uses as they are.
SUPPORTED_TRITON = ("3.6",)


def instrument(ptx: str, at: str = "entry,loops") -> Tuple[str, Dict[str, Any]]:
    """Instruments a PTX module: the new PTX and the probe manifest (a dict; see
    ``ikp_host::instrument::Manifest``'s ``# Format``)."""
    out, manifest = _ikp.instrument_ptx(ptx, at)
    return out, json.loads(manifest)


class _Driver:
    """The two CUDA driver calls the context needs, through ctypes (no extra dependency)."""

    def __init__(self) -> None:
        lib = ctypes.CDLL("libcuda.so.1")
        self.get_global = lib.cuModuleGetGlobal_v2
        self.get_global.argtypes = [
            ctypes.POINTER(ctypes.c_uint64),
            ctypes.POINTER(ctypes.c_size_t),
            ctypes.c_void_p,
            ctypes.c_char_p,
        ]
        self.copy = lib.cuMemcpyHtoD_v2
        self.copy.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
        self.read = lib.cuMemcpyDtoH_v2
        self.read.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]

    def set_pointer(self, module: int, symbol: str, value: int) -> None:
        """Points the symbol at the buffer at ``value`` (0: probes off): the buffer's address,
        then its header's words 1 to n - 1, read back from the buffer (ikp_host::instrument::
        symbol_words: the probes read their layout from the constant bank)."""
        ptr, size = ctypes.c_uint64(), ctypes.c_size_t()
        rc = self.get_global(ctypes.byref(ptr), ctypes.byref(size), ctypes.c_void_p(module), symbol.encode())
        n = size.value // 8
        if rc != 0 or n < 2 or size.value % 8:
            raise RuntimeError(f"ikp.triton: cuModuleGetGlobal({symbol}) failed (CUresult {rc}, {size.value} bytes)")
        words = (ctypes.c_uint64 * n)()
        if value:
            rc = self.read(ctypes.byref(words), value, size.value)
            if rc != 0:
                raise RuntimeError(f"ikp.triton: cuMemcpyDtoH of the buffer header for {symbol} failed (CUresult {rc})")
        words[0] = value
        rc = self.copy(ptr.value, ctypes.byref(words), size.value)
        if rc != 0:
            raise RuntimeError(f"ikp.triton: cuMemcpyHtoD to {symbol} failed (CUresult {rc})")


def _triton():
    import triton

    version = ".".join(triton.__version__.split(".")[:2])
    if version not in SUPPORTED_TRITON:
        raise RuntimeError(
            f"ikp.triton supports Triton {', '.join(SUPPORTED_TRITON)}; this is Triton {triton.__version__}"
        )
    return triton


class profile:
    """Context manager: instrument the Triton kernels compiled inside it and collect their
    traces (see the module's documentation).

    ``at``: the probes, as ``ikp instrument --at`` takes them. ``records_per_warp``: records
    each warp may write per launch before it drops (and counts) the rest.
    ``max_blocks``: blocks per launch that record (later blocks run unrecorded).
    ``launches``: launches of each kernel recorded (one buffer segment each; later ones
    run unrecorded). ``kernels``: JIT functions compiled before the context, to recompile.
    """

    def __init__(
        self,
        at: str = "entry,loops",
        *,
        records_per_warp: int = 256,
        max_blocks: int = 1024,
        launches: int = 16,
        kernels: Iterable[Any] = (),
    ) -> None:
        self.at = at
        self.records_per_warp = records_per_warp
        self.max_blocks = max_blocks
        self.launches = launches
        self.kernels = list(kernels)
        #: Per kernel name: its probe manifest entry (filled as Triton compiles).
        self.manifests: Dict[str, Dict[str, Any]] = {}
        #: Per kernel name: a decoded trace per launch recorded (filled at exit).
        self.traces: Dict[str, List[Trace]] = {}
        self._buffers: Dict[str, Tuple[Any, List[int]]] = {}
        self._driver: Optional[_Driver] = None

    def __enter__(self) -> "profile":
        triton = _triton()
        knobs = triton.knobs
        self._saved = (
            knobs.runtime.add_stages_inspection_hook,
            knobs.compilation.always_compile,
            knobs.cache.dir,
        )
        self._cache = tempfile.TemporaryDirectory(prefix="ikp-triton-")
        knobs.cache.dir = self._cache.name
        knobs.compilation.always_compile = True
        knobs.runtime.add_stages_inspection_hook = self._stages
        knobs.runtime.kernel_load_end_hook.add(self._loaded)
        self._clear_caches()
        return self

    def __exit__(self, *exc: Any) -> None:
        knobs = _triton().knobs
        hook, always, cache_dir = self._saved
        knobs.runtime.add_stages_inspection_hook = hook
        knobs.compilation.always_compile = always
        knobs.cache.dir = cache_dir
        knobs.runtime.kernel_load_end_hook.remove(self._loaded)
        self._clear_caches()
        if self._buffers:
            import torch

            torch.cuda.synchronize()
            for name, (buf, modules) in self._buffers.items():
                self.traces[name] = decode_launches(buf)
                for (module, symbol) in modules:
                    self._driver.set_pointer(module, symbol, 0)
        self._cache.cleanup()

    def _clear_caches(self) -> None:
        for k in self.kernels:
            caches = getattr(k, "device_caches", None)
            if caches is not None:
                caches.clear()

    def _stages(self, backend: Any, stages: Dict[str, Any], options: Any, language: Any, capability: Any) -> None:
        previous = self._saved[0]
        if previous is not None:
            previous(backend, stages, options, language, capability)
        make_ptx = stages["ptx"]

        def ptx(src: Any, metadata: Any) -> str:
            out, manifest = instrument(make_ptx(src, metadata), self.at)
            for k in manifest["kernels"]:
                self.manifests[k["name"]] = k
            return out

        stages["ptx"] = ptx

    def _loaded(self, module: Any, function: Any, name: str, metadata_group: Any, hash: Any) -> None:
        k = self.manifests.get(name)
        if k is None:
            return
        if name not in self._buffers:
            import torch

            layout = Layout(
                grid=(self.max_blocks, 1, 1),
                groups_per_block=k["warps_per_block"] or 1,
                records_per_lane=self.records_per_warp,
                regions=k["regions"],
                counters=k["counters"],
                epochs=self.launches,
            )
            # int64: every torch version copies it to the device; ikp.decode reads it.
            buf = torch.from_numpy(layout.buffer().view("<i8")).cuda()
            self._buffers[name] = (buf, [])
        if self._driver is None:
            self._driver = _Driver()
        buf, modules = self._buffers[name]
        self._driver.set_pointer(int(module), k["symbol"], buf.data_ptr())
        modules.append((int(module), k["symbol"]))
