//! How every command reads its buffers: the `--names`, `--format` and `--block-filter`
//! arguments, turned into the library's decode options, and the flag hints the library's
//! errors do not carry.
use anyhow::Context;
use ikp_host::{
    BlockFilter, DecodeError, DecodeOptions, Decoded, DiagnosticCounts, FormatChoice, Input,
    LoadErrorKind, StreamedBuffer, Streaming, Trace, WireFormat,
};
use std::path::{Path, PathBuf};

/// How to decode the buffers (flattened into every command that reads one).
#[derive(Debug, clap::Args)]
pub struct InputArgs {
    /// Region names: one per line, or a JSON object {"id": "name"}. Required to name the
    /// regions of TVM-, FlashInfer- and Mirage-format buffers; overrides the buffer's own
    /// names.
    #[arg(long)]
    pub names: Option<PathBuf>,
    /// Wire format of the buffer.
    #[arg(long, value_enum, default_value_t = FormatChoice::Auto)]
    pub format: FormatChoice,
    /// Only these blocks, e.g. "0,1,8-15" (default: all): every output and figure is of
    /// their lanes.
    #[arg(long, value_name = "LIST")]
    pub block_filter: Option<String>,
    /// Proton traces: the GPU's clock rate in MHz, to convert their cycles to ns (default:
    /// the 1000 MHz Proton assumes, stated in the outputs).
    #[arg(long, value_name = "MHZ")]
    pub proton_clock_mhz: Option<f64>,
    /// Native buffers: subtract the measured cost of recording from span durations (each
    /// lane's per-record cost, for every record between a span's begin and end); the outputs
    /// state the correction applied.
    #[arg(long)]
    pub correct_overhead: bool,
}

impl InputArgs {
    /// The decode options these arguments ask for.
    pub fn options(&self) -> anyhow::Result<DecodeOptions> {
        let names = (self.names.as_deref().map(ikp_host::read_names))
            .transpose()
            .context("--names")?;
        let blocks = match &self.block_filter {
            Some(s) => BlockFilter::parse(s).context("--block-filter")?,
            None => BlockFilter::default(),
        };
        Ok(DecodeOptions {
            format: self.format,
            names,
            blocks,
            single_threaded: false,
            proton_clock_mhz: self.proton_clock_mhz,
            correct_overhead: self.correct_overhead,
        })
    }

    /// Reads and decodes one buffer, with a warning line if it had problems.
    pub fn load(&self, buf: &Path) -> anyhow::Result<Trace> {
        let t = load(buf, &self.options()?)?;
        warn(None, &t.diagnostic_counts());
        Ok(t)
    }

    /// Reads and decodes several buffers with the same options, one after the other, with
    /// a warning line for each that had problems, naming it by its [`labels`].
    pub fn load_all(&self, bufs: &[PathBuf]) -> anyhow::Result<Vec<Trace>> {
        let opts = self.options()?;
        let traces = bufs
            .iter()
            .map(|b| load(b, &opts))
            .collect::<anyhow::Result<Vec<Trace>>>()?;
        for (label, t) in labels(bufs).iter().zip(&traces) {
            warn(Some(label), &t.diagnostic_counts());
        }
        Ok(traces)
    }
}

/// Launches read from buffers: a label and a trace each, in order (see
/// [`InputArgs::load_launches`]).
#[derive(Default)]
pub struct Launches {
    /// Each launch's label.
    pub labels: Vec<String>,
    /// The label of each launch's buffer (its label without ` · launch k`).
    pub buffers: Vec<String>,
    /// Each launch's trace.
    pub traces: Vec<ikp_host::Trace>,
}

/// What [`InputArgs::load_or_stream`] gives.
pub enum Loaded {
    /// Decoded in memory.
    Launches(Launches),
    /// The one buffer, to decode lane by lane.
    Streamed(Box<StreamedBuffer>),
}

impl InputArgs {
    /// Reads and decodes several buffers with the same options, each into every launch it
    /// recorded: a buffer of several launches (epochs) gives one per launch, labelled
    /// `<label> · launch k` (k from 0, the launch's index in the buffer); other buffers
    /// one, labelled `<label>`, where `labels` are the buffers' own. A warning line for each launch that had problems,
    /// and one for each buffer whose launches outran its room.
    pub fn load_launches(&self, bufs: &[PathBuf], labels: Vec<String>) -> anyhow::Result<Launches> {
        match self.load_or_stream(bufs, labels, Streaming::Never)? {
            Loaded::Launches(l) => Ok(l),
            Loaded::Streamed(_) => unreachable!("Streaming::Never"),
        }
    }

