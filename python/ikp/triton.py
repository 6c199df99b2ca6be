"""Profile Triton kernels without editing them: ikp probes written into their PTX.

    import ikp.triton
    with ikp.triton.profile(at="entry,loops") as prof:
        my_kernel[grid](x, y, n, BLOCK=1024)
    trace = prof.traces["my_kernel"][0]       # its first launch: an ikp.Trace, a lane per warp
    trace.write_perfetto("my_kernel.trace")

A ``torch.compile``d model works as it is, compiled before the context or not::

    with ikp.triton.profile() as prof:
        out = compiled_model(x)               # Inductor's Triton kernels, traced

How: while the context is open, every Triton kernel compiled in this process goes through
ikp's PTX instrumenter (``ikp instrument``: a lane init and finalize per warp, a region per
loop with its trip count, instants at chosen source lines), by Triton's compiler hook
``triton.knobs.runtime.add_stages_inspection_hook`` wrapping the ``ptx`` stage. The kernel's
signature does not change: when Triton loads an instrumented module
(``kernel_load_end_hook``), the context gives that compiled variant a buffer of its own
(a torch tensor on the current device, laid out for *its* warps per block) and writes the
buffer's address into the module (:class:`_CudaDevice`, the one place that does), so
Triton's launcher, autotuning and CUDA Graph capture work as before. Launches are counted
by ``launch_enter_hook``. At exit it waits for the device and decodes each buffer, a trace
per launch.

What it sees, and what it says about what it does not:

- **Variants.** Each compiled variant of a kernel (autotuning configurations, num_warps,
  specializations) records into its own buffer and decodes as its own traces: a kernel
  compiled once is named by its name (``traces["k"]``); a kernel compiled in several
  variants gets one entry each, named by its configuration
  (``traces["k[BLOCK=128, num_warps=4, num_stages=3]"]``). :attr:`profile.variants`
  lists them all, with their configuration and launch counts.
- **Kernels compiled before the context.** A ``@triton.jit`` kernel (autotuned or not)
  launched inside the context is compiled anew for it: the context gives each JIT function
  it launches fresh compile caches (Triton's in-memory ones; its disk cache is moved to a
  private directory) and puts the old ones back at exit, so the plain binaries are used
  again after it and the instrumented ones are dropped. :attr:`profile.recompiled` names
  the kernels this happened to. An autotuned kernel tuned before the context keeps its
  choice: only the chosen configuration is recompiled.
- **torch.compile.** When torch is imported, the context sets what Inductor needs to
  compile in this process while it is open, and puts it back at exit:
  ``torch._inductor.config.compile_threads = 1`` (compile here, where the hook is, not in
  worker processes), its caches off (``force_disable_caches``, the FX graph cache, the
  autotuning caches: a cached model loads its kernels without compiling them), its static
  CUDA launcher off (it loads kernels without Triton's load hook); and it resets Dynamo
  (``torch._dynamo.reset()``) and Inductor's in-memory kernel caches at entry and at
  exit, so a model compiled before the context is compiled again inside it and plain
  again after it. Where torch has no such setting, the context refuses with a message
  naming what to set (``inductor=False`` leaves torch alone).
- **What it cannot see** is said at exit, by a :class:`NotTracedWarning`, and kept in
  :attr:`profile.untraced` (kernel name -> launches): kernels launched in the context
  without a trace (compiled before it outside Triton's JIT, e.g. by a
  ``CompiledKernel`` held elsewhere, or compiled in another process). A buffer that
  cannot be decoded is reported in :attr:`profile.errors` and in the warning, beside the
  other kernels' traces, never instead of them. Launches past ``launches`` per variant run
  unrecorded (:attr:`Variant.launches` counts them all).

Supported Triton versions: 3.6 (tested with 3.6.0 in the test suite, without a GPU: the
hooks, the instrumented PTX and Triton's own ptxas on it, autotuned variants; on a GPU by
the GPU bundle).
"""

