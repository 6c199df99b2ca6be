"""ikp.triton without a GPU: Triton's own compiler, with ikp's hook on, instruments the
tutorial-style kernels of scripts/triton-ptx-fixtures.py (compiled for sm_90 from their
Python source, as the fixtures are), Triton's ptxas assembles the result, and the hook
leaves the user's Triton settings as it found them. Triton's JIT path (an autotuned kernel
over several num_warps, a kernel compiled before the context) runs with a stand-in driver
(compiles without launching); the loads, launches and the buffers' contents that a GPU
would give are played by hand into the context's hooks, through a stand-in for its device
side. Inductor's settings are checked on a stand-in torch. Needs Triton (the test command
installs python/requirements-triton.txt); the kernels' runs on a GPU are the GPU bundle's."""

import importlib.util
import json
import os
import sys
import types
import warnings

import pytest

triton = pytest.importorskip("triton")

import ikp  # noqa: E402
import ikp.triton  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "host", "tests", "ptx", "triton", "fixtures.json")


def fixture_script():
    spec = importlib.util.spec_from_file_location(
        "triton_ptx_fixtures", os.path.join(ROOT, "scripts", "triton-ptx-fixtures.py")
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def compile_for_sm90(mod, name):
    from triton.backends.compiler import GPUTarget

    target = GPUTarget("cuda", 90, 32)
    backend = triton.compiler.make_backend(target)
    for fname, fn, fargs, opts, *_ in mod.fixtures():
        if fname != name:
            continue
        src = mod.ast_source(fn, fargs)[0]
        options = backend.parse_options(dict(opts)).__dict__
        return triton.compile(src, target=target, options=options)
    raise KeyError(name)


def triton_settings():
    """What the context changes in Triton while it is open."""
    from triton.runtime.jit import JITFunction

    knobs = triton.knobs
    rt = knobs.runtime
    return (
        rt.add_stages_inspection_hook,
        rt.jit_cache_hook,
        knobs.compilation.always_compile,
        knobs.cache.dir,
        list(rt.kernel_load_end_hook.calls),
        list(rt.launch_enter_hook.calls),
        JITFunction.run,
    )


def test_supported_version_is_the_installed_one():
    assert ".".join(triton.__version__.split(".")[:2]) in ikp.triton.SUPPORTED_TRITON


@pytest.mark.parametrize("name", ["add_kernel", "layer_norm_fwd_kernel", "matmul_kernel"])
def test_the_hook_instruments_what_triton_compiles(name):
    mod = fixture_script()
    known = json.load(open(FIXTURES))["files"][f"{name}.ptx"]
    before = triton_settings()
    with ikp.triton.profile() as prof:
        k = compile_for_sm90(mod, name)
    assert triton_settings() == before
    ptx = k.asm["ptx"]
    words = len(ikp._ikp.symbol_words(0, []))  # the symbol set_pointer writes
    assert f".visible .const .align 16 .u64 ikp_buf_{name}[{words}]" in ptx
    assert len(k.asm["cubin"]) > 0  # Triton's ptxas assembled the instrumented PTX
    m = prof.manifests[name]
    assert m["warps_per_block"] == known["num_warps"]
    assert len(m["regions"]) == len(known["loops"])
    assert all(r.endswith(" loop") for r in m["regions"])
    assert m["counters"] == [r + " trips" for r in m["regions"]]
    # Nothing was launched: no buffer, no trace.
    assert prof.traces == {}
    # Outside the context Triton compiles the plain kernel again.
    plain = compile_for_sm90(mod, name)
    assert "ikp_buf_" not in plain.asm["ptx"]


def test_the_buffer_symbol_holds_the_buffers_layout_worked_out():
    """What ``set_pointer`` writes into a kernel's buffer symbol: the lanes' addresses and
    counts the probes read (``_ikp.symbol_words``), from the buffer's header; zeros for a
    null buffer (probes off); refused for a symbol of another size (another ikp's probes)."""
    layout = ikp.Layout(grid=(3,), groups_per_block=2, records_per_lane=8, epochs=2)
    header = [int(w) for w in layout.header_words()[: ikp._ikp.SYMBOL_HEADER_WORDS]]
    buf = 0x7F0000001000
    data = ikp.triton.symbol_bytes(buf, header, 48)
    words = [int.from_bytes(data[i : i + 8], "little") for i in range(0, 48, 8)]
    lanes_at = buf + 8 * layout.lane_base
    assert words == [
        lanes_at,
        lanes_at + 8 * (4 + 8 + 2),  # lane 0's count word: past its prologue and records
        buf + 8 * (layout.lane_base - layout.lane_count),  # a launch counter a lane
        8 << 32 | 8 * layout.lane_stride,
        2 << 32 | layout.lane_count,
        2,
    ]
    assert ikp.triton.symbol_bytes(0, header, 48) == bytes(48)
    assert ikp.triton.symbol_bytes(buf, header, 64) is None


def test_set_pointer_writes_the_symbol_through_the_driver():
    """``_Driver.set_pointer`` with the driver's three calls played by hand (ctypes
    arguments as the real ones get them): the header read back from the buffer, the
    symbol's words written; a symbol of another size is refused, naming it."""
    import ctypes

    layout = ikp.Layout(grid=(3,), groups_per_block=2, records_per_lane=8, epochs=2)
    header = [int(w) for w in layout.header_words()]
    buf, sym = 0x7F0000001000, 0x7F00000F0000
    written = {}

    def driver(symbol_bytes):
        d = ikp.triton._Driver.__new__(ikp.triton._Driver)

        def get_global(ptr, size, module, name):
            ptr._obj.value, size._obj.value = sym, symbol_bytes
            return 0

        def read(dst, src, n):
            assert src == buf
            ctypes.memmove(dst._obj, (ctypes.c_uint64 * len(header))(*header), n)
            return 0

        def copy(dst, data, n):
            written[dst] = bytes(data[:n])
            return 0

        d.get_global, d.read, d.copy = get_global, read, copy
        return d

    driver(48).set_pointer(1, "ikp_buf_k", buf)
    want = ikp._ikp.symbol_words(buf, header[: ikp._ikp.SYMBOL_HEADER_WORDS])
    assert written[sym] == b"".join(w.to_bytes(8, "little") for w in want)
    assert want[0] == buf + 8 * layout.lane_base
    driver(48).set_pointer(1, "ikp_buf_k", 0)
    assert written[sym] == bytes(48)
    with pytest.raises(RuntimeError, match="ikp_buf_k.*instrumented by this ikp"):
        driver(64).set_pointer(1, "ikp_buf_k", buf)


def test_instrument_refuses_with_the_line():
    with pytest.raises(ikp.IkpError, match=r"PTX line \d+: .*brx.idx"):
        ikp.triton.instrument(
            ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r<2>;\nbrx.idx %r1, $T;\nret;\n}\n"
        )


