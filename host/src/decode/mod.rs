//! Decoders: a raw buffer in any of the wire formats ikp reads, or a peer profiler's
//! output, becomes a [`Trace`].
//!
//! - [`native`]: the ikp wire format v2 (see `ikp_device::wire`): rings, several launches
//!   per buffer ([`decode_launches`]), the opt-in overhead correction.
//! - [`tvm_family`]: the TVM family: TVM / warpscope v1 (`ikp_device::tvm`), FlashInfer
//!   with SM ids (`ikp_device::flashinfer`) and Mirage MPK (`ikp_device::mirage`), one
//!   slot layout with three packings of the tag (`tvm_family::packing`).
//! - [`yaojz`]: yao-jz/intra-kernel-profiler's per-warp rings, in a dump file with a
//!   small header.
//! - [`proton`]: Proton's (Triton) intra-kernel Chrome trace: JSON text, not `u64` words,
//!   so it is told apart by its first bytes before any word is read ([`load`],
//!   [`detect_file`], [`decode_bytes`]).
//! - [`StreamedBuffer`]: a native buffer file decoded lane by lane, for outputs larger than memory.
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
//! # Entry points
//! A file or bytes go through one loader, [`Input`]: it reads them (a regular file is
//! mapped, JSON text is kept as text), detects the format once, and decodes into one
//! trace ([`Input::decode`]), a trace per launch ([`Input::decode_launches`]), or, for a
//! large native buffer, lane by lane ([`Input::decode_or_stream`], [`StreamedBuffer`]).
//! [`load`], [`load_launches`], [`decode_bytes`] and [`detect_file`] are its one-line
//! shorthands. Words already in memory (a device read-back) go to [`decode`],
//! [`decode_into`] and [`decode_launches`].

mod assemble;
pub(crate) use assemble::Recycled;
pub mod async_ranges;
pub mod chrome_host;
mod correct;
mod lane;
pub mod names;
pub mod native;
mod peer;
pub mod proton;
pub mod set_aside;
mod stream;
pub mod stream_capture;
pub mod tvm_family;
pub mod yaojz;

mod detect;
mod input;
mod types;

pub(crate) use detect::Probe;
pub use detect::{
    candidate_formats, detect_format, PROBE_HEAD_WORDS, PROBE_TAIL_SCAN_WORDS, PROBE_TAIL_WORDS,
};
pub use input::{Decoded, Input, Streaming, STREAM_MIN_BYTES};
pub use names::{read as read_names, NamesError};
pub use native::MAX_LAUNCH_COUNT;
pub use set_aside::{
    CLOCK_DISAGREEMENT_MAX, CLOCK_SLACK_NS, LANE_SPAN_MAX_NS, LAUNCH_GAP_MAX_NS, OWN_RATIO_MIN_NS,
    STAMP_END_NS,
};
pub use stream::StreamedBuffer;
pub(crate) use types::tvm_lane_why;
pub use types::{
    DecodeError, DecodeOptions, FormatChoice, LoadError, LoadErrorKind, NoCalibration,
    UnknownFormat,
};

use crate::model::{Trace, WireFormat};
use std::path::Path;

/// Decodes a buffer's words (in any format ikp reads) into a [`Trace`]. A native buffer
/// that recorded several launches (epochs) is refused
/// ([`DecodeError::SeveralLaunches`]): [`decode_launches`] decodes each; one of several
/// epochs where only one launch ran is that launch.
pub fn decode(words: &[u64], opts: &DecodeOptions) -> Result<Trace, DecodeError> {
    decode_as(
        detect_format(words, opts.format)?,
        words,
        opts,
        Default::default(),
    )
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
    let reuse = assemble::Recycled::of(std::mem::take(trace));
    *trace = decode_as(detect_format(words, opts.format)?, words, opts, reuse)?;
    Ok(())
}

/// Decodes a buffer's words (in any format ikp reads) into one trace per launch it
/// recorded: a native buffer of several epochs gives a trace per epoch where any lane ran
/// (each with [`Source::epoch`](crate::Source::epoch)), ascending; every other buffer one
/// trace, as [`decode`].
pub fn decode_launches(words: &[u64], opts: &DecodeOptions) -> Result<Vec<Trace>, DecodeError> {
    launches_as(detect_format(words, opts.format)?, words, opts)
}

/// Reads and decodes a file ([`Input::open`], [`Input::decode`]); its words are released
/// before returning.
pub fn load(path: &Path, opts: &DecodeOptions) -> Result<Trace, LoadError> {
    Input::open(path, opts.format)?.decode(opts)
}

/// [`load`], one trace per launch the file recorded ([`decode_launches`]).
pub fn load_launches(path: &Path, opts: &DecodeOptions) -> Result<Vec<Trace>, LoadError> {
    Input::open(path, opts.format)?.decode_launches(opts)
}

/// Decodes a buffer held as bytes, in any format ([`Input::from_bytes`]).
pub fn decode_bytes(bytes: &[u8], opts: &DecodeOptions) -> Result<Trace, LoadError> {
    Input::from_bytes(bytes, opts.format)?.decode(opts)
}

/// Which format the buffer file `path` is in, honouring a forced choice ([`Input::open`]).
pub fn detect_file(path: &Path, choice: FormatChoice) -> Result<WireFormat, LoadError> {
    Ok(Input::open(path, choice)?.format())
}

/// Decodes `words` as `format` (known: detected or forced), into one trace.
fn decode_as(
    format: WireFormat,
    words: &[u64],
    opts: &DecodeOptions,
    reuse: assemble::Recycled,
) -> Result<Trace, DecodeError> {
    let trace = match format {
        // A stream file (`.ikps`) is the ikp format's too: its records, in their native form.
        WireFormat::Ikp if crate::stream_file::is_stream_words(words) => {
            crate::stream_file::read_words(words)?.native_trace(opts, reuse)?
        }
        WireFormat::Ikp => native::decode(words, opts, reuse)?,
        WireFormat::Tvm => tvm_family::decode::<tvm_family::Tvm>(words, opts, reuse)?,
        WireFormat::FlashInfer => tvm_family::decode::<tvm_family::FlashInfer>(words, opts, reuse)?,
        WireFormat::Mirage => tvm_family::decode::<tvm_family::Mirage>(words, opts, reuse)?,
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

/// [`decode_as`], a trace per launch: only native buffers record several.
fn launches_as(
    format: WireFormat,
    words: &[u64],
    opts: &DecodeOptions,
) -> Result<Vec<Trace>, DecodeError> {
    match format {
        WireFormat::Ikp if !crate::stream_file::is_stream_words(words) => {
            Ok(native::decode_launches(words, opts)?
                .into_iter()
                .map(|t| finish(t, opts))
                .collect())
        }
        f => Ok(vec![decode_as(f, words, opts, Default::default())?]),
    }
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
