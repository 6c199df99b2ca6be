//! The decoders' shared vocabulary: which format to decode as ([`FormatChoice`]), how
//! ([`DecodeOptions`]), and why a buffer or a file could not be decoded ([`DecodeError`],
//! [`LoadError`]). Kept apart from the entry points so that every decoder imports these
//! without importing the front door.

use super::{native, proton, yaojz};
use crate::buffer::BufferError;
use crate::model::{BlockFilter, Names, WireFormat};
use std::path::PathBuf;

/// Which wire format to decode a buffer as. Its names ([`FormatChoice::name`], parsed by
/// `FromStr`) are the command line's `--format` values and the Python package's `format=`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum FormatChoice {
    /// The one format the buffer fits (an error lists them when several do).
    #[default]
    Auto,
    /// ikp native format.
    Ikp,
    /// TVM / warpscope format (and FlashInfer's before it recorded SM ids).
    Tvm,
    /// FlashInfer's format with SM ids (include/flashinfer/profiler.cuh).
    #[cfg_attr(feature = "clap", value(name = "flashinfer"))]
    FlashInfer,
    /// Mirage's persistent-kernel (MPK) format.
    Mirage,
    /// yao-jz/intra-kernel-profiler ring dump (header, counters, events).
    YaoJz,
    /// Proton (Triton) intra-kernel Chrome trace JSON.
    Proton,
}

impl FormatChoice {
    /// Every choice, `Auto` first.
    pub const ALL: [FormatChoice; 7] = [
        FormatChoice::Auto,
        FormatChoice::Ikp,
        FormatChoice::Tvm,
        FormatChoice::FlashInfer,
        FormatChoice::Mirage,
        FormatChoice::YaoJz,
        FormatChoice::Proton,
    ];

    /// The choice's name: `auto`, or the format's ([`WireFormat::name`]).
    pub fn name(self) -> &'static str {
        self.forced().map_or("auto", WireFormat::name)
    }

    /// `ikp, tvm, flashinfer, mirage, yao-jz or proton`: the names that force a format, for
    /// messages.
    pub fn forcing_names() -> String {
        let names: Vec<&str> = Self::ALL[1..].iter().map(|c| c.name()).collect();
        let (last, rest) = names.split_last().expect("formats");
        format!("{} or {last}", rest.join(", "))
    }
}

impl std::fmt::Display for FormatChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is none of [`FormatChoice::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown format {0:?}: expected auto, {forcing}", forcing = FormatChoice::forcing_names())]
pub struct UnknownFormat(pub String);

impl std::str::FromStr for FormatChoice {
    type Err = UnknownFormat;

    /// A name of [`FormatChoice::ALL`], in any case; `yaojz` is taken for `yao-jz`.
    fn from_str(s: &str) -> Result<FormatChoice, UnknownFormat> {
        let lower = s.to_ascii_lowercase();
        let lower = if lower == "yaojz" { "yao-jz" } else { &lower };
        (Self::ALL.iter().copied())
            .find(|c| c.name() == lower)
            .ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

impl From<WireFormat> for FormatChoice {
    /// The choice that forces `f`.
    fn from(f: WireFormat) -> FormatChoice {
        (Self::ALL.into_iter().find(|c| c.forced() == Some(f))).expect("a choice per format")
    }
}

impl FormatChoice {
    /// The format forced, if any.
    pub fn forced(self) -> Option<WireFormat> {
        match self {
            FormatChoice::Auto => None,
            FormatChoice::Ikp => Some(WireFormat::Ikp),
            FormatChoice::Tvm => Some(WireFormat::Tvm),
            FormatChoice::FlashInfer => Some(WireFormat::FlashInfer),
            FormatChoice::Mirage => Some(WireFormat::Mirage),
            FormatChoice::YaoJz => Some(WireFormat::YaoJz),
            FormatChoice::Proton => Some(WireFormat::Proton),
        }
    }
}

/// How to decode.
#[derive(Clone, Debug, Default)]
pub struct DecodeOptions {
    /// Wire format (auto-detected by default).
    pub format: FormatChoice,
    /// Names that replace the buffer's own (entry by entry: an empty string keeps the
    /// buffer's name). TVM-format buffers carry no names, so this is their only source.
    pub names: Option<Names>,
    /// Only the lanes of these blocks (default: every block); recorded in the trace's
    /// [`Source::block_filter`](crate::Source::block_filter).
    pub blocks: BlockFilter,
    /// Walk lanes on the rayon pool when the buffer is large (default on). Off gives a
    /// strictly single-threaded decode (used by the one-core benchmark).
    pub single_threaded: bool,
    /// Proton traces: the GPU's clock rate in MHz, to convert their cycle counts to ns
    /// (default: the 1000 MHz Proton's writer assumed). Other formats ignore it.
    pub proton_clock_mhz: Option<f64>,
    /// Native buffers: subtract the cost of recording from span durations, each lane's
    /// measured per-record cost for every record between a span's begin and end
    /// ([`native`], `# Overhead correction`; reported in
    /// [`Source::overhead_correction`](crate::Source::overhead_correction)). Default off, so
    /// that durations are what the records measured; checked on a GPU by `ikp-gpucheck`'s
    /// `overhead-correction`. Other formats ignore it.
    pub correct_overhead: bool,
}

