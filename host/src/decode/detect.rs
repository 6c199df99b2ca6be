//! Auto-detection (module docs of [`super`], `# Detection`): a cheap, strict test per
//! format, run over a bounded head and tail of the buffer ([`Probe`]).

use super::{proton, tvm_family, yaojz, DecodeError, FormatChoice};
use crate::model::WireFormat;

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

/// A format's test of a [`Probe`]: cheap (it reads the probe only) and strict (a buffer of
/// another format fails it). A misfit says why.
type Fits = fn(&Probe<'_>) -> Result<(), String>;

/// Every format auto-detection tries, in the order errors list them.
const DETECT: [(WireFormat, Fits); 6] = [
    (WireFormat::Ikp, native_fits),
    (WireFormat::Tvm, tvm_family::fits::<tvm_family::Tvm>),
    (
        WireFormat::FlashInfer,
        tvm_family::fits::<tvm_family::FlashInfer>,
    ),
    (WireFormat::Mirage, tvm_family::fits::<tvm_family::Mirage>),
    (WireFormat::YaoJz, yaojz_fits),
    (WireFormat::Proton, proton_fits),
];

/// Whether the probe starts with the ikp magic, or a stream file's (`.ikps`, the ikp
/// format's records drained from a stream launch).
fn native_fits(p: &Probe<'_>) -> Result<(), String> {
    match p.head.first() {
        Some(&ikp_device::wire::MAGIC) | Some(&crate::stream_file::FILE_MAGIC) => Ok(()),
        Some(&ikp_device::stream::MAGIC) => Err(
            "word 0 is a stream launch's buffer magic: its records went to the stream file \
             (.ikps) the host drained them into; decode that file"
                .into(),
        ),
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
    DETECT.iter().map(|(f, fits)| (*f, fits(&p))).collect()
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