# --- Triton's JIT path with a stand-in driver --------------------------------------------

import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.runtime.jit import MockTensor  # noqa: E402


class StandInDriver:
    """What JITFunction.run needs of the driver to compile (warmup) without a GPU."""

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)


class TorchDtype:
    """Passes for a torch dtype in Triton's MockTensor (its type's name and module)."""

    __module__ = "torch"

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


TorchDtype.__name__ = "dtype"


def f32():
    return MockTensor(TorchDtype("float32"))


@pytest.fixture
def jit_driver():
    from triton.runtime import driver

    saved = driver._active
    driver.set_active(StandInDriver())
    yield
    driver._active = saved


WARPS = (2, 4, 8)


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=w) for w in WARPS], key=["n"])
@triton.jit
def scaled_copy(x, y, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    for i in range(0, n, BLOCK):
        offs = pid * n + i + tl.arange(0, BLOCK)
        tl.store(y + offs, tl.load(x + offs) * 2.0)


@triton.jit
def warm_copy(x, y, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    for i in range(0, n, BLOCK):
        offs = pid * n + i + tl.arange(0, BLOCK)
        tl.store(y + offs, tl.load(x + offs))


class StandInDevice:
    """The context's device side (ikp.triton._CudaDevice) in host memory: buffers are
    numpy arrays the test writes records into, as the kernels would."""

    def __init__(self):
        self.layouts = []
        self.attached = {}
        self.detached = []
        self.synchronized = 0

    def alloc(self, layout):
        buf = layout.buffer()
        self.layouts.append((layout, buf))
        return buf

    def attach(self, module, kernel, buffer):
        self.attached[module] = (kernel["symbol"], buffer)

    def detach(self, module, kernel):
        self.detached.append((module, kernel["symbol"]))

    def synchronize(self):
        self.synchronized += 1

    def read(self, buffer):
        return buffer


LANE_MARK = 0x494B50 << 40


def record_launch(layout, buf, init=True):
    """One launch as ikp's probes write it, with records_per_warp=4: each lane (warp)
    inits, spans region 0 for 100 ns, finalizes. `init=False`: the lanes hold records but
    never ran init (what a variant writing into another's layout left)."""
    buf[layout.header_len] = 1
    for lane in range(layout.lane_count):
        seg = layout.lane_base + lane * layout.lane_stride
        t0 = 1_000_000 + 10 * lane
        if init:
            buf[seg : seg + 3] = [t0, 5_000 + lane, LANE_MARK]
        buf[seg + 4] = ((t0 + 10) << 32) | 0
        buf[seg + 5] = ((t0 + 110) << 32) | 1
        buf[seg + 8 : seg + 11] = [t0 + 200, 6_000, 2]


def test_autotuned_variants_record_and_decode_each_on_their_own(jit_driver):
    """Triton's autotuner compiles scaled_copy once per num_warps (2, 4, 8): each variant
    gets a layout of its own warps, decodes as its own trace named by its configuration;
    one variant's undecodable buffer is reported beside the others' traces; a launched
    kernel ikp did not compile is named at exit."""
    device = StandInDevice()
    before = triton_settings()
    blocks = 2
    with pytest.warns(ikp.triton.NotTracedWarning) as said:
        with ikp.triton.profile(records_per_warp=4, max_blocks=blocks, launches=2) as prof:
            prof._device = device
            compiled = scaled_copy.warmup(f32(), f32(), 1024, grid=(1,))
            assert [k.metadata.num_warps for k in compiled] == list(WARPS)
            # What Triton does on the GPU: load each variant, then launch it (the 8-warp
            # variant twice), and a kernel ikp did not compile.
            for i, k in enumerate(compiled):
                assert "ikp_buf_scaled_copy" in k.asm["ptx"]
                prof._loaded(1000 + i, 2000 + i, k.name, None, k.hash)
            for i in (0, 1, 2, 2):
                prof._launched({"name": "scaled_copy", "function": 2000 + i, "stream": 0})
            prof._launched({"name": "compiled_elsewhere", "function": 99, "stream": 0})
            layouts = {layout.groups_per_block: (layout, buf) for layout, buf in device.layouts}
            assert sorted(layouts) == list(WARPS)
            record_launch(*layouts[2])
            record_launch(*layouts[4], init=False)
            record_launch(*layouts[8])
    assert triton_settings() == before
    labels = [v.label for v in prof.variants]
    assert labels == [f"scaled_copy[BLOCK=128, num_warps={w}, num_stages=3]" for w in WARPS]
    assert [v.manifest["warps_per_block"] for v in prof.variants] == list(WARPS)
    assert [v.launches for v in prof.variants] == [1, 1, 2]
    ok2, bad4, ok8 = labels
    for label, warps in ((ok2, 2), (ok8, 8)):
        (trace,) = prof.traces[label]
        assert len(trace.lanes()["id"]) == blocks * warps
        assert trace.spans()["region"].tolist() == [0] * (blocks * warps)
    assert prof.traces[bad4] == [] and list(prof.errors) == [bad4]
    assert "never ran init" in prof.errors[bad4]
    assert prof.untraced == {"compiled_elsewhere": 1}
    text = str(said[0].message)
    assert "compiled_elsewhere (1 launch)" in text and bad4 in text
    assert sorted(m for m, _ in device.detached) == [1000, 1001, 1002]
    assert device.synchronized == 1


def test_a_lane_per_block_lays_out_one_lane_a_program(jit_driver):
    """``at="...,lanes=block"``: the manifest says so, and each variant's buffer has one
    lane a block (program), whatever its num_warps."""
    device = StandInDevice()
    with ikp.triton.profile(at="entry,loops,lanes=block", records_per_warp=4, max_blocks=2) as prof:
        prof._device = device
        compiled = scaled_copy.warmup(f32(), f32(), 1024, grid=(1,))
        for i, k in enumerate(compiled):
            # Three branches past the init: the warp's vote (a block's first warp goes on),
            # then the block's tests, on its x index and on its whole index (a lane per
            # warp has these two only).
            assert k.asm["ptx"].count("bra $ikp_s_init;") == 3
            prof._loaded(1000 + i, 2000 + i, k.name, None, k.hash)
    assert [v.manifest["lanes"] for v in prof.variants] == ["block"] * len(WARPS)
    assert [v.manifest["warps_per_block"] for v in prof.variants] == list(WARPS)
    assert [layout.groups_per_block for layout, _ in device.layouts] == [1] * len(WARPS)


def test_a_kernel_compiled_before_the_context_is_compiled_again(jit_driver):
    """warm_copy compiled (warmed up) before the context is compiled anew, instrumented,
    inside it, and plain again after it: the same binary as before."""
    plain = warm_copy.warmup(f32(), f32(), 1024, BLOCK=128, grid=(1,))
    assert "ikp_buf_" not in plain.asm["ptx"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing launched untraced, nothing to say
        with ikp.triton.profile() as prof:
            probed = warm_copy.warmup(f32(), f32(), 1024, BLOCK=128, grid=(1,))
    assert "ikp_buf_warm_copy" in probed.asm["ptx"]
    assert prof.recompiled == ["warm_copy"]
    (v,) = prof.variants
    assert (v.kernel, v.label, v.config) == ("warm_copy", "warm_copy", {"BLOCK": 128, "num_warps": 4, "num_stages": 3})
    assert warm_copy.warmup(f32(), f32(), 1024, BLOCK=128, grid=(1,)) is plain


def test_one_context_at_a_time():
    with ikp.triton.profile():
        with pytest.raises(RuntimeError, match="already open"):
            with ikp.triton.profile():
                pass
    with ikp.triton.profile():
        pass


# --- Inductor's settings, on a stand-in torch ------------------------------------------


@pytest.fixture
def fake_torch(monkeypatch):
    """torch, torch._inductor.config, torch._dynamo and Inductor's in-memory caches, as far
    as the context touches them; `calls` counts the resets."""
    calls = []
    torch = types.ModuleType("torch")
    inductor = types.ModuleType("torch._inductor")
    config = types.ModuleType("torch._inductor.config")
    config.compile_threads = 8
    config.force_disable_caches = False
    config.fx_graph_cache = True
    config.fx_graph_remote_cache = None
    config.autotune_local_cache = True
    config.autotune_remote_cache = None
    config.bundled_autotune_remote_cache = None
    config.use_static_cuda_launcher = True
    dynamo = types.ModuleType("torch._dynamo")
    dynamo.reset = lambda: calls.append("dynamo.reset")
    codecache = types.ModuleType("torch._inductor.codecache")
    codecache.PyCodeCache = types.SimpleNamespace(cache_clear=lambda: calls.append("PyCodeCache.cache_clear"))
    torch._inductor, torch._dynamo, inductor.config = inductor, dynamo, config
    for name, mod in [
        ("torch", torch),
        ("torch._inductor", inductor),
        ("torch._inductor.config", config),
        ("torch._dynamo", dynamo),
        ("torch._inductor.codecache", codecache),
    ]:
        monkeypatch.setitem(sys.modules, name, mod)
    return config, calls


INDUCTOR_INSIDE = dict(
    compile_threads=1,
    force_disable_caches=True,
    fx_graph_cache=False,
    fx_graph_remote_cache=False,
    autotune_local_cache=False,
    autotune_remote_cache=False,
    bundled_autotune_remote_cache=False,
    use_static_cuda_launcher=False,
)


def inductor_values(config):
    return {k: getattr(config, k) for k in INDUCTOR_INSIDE if hasattr(config, k)}


def test_inductor_is_set_for_the_context_and_put_back(fake_torch):
    config, calls = fake_torch
    outside = inductor_values(config)
    with ikp.triton.profile():
        assert inductor_values(config) == INDUCTOR_INSIDE
        assert calls == ["dynamo.reset", "PyCodeCache.cache_clear"]
    assert inductor_values(config) == outside
    assert calls == ["dynamo.reset", "PyCodeCache.cache_clear"] * 2
    # Also when the body raises.
    with pytest.raises(ValueError):
        with ikp.triton.profile():
            raise ValueError("boom")
    assert inductor_values(config) == outside
    # inductor=False: torch is left alone.
    calls.clear()
    with ikp.triton.profile(inductor=False):
        assert inductor_values(config) == outside
    assert calls == []


def test_inductor_without_compile_threads_is_refused_naming_what_to_set(fake_torch):
    config, calls = fake_torch
    del config.compile_threads
    outside = inductor_values(config)
    before = triton_settings()
    with pytest.raises(RuntimeError, match=r"no config\.compile_threads.*torch\._inductor\.config\.compile_threads = 1.*inductor=False"):
        with ikp.triton.profile():
            pass
    assert inductor_values(config) == outside and calls == []
    assert triton_settings() == before
    with ikp.triton.profile(inductor=False):  # nothing left open
        pass


def test_an_inductor_setting_that_does_not_take_is_refused(fake_torch):
    config, _ = fake_torch

    class Locked(types.ModuleType):
        def __setattr__(self, name, value):
            if name == "fx_graph_cache":
                return  # ignored, as a config forced by the environment would
            super().__setattr__(name, value)

    locked = Locked("torch._inductor.config")
    for k, v in vars(config).items():
        if not k.startswith("__"):
            object.__setattr__(locked, k, v)
    sys.modules["torch._inductor.config"] = locked
    with pytest.raises(RuntimeError, match=r"fx_graph_cache did not take False"):
        with ikp.triton.profile():
            pass
    assert locked.compile_threads == 8  # what was set before the refusal is put back
