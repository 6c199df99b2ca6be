"""ikp: decode, analyse and export in-kernel CUDA profiler buffers from Python.

    import ikp
    trace = ikp.load("samples/attention.ikp")
    trace.spans()            # dict of numpy arrays
    trace.to_pandas()        # DataFrame of the spans (needs pandas)
    trace.summary()          # the summary JSON, as a dict
    trace.write_perfetto("attention.trace")

The decoding, writing and analysis are ikp's Rust library (the native module
``ikp._ikp``); this package converts buffers and columns to and from numpy.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _ikp
from ._ikp import AmbiguousFormatError, IkpError

__all__ = [
    "AmbiguousFormatError",
    "IkpError",
    "Layout",
    "StreamDrain",
    "Trace",
    "decode",
    "decode_launches",
    "export_to_perfetto_trace",
    "load",
]

_PathLike = Union[str, "os.PathLike[str]"]
_Names = Union[Sequence[str], _PathLike, None]

# DLPack's device type of host memory (kDLCPU).
_DLPACK_CPU = 1


def _names(names: _Names) -> Optional[List[str]]:
    """Region names: a sequence of str (index = region id), or a names file's path."""
    if names is None:
        return None
    if isinstance(names, (str, os.PathLike)):
        return _ikp.read_names(os.fspath(names))
    out = list(names)
    for n in out:
        if not isinstance(n, str):
            raise TypeError(f"names: expected str entries, got {type(n).__name__}")
    return out


def _host_array(buffer: Any) -> np.ndarray:
    """The buffer as a numpy array in host memory.

    A tensor on a GPU (DLPack device other than the CPU) is copied to the host with its
    ``.cpu()`` method, as FlashInfer's own exporter does; an object on a device without
    ``.cpu()`` is refused.
    """
    if isinstance(buffer, np.ndarray):
        return buffer
    if hasattr(buffer, "__dlpack__"):
        device = getattr(buffer, "__dlpack_device__", None)
        if device is not None and int(device()[0]) != _DLPACK_CPU:
            cpu = getattr(buffer, "cpu", None)
            if cpu is None:
                raise IkpError(
                    f"the buffer is on DLPack device {tuple(device())}, not in host memory, "
                    "and has no .cpu() to copy it there: copy it to the host first"
                )
            buffer = cpu()
            if isinstance(buffer, np.ndarray):
                return buffer
        if hasattr(buffer, "__dlpack__"):
            try:
                return np.from_dlpack(buffer)
            except (TypeError, RuntimeError, BufferError, ValueError) as e:
                if not hasattr(buffer, "__array__"):
                    raise IkpError(f"cannot read the buffer through DLPack: {e}") from e
    if hasattr(buffer, "__array__"):
        return np.asarray(buffer)
    raise TypeError(
        "buffer: expected bytes, a numpy uint64 array, or an object with __dlpack__ or "
        f"__array__ (a torch tensor), got {type(buffer).__name__}"
    )


def _buffer_bytes(buffer: Any) -> bytes:
    """The buffer's bytes: little-endian u64 words (or a Proton trace's JSON text)."""
    if isinstance(buffer, bytes):
        return buffer
    if isinstance(buffer, (bytearray, memoryview)):
        return bytes(buffer)
    a = _host_array(buffer)
    if a.dtype.kind not in "iu":
        raise TypeError(f"buffer: expected an integer array (uint64 words), got dtype {a.dtype}")
    if a.dtype.itemsize == 8:
        return np.ascontiguousarray(a).astype("<u8", copy=False).tobytes()
    if a.dtype.itemsize == 1:
        return np.ascontiguousarray(a).tobytes()
    raise TypeError(
        f"buffer: expected 64-bit words (uint64 or int64) or bytes (uint8), got dtype {a.dtype}"
    )