    /// [`InputArgs::load_launches`], or, for one buffer that the library finds streams
    /// with `streaming` ([`ikp_host::Input::decode_or_stream`]), that buffer outlined for a
    /// decode lane by lane.
    pub fn load_or_stream(
        &self,
        bufs: &[PathBuf],
        labels: Vec<String>,
        streaming: Streaming,
    ) -> anyhow::Result<Loaded> {
        let opts = self.options()?;
        let mut out = Launches::default();
        for (label, b) in labels.into_iter().zip(bufs) {
            let one = if bufs.len() == 1 {
                streaming
            } else {
                Streaming::Never
            };
            let decoded = Input::open(b, opts.format)
                .and_then(|i| i.decode_or_stream(&opts, one))
                .map_err(hint)?;
            let traces = match decoded {
                Decoded::Streamed(s) => return Ok(Loaded::Streamed(s)),
                Decoded::Launches(t) => t,
            };
            if let Some(e) = traces.first().and_then(|t| t.source.epoch) {
                if e.not_recorded() > 0 {
                    eprintln!(
                        "ikp: warning: {label}: {} launches ran, the buffer holds {}: the last {} were not recorded",
                        e.launches,
                        e.epochs,
                        e.not_recorded()
                    );
                }
            }
            for t in traces {
                let l = match t.source.epoch {
                    Some(e) => format!("{label} · launch {}", e.index),
                    None => label.clone(),
                };
                out.labels.push(l);
                out.buffers.push(label.clone());
                out.traces.push(t);
            }
        }
        let one = out.traces.len() == 1;
        for (l, t) in out.labels.iter().zip(&out.traces) {
            warn((!one).then_some(l.as_str()), &t.diagnostic_counts());
        }
        Ok(Loaded::Launches(out))
    }
}

/// One stderr line when a buffer had problems worth knowing about (naming the buffer by
/// its label when there are several).
pub fn warn(label: Option<&str>, counts: &DiagnosticCounts) {
    if counts.is_clean() {
        return;
    }
    let whose = label.map(|l| format!("{l}: ")).unwrap_or_default();
    eprintln!("ikp: warning: {whose}{counts} (see the summary for which regions and lanes)");
}

/// Launch labels of several buffers: each one's file name; where file names coincide, the
/// path as given; a path given more than once gets " (2)", " (3)", ... after the first.
pub fn labels(bufs: &[PathBuf]) -> Vec<String> {
    let names: Vec<String> = bufs.iter().map(|p| ikp_host::file_name(p)).collect();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(bufs.len());
    for (n, p) in names.iter().zip(bufs) {
        let base = if names.iter().filter(|m| *m == n).count() > 1 {
            p.display().to_string()
        } else {
            n.clone()
        };
        let mut label = base.clone();
        let mut k = 2;
        while !seen.insert(label.clone()) {
            label = format!("{base} ({k})");
            k += 1;
        }
        out.push(label);
    }
    out
}

/// [`ikp_host::load`], with the command-line hint for a buffer that fits several formats.
fn load(buf: &Path, opts: &DecodeOptions) -> anyhow::Result<Trace> {
    ikp_host::load(buf, opts).map_err(hint)
}

/// A load error, with the command-line hint for a buffer that fits several formats, or
/// none, or holds several launches.
fn hint(e: ikp_host::LoadError) -> anyhow::Error {
    match &e.kind {
        LoadErrorKind::Decode(DecodeError::Ambiguous(fits)) => {
            anyhow::anyhow!("{e} ({})", format_hint(fits))
        }
        LoadErrorKind::Decode(DecodeError::Unrecognized(_)) => {
            anyhow::anyhow!("{e} (--format {} forces one)", FormatChoice::forcing_names())
        }
        LoadErrorKind::Decode(DecodeError::SeveralLaunches(n)) => anyhow::anyhow!(
            "{}: the buffer holds {n} launches (epochs); ikp decode, summary, analyze and report show each",
            e.path.display()
        ),
        _ => e.into(),
    }
}

/// `--format a or --format b chooses one`.
fn format_hint(formats: &[WireFormat]) -> String {
    let flags: Vec<String> = formats
        .iter()
        .map(|f| format!("--format {}", f.name()))
        .collect();
    format!("{} chooses one", flags.join(" or "))
}
