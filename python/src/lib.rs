//! `ikp._ikp`: the native module of the `ikp` Python package (python/ikp/).
//!
//! A thin layer over the library's facade ([`ikp_host`], [`ikp_device::Layout`]): it
//! decodes, writes and analyses, and hands Python plain objects (`bytes` holding
//! little-endian columns, `str` holding JSON, lists, ints). The package's Python side turns
//! them into numpy arrays, dicts and DataFrames, so no numpy crate is needed here.
//!
//! Every error is a Python exception: the library's errors as `ikp.IkpError` (a buffer that
//! fits several formats as its subclass `ikp.AmbiguousFormatError`, whose `formats` lists
//! them), and a panic, should one happen, as `ikp.IkpError` too (`guard`): none crosses
//! into Python as a `PanicException`.

use ikp_host::analysis::kernel::{self, KernelOptions};
use ikp_host::drain::DrainThread;
use ikp_host::report::{prepare, write_html, ReportOptions};
use ikp_host::{
    atomic, summarize, write_chrome, write_parquet, write_perfetto, write_summary, DecodeError,
    DecodeOptions, FormatChoice, Launch, LoadErrorKind, Names, PerfettoOptions, TraceStats,
};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

pyo3::create_exception!(
    _ikp,
    IkpError,
    PyException,
    "An error of ikp: a buffer that cannot be read or decoded, an output that cannot be written."
);
pyo3::create_exception!(
    _ikp,
    AmbiguousFormatError,
    IkpError,
    "The buffer fits several wire formats; `formats` names them. Pass format= to choose one."
);

/// Runs `f`, turning a panic into an `IkpError` (with the panic's message).
fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(IkpError::new_err(format!(
                "internal error (a bug in ikp): {msg}"
            )))
        }
    }
}

/// `IkpError(msg)` for any library error.
fn err(e: impl std::fmt::Display) -> PyErr {
    IkpError::new_err(e.to_string())
}

/// A load error as an exception: `AmbiguousFormatError` (with `formats`) for a buffer that
/// fits several formats, `IkpError` otherwise.
fn load_err(py: Python<'_>, e: ikp_host::LoadError) -> PyErr {
    if let LoadErrorKind::Decode(DecodeError::Ambiguous(fits)) = &e.kind {
        let formats: Vec<&str> = fits.iter().map(|f| f.name()).collect();
        let exc = AmbiguousFormatError::new_err(format!(
            "{e} (format={} chooses one)",
            formats
                .iter()
                .map(|f| format!("{f:?}"))
                .collect::<Vec<_>>()
                .join(" or ")
        ));
        if let Err(set) = exc.value(py).setattr("formats", formats) {
            return set;
        }
        return exc;
    }
    err(e)
}

/// The `format=` argument (the command line's `--format` names, the library's spelling).
fn format_choice(format: &str) -> PyResult<FormatChoice> {
    format
        .parse()
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("format={format:?}: {e}")))
}

fn options(names: Option<Vec<String>>, format: &str) -> PyResult<DecodeOptions> {
    Ok(DecodeOptions {
        format: format_choice(format)?,
        names: names.map(|regions| Names {
            regions,
            counters: Vec::new(),
        }),
        ..DecodeOptions::default()
    })
}

/// A decoded trace (one launch). The Python class `ikp.Trace` wraps it.
#[pyclass(module = "ikp._ikp", frozen)]
#[derive(Debug)]
struct NativeTrace {
    trace: ikp_host::Trace,
    /// What outputs name the trace by (the file's name, or `buffer`).
    label: String,
}

/// Little-endian bytes of a column.
fn column<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    v: &[T],
    to_le: impl Fn(T) -> [u8; N],
) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &v.iter().flat_map(|&x| to_le(x)).collect::<Vec<u8>>())
}

