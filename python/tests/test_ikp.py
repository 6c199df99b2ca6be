"""Tests of the ikp Python package on the shipped samples (scripts/test.sh runs them in a
fresh venv with the wheel installed)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ikp

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
ATTENTION = SAMPLES / "attention.ikp"
TVM = SAMPLES / "attention_tvm.bin"
FLASHINFER = SAMPLES / "attention_flashinfer.bin"
NAMES_FILE = SAMPLES / "attention_names.txt"
NAMES = NAMES_FILE.read_text().splitlines()


def region_totals(spans):
    """name -> (count, summed duration)."""
    out = {}
    for n, d in zip(spans["name"], spans["dur_ns"]):
        c, t = out.get(n, (0, 0))
        out[n] = (c + 1, t + int(d))
    return out


def summary_totals(summary):
    return {r["name"]: (r["count"], int(r["total_dur"])) for r in summary["regions"]}


# --- load and the tables -------------------------------------------------------------


def test_load_native_sample():
    t = ikp.load(ATTENTION)
    assert t.format == "ikp"
    assert t.grid == (64, 1, 1)
    assert "mainloop" in t.region_names
    assert t.time_base_ns > 0  # device time: the columns are relative to it
    s = t.spans()
    n = len(s["lane"])
    assert n == 5878
    assert list(s) == ["lane", "block", "group", "sm", "warp", "region", "name", "depth",
                       "payload", "begin_ns", "end_ns", "dur_ns"]
    assert all(len(v) == n for v in s.values())
    assert min(s["begin_ns"].min(), t.lanes()["start_ns"].min()) == 0
    assert s["begin_ns"].dtype == np.uint64 and s["region"].dtype == np.uint16
    assert (s["end_ns"] >= s["begin_ns"]).all()
    assert (s["dur_ns"] == s["end_ns"] - s["begin_ns"]).all()
    assert set(np.unique(s["block"])) == set(range(64))
    assert (s["sm"] >= 0).all() and (s["warp"] >= 0).all()
    # The same figures as the summary JSON, region by region.
    assert region_totals(s) == summary_totals(t.summary())
    assert "ikp.Trace" in repr(t) and "5878 spans" in repr(t)


def test_first_span_matches_the_cli_csv():
    # ikp decode samples/attention.ikp --csv: the first row.
    s = ikp.load(ATTENTION).spans()
    first = {k: s[k][0] for k in ("lane", "block", "group", "warp", "sm", "region", "begin_ns",
                                  "end_ns", "depth")}
    assert first == dict(lane=0, block=0, group=0, warp=0, sm=0, region=0, begin_ns=64,
                         end_ns=13479, depth=0)
    assert s["name"][0] == "mainloop"


def test_instants_counters_lanes():
    t = ikp.load(ATTENTION)
    lanes = t.lanes()
    assert len(lanes["id"]) == 64 * 3
    for table in (t.instants(), t.counters()):
        n = len(table["lane"])
        assert all(len(v) == n for v in table.values())
        assert "ts_ns" in table and "name" in table


def test_load_stream_file():
    # A stream launch's file (the tests' CPU emulation of stream lanes, drop mode) loads as
    # any buffer: its lanes' drops are the exact totals, its drop marks instants.
    t = ikp.load(SAMPLES / "stream_emulated.ikps")
    assert t.format == "ikp"
    assert t.region_names[0] == "work"
    assert "[ikp] records dropped" in t.region_names
    s = t.summary()
    assert s["stream"]["ring_records"] == 64 and s["stream"]["wait"] is False
    assert s["dropped"] > 0
    assert s["dropped"] == sum(l["dropped"] for l in s["dropped_by_lane"])
    assert len(t.spans()["lane"]) > 0


def test_load_tvm_with_names_file_and_list():
    a = ikp.load(TVM, names=NAMES_FILE)
    b = ikp.load(TVM, names=NAMES)
    assert a.format == "tvm"
    assert a.region_names[: len(NAMES)] == NAMES
    assert region_totals(a.spans()) == region_totals(b.spans())
    s = a.spans()
    assert (s["sm"] == -1).all()  # TVM-format buffers record no SM
    assert set(s["name"]) <= set(NAMES)
    assert region_totals(s) == summary_totals(a.summary())


def test_format_forced_and_invalid():
    assert ikp.load(TVM, names=NAMES, format="tvm").format == "tvm"
    with pytest.raises(ikp.IkpError):
        ikp.load(TVM, format="ikp")
    with pytest.raises(ValueError, match="format="):
        ikp.load(TVM, format="parquet")


# --- decode: the kinds of buffer ---------------------------------------------------------


class OnlyArray:
    """Exposes the buffer through __array__ only (as array-likes do)."""

    def __init__(self, a):
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)


class OnlyDlpack:
    """Exposes the buffer through __dlpack__ / __dlpack_device__ only (as a CPU torch
    tensor does)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, *args, **kwargs):
        return self._a.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class FakeCudaTensor:
    """A tensor on a CUDA device (DLPack device type 2) with .cpu(), like torch's."""

    def __init__(self, a, with_cpu=True):
        self._a = a
        self.copied = False
        if with_cpu:
            self.cpu = self._cpu

    def __dlpack__(self, *args, **kwargs):
        raise BufferError("a CUDA buffer cannot be read by numpy")

    def __dlpack_device__(self):
        return (2, 0)

    def _cpu(self):
        self.copied = True
        return OnlyDlpack(self._a)


