//! How every command reads its buffers: the `--names`, `--format` and `--block-filter`
//! arguments, turned into the library's decode options, and the flag hints the library's
//! errors do not carry.
use anyhow::Context;
use ikp_host::{BlockFilter, DecodeError, DecodeOptions, FormatChoice, LoadErrorKind, Trace};
use std::path::{Path, PathBuf};

/// Wire format choice on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    /// Detect from the first word.
    Auto,
    /// ikp native format.
    Ikp,
    /// TVM / FlashInfer / warpscope format.
    Tvm,
}

/// How to decode the buffers (flattened into every command that reads one).
#[derive(Debug, clap::Args)]
pub struct InputArgs {
    /// Region names: one per line, or a JSON object {"id": "name"}. Required to name the
    /// regions of TVM-format buffers; overrides the buffer's own names.
    #[arg(long)]
    pub names: Option<PathBuf>,
    /// Wire format of the buffer.
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    pub format: Format,
    /// Only these blocks, e.g. "0,1,8-15" (default: all): every output and figure is of
    /// their lanes.
    #[arg(long, value_name = "LIST")]
    pub block_filter: Option<String>,
}

impl InputArgs {
    /// The decode options these arguments ask for.
    pub fn options(&self) -> anyhow::Result<DecodeOptions> {
        let names = match &self.names {
            Some(p) => Some(ikp_host::read_names(p).context("--names")?),
            None => None,
        };
        let blocks = match &self.block_filter {
            Some(s) => BlockFilter::parse(s).context("--block-filter")?,
            None => BlockFilter::default(),
        };
        Ok(DecodeOptions {
            format: self.format_choice(),
            names,
            blocks,
            single_threaded: false,
        })
    }

    /// The `--format` choice.
    pub fn format_choice(&self) -> FormatChoice {
        match self.format {
            Format::Auto => FormatChoice::Auto,
            Format::Ikp => FormatChoice::Ikp,
            Format::Tvm => FormatChoice::Tvm,
        }
    }

    /// Reads and decodes one buffer.
    pub fn load(&self, buf: &Path) -> anyhow::Result<Trace> {
        load(buf, &self.options()?)
    }

    /// Reads and decodes several buffers with the same options, one after the other.
    pub fn load_all(&self, bufs: &[PathBuf]) -> anyhow::Result<Vec<Trace>> {
        let opts = self.options()?;
        bufs.iter().map(|b| load(b, &opts)).collect()
    }
}

/// [`ikp_host::load`], with the command-line hint for a buffer of no known format.
pub fn load(buf: &Path, opts: &DecodeOptions) -> anyhow::Result<Trace> {
    ikp_host::load(buf, opts).map_err(|e| {
        if matches!(e.kind, LoadErrorKind::Decode(DecodeError::Unrecognized(_))) {
            anyhow::anyhow!("{e} (--format ikp or --format tvm forces one)")
        } else {
            e.into()
        }
    })
}