/// Why a buffer could not be decoded. Positions are word indices into the buffer.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The native header is invalid (bad magic, newer version, truncated, absurd fields).
    #[error("ikp header: {0}")]
    Header(#[from] ikp_device::LayoutError),
    /// The buffer fits none of the formats (module docs, `# Detection`): why not, format
    /// by format.
    #[error("unrecognized buffer: it fits none of the formats ikp reads: {}", misfits(.0))]
    Unrecognized(Vec<(WireFormat, String)>),
    /// The buffer fits more than one format (module docs, `# Detection`).
    #[error("the buffer fits {} formats: {}; choose one explicitly", .0.len(), format_list(.0))]
    Ambiguous(Vec<WireFormat>),
    /// A yao-jz ring dump that cannot be decoded.
    #[error("yao-jz ring dump: {0}")]
    YaoJz(#[from] yaojz::YaoJzError),
    /// A Proton trace that cannot be decoded.
    #[error("Proton trace: {0}")]
    Proton(#[from] proton::ProtonError),
    /// An ikp stream file (`.ikps`) that cannot be read.
    #[error("ikp stream file: {0}")]
    Stream(#[from] crate::stream_file::StreamFileError),
    /// The TVM-format header (slot 0) is unusable.
    #[error("TVM-format header (slot 0 = {word:#018x}): {why}")]
    TvmHeader {
        /// Slot 0.
        word: u64,
        /// What is wrong.
        why: &'static str,
    },
    /// A TVM-format record sits in another lane's slot (or names a lane that does not exist).
    /// Named like the other formats' [`DecodeError::Record`]: `TVM format: slot ..`.
    #[error("{} format: slot {slot}: record {word:#018x} {}", WireFormat::Tvm, tvm_lane_why(*found, *expected, *stride))]
    TvmLane {
        /// Word index.
        slot: u64,
        /// The record.
        word: u64,
        /// Lane in the record's tag.
        found: u64,
        /// Lane of the slot.
        expected: u64,
        /// blocks x groups.
        stride: u64,
    },
    /// Slot 0 of a FlashInfer- or Mirage-format buffer is unusable.
    #[error("{format}-format header (slot 0 = {word:#018x}): {why}")]
    SlotHeader {
        /// The format.
        format: WireFormat,
        /// Slot 0.
        word: u64,
        /// What is wrong.
        why: &'static str,
    },
    /// A record of a FlashInfer- or Mirage-format buffer that its slot does not allow: it
    /// names another slot, has a type the format never writes, or (FlashInfer) another SM
    /// than the rest of its lane.
    #[error("{format} format: slot {slot}: record {word:#018x} {why}")]
    Record {
        /// The format.
        format: WireFormat,
        /// Word index.
        slot: u64,
        /// The record.
        word: u64,
        /// What is wrong.
        why: String,
    },
    /// A native lane segment is inconsistent (garbage).
    #[error("lane {lane} (words {first}..{end}): {why}")]
    Lane {
        /// Lane index.
        lane: u64,
        /// First word of its segment.
        first: u64,
        /// One past its last word.
        end: u64,
        /// What is wrong.
        why: String,
    },
    /// A clock-mode buffer whose lanes cannot calibrate cycles against nanoseconds.
    #[error(
        "clock-mode buffer: cannot convert cycles to ns: {0} (ikp never assumes a clock frequency)"
    )]
    NoClockCalibration(NoCalibration),
    /// A native buffer that recorded several launches (epochs), asked for as one trace.
    #[error(
        "the buffer holds {0} launches (one per epoch): decode them with decode_launches or \
         load_launches (ikp's commands show each launch)"
    )]
    SeveralLaunches(usize),
    /// A launch counter that cannot be a count of launches (garbage).
    #[error(
        "launch counter of lane {lane} (word {word}) is {value}, more than the {} launches \
         a counter can count: not written by ikp",
        native::MAX_LAUNCH_COUNT
    )]
    LaunchCounter {
        /// Lane index.
        lane: u64,
        /// Word index of the counter.
        word: u64,
        /// Its value.
        value: u64,
    },
    /// A buffer the lane-by-lane decode ([`StreamedBuffer`](super::StreamedBuffer)) does not take; decode it in
    /// memory.
    #[error("cannot decode lane by lane: {0}; decode it in memory")]
    NotStreamable(String),
}