@pytest.fixture(scope="module")
def words():
    return np.fromfile(ATTENTION, dtype="<u8")


@pytest.fixture(scope="module")
def reference():
    return region_totals(ikp.load(ATTENTION).spans())


@pytest.mark.parametrize(
    "wrap",
    [
        lambda w: w.tobytes(),
        lambda w: bytearray(w.tobytes()),
        lambda w: w,
        lambda w: w.view(np.int64),
        lambda w: w.view(np.uint8),
        lambda w: OnlyArray(w),
        lambda w: OnlyDlpack(w),
        lambda w: OnlyDlpack(w.view(np.int64)),
    ],
    ids=["bytes", "bytearray", "uint64", "int64", "uint8", "__array__", "__dlpack__",
         "__dlpack__ int64"],
)
def test_decode_buffer_kinds(words, reference, wrap):
    t = ikp.decode(wrap(words))
    assert t.format == "ikp"
    assert region_totals(t.spans()) == reference


def test_decode_cuda_tensor_is_copied_with_cpu(words, reference):
    tensor = FakeCudaTensor(words)
    assert region_totals(ikp.decode(tensor).spans()) == reference
    assert tensor.copied


def test_decode_device_buffer_without_cpu_is_refused(words):
    with pytest.raises(ikp.IkpError, match="not in host memory"):
        ikp.decode(FakeCudaTensor(words, with_cpu=False))


def test_decode_refuses_other_types():
    with pytest.raises(TypeError, match="expected bytes"):
        ikp.decode(42)
    with pytest.raises(TypeError, match="dtype"):
        ikp.decode(np.zeros(4, dtype=np.float64))


def test_decode_tvm_buffer_with_names():
    t = ikp.decode(np.fromfile(TVM, dtype="<u8"), names=NAMES)
    assert t.format == "tvm"
    assert region_totals(t.spans()) == region_totals(ikp.load(TVM, names=NAMES).spans())


# --- errors --------------------------------------------------------------------------------


def test_missing_file():
    with pytest.raises(ikp.IkpError, match="no-such-buffer.ikp"):
        ikp.load(SAMPLES / "no-such-buffer.ikp")