/// Times relative to the trace's time base (as the CSV and Chrome outputs write them).
fn rel<'py>(py: Python<'py>, v: &[u64], base: u64) -> Bound<'py, PyBytes> {
    column(py, v, |x| x.saturating_sub(base).to_le_bytes())
}

fn u64s<'py>(py: Python<'py>, v: &[u64]) -> Bound<'py, PyBytes> {
    column(py, v, u64::to_le_bytes)
}
fn u32s<'py>(py: Python<'py>, v: &[u32]) -> Bound<'py, PyBytes> {
    column(py, v, u32::to_le_bytes)
}
fn u16s<'py>(py: Python<'py>, v: &[u16]) -> Bound<'py, PyBytes> {
    column(py, v, u16::to_le_bytes)
}

/// Writes `path` whole (nothing is left there on error).
fn write_atomic(
    py: Python<'_>,
    path: &Path,
    fill: impl FnOnce(&mut dyn std::io::Write) -> Result<(), ikp_host::WriteError> + Send,
) -> PyResult<()> {
    py.detach(|| guard(|| atomic::write_file(path, |w| fill(w)).map_err(err)))
}

impl NativeTrace {
    /// The summary document of the trace, with the default options.
    fn summary(&self) -> ikp_host::Summary {
        summarize(
            &TraceStats::of(&self.trace),
            &Default::default(),
            &self.label,
        )
    }
}

