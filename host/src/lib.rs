//! ikp-host: everything after an instrumented kernel ran.
//!
//! Load a buffer, decode it into a [`Trace`], write it as Perfetto, Chrome trace JSON, a
//! summary JSON, CSV or Parquet, analyse it, report on it:
//!
//! ```
//! # let dir = tempfile::tempdir()?;
//! # let buf = dir.path().join("attention.ikp");
//! # std::fs::write(&buf, ikp_device::sample::attention()?.to_bytes())?;
//! use ikp_host::{atomic, load, write_perfetto, write_summary, write_table, summarize};
//! use ikp_host::{DecodeOptions, Launch, PerfettoOptions, SummaryOptions, TraceStats};
//!
//! let trace = load(&buf, &DecodeOptions::default())?;
//! let perfetto = dir.path().join("attention.trace");
//! atomic::write_file(&perfetto, |w| {
//!     write_perfetto(w, &[Launch::new("attention", &trace)], &PerfettoOptions::default())
//! })?;
//! // The statistics once; the summary JSON and the table format the same figures.
//! let stats = TraceStats::of(&trace);
//! let summary = summarize(&stats, &SummaryOptions::default(), "attention.trace");
//! write_summary(std::io::stdout().lock(), &summary)?;
//! write_table(std::io::stdout().lock(), &stats, &Default::default())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Layers
//!
//! Data flows one way, and the modules follow it:
//!
//! ```text
//! buffer → decode (formats, streaming, block filter) → model → { stats, analysis } → { write, report }
//! ```
//!
//! [`mod@decode`] turns raw little-endian `u64` words (or another profiler's output: a
//! yao-jz ring dump, a Proton Chrome trace) into the [`model`] (integer ns, struct of
//! arrays, names by id; [`load_launches`] gives a trace per launch of a buffer that
//! recorded several), and a host-side Chrome trace into a [`HostTrace`] that
//! [`write_merged`] places beside launches on the host's clock; [`stats`] and [`analysis`] read the model; the writers of
//! [`mod@write`] and [`report`] read the model, the statistics (a [`TraceStats`], computed
//! once per trace) and the analyses (built once per launch), and only format them. Every
//! writer takes its sink first and returns [`WriteError`]; [`atomic`] writes files whole,
//! alone or several together. [`Timestamp`] and [`DurationNs`] are the time types (every
//! unit conversion is made in one private module, `time`);
//! [`definitions`] says what each reported figure means.
//!
//! Beside the flow: [`cuda`] (cargo feature `cuda`, default on) is the GPU side of the
//! host (the driver, [`HostSession`] for one instrumented launch, NVRTC); [`sass`]
//! measures what instrumentation sites cost in SASS with nvcc and cuobjdump (no driver);
//! [`stats::overhead`] computes run-time slowdown statistics. [`Arch`] names a GPU architecture
//! for both.
//!
//! # Public paths
//!
//! What a user needs is at the crate root (the `pub use` list below). A module is public
//! only for what its rustdoc specifies (a file format's `# Format`, the model's ordering
//! invariants, the clock sync, the decoders' rules) or as the namespace of one feature's
//! API ([`analysis`], [`report`], [`sass`], [`cuda`], [`stats::overhead`]); the rest
//! (lane-by-lane decoding, time conversions, the writers' encoders) is private.
//!
//! # Features
//!
//! - `cuda` (default): [`cuda`], through cudarc. Without it nothing here links cudarc:
//!   a decode / write / analysis build (`default-features = false`).
//! - `xlsx` (default): the report workbook ([`report::write_xlsx`]), through
//!   rust_xlsxwriter.
//! - `parquet` (default): the Parquet tables ([`write_parquet`], [`write::parquet`]),
//!   through the `parquet` crate's own writer (no Arrow; Snappy compression).
#![warn(missing_docs)]

mod arch;
mod buffer;
pub mod clock_sync;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod decode;
pub mod drain;
pub mod instrument;
pub mod model;
mod time;

pub mod analysis;
pub mod definitions;
pub mod report;
pub mod sass;
pub mod stats;
pub mod stream_file;
pub mod write;

#[cfg(test)]
mod testutil;

pub use analysis::kernel::{analyze, KernelAnalysis, KernelOptions};
pub use arch::{Arch, ArchError};
pub use buffer::{BufferError, RawBuffer};
pub use clock_sync::{host_now, ClockSync, HostClock, HostInstant};
pub use decode::chrome_host::{
    parse_chrome_trace, read_chrome_trace, ChromeReadOptions, HostTraceError,
};
pub use decode::{
    decode, decode_bytes, decode_into, decode_launches, detect_file, load, load_launches,
    read_names, DecodeError, DecodeOptions, Decoded, FormatChoice, Input, LoadError, LoadErrorKind,
    NamesError, NoCalibration, StreamedBuffer, Streaming, UnknownFormat,
};
pub use model::{
    AssumedClock, AsyncRanges, BlockFilter, BlockFilterError, ClockCalibration, CounterSamples,
    DiagnosticCounts, Diagnostics, Epoch, HostEvent, HostThread, HostTrace, Instants, Lane, Names,
    OverheadCorrection, SetAsideLane, SetAsideReason, SetAsideThread, Source, Spans, StreamSource,
    Trace, TrackId, Unpaired, WireFormat,
};
pub use stats::TraceStats;
pub use time::{format_duration, DurationNs, Timestamp};
pub use write::analysis_text::{write_analysis, write_diff, AnalysisTextOptions};
pub use write::block_dists::{block_dists, write_block_dists};
pub use write::chrome::write_chrome;
pub use write::csv::write_csv;
#[cfg(feature = "parquet")]
pub use write::parquet::write_parquet;
pub use write::perfetto::{
    write_merged, write_perfetto, write_perfetto_streamed, Compression, GroupBy, LaunchLayout,
    MergeStats, PerfettoOptions, PerfettoStats,
};
pub use write::summary::{summarize, write_summary, Summary};
pub use write::table::write_table;
pub use write::{
    atomic, dists_path, file_name, summary_path, write_trace, BlockDistOptions, ChromeOptions,
    Launch, SummaryOptions, TableOptions, TraceWriteOptions, WriteError, WriteErrorKind,
};

#[cfg(feature = "cuda")]
pub use cuda::{HostSession, SessionError};