from __future__ import annotations

import collections
import ctypes
import importlib
import json
import sys
import tempfile
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import IkpError, Layout, Trace, _ikp, decode_launches

__all__ = ["SUPPORTED_TRITON", "NotTracedWarning", "Variant", "instrument", "profile"]

#: Triton versions (major.minor) whose compiler hooks this module uses as they are.
SUPPORTED_TRITON = ("3.6",)


class NotTracedWarning(UserWarning):
    """Said at the exit of :class:`profile`: kernels launched in the context without a
    trace, and buffers that could not be decoded."""


def instrument(ptx: str, at: str = "entry,loops") -> Tuple[str, Dict[str, Any]]:
    """Instruments a PTX module: the new PTX and the probe manifest (a dict; see
    ``ikp_host::instrument::Manifest``'s ``# Format``)."""
    out, manifest = _ikp.instrument_ptx(ptx, at)
    return out, json.loads(manifest)


@dataclass
class Variant:
    """One compiled variant of a kernel in a :class:`profile` context."""

    #: The kernel's name (its PTX entry).
    kernel: str
    #: What distinguishes it: the constexprs Triton's JIT compiled it with (where known)
    #: and its compile options (``num_warps``, ``num_stages``, ``num_ctas`` when not 1,
    #: ``maxnreg`` when set).
    config: Dict[str, Any]
    #: Triton's hash of the compiled kernel.
    hash: str
    #: The probe manifest of the kernel (``ikp instrument``'s, warps per block included).
    manifest: Dict[str, Any]
    #: Its name in :attr:`profile.traces`: the kernel's name alone when the context
    #: compiled it once, ``name[config]`` when several times (set at exit).
    label: str = ""
    #: Launches seen in the context (the first ``launches`` of them recorded).
    launches: int = 0
    #: A decoded trace per recorded launch (filled at exit).
    traces: List[Trace] = field(default_factory=list)
    #: Why its buffer could not be decoded (``None``: it was, or it never ran).
    error: Optional[str] = None
    _buffer: Any = None
    _modules: List[int] = field(default_factory=list)

    def describe(self) -> str:
        """``name[k=v, ...]``: the kernel and its configuration."""
        return f"{self.kernel}[{', '.join(f'{k}={v}' for k, v in self.config.items())}]"


class _Driver:
    """The two CUDA driver calls the device side needs, through ctypes (no extra
    dependency)."""

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
        """Points the symbol at the buffer at ``value`` (0: probes off): the words
        ``_ikp.symbol_words`` lays out from the buffer's address and its header's first
        words, read back from the buffer (the probes read their layout from the constant
        bank)."""
        ptr, size = ctypes.c_uint64(), ctypes.c_size_t()
        rc = self.get_global(ctypes.byref(ptr), ctypes.byref(size), ctypes.c_void_p(module), symbol.encode())
        header = (ctypes.c_uint64 * _ikp.SYMBOL_HEADER_WORDS)()
        if rc == 0 and value:
            rc = self.read(ctypes.byref(header), value, ctypes.sizeof(header))
            if rc != 0:
                raise RuntimeError(f"ikp.triton: cuMemcpyDtoH of the buffer header for {symbol} failed (CUresult {rc})")
        words = symbol_bytes(value, list(header), size.value) if rc == 0 else None
        if words is None:
            raise RuntimeError(
                f"ikp.triton: cuModuleGetGlobal({symbol}) failed (CUresult {rc}, {size.value} bytes): "
                "was the module instrumented by this ikp?"
            )
        rc = self.copy(ptr.value, words, len(words))
        if rc != 0:
            raise RuntimeError(f"ikp.triton: cuMemcpyHtoD to {symbol} failed (CUresult {rc})")


