//! Decoders: a raw buffer in either wire format, or a peer profiler's output, becomes a
//! [`Trace`].
//!
//! - [`native`]: the ikp wire format v1 (see `ikp_device::wire`).
//! - [`tvm`]: the TVM / FlashInfer / warpscope v1 format (`ikp_device::tvm`).
//! - [`yaojz`]: yao-jz/intra-kernel-profiler's per-warp rings, in a dump file with a
//!   small header.
//! - [`proton`]: Proton's (Triton) intra-kernel Chrome trace: JSON text, not `u64` words,
//!   so it is told apart by its first bytes before any word is read ([`load`],
//!   [`detect_file`], [`decode_bytes`]).
//! - [`stream`]: a native buffer file decoded lane by lane, for outputs larger than memory.
//! - [`names`]: names files, for buffers that carry no names.
//!
//! Both share one per-lane walk: records are paired with a stack per lane
//! (so nested and repeated regions pair correctly, unlike the peers' one open slot per
//! event), 32-bit stamps are unwrapped into 64-bit ns, and everything that cannot be
//! paired or placed is counted in [`crate::model::Diagnostics`], never dropped silently.
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

mod assemble;
mod lane;
pub mod names;
pub mod native;
mod peer;
pub mod proton;
pub mod stream;
pub mod tvm;
pub mod yaojz;

pub use names::{read as read_names, NamesError};
pub use native::{
    CLOCK_DISAGREEMENT_MAX, CLOCK_SLACK_NS, LANE_SPAN_MAX_NS, LAUNCH_GAP_MAX_NS, OWN_RATIO_MIN_NS,
};
pub use stream::StreamedBuffer;

use crate::buffer::{BufferError, RawBuffer};
use crate::model::{BlockFilter, Names, Trace, WireFormat};
use std::path::{Path, PathBuf};

/// Which wire format to decode a buffer as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FormatChoice {
    /// Proton if the first bytes are JSON text, else ikp or yao-jz if word 0 is its magic,
    /// else TVM if word 0 is a plausible TVM header.
    #[default]
    Auto,
    /// The ikp native format.
    Ikp,
    /// The TVM / FlashInfer / warpscope v1 format.
    Tvm,
    /// A yao-jz/intra-kernel-profiler ring dump ([`yaojz`]).
    YaoJz,
    /// A Proton intra-kernel Chrome trace ([`proton`]).
    Proton,
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
}

/// Why a buffer could not be decoded. Positions are word indices into the buffer.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The native header is invalid (bad magic, newer version, truncated, absurd fields).
    #[error("ikp header: {0}")]
    Header(#[from] ikp_device::LayoutError),
    /// No known format's header.
    #[error("unrecognized buffer: word 0 is {0:#018x}, neither the ikp magic nor the yao-jz ring dump magic nor a TVM-format header (groups << 32 | blocks), and the buffer is not JSON text; choose the format explicitly to decode it anyway")]
    Unrecognized(u64),
    /// A yao-jz ring dump that cannot be decoded.
    #[error("yao-jz ring dump: {0}")]
    YaoJz(#[from] yaojz::YaoJzError),
    /// A Proton trace that cannot be decoded.
    #[error("Proton trace: {0}")]
    Proton(#[from] proton::ProtonError),
    /// The TVM-format header (slot 0) is unusable.
    #[error("TVM-format header (slot 0 = {word:#018x}): {why}")]
    TvmHeader {
        /// Slot 0.
        word: u64,
        /// What is wrong.
        why: &'static str,
    },
    /// A TVM-format record sits in another lane's slot (or names a lane that does not exist).
    #[error("slot {slot}: record {word:#018x} names lane {found}, but the layout (stride {stride} = blocks x groups) puts lane {expected} there{}", if *found >= *stride { " (lane id out of range)" } else { "" })]
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

/// Which format `words` is in, honouring a forced choice.
pub fn detect_format(words: &[u64], choice: FormatChoice) -> Result<WireFormat, DecodeError> {
    let w0 = words.first().copied().unwrap_or(0);
    let head =
        &bytemuck::cast_slice::<u64, u8>(words)[..(words.len() * 8).min(proton::SNIFF_BYTES)];
    match choice {
        FormatChoice::Ikp => Ok(WireFormat::Ikp),
        FormatChoice::Tvm => Ok(WireFormat::Tvm),
        FormatChoice::YaoJz => Ok(WireFormat::YaoJz),
        FormatChoice::Proton => Ok(WireFormat::Proton),
        FormatChoice::Auto if w0 == ikp_device::wire::MAGIC => Ok(WireFormat::Ikp),
        FormatChoice::Auto if w0 == yaojz::MAGIC => Ok(WireFormat::YaoJz),
        FormatChoice::Auto if proton::looks_like_json(head) => Ok(WireFormat::Proton),
        FormatChoice::Auto if tvm::plausible_header(words) => Ok(WireFormat::Tvm),
        FormatChoice::Auto => Err(DecodeError::Unrecognized(w0)),
    }
}

/// Which format the file `path` is in, from its first bytes, honouring a forced choice: a
/// cheap look before deciding how to decode it (whole, or lane by lane).
pub fn detect_file(path: &Path, choice: FormatChoice) -> Result<WireFormat, LoadError> {
    use std::io::Read;
    let err = |kind: LoadErrorKind| LoadError {
        path: path.to_path_buf(),
        kind,
    };
    let mut head = Vec::with_capacity(proton::SNIFF_BYTES);
    std::fs::File::open(path)
        .and_then(|f| f.take(proton::SNIFF_BYTES as u64).read_to_end(&mut head))
        .map_err(|e| err(BufferError::Io(e).into()))?;
    if choice == FormatChoice::Auto && proton::looks_like_json(&head) {
        return Ok(WireFormat::Proton);
    }
    let Some(w0) = head.first_chunk::<8>() else {
        let e = std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("{} bytes, less than one u64 word", head.len()),
        );
        return Err(err(BufferError::Io(e).into()));
    };
    detect_format(&[u64::from_le_bytes(*w0)], choice).map_err(|e| err(e.into()))
}

/// Decodes a buffer's words (in either format) into a [`Trace`].
pub fn decode(words: &[u64], opts: &DecodeOptions) -> Result<Trace, DecodeError> {
    decode_reusing(words, opts, assemble::Recycled::default())
}

/// Decodes a buffer's words (in either format) into `trace`, reusing the memory of its
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
        WireFormat::Tvm => tvm::decode(words, opts, reuse)?,
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
        FormatChoice::Auto => {
            regular && detect_file(path, opts.format).is_ok_and(|f| f == WireFormat::Proton)
        }
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
