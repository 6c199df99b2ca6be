//! Decoders: a raw buffer in any of the wire formats ikp reads, or a peer profiler's
//! output, becomes a [`Trace`].
//!
//! - [`native`]: the ikp wire format v2 (see `ikp_device::wire`): rings, several launches
//!   per buffer ([`decode_launches`]), the opt-in overhead correction.
//! - [`tvm`]: the TVM family: TVM / warpscope v1 (`ikp_device::tvm`), FlashInfer with SM
//!   ids (`ikp_device::flashinfer`) and Mirage MPK (`ikp_device::mirage`), one slot
//!   layout with three packings of the tag (`family`).
//! - [`yaojz`]: yao-jz/intra-kernel-profiler's per-warp rings, in a dump file with a
//!   small header.
//! - [`proton`]: Proton's (Triton) intra-kernel Chrome trace: JSON text, not `u64` words,
//!   so it is told apart by its first bytes before any word is read ([`load`],
//!   [`detect_file`], [`decode_bytes`]).
//! - [`stream`]: a native buffer file decoded lane by lane, for outputs larger than memory.
//! - [`names`]: names files, for buffers that carry no names.
//! - [`async_ranges`]: native async ranges, which begin and end in any lanes of a launch,
//!   paired across lanes by token after the lane walk.
//!
//! All share one per-lane walk: 32-bit stamps are unwrapped into 64-bit ns, records are
//! paired (`# Pairing`), and everything that cannot be paired or placed is counted in
//! [`crate::model::Diagnostics`], never dropped silently.
//! The decoders size the output tables before the walk (a counting pass), run the walk in
//! parallel over chunks of lanes for large buffers, then close the holes left by
//! unmatched records, so the model is built without intermediate copies.
//! [`decode_into`] does the same into the columns of a trace decoded before, which
//! saves the kernel the work of mapping fresh pages for every decode; on one thread, the
//! TVM decoder then skips its counting pass and lays the lanes' rows one after the other.
//!
//! A block filter ([`DecodeOptions::blocks`]) is applied here, once, to the decoded model
//! (by [`StreamedBuffer`] as it outlines the launch): every writer and analysis then sees
//! the same lanes.
//!
//! # Pairing
//! As `ikp.cuh` documents it, an end closes the innermost open region with the same id,
//! in both formats. Regions opened after that one and still open stay open: regions of a
//! lane may overlap (begin A, begin B, end A, end B gives A and B, as when a leader issues
//! asynchronous work), not only nest, and each closes when its own end comes. A region
//! repeated inside itself pairs innermost first (which the peers' decoders, with one open
//! begin per event and lane, cannot pair). An end with no open begin of its id and a begin
//! still open when its lane ends are unmatched
//! ([`Diagnostics::unmatched_end`](crate::Diagnostics::unmatched_end),
//! [`Diagnostics::unmatched_begin`](crate::Diagnostics::unmatched_begin)). A span's
//! [`depth`](crate::model::Spans::depth) is 0 when nothing was open at its begin, else one
//! more than the depth of the innermost region open then. Nested regions pair on a hot
//! path; an end that closes a region other than the innermost open one takes a cold one.
//! Begins and ends of the regions a native header declares async are not paired in their
//! lane at all but across the launch, by token ([`async_ranges`]).
//!
//! # Unwrapping
//! Records carry the low 32 bits of a stamp. Each is read relative to the previous stamp
//! of its lane (the lane's 64-bit anchor before the first): the 32-bit difference `d`
//! (mod 2^32) is a step forward of `d` ticks when `d < 2^31`, and a step *backward* of
//! `2^32 - d` ticks otherwise. A backward step is a timer that went back a little (a
//! `%globaltimer` resync by the driver, say), not a forward jump of almost 2^32 ticks
//! (4.29 s of globaltimer): the record gets the lane's latest time (times never go
//! backwards within a lane), the lane's unwrapped time stays where it was, and the step is
//! counted (in [`Diagnostics::backward_steps`](crate::Diagnostics::backward_steps)), never an error. The
//! records stamped before the timer is back at that time are backward steps too, each
//! counted. So consecutive records of a lane must be less than 2^31 ticks apart (2.1 s
//! of globaltimer, about 1 s of a 2 GHz clock).
//!
//! # Detection
//! [`FormatChoice::Auto`] tries every format of a table, each with a cheap, strict test
//! of what a buffer of it must look like (the ikp magic; or a usable slot 0 and records
//! whose slot fields, types and SM ids agree with their slots, in the first
//! [`PROBE_HEAD_WORDS`] words and the [`PROBE_TAIL_WORDS`] words before the trailing
//! empty slots). It picks a format only when exactly one fits. Otherwise the error lists
//! the formats that fit ([`DecodeError::Ambiguous`]: a TVM buffer of one group per block
//! whose probed records hold no finalize, say, also reads as FlashInfer with every block
//! on SM 0), or, when none does, why each does not ([`DecodeError::Unrecognized`]: the
//! first word that disagrees). A forced format checks every record as it decodes, so a
//! wrong choice fails with the first record that disagrees.
//!