def symbol_bytes(buffer: int, header: List[int], size: int) -> Optional[bytes]:
    """What goes into a buffer symbol of `size` bytes for the buffer at `buffer` whose
    header starts with `header` (``_ikp.symbol_words``, little-endian), or None when the
    symbol is not the size this ikp's probes declare (a module instrumented by another
    ikp)."""
    words = _ikp.symbol_words(buffer, header)
    if size != 8 * len(words):
        return None
    return b"".join(w.to_bytes(8, "little") for w in words)


class _CudaDevice:
    """Everything the context does on the device, in one place: a variant's buffer, its
    attachment to a loaded module (the address written into the module's buffer symbol)
    and detachment, the wait for the device, the copy back. Tests put a fake in its place
    (``profile._device``)."""

    def __init__(self) -> None:
        self._driver: Optional[_Driver] = None

    def alloc(self, layout: Layout) -> Any:
        import torch

        # int64: every torch version copies it to the device; ikp.decode reads it.
        return torch.from_numpy(layout.buffer().view("<i8")).cuda()

    def attach(self, module: int, kernel: Dict[str, Any], buffer: Any) -> None:
        """Points the instrumented kernel `kernel` (a manifest entry) of the loaded
        `module` at `buffer`."""
        if self._driver is None:
            self._driver = _Driver()
        self._driver.set_pointer(module, kernel["symbol"], buffer.data_ptr())

    def detach(self, module: int, kernel: Dict[str, Any]) -> None:
        """Switches the kernel's probes off (a null buffer): it runs unrecorded."""
        if self._driver is not None:
            self._driver.set_pointer(module, kernel["symbol"], 0)

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize()

    def read(self, buffer: Any) -> Any:
        return buffer


# Inductor's settings the context needs while it is open: (attribute of
# torch._inductor.config, value inside the context, required). Each one present is set and
# put back at exit; a required one missing makes the context refuse.
_INDUCTOR_SETTINGS: Tuple[Tuple[str, Any, bool], ...] = (
    # Compile in this process, where the hook is, not in a pool of worker processes.
    ("compile_threads", 1, True),
    # A cached model loads its compiled kernels instead of compiling them.
    ("force_disable_caches", True, False),
    ("fx_graph_cache", False, False),
    ("fx_graph_remote_cache", False, False),
    ("autotune_local_cache", False, False),
    ("autotune_remote_cache", False, False),
    ("bundled_autotune_remote_cache", False, False),
    # Inductor's own launcher loads cubins without Triton's kernel_load_end_hook.
    ("use_static_cuda_launcher", False, False),
)
# Called at entry and at exit where present: compiled frames and in-memory kernel caches,
# so a model compiled before the context compiles again inside it, and plainly after it.
_INDUCTOR_RESETS = (
    ("torch._dynamo", "reset"),
    ("torch._inductor.codecache", "PyCodeCache.cache_clear"),
    ("torch._inductor.async_compile", "CompiledTritonKernels.cache_clear"),
)


class _Inductor:
    """Inductor's settings for the context: set at entry, put back at exit."""

    def __init__(self) -> None:
        self._saved: List[Tuple[Any, str, Any]] = []
        self.active = False

    def enter(self) -> None:
        if "torch" not in sys.modules:
            return  # no torch.compile without torch
        try:
            config = importlib.import_module("torch._inductor.config")
        except ImportError:
            return  # a torch without Inductor
        what = "; ".join(f"torch._inductor.config.{a} = {v!r}" for a, v, _ in _INDUCTOR_SETTINGS)
        for attr, value, required in _INDUCTOR_SETTINGS:
            if not hasattr(config, attr):
                if required:
                    self.exit(reset=False)
                    raise RuntimeError(
                        f"ikp.triton.profile: this torch's Inductor has no config.{attr}, so the "
                        "context cannot make it compile in this process, where ikp's hook is. "
                        f"Set what it needs yourself before torch.compile runs ({what}, as far "
                        "as they exist) and pass inductor=False"
                    )
                continue
            old = getattr(config, attr)
            try:
                setattr(config, attr, value)
                took = getattr(config, attr) == value
            except Exception as e:  # noqa: BLE001 (a config that refuses the value)
                took, old = False, (old, e)
            if not took:
                self.exit(reset=False)
                raise RuntimeError(
                    f"ikp.triton.profile: torch._inductor.config.{attr} did not take {value!r} "
                    f"(it holds {getattr(config, attr)!r}). Set it yourself before torch.compile "
                    f"runs ({what}) and pass inductor=False"
                )
            self._saved.append((config, attr, old))
        self.active = True
        self._reset()

    def exit(self, reset: bool = True) -> None:
        while self._saved:
            config, attr, old = self._saved.pop()
            setattr(config, attr, old)
        if reset and self.active:
            self._reset()
        self.active = False

    @staticmethod
    def _reset() -> None:
        for module, path in _INDUCTOR_RESETS:
            # A module not imported holds nothing compiled.
            obj: Any = sys.modules.get(module)
            for part in path.split("."):
                obj = getattr(obj, part, None)
            if callable(obj):
                obj()


