//! The one way in (module docs of [`super`], `# Entry points`): a file or bytes become an
//! [`Input`], its words (or its text, for a Proton trace) and the format they are in,
//! detected once. Every file and bytes entry point, and the lane-by-lane decode, go through
//! it, so that whether an input is a regular file, JSON text, mapped or read is decided
//! here alone.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::stream::StreamedBuffer;
use super::{decode_as, detect_format, finish, launches_as, proton};
use super::{DecodeError, DecodeOptions, FormatChoice, LoadError, LoadErrorKind};
use crate::buffer::{BufferError, MappedBuffer, RawBuffer};
use crate::model::{Trace, WireFormat};

/// Native buffers from this size on decode lane by lane with [`Streaming::Large`]: peak
/// memory is then bounded by the largest lane, not by the trace.
pub const STREAM_MIN_BYTES: u64 = 1 << 30;

/// Whether [`Input::decode_or_stream`] may decode lane by lane: only the caller knows
/// whether its outputs can be written a run of lanes at a time (the Perfetto writer can).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Streaming {
    /// In memory.
    #[default]
    Never,
    /// Lane by lane when the input streams and holds at least [`STREAM_MIN_BYTES`].
    Large,
    /// Lane by lane whenever the input streams.
    Always,
}

/// What [`Input::decode_or_stream`] gives.
#[derive(Debug)]
pub enum Decoded {
    /// Decoded in memory: a trace per launch ([`Input::decode_launches`]).
    Launches(Vec<Trace>),
    /// Checked and outlined; its lanes decode when asked (boxed: it is large).
    Streamed(Box<StreamedBuffer>),
}

/// A buffer read for decoding and the format it is in (detected, or forced by the
/// [`FormatChoice`] it was opened with). Errors name its file, or `(bytes)`.
#[derive(Debug)]
pub struct Input<'b> {
    name: PathBuf,
    format: WireFormat,
    data: Data<'b>,
}

#[derive(Debug)]
enum Data<'b> {
    /// A regular file, mapped (never copied).
    Mapped(MappedBuffer),
    /// Words in memory: read from a pipe, or from bytes given.
    Words(Vec<u64>),
    /// JSON text (a Proton trace): not a whole number of words, so never cast to them.
    Text(Cow<'b, [u8]>),
}

impl Input<'static> {
    /// Opens `path`: a regular file is mapped, unless its first bytes are JSON text (or
    /// Proton is chosen), which is read whole; anything else (a pipe) is read whole, once,
    /// since a look at its first bytes would consume them. Then the format is detected
    /// (module docs, `# Detection`) from the probe's words alone, unless `choice` forces one.
    pub fn open(path: &Path, choice: FormatChoice) -> Result<Input<'static>, LoadError> {
        let err = |e: BufferError| LoadError {
            path: path.to_path_buf(),
            kind: e.into(),
        };
        let read = || std::fs::read(path).map_err(|e| err(BufferError::Io(e)));
        if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            return Input::named(path, Cow::Owned(read()?), choice);
        }
        let json = match choice {
            FormatChoice::Proton => true,
            FormatChoice::Auto => starts_as_json(path).map_err(|e| err(BufferError::Io(e)))?,
            _ => false,
        };
        let data = if json {
            Data::Text(Cow::Owned(read()?))
        } else {
            match MappedBuffer::open(path) {
                Ok(m) => Data::Mapped(m),
                // Not mappable here (a big-endian host): read instead.
                Err(BufferError::Io(_)) => Data::Words(RawBuffer::read(path).map_err(err)?.words),
                Err(e) => return Err(err(e)),
            }
        };
        Input::detect(path.to_path_buf(), data, choice)
    }
}