mod assemble;
pub mod async_ranges;
pub mod chrome_host;
mod correct;
mod family;
mod lane;
pub mod names;
pub mod native;
mod peer;
pub mod proton;
pub mod set_aside;
pub mod stream;
pub mod tvm;
pub mod yaojz;

pub use names::{read as read_names, NamesError};
pub use native::{MAX_LAUNCH_COUNT, OWN_RATIO_MIN_NS};
pub use set_aside::{
    CLOCK_DISAGREEMENT_MAX, CLOCK_SLACK_NS, LANE_SPAN_MAX_NS, LAUNCH_GAP_MAX_NS, STAMP_END_NS,
};
pub use stream::StreamedBuffer;

use crate::buffer::{BufferError, RawBuffer};
use crate::model::{BlockFilter, Names, Trace, WireFormat};
use std::path::{Path, PathBuf};

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
        match f {
            WireFormat::Ikp => FormatChoice::Ikp,
            WireFormat::Tvm => FormatChoice::Tvm,
            WireFormat::FlashInfer => FormatChoice::FlashInfer,
            WireFormat::Mirage => FormatChoice::Mirage,
            WireFormat::YaoJz => FormatChoice::YaoJz,
            WireFormat::Proton => FormatChoice::Proton,
        }
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
    /// A buffer the lane-by-lane decode ([`StreamedBuffer`]) does not take; decode it in
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

/// Words at the start of a buffer that detection reads (512 KiB).
pub const PROBE_HEAD_WORDS: usize = 1 << 16;
/// Words before a buffer's trailing empty slots that detection reads: each lane's last
/// records, where TVM's finalize records are. They are looked for in the last
/// [`PROBE_TAIL_SCAN_WORDS`] words only.
pub const PROBE_TAIL_WORDS: usize = 1 << 12;
/// How far back from a buffer's end detection looks for its last record (8 MiB).
pub const PROBE_TAIL_SCAN_WORDS: usize = 1 << 20;

/// The words auto-detection reads: a bounded head and tail of the buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Probe<'w> {
    /// The first words (word 0 first).
    pub head: &'w [u64],
    /// Words ending at the last non-zero word, after the head.
    pub tail: &'w [u64],
    /// Index of `tail[0]` in the buffer.
    pub tail_at: usize,
}