#[pymethods]
impl NativeTrace {
    /// The wire format the buffer was decoded as (`ikp`, `tvm`, `flashinfer`, ...).
    #[getter]
    fn format(&self) -> &'static str {
        self.trace.source.format.name()
    }

    /// The label outputs name the trace by.
    #[getter]
    fn label(&self) -> &str {
        &self.label
    }

    /// Region names by id.
    #[getter]
    fn region_names(&self) -> Vec<String> {
        self.trace.names.regions.clone()
    }

    /// Counter names by id.
    #[getter]
    fn counter_names(&self) -> Vec<String> {
        self.trace.names.counters.clone()
    }

    /// Grid of the launch (x, y, z) and groups per block.
    #[getter]
    fn grid(&self) -> (u32, u32, u32) {
        let g = self.trace.source.grid;
        (g[0], g[1], g[2])
    }

    /// The trace's time base: its earliest timestamp (device ns), which the time columns
    /// are relative to.
    #[getter]
    fn time_base_ns(&self) -> u64 {
        self.trace.source.time_base
    }

    /// Spans in the trace.
    #[getter]
    fn span_count(&self) -> usize {
        self.trace.spans.len()
    }

    /// Lanes per block.
    #[getter]
    fn groups_per_block(&self) -> u32 {
        self.trace.source.groups_per_block
    }

    /// The lanes table: column name -> (numpy dtype string, little-endian bytes). SM and
    /// warp are -1 where the format does not record them.
    fn lanes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let l = &self.trace.lanes;
        let d = PyDict::new(py);
        let col = |f: fn(&ikp_host::Lane) -> u32| l.iter().map(f).collect::<Vec<u32>>();
        let col64 = |f: fn(&ikp_host::Lane) -> u64| l.iter().map(f).collect::<Vec<u64>>();
        let opt = |f: fn(&ikp_host::Lane) -> Option<u32>| {
            l.iter()
                .map(|x| f(x).map_or(-1i64, i64::from) as u64)
                .collect::<Vec<u64>>()
        };
        d.set_item("id", ("<u4", u32s(py, &col(|x| x.id))))?;
        d.set_item("block", ("<u4", u32s(py, &col(|x| x.block))))?;
        d.set_item("group", ("<u4", u32s(py, &col(|x| x.group))))?;
        d.set_item("sm", ("<i8", u64s(py, &opt(|x| x.sm))))?;
        d.set_item("warp", ("<i8", u64s(py, &opt(|x| x.warp))))?;
        let base = self.trace.source.time_base;
        d.set_item("start_ns", ("<u8", rel(py, &col64(|x| x.start), base)))?;
        d.set_item("end_ns", ("<u8", rel(py, &col64(|x| x.end), base)))?;
        d.set_item("written", ("<u8", u64s(py, &col64(|x| x.written))))?;
        d.set_item("dropped", ("<u8", u64s(py, &col64(|x| x.dropped))))?;
        Ok(d)
    }

    /// Position in the lanes table of each lane id (lanes of spans, instants and samples
    /// are lane ids): `<u4` bytes, `u32::MAX` where no lane has the id.
    fn lane_index<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let max = self
            .trace
            .lanes
            .iter()
            .map(|l| l.id)
            .max()
            .map_or(0, |m| m as usize + 1);
        let mut idx = vec![u32::MAX; max];
        for (i, l) in self.trace.lanes.iter().enumerate() {
            idx[l.id as usize] = i as u32;
        }
        u32s(py, &idx)
    }

    /// The spans: column name -> (dtype, bytes).
    fn spans<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = &self.trace.spans;
        let d = PyDict::new(py);
        d.set_item("lane", ("<u4", u32s(py, &s.lane)))?;
        d.set_item("region", ("<u2", u16s(py, &s.region)))?;
        d.set_item("depth", ("<u2", u16s(py, &s.depth)))?;
        d.set_item("payload", ("<u4", u32s(py, &s.payload)))?;
        let base = self.trace.source.time_base;
        d.set_item("begin_ns", ("<u8", rel(py, &s.begin, base)))?;
        d.set_item("end_ns", ("<u8", rel(py, &s.end, base)))?;
        Ok(d)
    }

    /// The instants: column name -> (dtype, bytes).
    fn instants<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (s, base) = (&self.trace.instants, self.trace.source.time_base);
        let d = PyDict::new(py);
        d.set_item("lane", ("<u4", u32s(py, &s.lane)))?;
        d.set_item("region", ("<u2", u16s(py, &s.region)))?;
        d.set_item("payload", ("<u4", u32s(py, &s.payload)))?;
        d.set_item("ts_ns", ("<u8", rel(py, &s.ts, base)))?;
        Ok(d)
    }

    /// The counter samples: column name -> (dtype, bytes).
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (s, base) = (&self.trace.samples, self.trace.source.time_base);
        let d = PyDict::new(py);
        d.set_item("lane", ("<u4", u32s(py, &s.lane)))?;
        d.set_item("counter", ("<u2", u16s(py, &s.counter)))?;
        d.set_item("ts_ns", ("<u8", rel(py, &s.ts, base)))?;
        d.set_item("value", ("<u4", u32s(py, &s.value)))?;
        Ok(d)
    }

    /// The summary JSON (what `ikp decode --summary` writes), as text.
    fn summary_json(&self, py: Python<'_>) -> PyResult<String> {
        py.detach(|| guard(|| serde_json::to_string(&self.summary()).map_err(err)))
    }

    /// The analysis JSON (what `ikp analyze --json` writes), as text.
    fn analysis_json(&self, py: Python<'_>) -> PyResult<String> {
        py.detach(|| {
            guard(|| {
                let a = kernel::analyze(&self.trace, &KernelOptions::default());
                serde_json::to_string(&a).map_err(err)
            })
        })
    }

    /// Writes a Perfetto trace (deflate-compressed packets, as `ikp decode --perfetto`).
    fn write_perfetto(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let launches = [Launch::new(&self.label, &self.trace)];
        write_atomic(py, &path, |w| {
            write_perfetto(w, &launches, &PerfettoOptions::default()).map(|_| ())
        })
    }

    /// Writes a Chrome Trace Event JSON file.
    fn write_chrome(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        write_atomic(py, &path, |w| {
            write_chrome(w, &self.trace, &Default::default())
        })
    }

    /// Writes the summary JSON.
    fn write_summary(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        write_atomic(py, &path, |w| write_summary(w, &self.summary()))
    }

    /// Writes the Parquet tables (`spans.parquet`, `instants.parquet`, `counters.parquet`:
    /// `ikp_host::write::parquet`) into `dir` (created if needed), all three or none, and
    /// returns their paths.
    fn write_parquet(&self, py: Python<'_>, dir: PathBuf) -> PyResult<Vec<PathBuf>> {
        let launches = [Launch::new(&self.label, &self.trace)];
        py.detach(|| {
            guard(|| {
                let mut outs = atomic::Outputs::new();
                let paths = write_parquet(&mut outs, &dir, &launches).map_err(err)?;
                outs.commit().map_err(err)?;
                Ok(paths.to_vec())
            })
        })
    }

    /// Writes the HTML report into `dir` (created if needed) and returns its path,
    /// `dir/report.html`.
    fn report(&self, py: Python<'_>, dir: PathBuf) -> PyResult<PathBuf> {
        let html = dir.join("report.html");
        let launches = [Launch::new(&self.label, &self.trace)];
        write_atomic(py, &html, |w| {
            let opts = ReportOptions::default();
            write_html(w, &prepare(&launches, &opts), &opts)
        })?;
        Ok(html)
    }
}