def load(path: _PathLike, names: _Names = None, format: str = "auto") -> "Trace":
    """Reads and decodes a buffer file (any format ikp reads).

    ``names``: region names (a sequence, index = region id, or a names file's path) that
    replace the buffer's own; TVM-, FlashInfer- and Mirage-format buffers carry none.
    ``format``: "auto" (the one format the buffer fits), "ikp", "tvm", "flashinfer",
    "mirage", "yao-jz" or "proton".
    """
    return Trace(_ikp.load(os.fspath(path), _names(names), format))


def decode(buffer: Any, names: _Names = None, format: str = "auto") -> "Trace":
    """Decodes a buffer held in memory.

    ``buffer``: ``bytes``, a numpy uint64 (or int64, or uint8) array, or any object with
    ``__dlpack__`` or ``__array__`` (a torch tensor). A tensor on a GPU is copied to the
    host with ``.cpu()``. ``names`` and ``format`` as for :func:`load`.
    """
    return Trace(_ikp.decode_bytes(_buffer_bytes(buffer), _names(names), format))


def decode_launches(buffer: Any, names: _Names = None, format: str = "auto") -> List["Trace"]:
    """:func:`decode`, one trace per launch the buffer recorded: a native buffer laid out
    for several launches (``Layout(epochs=N)``) gives one per launch that ran, in order
    (``decode`` refuses it); every other buffer gives one."""
    return [
        Trace(t) for t in _ikp.decode_launches(_buffer_bytes(buffer), _names(names), format)
    ]


def export_to_perfetto_trace(
    profiler_buffer: Any, event_names: Sequence[str], file_name: _PathLike, *, format: str = "auto"
) -> None:
    """Drop-in for FlashInfer's and TVM's ``export_to_perfetto_trace``.

    Decodes ``profiler_buffer`` (a TVM- or FlashInfer-format buffer, as their kernels
    record it: a uint64 tensor, on the GPU or not) with ``event_names`` as its region names
    and writes a Perfetto trace to ``file_name``. A buffer that reads as TVM and as
    FlashInfer (or Mirage) alike (no SM ids and no finalize records in the records probed)
    is decoded as TVM.
    """
    data = _buffer_bytes(profiler_buffer)
    names = list(event_names)
    try:
        native = _ikp.decode_bytes(data, names, format)
    except AmbiguousFormatError as e:
        fits = set(e.formats)
        if format != "auto" or "tvm" not in fits or not fits <= {"tvm", "flashinfer", "mirage"}:
            raise
        native = _ikp.decode_bytes(data, names, "tvm")
    native.write_perfetto(os.fspath(file_name))


def _columns(native_cols: Dict[str, Any]) -> Dict[str, np.ndarray]:
    return {k: np.frombuffer(b, dtype=dt) for k, (dt, b) in native_cols.items()}


def _ordered(cols: Dict[str, np.ndarray], *rest: str) -> Dict[str, np.ndarray]:
    """The columns in table order: the lane's first, then ``rest``."""
    return {k: cols[k] for k in ("lane", "block", "group", "sm", "warp") + rest}