impl<'w> Probe<'w> {
    /// The probe of a buffer's words.
    pub fn of(words: &'w [u64]) -> Probe<'w> {
        let head = &words[..words.len().min(PROBE_HEAD_WORDS)];
        let scan_from = words
            .len()
            .saturating_sub(PROBE_TAIL_SCAN_WORDS)
            .max(head.len());
        let end = words[scan_from..]
            .iter()
            .rposition(|&w| w != 0)
            .map_or(scan_from, |i| scan_from + i + 1);
        let tail_at = end.saturating_sub(PROBE_TAIL_WORDS).max(scan_from);
        Probe {
            head,
            tail: &words[tail_at..end],
            tail_at,
        }
    }
}

/// One format auto-detection can pick, and its test ([`Probe`]): cheap (it reads the
/// probe only) and strict (a buffer of another format fails it). A misfit says why.
struct Detect {
    format: WireFormat,
    fits: fn(&Probe<'_>) -> Result<(), String>,
}

/// Every format auto-detection tries, in the order errors list them.
const DETECT: [Detect; 6] = [
    Detect {
        format: WireFormat::Ikp,
        fits: native_fits,
    },
    Detect {
        format: WireFormat::Tvm,
        fits: family::fits::<family::Tvm>,
    },
    Detect {
        format: WireFormat::FlashInfer,
        fits: family::fits::<family::FlashInfer>,
    },
    Detect {
        format: WireFormat::Mirage,
        fits: family::fits::<family::Mirage>,
    },
    Detect {
        format: WireFormat::YaoJz,
        fits: yaojz_fits,
    },
    Detect {
        format: WireFormat::Proton,
        fits: proton_fits,
    },
];

/// Whether the probe starts with the ikp magic.
fn native_fits(p: &Probe<'_>) -> Result<(), String> {
    match p.head.first() {
        Some(&ikp_device::wire::MAGIC) => Ok(()),
        w0 => Err(format!(
            "word 0 is {:#018x}, not the ikp magic",
            w0.copied().unwrap_or(0)
        )),
    }
}

/// Whether the probe starts with the yao-jz ring dump magic.
fn yaojz_fits(p: &Probe<'_>) -> Result<(), String> {
    match p.head.first() {
        Some(&yaojz::MAGIC) => Ok(()),
        _ => Err("word 0 is not the ring dump magic".into()),
    }
}

/// Whether the probe's first bytes are JSON text (a Proton trace held in words).
fn proton_fits(p: &Probe<'_>) -> Result<(), String> {
    let bytes: &[u8] = bytemuck::cast_slice(p.head);
    if proton::looks_like_json(&bytes[..bytes.len().min(proton::SNIFF_BYTES)]) {
        Ok(())
    } else {
        Err("the first bytes are not JSON text".into())
    }
}

/// For each format auto-detection tries, in table order: whether `words` could be in it,
/// or why not (module docs, `# Detection`).
pub fn candidate_formats(words: &[u64]) -> Vec<(WireFormat, Result<(), String>)> {
    let p = Probe::of(words);
    DETECT.iter().map(|d| (d.format, (d.fits)(&p))).collect()
}

/// Which format `words` is in, honouring a forced choice: with [`FormatChoice::Auto`],
/// the one format that fits, or an error listing those that do (none: [`Unrecognized`];
/// several: [`Ambiguous`]).
///
/// [`Unrecognized`]: DecodeError::Unrecognized
/// [`Ambiguous`]: DecodeError::Ambiguous
pub fn detect_format(words: &[u64], choice: FormatChoice) -> Result<WireFormat, DecodeError> {
    if let Some(f) = choice.forced() {
        return Ok(f);
    }
    let all = candidate_formats(words);
    let fit: Vec<WireFormat> = (all.iter().filter(|(_, f)| f.is_ok()))
        .map(|&(f, _)| f)
        .collect();
    match fit[..] {
        [one] => Ok(one),
        [] => Err(DecodeError::Unrecognized(
            all.into_iter()
                .filter_map(|(f, r)| Some((f, r.err()?)))
                .collect(),
        )),
        _ => Err(DecodeError::Ambiguous(fit)),
    }
}

/// Which format the buffer file `path` is in, honouring a forced choice: a cheap look
/// before deciding how to decode it (whole, or lane by lane). Reads only the probe's
/// words of a regular file (it is mapped); other inputs are read whole.
pub fn detect_file(path: &Path, choice: FormatChoice) -> Result<WireFormat, LoadError> {
    let err = |kind: LoadErrorKind| LoadError {
        path: path.to_path_buf(),
        kind,
    };
    if let Some(f) = choice.forced() {
        // The file must still be readable, as when detecting.
        std::fs::File::open(path).map_err(|e| err(BufferError::Io(e).into()))?;
        return Ok(f);
    }
    // JSON text (a Proton trace) is not a whole number of words: look at its first bytes
    // before mapping it.
    if starts_as_json(path).map_err(|e| err(BufferError::Io(e).into()))? {
        return Ok(WireFormat::Proton);
    }
    let found = match crate::buffer::MappedBuffer::open(path) {
        Ok(m) => detect_format(m.words(), choice),
        Err(BufferError::Io(_)) => {
            let b = RawBuffer::read(path).map_err(|e| err(e.into()))?;
            detect_format(&b.words, choice)
        }
        Err(e) => return Err(err(e.into())),
    };
    found.map_err(|e| err(e.into()))
}

/// Decodes a buffer's words (in any format ikp reads) into one trace per launch it
/// recorded: a native buffer of several epochs gives a trace per epoch where any lane ran
/// (each with [`Source::epoch`](crate::Source::epoch)), ascending; every other buffer one
/// trace, as [`decode`].
pub fn decode_launches(words: &[u64], opts: &DecodeOptions) -> Result<Vec<Trace>, DecodeError> {
    match detect_format(words, opts.format)? {
        WireFormat::Ikp => Ok(native::decode_launches(words, opts)?
            .into_iter()
            .map(|t| finish(t, opts))
            .collect()),
        _ => Ok(vec![decode(words, opts)?]),
    }
}

/// Decodes a buffer's words (in any format ikp reads) into a [`Trace`]. A native buffer
/// that recorded several launches (epochs) is refused
/// ([`DecodeError::SeveralLaunches`]): [`decode_launches`] decodes each; one of several
/// epochs where only one launch ran is that launch.
pub fn decode(words: &[u64], opts: &DecodeOptions) -> Result<Trace, DecodeError> {
    decode_reusing(words, opts, assemble::Recycled::default())
}

/// Decodes a buffer's words (in any format ikp reads) into `trace`, reusing the memory of its
/// span, instant and sample columns: a tool that decodes launch after launch (or a
/// benchmark) then writes into pages it already has instead of having the kernel map and
/// zero fresh ones for every launch. The result equals [`decode`]'s. On error `trace` is
/// left empty ([`Trace::default`]).
pub fn decode_into(
    words: &[u64],
    opts: &DecodeOptions,
    trace: &mut Trace,
) -> Result<(), DecodeError> {
    let old = std::mem::take(trace);
    let reuse = assemble::Recycled {
        spans: old.spans,
        instants: old.instants,
        samples: old.samples,
    };
    *trace = decode_reusing(words, opts, reuse)?;
    Ok(())
}

fn decode_reusing(
    words: &[u64],
    opts: &DecodeOptions,
    reuse: assemble::Recycled,
) -> Result<Trace, DecodeError> {
    let trace = match detect_format(words, opts.format)? {
        WireFormat::Ikp => native::decode(words, opts, reuse)?,
        WireFormat::Tvm => tvm::decode::<family::Tvm>(words, opts, reuse)?,
        WireFormat::FlashInfer => tvm::decode::<family::FlashInfer>(words, opts, reuse)?,
        WireFormat::Mirage => tvm::decode::<family::Mirage>(words, opts, reuse)?,
        WireFormat::YaoJz => yaojz::decode(words, opts)?,
        // JSON text held in words (a caller padded it to whole words with zeros).
        WireFormat::Proton => {
            let bytes: &[u8] = bytemuck::cast_slice(words);
            let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            proton::decode(&bytes[..end], opts)?
        }
    };
    Ok(finish(trace, opts))
}

/// What every decoder's trace goes through: the names given, then the block filter.
fn finish(mut trace: Trace, opts: &DecodeOptions) -> Trace {
    if let Some(n) = &opts.names {
        names::overlay(&mut trace.names, n);
    }
    if !opts.blocks.keeps_all() {
        trace = trace.filter_blocks(&opts.blocks);
    }
    trace
}

/// Decodes a buffer held as bytes, in any format: JSON text (a Proton trace) is parsed as
/// such, anything else must be a whole number of little-endian `u64` words.
pub fn decode_bytes(bytes: &[u8], opts: &DecodeOptions) -> Result<Trace, LoadError> {
    decode_named(Path::new("(bytes)"), bytes, opts)
}

/// [`decode_bytes`], errors naming `path`.
fn decode_named(path: &Path, bytes: &[u8], opts: &DecodeOptions) -> Result<Trace, LoadError> {
    let head = &bytes[..bytes.len().min(proton::SNIFF_BYTES)];
    let json = match opts.format {
        FormatChoice::Proton => true,
        FormatChoice::Auto => proton::looks_like_json(head),
        _ => false,
    };
    if json {
        return (proton::decode(bytes, opts).map(|t| finish(t, opts))).map_err(|e| LoadError {
            path: path.to_path_buf(),
            kind: DecodeError::from(e).into(),
        });
    }
    let buf = RawBuffer::from_bytes(path, bytes).map_err(|e| LoadError {
        path: path.to_path_buf(),
        kind: e.into(),
    })?;
    decode_buffer(&buf, opts)
}

/// Decodes a buffer read with [`RawBuffer`]; errors name the buffer.
pub fn decode_buffer(buf: &RawBuffer, opts: &DecodeOptions) -> Result<Trace, LoadError> {
    decode(&buf.words, opts).map_err(|e| LoadError {
        path: buf.name.clone(),
        kind: e.into(),
    })
}

/// Whether the file's first bytes are JSON text (a Proton trace), read without mapping it.
fn starts_as_json(path: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut head = Vec::with_capacity(proton::SNIFF_BYTES);
    std::fs::File::open(path)?
        .take(proton::SNIFF_BYTES as u64)
        .read_to_end(&mut head)?;
    Ok(proton::looks_like_json(&head))
}

/// [`load`], one trace per launch the file recorded ([`decode_launches`]).
pub fn load_launches(path: &Path, opts: &DecodeOptions) -> Result<Vec<Trace>, LoadError> {
    let err = |kind: LoadErrorKind| LoadError {
        path: path.to_path_buf(),
        kind,
    };
    let regular = std::fs::metadata(path).is_ok_and(|m| m.is_file());
    let json = match opts.format {
        FormatChoice::Proton => true,
        FormatChoice::Auto => regular && starts_as_json(path).unwrap_or(false),
        _ => false,
    };
    if json {
        return Ok(vec![load(path, opts)?]);
    }
    let launches = |words: &[u64]| decode_launches(words, opts).map_err(|e| err(e.into()));
    if regular {
        match crate::buffer::MappedBuffer::open(path) {
            Ok(m) => return launches(m.words()),
            Err(BufferError::Io(_)) => {}
            Err(e) => return Err(err(e.into())),
        }
    }
    let bytes = std::fs::read(path).map_err(|e| err(BufferError::Io(e).into()))?;
    let head = &bytes[..bytes.len().min(proton::SNIFF_BYTES)];
    if opts.format == FormatChoice::Auto && proton::looks_like_json(head) {
        return Ok(vec![decode_named(path, &bytes, opts)?]);
    }
    let buf = RawBuffer::from_bytes(path, &bytes).map_err(|e| err(e.into()))?;
    launches(&buf.words)
}

/// Reads and decodes a file: memory-mapped (never copied) when it is a regular file,
/// read into memory otherwise (a pipe). The raw words are released before returning. A
/// Proton trace (JSON text: by its first bytes, or when chosen) is read whole and parsed;
/// the checks of a word buffer (a whole number of words) apply to the binary formats only.
pub fn load(path: &Path, opts: &DecodeOptions) -> Result<Trace, LoadError> {
    let err = |e: BufferError| LoadError {
        path: path.to_path_buf(),
        kind: e.into(),
    };
    // A pipe is read once, whole (a look at its first bytes would consume them).
    let regular = std::fs::metadata(path).is_ok_and(|m| m.is_file());
    let json = match opts.format {
        FormatChoice::Proton => true,
        FormatChoice::Auto => regular && starts_as_json(path).unwrap_or(false),
        _ => false,
    };
    if json || !regular {
        let bytes = std::fs::read(path).map_err(|e| err(BufferError::Io(e)))?;
        return decode_named(path, &bytes, opts);
    }
    match crate::buffer::MappedBuffer::open(path) {
        Ok(m) => decode(m.words(), opts).map_err(|e| LoadError {
            path: path.to_path_buf(),
            kind: e.into(),
        }),
        Err(BufferError::Io(_)) => decode_buffer(&RawBuffer::read(path).map_err(err)?, opts),
        Err(e) => Err(err(e)),
    }
}