def test_corrupt_buffers():
    words = np.fromfile(ATTENTION, dtype="<u8").copy()
    words[1:8] = 0xDEADBEEFDEADBEEF  # the header's fixed fields
    with pytest.raises(ikp.IkpError, match="ikp header"):
        ikp.decode(words, format="ikp")
    with pytest.raises(ikp.IkpError):
        ikp.decode(words)
    with pytest.raises(ikp.IkpError, match="unrecognized"):
        ikp.decode(np.full(64, 0xFFFFFFFFFFFFFFFF, dtype=np.uint64))
    with pytest.raises(ikp.IkpError):
        ikp.decode(b"\x01\x02\x03")  # not a whole number of words
    truncated = np.fromfile(ATTENTION, dtype="<u8")[:100]
    with pytest.raises(ikp.IkpError):
        ikp.decode(truncated)
    assert issubclass(ikp.IkpError, Exception)
    assert issubclass(ikp.AmbiguousFormatError, ikp.IkpError)


def test_random_garbage_never_panics():
    rng = np.random.default_rng(7)
    base = np.fromfile(ATTENTION, dtype="<u8")
    for _ in range(50):
        w = base.copy()
        idx = rng.integers(0, len(w), 20)
        w[idx] = rng.integers(0, 2**63, 20, dtype=np.uint64)
        try:
            t = ikp.decode(w)
            t.summary()
            t.analyze()
            t.spans()
        except ikp.IkpError as e:
            # A clear error is fine; a panic (turned into IkpError by the native module)
            # is not.
            assert "internal error" not in str(e), e


def test_names_file_errors():
    with pytest.raises(ikp.IkpError, match="cannot read"):
        ikp.load(TVM, names=SAMPLES / "no-such-names.txt")
    with pytest.raises(TypeError):
        ikp.load(TVM, names=[1, 2])


# --- outputs ---------------------------------------------------------------------------


def test_outputs(tmp_path):
    t = ikp.load(ATTENTION)
    t.write_perfetto(tmp_path / "a.trace")
    assert (tmp_path / "a.trace").stat().st_size > 1000
    t.write_chrome(tmp_path / "a.json")
    chrome = json.loads((tmp_path / "a.json").read_text())
    events = chrome["traceEvents"] if isinstance(chrome, dict) else chrome
    # One X per span (5878) and one per lane's lifetime (192 lanes).
    assert sum(1 for e in events if e.get("ph") == "X" and e.get("name") != "lifetime") == 5878
    assert sum(1 for e in events if e.get("name") == "lifetime") == 192
    t.write_summary(str(tmp_path / "s.json"))
    assert json.loads((tmp_path / "s.json").read_text())["regions"] == t.summary()["regions"]
    paths = t.write_parquet(tmp_path / "pq")
    assert [Path(p).name for p in paths] == ["spans.parquet", "instants.parquet", "counters.parquet"]
    assert all(Path(p).read_bytes()[:4] == b"PAR1" for p in paths)
    page = t.report(tmp_path / "rep")
    assert page == os.fspath(tmp_path / "rep" / "report.html")
    assert "mainloop" in Path(page).read_text()


def test_write_error_is_ikp_error(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ikp.IkpError):
        ikp.load(ATTENTION).write_perfetto(tmp_path / "file" / "a.trace")


def test_summary_and_analysis():
    t = ikp.load(ATTENTION)
    s = t.summary()
    assert s["format"] == "ikp" and s["blocks"] == 64
    a = t.analyze()
    assert a["blocks"] == 64
    for k in ("breakdown", "imbalance", "critical_path"):
        assert k in a


def test_to_pandas():
    pd = pytest.importorskip("pandas")
    t = ikp.load(ATTENTION)
    df = t.to_pandas()
    assert len(df) == 5878
    by = df.groupby("name")["dur_ns"].agg(["count", "sum"])
    totals = summary_totals(t.summary())
    for name, row in by.iterrows():
        assert (int(row["count"]), int(row["sum"])) == totals[name]
    assert len(t.to_pandas("lanes")) == 192
    with pytest.raises(ValueError):
        t.to_pandas("parquet")


def test_to_pandas_without_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        ikp.load(ATTENTION).to_pandas()


# --- the FlashInfer / TVM drop-in ---------------------------------------------------------