class Trace:
    """A decoded trace (one launch).

    Times are integer nanoseconds since the trace's time base (its earliest timestamp,
    ``time_base_ns`` in device ns), as in the CSV and Chrome outputs. Lanes are
    (block, group) writers; ``sm`` and ``warp`` are -1 where the format does not record
    them.
    """

    def __init__(self, native: Any) -> None:
        self._native = native
        self._lanes: Optional[Dict[str, np.ndarray]] = None

    def __repr__(self) -> str:
        return (
            f"<ikp.Trace {self._native.label!r}: {self.format}, grid {self.grid}, "
            f"{self._native.span_count} spans>"
        )

    @property
    def format(self) -> str:
        """The wire format the buffer was decoded as ("ikp", "tvm", "flashinfer", ...)."""
        return self._native.format

    @property
    def time_base_ns(self) -> int:
        """The time base: the trace's earliest timestamp, in device ns."""
        return self._native.time_base_ns

    @property
    def grid(self) -> tuple:
        """The launch's grid (x, y, z)."""
        return self._native.grid

    @property
    def groups_per_block(self) -> int:
        return self._native.groups_per_block

    @property
    def region_names(self) -> List[str]:
        """Region names by id ("" where a region has none)."""
        return self._native.region_names

    @property
    def counter_names(self) -> List[str]:
        """Counter names by id."""
        return self._native.counter_names

    def lanes(self) -> Dict[str, np.ndarray]:
        """The lanes: id, block, group, sm, warp, start_ns, end_ns, written, dropped."""
        if self._lanes is None:
            self._lanes = _columns(self._native.lanes())
        return dict(self._lanes)

    def _with_lanes(self, cols: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """Adds block, group, sm and warp of each row's lane."""
        lanes = self.lanes()
        index = np.frombuffer(self._native.lane_index(), dtype="<u4")
        pos = index[cols["lane"]] if len(cols["lane"]) else np.zeros(0, dtype="<u4")
        for k in ("block", "group", "sm", "warp"):
            cols[k] = lanes[k][pos]
        return cols

    @staticmethod
    def _named(ids: np.ndarray, names: List[str]) -> np.ndarray:
        table = np.asarray(names + [""], dtype=object)
        return table[np.minimum(ids, len(names))]

    def spans(self) -> Dict[str, np.ndarray]:
        """Paired regions: lane, block, group, sm, warp, region, name, depth, payload,
        begin_ns, end_ns, dur_ns."""
        c = self._with_lanes(_columns(self._native.spans()))
        c["name"] = self._named(c["region"], self.region_names)
        c["dur_ns"] = c["end_ns"] - c["begin_ns"]
        return _ordered(c, "region", "name", "depth", "payload", "begin_ns", "end_ns", "dur_ns")

    def instants(self) -> Dict[str, np.ndarray]:
        """Point events: lane, block, group, sm, warp, region, name, payload, ts_ns."""
        c = self._with_lanes(_columns(self._native.instants()))
        c["name"] = self._named(c["region"], self.region_names)
        return _ordered(c, "region", "name", "payload", "ts_ns")

    def counters(self) -> Dict[str, np.ndarray]:
        """Wait-counter samples: lane, block, group, sm, warp, counter, name, ts_ns, value."""
        c = self._with_lanes(_columns(self._native.counters()))
        c["name"] = self._named(c["counter"], self.counter_names)
        return _ordered(c, "counter", "name", "ts_ns", "value")

    def to_pandas(self, table: str = "spans") -> Any:
        """A pandas DataFrame of the spans (or of "instants", "counters", "lanes")."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError(
                "Trace.to_pandas() needs pandas, which is not installed: pip install pandas "
                "(Trace.spans(), .instants() and .counters() give numpy arrays without it)"
            ) from e
        tables = {
            "spans": self.spans,
            "instants": self.instants,
            "counters": self.counters,
            "lanes": self.lanes,
        }
        if table not in tables:
            raise ValueError(f"table={table!r}: expected one of {', '.join(tables)}")
        return pd.DataFrame(tables[table]())

    def summary(self) -> Dict[str, Any]:
        """The summary JSON (``ikp decode --summary``) as a dict."""
        return json.loads(self._native.summary_json())

    def analyze(self) -> Dict[str, Any]:
        """The analysis JSON (``ikp analyze --json``) as a dict."""
        return json.loads(self._native.analysis_json())

    def write_perfetto(self, path: _PathLike) -> None:
        """Writes a Perfetto trace (ui.perfetto.dev), deflate-compressed."""
        self._native.write_perfetto(os.fspath(path))

    def write_chrome(self, path: _PathLike) -> None:
        """Writes a Chrome Trace Event JSON file."""
        self._native.write_chrome(os.fspath(path))

    def write_summary(self, path: _PathLike) -> None:
        """Writes the summary JSON."""
        self._native.write_summary(os.fspath(path))

    def write_parquet(self, dir: _PathLike) -> List[str]:
        """Writes the Parquet tables ``spans.parquet``, ``instants.parquet`` and
        ``counters.parquet`` into ``dir`` (``ikp decode --parquet DIR``; columns in
        docs/parquet.md), all three or none, and returns their paths."""
        return [os.fspath(p) for p in self._native.write_parquet(os.fspath(dir))]

    def report(self, dir: _PathLike) -> str:
        """Writes the HTML report into ``dir`` and returns the page's path
        (``dir/report.html``)."""
        return os.fspath(self._native.report(os.fspath(dir)))


class Layout:
    """A native ikp buffer's layout (``ikp_device::Layout``): its header, its size and the
    kernel argument, for recording in ikp's format from a PyTorch extension.

        layout = ikp.Layout(grid=(132, 1, 1), groups_per_block=2, regions=["load", "mma"])
        buf = torch.from_numpy(layout.buffer()).cuda()   # zeroed, header written
        arg = layout.kernel_arg(buf.data_ptr())          # ikp::Arg, 40 bytes
        ...launch...
        trace = ikp.decode(buf)

    ``overflow`` is what a full lane does: ``"drop_newest"`` (the default), ``"ring"``, or
    for a launch drained while it runs, ``"stream"`` (drop and count) and ``"stream_wait"``
    (wait for room): see ``StreamDrain``. The clock sync of the header (host clock mapping)
    is left out: ``ikp_host``'s ``HostSession`` writes it.
    """

    def __init__(
        self,
        grid: Sequence[int] = (1, 1, 1),
        groups_per_block: int = 1,
        records_per_lane: int = 64,
        timer: str = "globaltimer",
        regions: Sequence[str] = (),
        counters: Sequence[str] = (),
        overflow: str = "drop_newest",
        epochs: int = 1,
        async_regions: Sequence[int] = (),
    ) -> None:
        g = tuple(int(x) for x in grid)
        if len(g) < 1 or len(g) > 3:
            raise ValueError(f"grid={grid!r}: expected 1 to 3 dimensions")
        g = g + (1,) * (3 - len(g))
        try:
            self._native = _ikp.NativeLayout(
                g,
                groups_per_block,
                records_per_lane,
                timer,
                list(regions),
                list(counters),
                overflow,
                epochs,
                [int(r) for r in async_regions],
            )
        except OverflowError as e:
            raise ValueError(f"a layout field is out of range: {e}") from e
        self.grid = g
        self.groups_per_block = groups_per_block
        self.records_per_lane = records_per_lane
        self.regions = list(regions)
        self.counters = list(counters)

    @property
    def buffer_words(self) -> int:
        """Words (u64) of the whole buffer."""
        return self._native.buffer_words()

    @property
    def header_len(self) -> int:
        """Words of the header (fixed words, async bitmap, name table)."""
        return self._native.header_len()

    @property
    def lane_base(self) -> int:
        """Word index of epoch 0's lane 0 segment."""
        return self._native.lane_base()

    @property
    def lane_stride(self) -> int:
        """Words per lane segment."""
        return self._native.lane_stride()

    @property
    def lane_count(self) -> int:
        """Lanes: blocks times groups per block."""
        return self._native.lane_count()

    def header_words(self) -> np.ndarray:
        """The header, as uint64 words."""
        return np.frombuffer(self._native.header_words(), dtype="<u8").copy()

    def buffer(self, kind: str = "numpy") -> Union[np.ndarray, bytes]:
        """A zeroed buffer of ``buffer_words`` words with the header written: a writable
        numpy uint64 array (``kind="numpy"``) or ``bytes`` (``kind="bytes"``)."""
        if kind not in ("numpy", "bytes"):
            raise ValueError(f"kind={kind!r}: expected 'numpy' or 'bytes'")
        out = np.zeros(self.buffer_words, dtype="<u8")
        h = self.header_words()
        out[: len(h)] = h
        return out.tobytes() if kind == "bytes" else out

    def kernel_arg(self, buf: int) -> bytes:
        """The kernel argument ``ikp::Arg`` (40 bytes, little-endian) for a buffer at device
        address ``buf`` (e.g. ``tensor.data_ptr()``)."""
        return self._native.kernel_arg(int(buf))


def _stream_words(buffer: Any, words: int) -> np.ndarray:
    """The stream buffer as a numpy view of its host memory: never a copy (the kernel and the
    drain share it while the kernel runs)."""
    device = getattr(buffer, "__dlpack_device__", None)
    if device is not None and int(device()[0]) != _DLPACK_CPU:
        raise IkpError(
            f"the stream buffer is on DLPack device {tuple(device())}: a stream launch's "
            "buffer lives in pinned host memory the GPU writes (torch.zeros(n, "
            "dtype=torch.int64, pin_memory=True), cupyx.zeros_pinned)"
        )
    if isinstance(buffer, np.ndarray):
        a = buffer
    elif hasattr(buffer, "__dlpack__"):
        a = np.from_dlpack(buffer)
    else:
        a = np.asarray(buffer)
    if a.dtype.kind not in "iu" or a.dtype.itemsize != 8:
        raise TypeError(f"the stream buffer: expected 64-bit words, got dtype {a.dtype}")
    if not a.flags.c_contiguous or not a.flags.writeable:
        raise ValueError("the stream buffer must be contiguous and writable (the drain writes it)")
    if a.size != words:
        raise ValueError(f"the stream buffer has {a.size} words, its layout {words}")
    return a


class StreamDrain:
    """Empties the rings of a stream launch into a stream file (``.ikps``) while the kernel
    runs: ikp's drain on a thread of its own, as ``StreamSession`` runs it from Rust.

        layout = ikp.Layout(grid=(sms, 1, 1), records_per_lane=512, regions=names,
                            overflow="stream")          # or "stream_wait": lose nothing
        buf = torch.zeros(layout.buffer_words, dtype=torch.int64, pin_memory=True)
        buf.numpy()[:] = layout.buffer().view(np.int64)  # header and zeros
        with ikp.StreamDrain(layout, buf, "run.ikps") as drain:
            kernel[grid](..., layout.kernel_arg(buf.data_ptr()))
            torch.cuda.synchronize()                     # the kernel has ended
        trace = ikp.load("run.ikps")                     # drain.stats: its figures

    The buffer is pinned host memory, which a GPU with unified addressing (all that ikp
    supports) reads and writes at its host address; it must stay alive and in place until
    ``finish`` (this object holds it). Leaving the ``with`` block, or ``finish()``, must come
    after the kernel has ended: the drain then copies what is left, writes every lane's final
    state and puts the file in place, whole (a drain that failed leaves none and raises
    ``IkpError``). In drop mode a drain that falls behind costs the kernel only drops,
    counted and marked; in wait mode lanes wait for it. The file reads like any buffer
    (``ikp.load``, ``ikp decode``).
    """

    def __init__(self, layout: "Layout", buffer: Any, path: _PathLike) -> None:
        self._buffer = buffer
        self._words = _stream_words(buffer, layout.buffer_words)
        self.path = os.fspath(path)
        self.stats: Optional[Dict[str, int]] = None
        self._native = _ikp.NativeStreamDrain(
            self._words, int(self._words.ctypes.data), int(self._words.size), self.path
        )

    def finish(self) -> Dict[str, int]:
        """Once the kernel has ended: finishes the file and returns the drain's figures
        (``records``, ``polls``, ``wall_ns``, ``max_backlog``), also kept in ``stats``."""
        records, polls, wall_ns, backlog = self._native.finish()
        self.stats = {
            "records": records,
            "polls": polls,
            "wall_ns": wall_ns,
            "max_backlog": backlog,
        }
        return self.stats

    def __enter__(self) -> "StreamDrain":
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        try:
            self.finish()
        except IkpError:
            if kind is None:
                raise


def __dir__() -> List[str]:
    """The public API only (``__all__``), not the modules and names this package imports."""
    return sorted(__all__)
