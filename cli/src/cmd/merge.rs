//! `ikp merge BUF... --host TRACE.json -o OUT`: ikp buffers recorded with a host clock sync
//! and a host-side Chrome trace (the PyTorch profiler's export, for one) in one Perfetto
//! trace on the host's clock ([`ikp_host::write_merged`]).
//!
//! The host trace's clock is realtime unless `--json-clock` says otherwise (Kineto's and
//! the PyTorch profiler's is realtime). A buffer without a clock sync is an error naming
//! it, unless `--assume-offset-ns` gives the offset to place it by. Lanes and host threads
//! whose stamps cannot belong to their launch or trace are set aside, each named in a
//! warning ([`ikp_host::decode::set_aside`]). The output is written aside and put in
//! place whole, or not at all.
use crate::input::{labels, InputArgs};
use crate::output::Outputs;
use ikp_host::{
    read_chrome_trace, write_merged, ChromeReadOptions, Compression, HostClock, Launch,
    PerfettoOptions, WriteError, WriteErrorKind,
};
use std::path::{Path, PathBuf};

/// Arguments of `ikp merge`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The ikp buffers (each recorded by a HostSession with a host clock sync).
    #[arg(required = true, value_name = "BUF")]
    pub bufs: Vec<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
    /// The host trace: Chrome Trace Event JSON (the PyTorch profiler's / Kineto's export;
    /// `ts` in µs, plus `baseTimeNanoseconds` when present).
    #[arg(long, value_name = "TRACE.json")]
    pub host: PathBuf,
    /// The host clock the JSON's times are on (Kineto and the PyTorch profiler:
    /// realtime).
    #[arg(long, value_enum, value_name = "CLOCK", default_value_t = HostClock::Realtime)]
    pub json_clock: HostClock,
    /// The merged Perfetto trace.
    #[arg(long, short, value_name = "OUT")]
    pub output: PathBuf,
    /// For buffers recorded without a host clock sync only: place them by this offset,
    /// host clock ns = device %globaltimer ns + OFFSET (e.g. from an earlier sync on the
    /// same machine; no error bound is known). Without it such a buffer is an error.
    #[arg(long, value_name = "OFFSET", allow_hyphen_values = true)]
    pub assume_offset_ns: Option<i64>,
    /// Deflate-compressed packet bundles or plain packets.
    #[arg(long, value_enum, value_name = "HOW", default_value_t = Compression::Deflate)]
    pub perfetto_compression: Compression,
    /// Do not print the line per file written and the counts.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `ikp merge`.
pub fn run(a: Args) -> anyhow::Result<()> {
    let host = read_chrome_trace(
        &a.host,
        &ChromeReadOptions {
            clock: a.json_clock,
        },
    )?;
    let host_label = ikp_host::file_name(&a.host);
    if let Some(phrase) = host.set_aside_phrase() {
        eprintln!("ikp: warning: {host_label}: {phrase}");
    }
    let mut traces = a.input.load_all(&a.bufs)?;
    if let Some(offset) = a.assume_offset_ns {
        for t in traces.iter_mut().filter(|t| t.source.clock_sync.is_none()) {
            t.source.clock_sync = Some(assumed_sync(offset));
        }
    }
    let labels = labels(&a.bufs);
    let launches: Vec<Launch<'_>> = (labels.iter().zip(&traces))
        .map(|(l, t)| Launch::new(l, t))
        .collect();
    let opts = PerfettoOptions {
        compression: a.perfetto_compression,
        ..PerfettoOptions::default()
    };
    let mut inputs: Vec<&Path> = a.bufs.iter().map(PathBuf::as_path).collect();
    inputs.push(&a.host);
    let stats = std::cell::Cell::new(None);
    let mut outs = Outputs::new(&inputs, a.quiet);
    outs.file(&a.output, |w| {
        stats.set(Some(write_merged(w, &launches, &host, &host_label, &opts)?));
        Ok(())
    })
    .map_err(|e| {
        let kind = e.downcast_ref::<WriteError>().map(|w| &w.kind);
        if let Some(WriteErrorKind::NoClockSync { .. }) = kind {
            anyhow::anyhow!("{e} (--assume-offset-ns places it by a known offset)")
        } else {
            e
        }
    })?;
    outs.commit()?;
    if !a.quiet {
        if let Some(s) = stats.get() {
            eprintln!(
                "ikp merge: {} host slices, {} host instants ({} clipped to their parent), {} \
                 device slices from {} buffer(s), on the host's {} clock",
                s.host_slices,
                s.host_instants,
                s.clipped,
                s.perfetto.slices - s.host_slices,
                launches.len(),
                host.clock.name()
            );
        }
        if !host.skipped.is_empty() {
            let list: Vec<String> = (host.skipped.iter())
                .map(|(ph, n)| format!("{n} \"{ph}\""))
                .collect();
            eprintln!("ikp merge: skipped host events: {}", list.join(", "));
        }
    }
    Ok(())
}

/// A clock sync that maps device time `g` to `g + offset` on either host clock (which one
/// the offset is for is the JSON's), with no error bound (round trip 0, 0 samples).
fn assumed_sync(offset: i64) -> ikp_host::ClockSync {
    // Device time `d` paired with host time `d + offset`, `d` chosen so neither is negative.
    let d = offset.unsigned_abs().max(1);
    let host = d.wrapping_add_signed(offset);
    ikp_host::ClockSync {
        host_realtime_ns: host,
        host_monotonic_ns: host,
        device_globaltimer_ns: d,
        round_trip_ns: 0,
        samples: 0,
    }
}
