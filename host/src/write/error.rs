//! The one error type of every writer.

use std::io;
use std::path::{Path, PathBuf};

/// Why an output could not be written: the file (when the output is one) and the problem.
///
/// Every writer returns it, whatever the format, so a caller that writes several outputs
/// handles one type; [`super::atomic`] adds the path of the file being written.
#[derive(Debug)]
pub struct WriteError {
    /// The output file, when the sink is one (set by [`super::atomic`]).
    pub path: Option<PathBuf>,
    /// The problem.
    pub kind: WriteErrorKind,
}

/// The problem of a [`WriteError`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteErrorKind {
    /// The sink failed (disk full, closed pipe, a directory that cannot be created). Shown
    /// in the message rather than as an error source, so a printed chain says it once.
    #[error("{0}")]
    Io(io::Error),
    /// More lanes than Perfetto packet sequence ids (`u32`).
    #[error("too many lanes for one Perfetto trace: at most {max} lanes with events")]
    TooManySequences {
        /// The largest number of lanes with events one trace can hold.
        max: u64,
    },
    /// A launch's times do not fit Perfetto's `int64` nanosecond axis (after the offsets
    /// of the launches before it).
    #[error("launch {launch} ({label}) does not fit on the trace's int64 ns time axis")]
    TimeOverflow {
        /// Index of the launch.
        launch: usize,
        /// Its label.
        label: String,
    },
    /// A streamed source could not decode a lane.
    #[error("decoding a lane: {0}")]
    Decode(crate::decode::DecodeError),
    /// The xlsx workbook could not be built.
    #[cfg(feature = "xlsx")]
    #[error("building the xlsx workbook: {0}")]
    Xlsx(rust_xlsxwriter::XlsxError),
    /// The Parquet writer refused (an I/O error of the sink is [`WriteErrorKind::Io`]).
    #[cfg(feature = "parquet")]
    #[error("writing Parquet: {0}")]
    Parquet(::parquet::errors::ParquetError),
    /// One path was given for two outputs of the same batch.
    #[error("the same file is also another output of this batch")]
    SamePath,
    /// A launch to be placed on a host clock carries no clock sync.
    #[error(
        "launch {launch} ({label}) was recorded without a host clock sync: record it with \
         HostSession or StreamSession (which take one unless clock_sync_samples is 0) to \
         place it on the host's clock"
    )]
    NoClockSync {
        /// Index of the launch.
        launch: usize,
        /// Its label (the buffer's file name on the command line).
        label: String,
    },
}

impl WriteError {
    /// An error of the output `path` (unless the error already names one).
    pub fn at(mut self, path: &Path) -> WriteError {
        self.path.get_or_insert_with(|| path.to_path_buf());
        self
    }

    /// Whether the sink was a pipe whose reader went away (`ikp summary BUF | head`): not
    /// a failure of the writer, which a command-line tool ends on quietly.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(&self.kind, WriteErrorKind::Io(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.path {
            Some(p) => write!(f, "cannot write {}: {}", p.display(), self.kind),
            None => write!(f, "{}", self.kind),
        }
    }
}

impl std::error::Error for WriteError {}

impl From<WriteErrorKind> for WriteError {
    fn from(kind: WriteErrorKind) -> WriteError {
        WriteError { path: None, kind }
    }
}

impl From<io::Error> for WriteError {
    fn from(e: io::Error) -> WriteError {
        WriteErrorKind::Io(e).into()
    }
}

impl From<serde_json::Error> for WriteError {
    fn from(e: serde_json::Error) -> WriteError {
        io::Error::from(e).into()
    }
}

#[cfg(feature = "xlsx")]
impl From<rust_xlsxwriter::XlsxError> for WriteError {
    fn from(e: rust_xlsxwriter::XlsxError) -> WriteError {
        WriteErrorKind::Xlsx(e).into()
    }
}