def _triton():
    import triton

    version = ".".join(triton.__version__.split(".")[:2])
    if version not in SUPPORTED_TRITON:
        raise RuntimeError(
            f"ikp.triton supports Triton {', '.join(SUPPORTED_TRITON)}; this is Triton {triton.__version__}"
        )
    return triton


def _scalar(v: Any) -> bool:
    return isinstance(v, (bool, int, float, str))


# The context open in this process (one at a time: the hooks are process-wide).
_ACTIVE: List["profile"] = []


class profile:
    """Context manager: instrument the Triton kernels compiled inside it and collect their
    traces (see the module's documentation).

    ``at``: the probes, as ``ikp instrument --at`` takes them (``"entry,loops,lanes=block"``
    for a lane per program, recorded by its first warp: on kernels of many short programs
    the other warps then run past the probes). ``records_per_warp``: records each lane may
    write per launch before it drops (and counts) the rest.
    ``max_blocks``: blocks per launch that record (later blocks run unrecorded).
    ``launches``: launches of each variant recorded (one buffer segment each; later ones
    run unrecorded). ``inductor``: set what torch.compile needs while the context is open
    (when torch is imported). ``kernels``: JIT functions to give fresh compile caches at
    entry (every JIT function launched inside gets them anyway).
    """

    def __init__(
        self,
        at: str = "entry,loops",
        *,
        records_per_warp: int = 256,
        max_blocks: int = 1024,
        launches: int = 16,
        inductor: bool = True,
        kernels: Any = (),
    ) -> None:
        self.at = at
        self.records_per_warp = records_per_warp
        self.max_blocks = max_blocks
        self.launches = launches
        self.inductor = inductor
        self.kernels = list(kernels)
        #: Per kernel name: its probe manifest entry (the last variant compiled).
        self.manifests: Dict[str, Dict[str, Any]] = {}
        #: Every variant compiled in the context, in order.
        self.variants: List[Variant] = []
        #: Per variant label: a decoded trace per launch recorded (filled at exit).
        self.traces: Dict[str, List[Trace]] = {}
        #: Per variant label: why its buffer could not be decoded (filled at exit).
        self.errors: Dict[str, str] = {}
        #: Kernel name -> launches in the context that no trace recorded (filled as they
        #: launch; said at exit).
        self.untraced: Dict[str, int] = {}
        #: Names of the JIT kernels compiled before the context and compiled again in it.
        self.recompiled: List[str] = []
        self._device: Any = _CudaDevice()
        self._by_hash: Dict[Tuple[str, str], Variant] = {}
        self._functions: Dict[int, Variant] = {}
        self._swapped: Dict[int, Tuple[Any, Any]] = {}
        self._tls = threading.local()
        self._inductor = _Inductor()
        self._restore: List[Callable[[], None]] = []

    # -- entry and exit ------------------------------------------------------------------

    def __enter__(self) -> "profile":
        triton = _triton()
        if _ACTIVE:
            raise RuntimeError("ikp.triton.profile: a profile context is already open in this process")
        knobs = triton.knobs
        rt = knobs.runtime
        if self.inductor:
            self._inductor.enter()
        _ACTIVE.append(self)
        self._cache = tempfile.TemporaryDirectory(prefix="ikp-triton-")
        saved = (rt.add_stages_inspection_hook, rt.jit_cache_hook, knobs.compilation.always_compile, knobs.cache.dir)
        self._previous_stages, self._previous_jit = saved[0], saved[1]

        def restore_knobs() -> None:
            rt.add_stages_inspection_hook, rt.jit_cache_hook = saved[0], saved[1]
            knobs.compilation.always_compile, knobs.cache.dir = saved[2], saved[3]
            rt.kernel_load_end_hook.remove(self._loaded)
            rt.launch_enter_hook.remove(self._launched)

        self._restore.append(restore_knobs)
        knobs.cache.dir = self._cache.name
        knobs.compilation.always_compile = True
        rt.add_stages_inspection_hook = self._stages
        rt.jit_cache_hook = self._jit_compiling
        rt.kernel_load_end_hook.add(self._loaded)
        rt.launch_enter_hook.add(self._launched)
        # Every JIT function launched inside gets fresh compile caches (see _fresh_caches).
        from triton.runtime.jit import JITFunction

        original_run = JITFunction.run
        prof = self

        def run(fn: Any, *args: Any, **kwargs: Any) -> Any:
            prof._fresh_caches(fn)
            return original_run(fn, *args, **kwargs)

        JITFunction.run = run  # type: ignore[method-assign]

        def restore_run() -> None:
            JITFunction.run = original_run  # type: ignore[method-assign]

        self._restore.append(restore_run)
        for k in self.kernels:
            while not hasattr(k, "device_caches") and hasattr(k, "fn"):
                k = k.fn  # an Autotuner or Heuristics around the JIT function
            self._fresh_caches(k)
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            while self._restore:
                self._restore.pop()()
            for fn, caches in self._swapped.values():
                fn.device_caches = caches
            self._swapped.clear()
            self._collect()
        finally:
            self._inductor.exit()
            _ACTIVE.remove(self)
            self._cache.cleanup()
        self._warn()

    def _collect(self) -> None:
        """Waits for the device, decodes each variant's buffer (one failing is reported,
        not raised), switches the probes off and names the variants."""
        per_kernel = collections.Counter(v.kernel for v in self.variants)
        labels: Dict[str, int] = collections.Counter()
        for v in self.variants:
            label = v.kernel if per_kernel[v.kernel] == 1 else v.describe()
            labels[label] += 1
            v.label = label if labels[label] == 1 else f"{label}@{v.hash[:8]}"
        if any(v._buffer is not None for v in self.variants):
            self._device.synchronize()
        for v in self.variants:
            if v._buffer is None:
                continue
            try:
                v.traces = decode_launches(self._device.read(v._buffer))
            except IkpError as e:
                v.error = str(e)
                self.errors[v.label] = v.error
            for module in v._modules:
                self._device.detach(module, v.manifest)
            self.traces[v.label] = v.traces

    def _warn(self) -> None:
        lines = []
        if self.untraced:
            names = ", ".join(f"{n} ({c} launch{'es' if c > 1 else ''})" for n, c in sorted(self.untraced.items()))
            lines.append(
                f"kernels launched without a trace: {names}. They were compiled before the context "
                "outside Triton's JIT (a CompiledKernel held elsewhere; a torch.compile model with "
                "inductor=False) or in another process; compile them inside the context"
            )
        for label, e in self.errors.items():
            lines.append(f"{label}: its buffer could not be decoded ({e}); the other kernels' traces are kept")
        if lines:
            warnings.warn("ikp.triton.profile: " + "\n".join(lines), NotTracedWarning, stacklevel=3)

    # -- Triton's hooks ------------------------------------------------------------------

    def _fresh_caches(self, fn: Any) -> None:
        """Gives the JIT function `fn` empty compile caches for the context (the first time
        it is seen), so its kernels compile, instrumented, even where they were compiled
        before; its own caches come back at exit."""
        if id(fn) in self._swapped or not hasattr(fn, "device_caches"):
            return
        caches = fn.device_caches
        self._swapped[id(fn)] = (fn, caches)
        if any(entry[0] for entry in caches.values()):
            self.recompiled.append(getattr(fn, "__name__", None) or repr(fn))
        fn.device_caches = collections.defaultdict(fn.create_binder)

    def _jit_compiling(self, **kw: Any) -> Any:
        """Triton's ``jit_cache_hook`` (before a JIT compile): keeps the constexprs of the
        compile about to run, to name its variant."""
        previous = self._previous_jit
        result = previous(**kw) if previous is not None else None
        if result:
            return result  # the previous hook skips this compile
        try:
            names = kw["fn"].jit_function.arg_names
            constants = kw["compile"].get("constants") or {}
            self._tls.constants = {
                names[path[0]]: value
                for path, value in constants.items()
                if len(path) == 1 and path[0] < len(names) and _scalar(value)
            }
        except (AttributeError, KeyError, TypeError, IndexError):
            self._tls.constants = {}
        return result

    def _stages(self, backend: Any, stages: Dict[str, Any], options: Any, language: Any, capability: Any) -> None:
        previous = self._previous_stages
        if previous is not None:
            previous(backend, stages, options, language, capability)
        make_ptx = stages["ptx"]

        def ptx(src: Any, metadata: Any) -> str:
            out, manifest = instrument(make_ptx(src, metadata), self.at)
            constants = getattr(self._tls, "constants", None) or {}
            self._tls.constants = {}
            config = dict(constants)
            config["num_warps"] = metadata.get("num_warps")
            config["num_stages"] = metadata.get("num_stages")
            if metadata.get("num_ctas", 1) != 1:
                config["num_ctas"] = metadata["num_ctas"]
            if metadata.get("maxnreg") is not None:
                config["maxnreg"] = metadata["maxnreg"]
            for k in manifest["kernels"]:
                self.manifests[k["name"]] = k
                v = Variant(kernel=k["name"], config=config, hash=str(metadata.get("hash", "")), manifest=k)
                self._by_hash[(v.hash, v.kernel)] = v
                self.variants.append(v)
            return out

        stages["ptx"] = ptx

    def _loaded(self, module: Any, function: Any, name: str, metadata_group: Any, hash: Any) -> None:
        """Triton's ``kernel_load_end_hook``: an instrumented variant gets its buffer."""
        v = self._by_hash.get((str(hash), name))
        if v is None:
            return
        if v._buffer is None:
            layout = Layout(
                grid=(self.max_blocks, 1, 1),
                # A lane per warp, or per block (at="...,lanes=block": its first warp records).
                groups_per_block=1 if v.manifest.get("lanes") == "block" else v.manifest["warps_per_block"] or 1,
                records_per_lane=self.records_per_warp,
                regions=v.manifest["regions"],
                counters=v.manifest["counters"],
                epochs=self.launches,
            )
            v._buffer = self._device.alloc(layout)
        self._device.attach(int(module), v.manifest, v._buffer)
        v._modules.append(int(module))
        self._functions[int(function)] = v

    def _launched(self, metadata: Any) -> None:
        """Triton's ``launch_enter_hook``: counts the launch against its variant, or as
        untraced."""
        data = getattr(metadata, "data", metadata) or {}
        v = self._functions.get(int(data.get("function") or 0))
        if v is not None:
            v.launches += 1
        else:
            name = str(data.get("name", "?"))
            self.untraced[name] = self.untraced.get(name, 0) + 1
