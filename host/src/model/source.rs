//! What a trace was decoded from: the format, the launch's shape and clocks, and the
//! corrections applied.

use super::{BlockFilter, Timestamp};

/// Which wire format a buffer was in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WireFormat {
    /// ikp native wire format.
    #[default]
    Ikp,
    /// The TVM / warpscope v1 format (also FlashInfer's before it recorded SM ids).
    Tvm,
    /// FlashInfer's profiler format with SM ids (`ikp_device::flashinfer`).
    FlashInfer,
    /// Mirage's persistent-kernel (MPK) profiler format (`ikp_device::mirage`).
    Mirage,
    /// yao-jz/intra-kernel-profiler's per-warp ring buffers, in the dump file
    /// [`crate::decode::yaojz`] describes.
    #[serde(rename = "yao-jz")]
    YaoJz,
    /// Proton's (Triton) intra-kernel Chrome trace ([`crate::decode::proton`]).
    Proton,
}

impl WireFormat {
    /// The format's name in machine-readable outputs and on the command line (`tvm`,
    /// `flashinfer`, ...), as the summary JSON writes it.
    pub fn name(self) -> &'static str {
        match self {
            WireFormat::Ikp => "ikp",
            WireFormat::Tvm => "tvm",
            WireFormat::FlashInfer => "flashinfer",
            WireFormat::Mirage => "mirage",
            WireFormat::YaoJz => "yao-jz",
            WireFormat::Proton => "proton",
        }
    }

    /// Whether the format records each lane's start and end of its own (the native
    /// format's init and finalize stamps), so that a lane's lifetime is more than the
    /// span of its records: the writers draw it on a track of its own. The other formats'
    /// lanes begin at their first record (and end at their last, or at a TVM finalize).
    pub fn records_lane_lifetimes(self) -> bool {
        self == WireFormat::Ikp
    }
}

/// The format's name for people (`TVM`, `FlashInfer`, `Mirage MPK`, `yao-jz`, `Proton`).
impl std::fmt::Display for WireFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WireFormat::Tvm => "TVM",
            WireFormat::FlashInfer => "FlashInfer",
            WireFormat::Mirage => "Mirage MPK",
            WireFormat::Proton => "Proton",
            WireFormat::Ikp | WireFormat::YaoJz => self.name(),
        })
    }
}

/// What the trace was decoded from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Source {
    /// Wire format of the buffer.
    pub format: WireFormat,
    /// Wire format version (1 for the TVM family's buffers).
    pub version: u32,
    /// The timer the buffer's header declares: globaltimer ns or SM cycles. Native lanes
    /// each say which they stamped with (a kernel may mix both), and cycles are converted
    /// to ns per lane before they reach this model; [`Source::clock`](super::Source::clock) (present when any
    /// lane stamped cycles) says how.
    pub timer: ikp_device::TimerMode,
    /// Clock mode: the cycles-to-ns calibration the decoder used (`None` for globaltimer
    /// stamps). Computed over the whole buffer, also in a trace of some of its lanes.
    pub clock: Option<ClockCalibration>,
    /// Cycles converted to ns at a rate nothing in the file measured (Proton traces): the
    /// rate, and whether the user gave it. `None` for every other format.
    pub assumed_clock: Option<AssumedClock>,
    /// Grid dimensions in blocks; the TVM family's buffers only know the block count
    /// (`[n, 1, 1]`).
    pub grid: [u32; 3],
    /// Lanes (groups) per block.
    pub groups_per_block: u32,
    /// Record capacity of each lane (0 if the format has no fixed capacity).
    pub records_per_lane: u32,
    /// The smallest timestamp in the trace: writers that need small numbers (Chrome JSON)
    /// subtract it; it is never subtracted in this model.
    pub time_base: Timestamp,
    /// The blocks this trace was restricted to when it was decoded (empty = every block
    /// of the buffer); see [`Trace::filter_blocks`](super::Trace::filter_blocks).
    pub block_filter: BlockFilter,
    /// The host-clock mapping the session took before the launch (ikp buffers recorded
    /// by a [`HostSession`](crate::cuda::HostSession) with a clock sync; `None` for the
    /// other formats): see [`crate::clock_sync`].
    pub clock_sync: Option<ikp_device::ClockSync>,
    /// Native buffers that record several launches (wire `epochs > 1`): which one this
    /// trace is, and how many ran (`None`: a buffer of one launch).
    pub epoch: Option<Epoch>,
    /// The per-record cost removed from span durations
    /// ([`crate::DecodeOptions::correct_overhead`]; `None`: durations are as recorded).
    pub overhead_correction: Option<OverheadCorrection>,
    /// A stream launch's file (`.ikps`): how its lanes recorded and what the drain saw
    /// (`None` for every other input).
    pub stream: Option<StreamSource>,
}

