"""ikp.triton without a GPU: Triton's own compiler, with ikp's hook on, instruments the
tutorial-style kernels of scripts/triton-ptx-fixtures.py (compiled for sm_90 from their
Python source, as the fixtures are), Triton's ptxas assembles the result, and the hook
leaves the user's Triton settings as it found them. Needs Triton (the test command installs
python/requirements-triton.txt); the kernels' runs on a GPU are the GPU bundle's."""

import importlib.util
import json
import os

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


def test_supported_version_is_the_installed_one():
    assert ".".join(triton.__version__.split(".")[:2]) in ikp.triton.SUPPORTED_TRITON


@pytest.mark.parametrize("name", ["add_kernel", "layer_norm_fwd_kernel", "matmul_kernel"])
def test_the_hook_instruments_what_triton_compiles(name):
    mod = fixture_script()
    known = json.load(open(FIXTURES))["files"][f"{name}.ptx"]
    knobs = triton.knobs
    before = (knobs.runtime.add_stages_inspection_hook, knobs.compilation.always_compile, knobs.cache.dir)
    with ikp.triton.profile() as prof:
        k = compile_for_sm90(mod, name)
    assert (knobs.runtime.add_stages_inspection_hook, knobs.compilation.always_compile, knobs.cache.dir) == before
    ptx = k.asm["ptx"]
    assert f".visible .const .align 16 .u64 ikp_buf_{name}[8]" in ptx
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


def test_instrument_refuses_with_the_line():
    with pytest.raises(ikp.IkpError, match=r"PTX line \d+: .*brx.idx"):
        ikp.triton.instrument(
            ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r<2>;\nbrx.idx %r1, $T;\nret;\n}\n"
        )