/// Reads and decodes a buffer file.
#[pyfunction]
#[pyo3(signature = (path, names=None, format="auto"))]
fn load(
    py: Python<'_>,
    path: PathBuf,
    names: Option<Vec<String>>,
    format: &str,
) -> PyResult<NativeTrace> {
    let opts = options(names, format)?;
    let label = ikp_host::file_name(&path);
    let trace = py
        .detach(|| guard(|| Ok(ikp_host::load(&path, &opts))))?
        .map_err(|e| load_err(py, e))?;
    Ok(NativeTrace { trace, label })
}

/// Decodes a buffer held in memory (`bytes`: little-endian u64 words, or a Proton trace's
/// JSON text).
#[pyfunction]
#[pyo3(signature = (data, names=None, format="auto", label="buffer"))]
fn decode_bytes(
    py: Python<'_>,
    data: &[u8],
    names: Option<Vec<String>>,
    format: &str,
    label: &str,
) -> PyResult<NativeTrace> {
    let opts = options(names, format)?;
    let trace = py
        .detach(|| guard(|| Ok(ikp_host::decode_bytes(data, &opts))))?
        .map_err(|e| load_err(py, e))?;
    Ok(NativeTrace {
        trace,
        label: label.to_owned(),
    })
}

/// [`decode_bytes`], one trace per launch the buffer recorded (a native buffer of
/// several epochs; every other buffer gives one).
#[pyfunction]
#[pyo3(signature = (data, names=None, format="auto", label="buffer"))]
fn decode_launches(
    py: Python<'_>,
    data: &[u8],
    names: Option<Vec<String>>,
    format: &str,
    label: &str,
) -> PyResult<Vec<NativeTrace>> {
    let opts = options(names, format)?;
    let traces = py
        .detach(|| {
            guard(|| {
                Ok(ikp_host::Input::from_bytes(data, opts.format)
                    .and_then(|i| i.decode_launches(&opts)))
            })
        })?
        .map_err(|e| load_err(py, e))?;
    Ok(traces
        .into_iter()
        .map(|trace| NativeTrace {
            trace,
            label: label.to_owned(),
        })
        .collect())
}

/// Region names from a names file (one per line, or a JSON object of id -> name).
#[pyfunction]
fn read_names(path: PathBuf) -> PyResult<Vec<String>> {
    guard(|| ikp_host::read_names(&path).map(|n| n.regions).map_err(err))
}