impl<'b> Input<'b> {
    /// Bytes in memory, named `(bytes)` in errors: JSON text (by its first bytes, or when
    /// Proton is chosen) is kept as text; anything else must be a whole number of
    /// little-endian `u64` words.
    pub fn from_bytes(bytes: &'b [u8], choice: FormatChoice) -> Result<Input<'b>, LoadError> {
        Input::named(Path::new("(bytes)"), Cow::Borrowed(bytes), choice)
    }

    fn named(path: &Path, bytes: Cow<'b, [u8]>, choice: FormatChoice) -> Result<Self, LoadError> {
        let head = &bytes[..bytes.len().min(proton::SNIFF_BYTES)];
        let json = match choice {
            FormatChoice::Proton => true,
            FormatChoice::Auto => proton::looks_like_json(head),
            _ => false,
        };
        let data = if json {
            Data::Text(bytes)
        } else {
            let words = RawBuffer::from_bytes(path, &bytes).map_err(|e| LoadError {
                path: path.to_path_buf(),
                kind: e.into(),
            })?;
            Data::Words(words.words)
        };
        Input::detect(path.to_path_buf(), data, choice)
    }

    fn detect(name: PathBuf, data: Data<'b>, choice: FormatChoice) -> Result<Self, LoadError> {
        let format = match &data {
            Data::Text(_) => Ok(WireFormat::Proton),
            Data::Mapped(m) => detect_format(m.words(), choice),
            Data::Words(w) => detect_format(w, choice),
        };
        match format {
            Ok(format) => Ok(Input { name, format, data }),
            Err(e) => Err(LoadError {
                path: name,
                kind: e.into(),
            }),
        }
    }

    /// The format the input is decoded as.
    pub fn format(&self) -> WireFormat {
        self.format
    }

    /// The file, or `(bytes)`.
    pub fn path(&self) -> &Path {
        &self.name
    }

    /// The error `e`, naming the input.
    fn error(&self, e: impl Into<LoadErrorKind>) -> LoadError {
        LoadError {
            path: self.name.clone(),
            kind: e.into(),
        }
    }

    /// Decodes into one trace, as [`super::decode`] (a native buffer of several launches
    /// is refused: [`DecodeError::SeveralLaunches`]).
    pub fn decode(&self, opts: &DecodeOptions) -> Result<Trace, LoadError> {
        let t = match &self.data {
            Data::Text(b) => (proton::decode(b, opts).map(|t| finish(t, opts))).map_err(Into::into),
            Data::Mapped(m) => decode_as(self.format, m.words(), opts, Default::default()),
            Data::Words(w) => decode_as(self.format, w, opts, Default::default()),
        };
        t.map_err(|e: DecodeError| self.error(e))
    }

    /// Decodes into a trace per launch it recorded, as [`super::decode_launches`].
    pub fn decode_launches(&self, opts: &DecodeOptions) -> Result<Vec<Trace>, LoadError> {
        let t = match &self.data {
            Data::Text(_) => return Ok(vec![self.decode(opts)?]),
            Data::Mapped(m) => launches_as(self.format, m.words(), opts),
            Data::Words(w) => launches_as(self.format, w, opts),
        };
        t.map_err(|e| self.error(e))
    }

    /// Checks and outlines the input for a decode lane by lane ([`StreamedBuffer`]). Only a
    /// native buffer in a mapped file of one launch streams, decoded without the overhead
    /// correction (which needs the whole launch); any other is refused
    /// ([`DecodeError::NotStreamable`]).
    pub fn stream(self, opts: &DecodeOptions) -> Result<StreamedBuffer, LoadError> {
        let why = match (&self.data, self.format) {
            (Data::Mapped(_), WireFormat::Ikp) => None,
            (Data::Mapped(_), f) => Some(format!("only native buffers stream, not the {f} format")),
            _ => Some("only a regular file can be mapped".to_string()),
        };
        if let Some(why) = why {
            return Err(self.error(DecodeError::NotStreamable(why)));
        }
        let Data::Mapped(map) = self.data else {
            unreachable!("checked above")
        };
        let name = self.name;
        StreamedBuffer::from_map(map, opts).map_err(|e| LoadError {
            path: name,
            kind: e.into(),
        })
    }

    /// Decodes lane by lane ([`Input::stream`]) where `streaming` allows and the input
    /// streams; in memory ([`Input::decode_launches`]) otherwise, and for a native buffer
    /// found to hold several launches.
    pub fn decode_or_stream(
        self,
        opts: &DecodeOptions,
        streaming: Streaming,
    ) -> Result<Decoded, LoadError> {
        let wanted = match (&self.data, streaming) {
            (Data::Mapped(m), Streaming::Large) => m.words().len() as u64 * 8 >= STREAM_MIN_BYTES,
            (Data::Mapped(_), Streaming::Always) => true,
            _ => false,
        };
        if !wanted || self.format != WireFormat::Ikp || opts.correct_overhead {
            return self.decode_launches(opts).map(Decoded::Launches);
        }
        let name = self.name.clone();
        match self.stream(opts) {
            Ok(s) => Ok(Decoded::Streamed(Box::new(s))),
            Err(LoadError {
                kind: LoadErrorKind::Decode(DecodeError::NotStreamable(_)),
                ..
            }) => (Input::open(&name, FormatChoice::Ikp)?.decode_launches(opts))
                .map(Decoded::Launches),
            Err(e) => Err(e),
        }
    }
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
