"""ikp.StreamDrain without a GPU: ikp.cuh's stream lanes, emulated on the CPU as real
threads (host/tests/kernels/emulate_stream.cpp, built here as a shared library and called
through ctypes), record into a stream buffer in a numpy array while the drain empties it."""

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import ikp

ROOT = Path(__file__).resolve().parents[2]
LANES_SRC = ROOT / "host" / "tests" / "kernels" / "emulate_stream.cpp"
HEADER_DIR = ROOT / "device" / "include"
DROPPED = "[ikp] records dropped"


@pytest.fixture(scope="module")
def lanes(tmp_path_factory):
    """The emulated lanes: ikp_emu_stream_run(arg, blocks, pairs, wait, slow_every)."""
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.skip("SKIPPED: no C++ compiler (c++ or g++) to build the emulated lanes")
    so = tmp_path_factory.mktemp("lanes") / "libemulate_stream.so"
    subprocess.run(
        [cxx, "-std=c++17", "-O2", "-pthread", "-fPIC", "-shared", "-I", str(HEADER_DIR),
         str(LANES_SRC), "-o", str(so)],
        check=True,
    )
    lib = ctypes.CDLL(str(so))
    run = lib.ikp_emu_stream_run
    run.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_int, ctypes.c_uint]
    run.restype = ctypes.c_int
    return run


def record(lanes, tmp_path, overflow, blocks=4, pairs=5000, ring=64):
    layout = ikp.Layout(grid=(blocks,), records_per_lane=ring, regions=["work"], overflow=overflow)
    buf = layout.buffer()
    path = tmp_path / f"{overflow}.ikps"
    with ikp.StreamDrain(layout, buf, path) as drain:
        arg = layout.kernel_arg(buf.ctypes.data)
        assert lanes(arg, blocks, pairs, overflow == "stream_wait", 2) == 0
    return ikp.load(path), drain.stats


def test_wait_mode_delivers_every_record(lanes, tmp_path):
    blocks, pairs = 4, 5000
    trace, stats = record(lanes, tmp_path, "stream_wait", blocks, pairs)
    spans, lane_table = trace.spans(), trace.lanes()
    assert len(spans["name"]) == blocks * pairs
    assert list(lane_table["dropped"]) == [0] * blocks
    # Each lane's pairs in order: payload k is its k-th span.
    for b in range(blocks):
        mine = spans["payload"][spans["block"] == b]
        assert list(mine) == list(range(pairs))
    assert stats["records"] >= 2 * blocks * pairs and stats["polls"] > 0


def test_drop_mode_counts_add_up(lanes, tmp_path):
    blocks, pairs = 4, 5000
    trace, _ = record(lanes, tmp_path, "stream", blocks, pairs)
    lane_table, spans = trace.lanes(), trace.spans()
    # Each drop mark is a span of the drop region over the gap, its payload the records
    # dropped there.
    gaps = spans["name"] == DROPPED
    marks = int(gaps.sum())
    # Every record a lane attempted either arrived or was counted as dropped; the drop marks
    # are records of the stream (in `written`), not attempts.
    arrived = int(lane_table["written"].sum()) - marks
    dropped = int(lane_table["dropped"].sum())
    assert arrived + dropped == 2 * blocks * pairs
    assert int(spans["payload"][gaps].sum()) <= dropped  # drops after the last mark: none said
    assert trace.summary()["dropped"] == int(lane_table["dropped"].sum())


def test_a_buffer_that_is_not_a_stream_buffer_is_refused(tmp_path):
    fixed = ikp.Layout(grid=(2,), regions=["work"])
    with pytest.raises(ikp.IkpError, match="stream"):
        ikp.StreamDrain(fixed, fixed.buffer(), tmp_path / "x.ikps")
    layout = ikp.Layout(grid=(2,), records_per_lane=64, regions=["work"], overflow="stream")
    with pytest.raises(ValueError, match="words"):
        ikp.StreamDrain(layout, layout.buffer()[:-1], tmp_path / "x.ikps")
    with pytest.raises(ValueError, match="writable"):
        ikp.StreamDrain(layout, np.frombuffer(layout.buffer().tobytes(), "<u8"), tmp_path / "x.ikps")
    assert not (tmp_path / "x.ikps").exists()


def test_a_file_that_cannot_be_created_is_refused_before_the_launch(tmp_path):
    # Lanes that wait for room would wait forever for a drain that never started.
    layout = ikp.Layout(grid=(2,), records_per_lane=64, regions=["work"], overflow="stream_wait")
    (tmp_path / "a_file").write_text("not a directory")
    with pytest.raises(ikp.IkpError, match="a_file"):
        ikp.StreamDrain(layout, layout.buffer(), tmp_path / "a_file" / "x.ikps")


def test_finish_twice_is_an_error(lanes, tmp_path):
    layout = ikp.Layout(grid=(2,), records_per_lane=64, regions=["work"], overflow="stream_wait")
    buf = layout.buffer()
    drain = ikp.StreamDrain(layout, buf, tmp_path / "twice.ikps")
    assert lanes(layout.kernel_arg(buf.ctypes.data), 2, 100, 1, 0) == 0
    assert drain.finish()["records"] >= 400  # the 400 records, and any stall marks
    with pytest.raises(ikp.IkpError, match="already finished"):
        drain.finish()
    assert len(ikp.load(tmp_path / "twice.ikps").spans()["name"]) == 200


def test_the_drain_holds_its_buffer_until_its_thread_has_ended(lanes, tmp_path):
    import gc
    import weakref

    layout = ikp.Layout(grid=(2,), records_per_lane=64, regions=["work"], overflow="stream")
    buf = layout.buffer()
    alive = weakref.ref(buf)
    drain = ikp.StreamDrain(layout, buf, tmp_path / "held.ikps")
    assert lanes(layout.kernel_arg(buf.ctypes.data), 2, 100, 0, 0) == 0
    native = drain._native
    del buf, drain
    gc.collect()
    assert alive() is not None, "the buffer was released while the drain thread runs"
    native.finish()
    del native
    gc.collect()
    assert alive() is None, "the buffer is held after the drain ended"