def test_export_to_perfetto_trace_tvm(tmp_path):
    out = tmp_path / "tvm.perfetto-trace"
    ikp.export_to_perfetto_trace(np.fromfile(TVM, dtype="<u8"), NAMES, str(out))
    assert out.stat().st_size > 100


def test_export_to_perfetto_trace_flashinfer(tmp_path):
    out = tmp_path / "fi.perfetto-trace"
    ikp.export_to_perfetto_trace(OnlyDlpack(np.fromfile(FLASHINFER, dtype="<u8")), NAMES, out)
    assert out.stat().st_size > 100


def test_export_ambiguous_tvm_flashinfer_buffer_reads_as_tvm(tmp_path):
    # One block, one group, no finalize record: fits both TVM and FlashInfer (SM 0).
    w = np.zeros(5, dtype=np.uint64)
    w[0] = (1 << 32) | 1  # 1 group, 1 block
    w[1] = (100 << 32) | 0  # begin of event 0
    w[2] = (250 << 32) | 1  # its end
    try:
        ikp.decode(w)
        ambiguous = False
    except ikp.AmbiguousFormatError as e:
        ambiguous = True
        assert {"tvm", "flashinfer"} <= set(e.formats)
        assert "format=" in str(e)
    out = tmp_path / "amb.perfetto-trace"
    ikp.export_to_perfetto_trace(w, ["work"], out)
    assert out.stat().st_size > 0
    if ambiguous:
        assert ikp.decode(w, names=["work"], format="tvm").spans()["dur_ns"].tolist() == [150]


def flashinfer_buffer(blocks, pairs, events):
    """A FlashInfer-format buffer of one group per block (where FlashInfer's exporter reads
    the block field right): slot 0 = groups << 32 | blocks, record k of block b at
    1 + b + k * blocks, record = ts << 32 | sm << 24 | block << 12 | event << 2 | type."""
    w = np.zeros(1 + blocks * 2 * pairs, dtype=np.uint64)
    w[0] = (1 << 32) | blocks
    for b in range(blocks):
        t = 1000 + 37 * b
        for k in range(pairs):
            tag = ((b % 132) << 24) | (b << 12) | ((k % events) << 2)
            w[1 + b + 2 * k * blocks] = (t << 32) | tag
            t += 100 + 13 * ((b + k) % 17)
            w[1 + b + (2 * k + 1) * blocks] = (t << 32) | tag | 1
            t += 20
    return w


def test_flashinfer_own_exporter_agrees(tmp_path):
    """FlashInfer's exporter (flashinfer/profiler/__init__.py from the pinned wheel, run by
    host/tests/host/peers/flashinfer_export.py) and ikp find the same spans."""
    exporter = sorted(ROOT.glob(".deps/flashinfer-python-*/flashinfer/profiler/__init__.py"))
    if not exporter:
        pytest.skip("FlashInfer's exporter is not provisioned (scripts/provision.sh)")
    names = ["a", "b", "c"]
    w = flashinfer_buffer(blocks=20, pairs=9, events=len(names))
    (tmp_path / "fi.bin").write_bytes(w.tobytes())
    (tmp_path / "names.txt").write_text("\n".join(names) + "\n")
    run = subprocess.run(
        [sys.executable, ROOT / "host/tests/host/peers/flashinfer_export.py", exporter[-1],
         tmp_path / "fi.bin", tmp_path / "names.txt"],
        capture_output=True, text=True, check=True,
    )
    theirs = sorted((name, end - begin) for _g, _t, name, begin, end in json.loads(run.stdout)["spans"])
    t = ikp.decode(w, names=names)
    assert t.format == "flashinfer"
    s = t.spans()
    assert sorted(zip(s["name"].tolist(), s["dur_ns"].tolist())) == theirs
    assert len(theirs) == 20 * 9
    # The sample (two groups per block): the same spans per region.
    run = subprocess.run(
        [sys.executable, ROOT / "host/tests/host/peers/flashinfer_export.py", exporter[-1],
         FLASHINFER, NAMES_FILE],
        capture_output=True, text=True, check=True,
    )
    counts = {}
    for _g, _t, name, _b, _e in json.loads(run.stdout)["spans"]:
        counts[name] = counts.get(name, 0) + 1
    ours = region_totals(ikp.decode(np.fromfile(FLASHINFER, dtype="<u8"), names=NAMES).spans())
    assert {n: c for n, (c, _) in ours.items()} == counts