/// How a stream launch recorded ([`crate::stream_file`]): its lanes' rings, their policy
/// when full, and the drain's figures from the file's end block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct StreamSource {
    /// Records each lane's ring holds.
    pub ring_records: u32,
    /// Whether a full lane waited for room (`Overflow::StreamWait`) rather than dropped.
    pub wait: bool,
    /// Records the drain copied out (marks included).
    pub drained_records: u64,
    /// The drain's passes over the lanes.
    pub drain_polls: u64,
    /// The most records one lane had waiting at a pass: near `ring_records` means the
    /// drain nearly fell behind.
    pub drain_max_backlog: u64,
}

/// Which launch of a buffer that records several (wire `epochs > 1`, one segment per lane
/// and launch) a trace is. Launches beyond the buffer's epochs ran but recorded nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Epoch {
    /// Launch index in the buffer (0 = the first launch).
    pub index: u32,
    /// Launches the buffer holds room for (its `epochs`).
    pub epochs: u32,
    /// Launches that ran, from the lanes' launch counters (the largest); when more than
    /// `epochs`, the last `launches - epochs` were not recorded.
    pub launches: u64,
}

impl Epoch {
    /// Launches that ran but were not recorded (the buffer was full).
    pub fn not_recorded(&self) -> u64 {
        self.launches.saturating_sub(self.epochs as u64)
    }
}

/// The cost-of-recording correction applied to span durations (rules in
/// [`crate::decode::native`], `# Overhead correction`): each span's end was moved earlier
/// by its lane's per-record cost for every record of its lane between its begin and end.
/// Checked on a GPU by `ikp-gpucheck`'s `overhead-correction`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct OverheadCorrection {
    /// Median over the corrected lanes of their per-record cost, in picoseconds (integer
    /// so that the model stays exact; 0 with no lane corrected).
    pub per_record_ps_median: u64,
    /// Lanes whose spans were corrected (a measured cost and a cycles-to-ns ratio).
    pub lanes_corrected: u64,
    /// Lanes not corrected: their cost word is 0 (not measured), or no cycles-to-ns
    /// ratio could be measured.
    pub lanes_unmeasured: u64,
    /// Spans whose end moved.
    pub spans_corrected: u64,
    /// ns removed from all span durations together.
    pub total_ns_removed: u64,
}

impl OverheadCorrection {
    /// The median per-record cost in ns.
    pub fn per_record_ns_median(&self) -> f64 {
        self.per_record_ps_median as f64 / 1e3
    }
}

/// How a clock-mode buffer's cycles were converted to ns (rules in
/// [`crate::decode::native`], `# Clock mode`).
///
/// Every SM of a GPU counts cycles at one rate, so one ratio pooled over many lanes is
/// accurate even when `%globaltimer` ticks are coarse: each lane's error of up to one tick
/// averages out. A lane whose own globaltimer span is long enough for one tick to be a
/// small error is converted with its own ratio instead, which follows clock changes
/// during the launch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockCalibration {
    /// Globaltimer ns summed over the init-to-finalize intervals of the `pool_lanes`
    /// lanes: the pooled ratio is `pooled_ns / pooled_cycles` ns per cycle. (Both are
    /// halved together as often as needed to fit 64 bits.)
    pub pooled_ns: u64,
    /// clock64 cycles summed over the same intervals (non-zero).
    pub pooled_cycles: u64,
    /// Finalized lanes whose (clock64, globaltimer) pairs are in the pool: every finalized
    /// lane whose end stamps are not before its start stamps, except those set aside
    /// ([`Diagnostics::set_aside`](super::Diagnostics::set_aside)).
    pub pool_lanes: u64,
    /// Lanes converted with their own ratio: a globaltimer span of at least
    /// [`crate::decode::OWN_RATIO_MIN_NS`].
    pub own_ratio_lanes: u64,
    /// Lanes converted with the pooled ratio: shorter, never finalized, or without a
    /// usable pair of their own.
    pub pooled_ratio_lanes: u64,
}

impl ClockCalibration {
    /// The pooled clock rate in MHz (cycles per us).
    pub fn pooled_mhz(&self) -> f64 {
        self.pooled_cycles as f64 * 1e3 / self.pooled_ns as f64
    }
}

/// A clock rate that cycles were converted to ns at without being measured: every
/// duration is off by the ratio of the GPU's real clock to it, so outputs state it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AssumedClock {
    /// The rate, kHz (cycles per ms): whole kHz express any rate a user knows to 4
    /// significant digits of MHz without a float in the model.
    pub khz: u64,
    /// Whether the user gave it ([`crate::DecodeOptions::proton_clock_mhz`]); `false`:
    /// the rate the writing tool itself assumed (Proton: 1000 MHz).
    pub given: bool,
}

impl AssumedClock {
    /// The rate in MHz.
    pub fn mhz(&self) -> f64 {
        self.khz as f64 / 1e3
    }

    /// `1000 MHz (assumed by the tool, not measured)` or `1410 MHz (given, not
    /// measured)`: how every output states it.
    pub fn describe(&self) -> String {
        let whose = if self.given {
            "given"
        } else {
            "assumed by the tool"
        };
        format!("{} MHz ({whose}, not measured)", self.mhz())
    }
}