/// Why a clock-mode buffer has no cycles-to-ns calibration (see [`native`], `# Clock
/// mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoCalibration {
    /// No lane finalized with end stamps after its start stamps.
    #[error("no finalized lane has a usable (clock64, globaltimer) pair")]
    NoPair,
    /// Every usable pair spans 0 ns: each lane ran for less than one `%globaltimer` tick
    /// (which is up to about 1 us on some GPUs), so no elapsed time was measured at all.
    #[error("all {lanes} finalized lanes ended within one %globaltimer tick of their start ({cycles} cycles in all, 0 ns): lanes shorter than one globaltimer tick cannot measure the clock rate")]
    WithinOneTick {
        /// Lanes with a usable pair.
        lanes: u64,
        /// Their cycles, summed.
        cycles: u64,
    },
}

/// Why a file could not be loaded: the file and the problem.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", path.display())]
pub struct LoadError {
    /// The file.
    pub path: PathBuf,
    /// The problem.
    pub kind: LoadErrorKind,
}

impl LoadError {
    /// The problem `kind` of the file `path`.
    pub fn new(path: &std::path::Path, kind: impl Into<LoadErrorKind>) -> LoadError {
        LoadError {
            path: path.to_path_buf(),
            kind: kind.into(),
        }
    }
}

/// The problem of a [`LoadError`].
#[derive(Debug, thiserror::Error)]
pub enum LoadErrorKind {
    /// Reading the bytes.
    #[error(transparent)]
    Buffer(#[from] BufferError),
    /// Decoding them.
    #[error(transparent)]
    Decode(#[from] DecodeError),
}

/// `format: why; format: why`.
fn misfits(why: &[(WireFormat, String)]) -> String {
    let each: Vec<String> = why.iter().map(|(f, w)| format!("{f}: {w}")).collect();
    each.join("; ")
}

/// Why a TVM-format record does not belong in its slot ([`DecodeError::TvmLane`]).
pub(crate) fn tvm_lane_why(found: u64, expected: u64, stride: u64) -> String {
    let out = if found >= stride {
        " (lane id out of range)"
    } else {
        ""
    };
    format!("names lane {found}, but the layout (stride {stride} = blocks x groups) puts lane {expected} there{out}")
}

/// `a, b and c`.
fn format_list(formats: &[WireFormat]) -> String {
    let names: Vec<String> = formats.iter().map(|f| f.to_string()).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.concat(),
    }
}