# --- Layout ------------------------------------------------------------------------------


def test_layout_buffer_decodes_as_an_empty_launch():
    layout = ikp.Layout(grid=(4, 2), groups_per_block=2, records_per_lane=16,
                        regions=["load", "mma"], counters=["spins"])
    assert layout.lane_count == 16
    buf = layout.buffer()
    assert buf.dtype == np.uint64 and len(buf) == layout.buffer_words
    assert buf[0] != 0 and not buf[layout.header_len:].any()
    assert bytes(layout.buffer("bytes")) == buf.tobytes()
    h = layout.header_words()
    assert len(h) == layout.header_len and (buf[: len(h)] == h).all()
    t = ikp.decode(buf)
    assert t.format == "ikp" and t.grid == (4, 2, 1) and t.groups_per_block == 2
    assert t.region_names == ["load", "mma"] and t.counter_names == ["spins"]
    assert len(t.spans()["lane"]) == 0


def test_layout_kernel_arg():
    layout = ikp.Layout(grid=(3,), groups_per_block=2, records_per_lane=8, epochs=2)
    arg = layout.kernel_arg(0x7F0000001000)
    assert len(arg) == 40
    fields = np.frombuffer(arg[8:], dtype="<u4")
    assert int.from_bytes(arg[:8], "little") == 0x7F0000001000
    assert fields.tolist() == [layout.lane_base, layout.lane_stride, 8, 2, 6, 0, 2, 0]
    assert layout.buffer_words == layout.lane_base + 2 * 6 * layout.lane_stride


def test_layout_refuses_invalid_fields():
    with pytest.raises(ikp.IkpError, match="ring"):
        ikp.Layout(records_per_lane=12, overflow="ring")
    with pytest.raises(ikp.IkpError, match="grid"):
        ikp.Layout(grid=(0, 1, 1))
    with pytest.raises(ValueError, match="timer"):
        ikp.Layout(timer="tsc")
    with pytest.raises(ValueError):
        ikp.Layout(records_per_lane=-1)


def test_the_package_lists_its_api_only():
    assert dir(ikp) == sorted(ikp.__all__)
    for name in ikp.__all__:
        assert hasattr(ikp, name), name
    assert "np" not in dir(ikp) and "json" not in dir(ikp)


def test_decode_launches_gives_a_trace_per_launch():
    # Two launches of one warp into a 2-epoch buffer, written as ikp.cuh writes them: a
    # span of region 0 each, 100 ns long, the second launch 1 us after the first.
    layout = ikp.Layout(grid=(1,), records_per_lane=4, regions=["r"], epochs=2)
    buf = layout.buffer()
    lane_mark = 0x494B50 << 40
    buf[layout.header_len] = 2  # the lane's launch counter: two launches ran
    for e in range(2):
        seg = layout.lane_base + e * layout.lane_stride
        t0 = 1_000_000 + 1_000 * e
        buf[seg : seg + 3] = [t0, 5_000 + e, lane_mark]
        buf[seg + 4] = ((t0 + 10) << 32) | 0  # begin region 0
        buf[seg + 5] = ((t0 + 110) << 32) | 1  # end region 0
        buf[seg + 8 : seg + 11] = [t0 + 200, 6_000 + e, 2]  # end stamps, written = 2
    with pytest.raises(ikp.IkpError, match="launch"):
        ikp.decode(buf)
    traces = ikp.decode_launches(buf)
    assert len(traces) == 2
    for t in traces:
        s = t.spans()
        assert s["region"].tolist() == [0]
        assert s["dur_ns"].tolist() == [100]