/// Instruments a PTX module (`ikp_host::instrument`): the new PTX and the probe
/// manifest's JSON. `at`: the probe selection, as `ikp instrument --at` takes it.
#[pyfunction]
#[pyo3(signature = (ptx, at="entry,loops"))]
fn instrument_ptx(ptx: &str, at: &str) -> PyResult<(String, String)> {
    use ikp_host::instrument::{instrument, ProbeSet};
    guard(|| {
        let probes: ProbeSet = at.parse().map_err(err)?;
        let out = instrument(ptx, &probes).map_err(err)?;
        Ok((out.ptx, out.manifest.to_json()))
    })
}

/// The words to write into an instrumented kernel's buffer symbol to point it at the
/// buffer at device address `buffer` whose header starts with `header` (at least
/// `SYMBOL_HEADER_WORDS` words; 0 or fewer: the probes off):
/// `ikp_host::instrument::symbol_words`, the one place that lays them out.
#[pyfunction]
fn symbol_words(buffer: u64, header: Vec<u64>) -> Vec<u64> {
    ikp_host::instrument::symbol_words(buffer, &header).to_vec()
}

/// Runs the `ikp` command line `argv` (the program's name first) and returns its exit
/// code: the wheel's `ikp` console script (`ikp._cli`). The command is the CLI crate's
/// own ([`ikp_cli::run`]), so its subcommands, output and exit codes are the binary's.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<std::ffi::OsString>) -> PyResult<u8> {
    py.detach(|| guard(|| Ok(ikp_cli::run(argv))))
}

/// The header and sizes of a native buffer: `ikp_device::Layout`.
#[pyclass(module = "ikp._ikp", frozen)]
#[derive(Debug)]
struct NativeLayout {
    layout: ikp_device::Layout,
}

#[pymethods]
impl NativeLayout {
    #[new]
    #[pyo3(signature = (grid, groups_per_block, records_per_lane, timer, regions, counters, overflow, epochs, async_regions))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        grid: (u32, u32, u32),
        groups_per_block: u32,
        records_per_lane: u32,
        timer: &str,
        regions: Vec<String>,
        counters: Vec<String>,
        overflow: &str,
        epochs: u32,
        async_regions: Vec<u32>,
    ) -> PyResult<NativeLayout> {
        use ikp_device::{Overflow, TimerMode};
        let bad = |what: &str, v: &str, ok: &str| {
            pyo3::exceptions::PyValueError::new_err(format!("{what}={v:?}: expected {ok}"))
        };
        let timer = match timer {
            "globaltimer" => TimerMode::Globaltimer,
            "clock" => TimerMode::Clock,
            t => return Err(bad("timer", t, "\"globaltimer\" or \"clock\"")),
        };
        let overflow = match overflow {
            "drop_newest" => Overflow::DropNewest,
            "ring" => Overflow::Ring,
            "stream" => Overflow::Stream,
            "stream_wait" => Overflow::StreamWait,
            o => {
                let ok = "\"drop_newest\", \"ring\", \"stream\" or \"stream_wait\"";
                return Err(bad("overflow", o, ok));
            }
        };
        let layout = ikp_device::Layout {
            grid: [grid.0, grid.1, grid.2],
            groups_per_block,
            records_per_lane,
            timer,
            regions,
            counters,
            overflow,
            epochs,
            async_regions,
            clock_sync: None,
        };
        layout.validate().map_err(err)?;
        Ok(NativeLayout { layout })
    }

    /// The header words, little-endian bytes.
    fn header_words<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let w = self.layout.header_words().map_err(err)?;
        Ok(u64s(py, &w))
    }

    /// Words of the whole buffer.
    fn buffer_words(&self) -> u64 {
        self.layout.buffer_words()
    }

    /// Words of the header (with the async bitmap and the name table).
    fn header_len(&self) -> u64 {
        self.layout.header_len()
    }

    /// Word index of epoch 0's lane 0 segment.
    fn lane_base(&self) -> u64 {
        self.layout.lane_base()
    }

    /// Words per lane segment.
    fn lane_stride(&self) -> u64 {
        self.layout.lane_stride()
    }

    /// Lanes: blocks times groups per block.
    fn lane_count(&self) -> u64 {
        self.layout.lane_count()
    }

    /// The kernel argument (`ikp::Arg`, 40 bytes, little-endian) for a buffer at device
    /// address `buf`.
    fn kernel_arg<'py>(&self, py: Python<'py>, buf: u64) -> Bound<'py, PyBytes> {
        let a = self.layout.kernel_arg(buf);
        let mut out = Vec::with_capacity(40);
        out.extend_from_slice(&a.buf.to_le_bytes());
        for v in [
            a.lane_base,
            a.lane_stride,
            a.records_per_lane,
            a.groups_per_block,
            a.lane_count,
            a.n_counters,
            a.epochs,
            a.flags,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        PyBytes::new(py, &out)
    }
}

