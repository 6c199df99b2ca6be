//! The one way in (module docs of [`super`], `# Entry points`): a file or bytes become an
//! [`Input`], its words (or its text, for a Proton trace) and their format, detected once.
//! Whether an input is a regular file, JSON text, mapped or read is decided here alone.

use std::borrow::Cow;
use std::path::Path;

use super::stream::StreamedBuffer;
use super::{decode_as, detect_format, finish, launches_as, proton};
use super::{DecodeError, DecodeOptions, FormatChoice, LoadError, LoadErrorKind};
use crate::buffer::{BufferError, MappedBuffer, RawBuffer};
use crate::model::{Trace, WireFormat};

/// Native buffers and stream files from this size on decode lane by lane with
/// [`Streaming::Large`]: peak memory is then bounded by the largest lane (and, for a stream
/// file, its records read once), not by the trace.
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
    /// A trace per launch ([`Input::decode_launches`]).
    Launches(Vec<Trace>),
    /// Checked and outlined; its lanes decode when asked (boxed: it is large).
    Streamed(Box<StreamedBuffer>),
}

/// A buffer read for decoding, and its format (detected, or forced by the
/// [`FormatChoice`] it was opened with). Errors name its file, or `(bytes)`.
#[derive(Debug)]
pub struct Input<'b> {
    name: std::path::PathBuf,
    format: WireFormat,
    data: Data<'b>,
}

#[derive(Debug)]
enum Data<'b> {
    /// A regular file, mapped (never copied).
    Mapped(MappedBuffer),
    /// Words read from a pipe, or from bytes given.
    Words(Vec<u64>),
    /// JSON text (a Proton trace): not a whole number of words, so never cast to them.
    Text(Cow<'b, [u8]>),
}

impl Data<'_> {
    /// The words of a binary buffer (none for text).
    fn words(&self) -> &[u64] {
        match self {
            Data::Mapped(m) => m.words(),
            Data::Words(w) => w,
            Data::Text(_) => &[],
        }
    }
}

impl Input<'static> {
    /// Opens `path`: a regular file is mapped, unless its first bytes are JSON text (or
    /// Proton is chosen), which is read whole; anything else (a pipe) is read whole, once,
    /// since a look at its first bytes would consume them. The format is then detected
    /// (module docs, `# Detection`) from the probe's words alone, unless `choice` forces one.
    pub fn open(path: &Path, choice: FormatChoice) -> Result<Input<'static>, LoadError> {
        let io = |e| LoadError::new(path, BufferError::Io(e));
        if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            let bytes = std::fs::read(path).map_err(io)?;
            return Input::named(path, Cow::Owned(bytes), choice);
        }
        let json = match choice {
            FormatChoice::Proton => true,
            FormatChoice::Auto => starts_as_json(path).map_err(io)?,
            _ => false,
        };
        let data = if json {
            Data::Text(Cow::Owned(std::fs::read(path).map_err(io)?))
        } else {
            match MappedBuffer::open(path) {
                Ok(m) => Data::Mapped(m),
                // Not mappable here (a big-endian host): read instead.
                Err(BufferError::Io(_)) => Data::Words(
                    RawBuffer::read(path)
                        .map_err(|e| LoadError::new(path, e))?
                        .words,
                ),
                Err(e) => return Err(LoadError::new(path, e)),
            }
        };
        Input::detect(path, data, choice)
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
        let data = match choice {
            FormatChoice::Proton => Data::Text(bytes),
            FormatChoice::Auto if proton::looks_like_json(head) => Data::Text(bytes),
            _ => match RawBuffer::from_bytes(path, &bytes) {
                Ok(b) => Data::Words(b.words),
                Err(e) => return Err(LoadError::new(path, e)),
            },
        };
        Input::detect(path, data, choice)
    }

    fn detect(path: &Path, data: Data<'b>, choice: FormatChoice) -> Result<Self, LoadError> {
        let format = match &data {
            Data::Text(_) => WireFormat::Proton,
            d => detect_format(d.words(), choice).map_err(|e| LoadError::new(path, e))?,
        };
        let name = path.to_path_buf();
        Ok(Input { name, format, data })
    }

    /// The format the input is decoded as.
    pub fn format(&self) -> WireFormat {
        self.format
    }

    /// Decodes into one trace, as [`super::decode`] (a native buffer of several launches
    /// is refused: [`DecodeError::SeveralLaunches`]).
    pub fn decode(&self, opts: &DecodeOptions) -> Result<Trace, LoadError> {
        let t = match &self.data {
            Data::Text(b) => (proton::decode(b, opts).map(|t| finish(t, opts))).map_err(Into::into),
            d => decode_as(self.format, d.words(), opts, Default::default()),
        };
        t.map_err(|e| LoadError::new(&self.name, e))
    }

    /// Decodes into a trace per launch it recorded, as [`super::decode_launches`].
    pub fn decode_launches(&self, opts: &DecodeOptions) -> Result<Vec<Trace>, LoadError> {
        match &self.data {
            Data::Text(_) => Ok(vec![self.decode(opts)?]),
            d => (launches_as(self.format, d.words(), opts))
                .map_err(|e| LoadError::new(&self.name, e)),
        }
    }

    /// Decodes lane by lane ([`StreamedBuffer`]) where `streaming` allows and the input
    /// streams: a native buffer or a stream file in a mapped file, of one launch, decoded
    /// without the overhead correction (which needs the whole launch). In memory
    /// ([`Input::decode_launches`]) otherwise.
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
        match self.stream(opts) {
            Ok(s) => Ok(Decoded::Streamed(Box::new(s))),
            // Several launches: in memory after all.
            Err(e) if matches!(e.kind, LoadErrorKind::Decode(DecodeError::NotStreamable(_))) => {
                (Input::open(&e.path, FormatChoice::Ikp)?.decode_launches(opts))
                    .map(Decoded::Launches)
            }
            Err(e) => Err(e),
        }
    }

    /// [`StreamedBuffer::open`] of this input: only a native buffer in a mapped file.
    pub(super) fn stream(self, opts: &DecodeOptions) -> Result<StreamedBuffer, LoadError> {
        let s = match self.data {
            Data::Mapped(m) if self.format == WireFormat::Ikp => StreamedBuffer::from_map(m, opts),
            _ => Err(DecodeError::NotStreamable(
                "only a native buffer or a stream file in a regular file streams".into(),
            )),
        };
        s.map_err(|e| LoadError::new(&self.name, e))
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