/// The drain of a stream launch whose buffer is in host memory (`ikp.StreamDrain`):
/// the library's `DrainThread` beside the kernel, until `finish`.
#[pyclass(module = "ikp._ikp")]
struct NativeStreamDrain {
    drain: Option<DrainThread>,
    /// The Python object that owns the buffer: released only after the thread has ended
    /// (the drain field drops first, joining it), so the memory outlives every read of it.
    _owner: Py<PyAny>,
}

#[pymethods]
impl NativeStreamDrain {
    /// Starts draining the `words` u64 words at host address `address` (a stream buffer,
    /// its header written) into `path`. `owner` owns that memory (a numpy array) and must
    /// keep it in place: this object holds it until the drain thread has ended.
    #[new]
    fn new(
        owner: Py<PyAny>,
        address: usize,
        words: usize,
        path: PathBuf,
    ) -> PyResult<NativeStreamDrain> {
        if address == 0 || !address.is_multiple_of(8) {
            return Err(err(format!(
                "the stream buffer's address {address:#x} is not that of 8-byte words"
            )));
        }
        // SAFETY: `owner`'s memory of `words` u64s, held by this object until the thread
        // has ended (`finish`, or the drop of `drain` before `_owner`); the kernel and the
        // drain touch it only through atomics or the device's ordering, as
        // `StreamSession`'s buffer.
        let view: &'static [AtomicU64] =
            unsafe { std::slice::from_raw_parts(address as *const AtomicU64, words) };
        Ok(NativeStreamDrain {
            drain: Some(DrainThread::start(view, path).map_err(err)?),
            _owner: owner,
        })
    }

    /// Stops the drain (the kernel has ended and its writes are visible): copies what is
    /// left, writes every lane's final state, puts the file in place. Returns the drain's
    /// figures `(records, polls, wall_ns, max_backlog)`.
    fn finish(&mut self, py: Python<'_>) -> PyResult<(u64, u64, u64, u64)> {
        let drain = (self.drain.take()).ok_or_else(|| err("the drain has already finished"))?;
        let stats = py.detach(|| guard(|| drain.finish().map_err(err)))?;
        Ok((stats.records, stats.polls, stats.wall_ns, stats.max_backlog))
    }
}

/// The native module.
#[pymodule]
fn _ikp(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("IkpError", py.get_type::<IkpError>())?;
    m.add(
        "AmbiguousFormatError",
        py.get_type::<AmbiguousFormatError>(),
    )?;
    m.add_class::<NativeTrace>()?;
    m.add_class::<NativeLayout>()?;
    m.add_class::<NativeStreamDrain>()?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(decode_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(decode_launches, m)?)?;
    m.add_function(wrap_pyfunction!(read_names, m)?)?;
    m.add_function(wrap_pyfunction!(instrument_ptx, m)?)?;
    m.add_function(wrap_pyfunction!(symbol_words, m)?)?;
    m.add(
        "SYMBOL_HEADER_WORDS",
        ikp_host::instrument::SYMBOL_HEADER_WORDS,
    )?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    Ok(())
}
