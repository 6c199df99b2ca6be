//! The decoded trace: what every writer and analysis reads.
//!
//! Time is integer nanoseconds on one absolute axis per launch (the GPU's `%globaltimer`):
//! points in time are [`Timestamp`]s, lengths [`DurationNs`] (see [`crate::time`], where
//! every conversion to other units is made). Events are stored as
//! struct-of-arrays tables, names by id: a 100 M-record buffer decodes into flat vectors,
//! not 100 M heap objects, and names are resolved only when a writer needs them.
//!
//! # Ordering invariants (established by the decoders, relied upon by writers)
//! - [`Spans`], [`Instants`] and [`CounterSamples`] are grouped by lane, lanes ascending.
//! - Within a lane, spans are in the order of their begin records: sorted by begin, so a
//!   parent comes before the spans begun inside it; instants and samples are sorted by
//!   time. Where regions nest, this is the order `(begin asc, end desc)`; the ties that
//!   order leaves open keep record order: a zero-length span and a sibling beginning at
//!   the same ns, and two regions beginning at the same ns where the first ends first
//!   (they overlap).
//! - Spans of a lane nest or overlap: a region may end before regions begun inside it
//!   (see [`mod@crate::decode`], `# Pairing`). Writers that need nested intervals place
//!   overlapping spans on rows of their own.
//! - `Spans::depth` is 0 for a span begun with no region of its lane open (begins never
//!   closed count as open), else one more than the depth of the innermost region open at
//!   its begin. So every region open at a span's begin has a smaller depth: a span at
//!   depth `d` is not open at the begin of a later span of depth `<= d`. Where regions
//!   nest, the depth is the span's position in the pairing stack. Depths deeper than
//!   65534 are recorded as 65534.
//! - `Lane::spans` etc. give each lane's index range into those tables.
//! - [`AsyncRanges`] belong to the launch, not to a lane (a range may begin in one lane
//!   and end in another): sorted by begin, no lane range indexes them.

mod filter;
mod host_trace;

pub use filter::{BlockFilter, BlockFilterError};
pub use host_trace::{HostEvent, HostThread, HostTrace, SetAsideThread};

pub use crate::time::{DurationNs, Timestamp};
use std::ops::Range;

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
}

/// The format's name for people (`TVM`, `FlashInfer`, `Mirage MPK`, `yao-jz`, `Proton`).
impl std::fmt::Display for WireFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WireFormat::Ikp => "ikp",
            WireFormat::Tvm => "TVM",
            WireFormat::FlashInfer => "FlashInfer",
            WireFormat::Mirage => "Mirage MPK",
            WireFormat::YaoJz => "yao-jz",
            WireFormat::Proton => "Proton",
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
    /// to ns per lane before they reach this model; [`Source::clock`] (present when any
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
    /// of the buffer); see [`Trace::filter_blocks`].
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
    /// ([`Diagnostics::set_aside`]).
    pub pool_lanes: u64,
    /// Lanes converted with their own ratio: a globaltimer span of at least
    /// [`crate::decode::native::OWN_RATIO_MIN_NS`].
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

/// Names of regions and counters, by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    /// Region names; a missing or empty entry is shown as `region_<id>`.
    pub regions: Vec<String>,
    /// Counter names; a missing or empty entry is shown as `counter_<id>`.
    pub counters: Vec<String>,
}

impl Names {
    /// Display name of region `id`.
    pub fn region(&self, id: u16) -> std::borrow::Cow<'_, str> {
        match self.regions.get(id as usize) {
            Some(n) if !n.is_empty() => n.as_str().into(),
            _ => format!("region_{id}").into(),
        }
    }

    /// Display name of counter `id`.
    pub fn counter(&self, id: u16) -> std::borrow::Cow<'_, str> {
        match self.counters.get(id as usize) {
            Some(n) if !n.is_empty() => n.as_str().into(),
            _ => format!("counter_{id}").into(),
        }
    }
}

/// One `(block, group)` lane: a single writer's track.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lane {
    /// Lane index: `block * groups_per_block + group`.
    pub id: u32,
    /// Linear block id.
    pub block: u32,
    /// Group within the block.
    pub group: u32,
    /// SM the leader ran on (native and FlashInfer buffers).
    pub sm: Option<u32>,
    /// Leader's warp within the block (native buffers only).
    pub warp: Option<u32>,
    /// Lane start (init) in ns, if the format records it; else its first record's time.
    pub start: Timestamp,
    /// Lane end (finalize) in ns, if finalized; else its last record's time.
    pub end: Timestamp,
    /// Whether the lane ran finalize.
    pub finalized: bool,
    /// Records the lane wrote into its buffer.
    pub written: u64,
    /// Records the lane could not write because its segment was full.
    pub dropped: u64,
    /// Ring lanes: records overwritten by newer ones (the oldest are lost; `written` is
    /// what survives). 0 for other lanes.
    pub overwritten: u64,
    /// Index range into [`Trace::spans`].
    pub spans: Range<usize>,
    /// Index range into [`Trace::instants`].
    pub instants: Range<usize>,
    /// Index range into [`Trace::samples`].
    pub samples: Range<usize>,
}

/// Where a lane sits, in the words users know: its block, group, and (native buffers)
/// warp and SM. Internal lane indices never reach user-facing text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TrackId {
    /// Linear block id.
    pub block: u32,
    /// Group within the block.
    pub group: u32,
    /// Leader's warp within the block, if the format records it.
    pub warp: Option<u32>,
    /// SM the leader ran on, if the format records it.
    pub sm: Option<u32>,
}

impl TrackId {
    /// `block B · group G (warp W, SM S)`, the parenthesis holding only what is known
    /// (nothing for TVM-format buffers).
    pub fn name(&self) -> String {
        let mut s = format!("block {} · group {}", self.block, self.group);
        let extra: Vec<String> = [("warp", self.warp), ("SM", self.sm)]
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k} {v}")))
            .collect();
        if !extra.is_empty() {
            s.push_str(&format!(" ({})", extra.join(", ")));
        }
        s
    }
}

impl Lane {
    /// This lane's place for user-facing text ([`TrackId::name`]).
    pub fn track(&self) -> TrackId {
        TrackId {
            block: self.block,
            group: self.group,
            warp: self.warp,
            sm: self.sm,
        }
    }
}

/// Paired begin / end records, struct of arrays (all columns have one length).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spans {
    /// Lane index.
    pub lane: Vec<u32>,
    /// Region id.
    pub region: Vec<u16>,
    /// Nesting depth within the lane: 0 = no region open at the begin, else one more
    /// than the innermost open region's (module docs, `# Ordering invariants`).
    pub depth: Vec<u16>,
    /// Payload of the begin record.
    pub payload: Vec<u32>,
    /// Begin time.
    pub begin: Vec<Timestamp>,
    /// End time (`>= begin`).
    pub end: Vec<Timestamp>,
}

impl Spans {
    /// Number of spans.
    pub fn len(&self) -> usize {
        self.lane.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.lane.is_empty()
    }

    /// Duration of span `i`.
    pub fn dur(&self, i: usize) -> DurationNs {
        self.end[i] - self.begin[i]
    }

    /// Appends one span.
    pub fn push(
        &mut self,
        lane: u32,
        region: u16,
        depth: u16,
        payload: u32,
        begin: Timestamp,
        end: Timestamp,
    ) {
        debug_assert!(end >= begin);
        self.lane.push(lane);
        self.region.push(region);
        self.depth.push(depth);
        self.payload.push(payload);
        self.begin.push(begin);
        self.end.push(end);
    }
}

/// Instant events, struct of arrays.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Instants {
    /// Lane index.
    pub lane: Vec<u32>,
    /// Region id.
    pub region: Vec<u16>,
    /// Payload.
    pub payload: Vec<u32>,
    /// Time.
    pub ts: Vec<Timestamp>,
}

impl Instants {
    /// Number of instants.
    pub fn len(&self) -> usize {
        self.lane.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.lane.is_empty()
    }

    /// Appends one instant.
    pub fn push(&mut self, lane: u32, region: u16, payload: u32, ts: Timestamp) {
        self.lane.push(lane);
        self.region.push(region);
        self.payload.push(payload);
        self.ts.push(ts);
    }
}

/// Wait-counter samples (one per instrumented wait that asked for a sample).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterSamples {
    /// Lane index.
    pub lane: Vec<u32>,
    /// Counter id.
    pub counter: Vec<u16>,
    /// Time of the record before the sample (the end of the wait it follows).
    pub ts: Vec<Timestamp>,
    /// Spin iterations of that wait.
    pub value: Vec<u32>,
}

impl CounterSamples {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.lane.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.lane.is_empty()
    }

    /// Appends one sample.
    pub fn push(&mut self, lane: u32, counter: u16, ts: Timestamp, value: u32) {
        self.lane.push(lane);
        self.counter.push(counter);
        self.ts.push(ts);
        self.value.push(value);
    }
}

/// Async ranges: begin and end records of a region the buffer declares async, paired
/// across the whole launch by token, whichever lanes wrote them (rules in
/// [`crate::decode::async_ranges`], `# Pairing`). Struct of arrays, sorted by begin
/// (then by the order of the begin records: lane, then record order). Native buffers only;
/// empty for every other format.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AsyncRanges {
    /// Region id (one of the header's async regions).
    pub region: Vec<u16>,
    /// The token (payload) that paired the begin and the end.
    pub token: Vec<u32>,
    /// Begin time.
    pub begin: Vec<Timestamp>,
    /// End time (`>= begin`).
    pub end: Vec<Timestamp>,
    /// Lane index of the begin record.
    pub begin_lane: Vec<u32>,
    /// Lane index of the end record.
    pub end_lane: Vec<u32>,
}

impl AsyncRanges {
    /// Number of ranges.
    pub fn len(&self) -> usize {
        self.region.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.region.is_empty()
    }

    /// Duration of range `i`.
    pub fn dur(&self, i: usize) -> DurationNs {
        self.end[i] - self.begin[i]
    }

    /// Appends one range.
    pub fn push(
        &mut self,
        region: u16,
        token: u32,
        begin: Timestamp,
        end: Timestamp,
        begin_lane: u32,
        end_lane: u32,
    ) {
        debug_assert!(end >= begin);
        self.region.push(region);
        self.token.push(token);
        self.begin.push(begin);
        self.end.push(end);
        self.begin_lane.push(begin_lane);
        self.end_lane.push(end_lane);
    }

    /// The ranges `keep` accepts (order kept).
    pub fn retain(&self, keep: impl Fn(usize) -> bool) -> AsyncRanges {
        let mut out = AsyncRanges::default();
        for i in (0..self.len()).filter(|&i| keep(i)) {
            let (r, t) = (self.region[i], self.token[i]);
            out.push(
                r,
                t,
                self.begin[i],
                self.end[i],
                self.begin_lane[i],
                self.end_lane[i],
            );
        }
        out
    }
}

/// A record the decoder could not pair or place, kept so nothing is lost silently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unpaired {
    /// Lane index.
    pub lane: u32,
    /// Region id.
    pub region: u16,
    /// Payload.
    pub payload: u32,
    /// Time.
    pub ts: Timestamp,
}

/// Why a lane was set aside ([`Diagnostics::set_aside`]; the rules, the same for every
/// format, are in [`crate::decode::set_aside`], `# Lanes set aside`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SetAsideReason {
    /// Its end is more than
    /// [`LANE_SPAN_MAX_NS`](crate::decode::set_aside::LANE_SPAN_MAX_NS) after (or before)
    /// its start.
    Span,
    /// Its stamps lie more than
    /// [`LAUNCH_GAP_MAX_NS`](crate::decode::set_aside::LAUNCH_GAP_MAX_NS) away from the
    /// launch's lanes (the largest group of lanes linked by smaller gaps).
    Apart,
    /// Clock mode (native lanes): its clock64 interval, at the clock rate of the launch's
    /// other lanes, disagrees with its globaltimer interval (more than
    /// [`CLOCK_DISAGREEMENT_MAX`](crate::decode::set_aside::CLOCK_DISAGREEMENT_MAX) times,
    /// beyond a few ticks).
    Clock,
    /// Its stamps reach
    /// [`STAMP_END_NS`](crate::decode::set_aside::STAMP_END_NS) (2^63 ns, the year 2262)
    /// or beyond, where no timer reads and no int64 time axis holds.
    Range,
    /// A native ring lane that never ran finalize and whose every slot holds a record:
    /// without its trailer's count, the position of its oldest record is unknown, so its
    /// records cannot be ordered.
    UnorderedRing,
}

impl SetAsideReason {
    /// A short phrase for user-facing text.
    pub fn describe(self) -> &'static str {
        match self {
            SetAsideReason::Span => "its end stamp is implausibly far from its start",
            SetAsideReason::Apart => "its stamps are far from every other lane's",
            SetAsideReason::Clock => "its clock64 and globaltimer intervals disagree",
            SetAsideReason::Range => "its stamps lie past the year 2262 (2^63 ns)",
            SetAsideReason::UnorderedRing => {
                "a full ring that never finalized: its oldest record is unknown"
            }
        }
    }
}

/// A lane that ran but was not decoded, because its stamps cannot belong to the same
/// launch as the others' (a corrupted buffer): kept here, named, so that it is neither
/// lost silently nor turned into absurd figures. Any format's lanes may be set aside
/// ([`crate::decode::set_aside`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetAsideLane {
    /// Lane index (`block * groups_per_block + group`).
    pub lane: u32,
    /// Where it sits, in user terms.
    pub track: TrackId,
    /// Where it starts, ns: a native lane's start `%globaltimer` as written; in every other
    /// format, the time of its first record, as decoded.
    pub start: Timestamp,
    /// Where it ends, ns: a native lane's end `%globaltimer` as written (`None`: it never
    /// ran finalize); in every other format, the time of its latest record, as decoded.
    pub end: Option<Timestamp>,
    /// A native lane's start clock64, as written (`None` in the other formats, which
    /// record none).
    pub start_clock: Option<u64>,
    /// A native lane's end clock64, as written (`None`: it never ran finalize, or another
    /// format).
    pub end_clock: Option<u64>,
    /// Which rule set it aside.
    pub reason: SetAsideReason,
}

/// What went wrong inside an otherwise readable buffer.
///
/// Lanes whose stamps cannot belong to the same launch as the others are **set aside**
/// ([`Diagnostics::set_aside`]) rather than decoded, in every format: a lane whose end is
/// more than [`LANE_SPAN_MAX_NS`](crate::decode::set_aside::LANE_SPAN_MAX_NS) (about
/// 4.9 h) from its start; a lane more than
/// [`LAUNCH_GAP_MAX_NS`](crate::decode::set_aside::LAUNCH_GAP_MAX_NS) (about 18 min) away
/// from the largest group of lanes linked by smaller gaps between their intervals; a lane
/// whose stamps reach 2^63 ns (the year 2262) when no other rule set it aside; in
/// native clock mode, a lane whose clock64 and globaltimer intervals disagree at the clock
/// rate of the others; and a native ring lane that never finalized with every slot full
/// (where its oldest record is cannot be known). The bounds lie far beyond the launches
/// ikp profiles, so that a genuine launch (persistent lanes, many waves, lanes that start
/// late) keeps every lane; the rules, why the bounds are safe, and the only launches they
/// would cut are in [`crate::decode::set_aside`], `# Lanes set aside`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics {
    /// Begins never closed: still open when the lane ended.
    pub unmatched_begin: Vec<Unpaired>,
    /// Ends with no open begin of the same region.
    pub unmatched_end: Vec<Unpaired>,
    /// Records written after the lane's finalize.
    pub after_finalize: u64,
    /// Lanes that ran init but never finalize.
    pub unfinalized_lanes: u64,
    /// Records whose kind or meta kind this version does not know.
    pub unknown_records: u64,
    /// Stamps behind their lane's latest time, each clamped to that time so that times
    /// never go backwards within a lane: timed records stamped up to 2^31 ticks before
    /// the record before them (a timer that stepped back, such as a `%globaltimer`
    /// resync; see [`mod@crate::decode`], `# Unwrapping`), and native lanes whose end globaltimer (or,
    /// in clock mode, end clock64) is before their start.
    pub backward_steps: u64,
    /// Lanes not decoded because their stamps cannot belong to this launch (any format),
    /// ascending by lane. They are not in [`Trace::lanes`], and none of their records or
    /// counts is in the trace.
    pub set_aside: Vec<SetAsideLane>,
    /// Ring lanes that wrapped: ends with no open begin of their region, whose begins were
    /// (most likely) overwritten. Counted here, not in `unmatched_end`, and never made
    /// into spans.
    pub ends_of_overwritten_begins: u64,
    /// Async begins never ended in the launch (a token that never ends), by time; the
    /// payload is the token ([`crate::decode::async_ranges`]).
    pub async_unmatched_begin: Vec<Unpaired>,
    /// Async ends with no open begin of their region and token in the launch, by time.
    pub async_unmatched_end: Vec<Unpaired>,
}

/// The problems of a decode as counts: what a tool reports in one line, and what a
/// decode that never holds the whole trace (lane by lane) can still add up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiagnosticCounts {
    /// Begins never closed.
    pub unmatched_begin: u64,
    /// Ends with no open begin.
    pub unmatched_end: u64,
    /// Records written after a lane's finalize.
    pub after_finalize: u64,
    /// Records of kinds this version does not know.
    pub unknown_records: u64,
    /// Stamps behind their lane's latest time, clamped.
    pub backward_steps: u64,
    /// Records dropped by full lanes.
    pub dropped: u64,
    /// Lanes decoded.
    pub lanes: u64,
    /// Lanes set aside ([`Diagnostics::set_aside`]).
    pub set_aside: u64,
    /// The first [`DiagnosticCounts::NAMED`] of them, in lane order.
    pub set_aside_named: Vec<TrackId>,
    /// Records overwritten in ring lanes.
    pub overwritten: u64,
    /// Ends whose begins were overwritten ([`Diagnostics::ends_of_overwritten_begins`]).
    pub ends_of_overwritten_begins: u64,
    /// Of the lanes set aside, the full rings that never finalized
    /// ([`SetAsideReason::UnorderedRing`]).
    pub set_aside_unordered_rings: u64,
    /// Async begins never ended ([`Diagnostics::async_unmatched_begin`]).
    pub async_unmatched_begin: u64,
    /// Async ends with no open begin ([`Diagnostics::async_unmatched_end`]).
    pub async_unmatched_end: u64,
}

impl DiagnosticCounts {
    /// How many set-aside lanes are named (the one line stays short).
    pub const NAMED: usize = 3;

    /// Whether nothing went wrong (lanes are not a problem).
    pub fn is_clean(&self) -> bool {
        let d = self;
        (
            d.unmatched_begin,
            d.unmatched_end,
            d.after_finalize,
            d.unknown_records,
        ) == (0, 0, 0, 0)
            && (d.backward_steps, d.dropped, d.set_aside) == (0, 0, 0)
            && (d.overwritten, d.ends_of_overwritten_begins) == (0, 0)
            && (d.async_unmatched_begin, d.async_unmatched_end) == (0, 0)
    }
}

impl std::ops::AddAssign for DiagnosticCounts {
    fn add_assign(&mut self, o: DiagnosticCounts) {
        self.unmatched_begin += o.unmatched_begin;
        self.unmatched_end += o.unmatched_end;
        self.after_finalize += o.after_finalize;
        self.unknown_records += o.unknown_records;
        self.backward_steps += o.backward_steps;
        self.dropped += o.dropped;
        self.lanes += o.lanes;
        self.set_aside += o.set_aside;
        self.overwritten += o.overwritten;
        self.ends_of_overwritten_begins += o.ends_of_overwritten_begins;
        self.set_aside_unordered_rings += o.set_aside_unordered_rings;
        self.async_unmatched_begin += o.async_unmatched_begin;
        self.async_unmatched_end += o.async_unmatched_end;
        let room = Self::NAMED.saturating_sub(self.set_aside_named.len());
        (self.set_aside_named).extend(o.set_aside_named.into_iter().take(room));
    }
}

impl std::fmt::Display for DiagnosticCounts {
    /// `2 unmatched begins, 0 unmatched ends, ...`: every count but the lanes; then, if any
    /// lane was set aside, how many and the first few by name.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} unmatched begins, {} unmatched ends, {} records after finalize, {} unknown records, {} backward timer steps (clamped), {} dropped records",
            self.unmatched_begin,
            self.unmatched_end,
            self.after_finalize,
            self.unknown_records,
            self.backward_steps,
            self.dropped
        )?;
        if self.overwritten > 0 || self.ends_of_overwritten_begins > 0 {
            write!(
                f,
                ", {} records overwritten in rings, {} ends whose begins were overwritten",
                self.overwritten, self.ends_of_overwritten_begins
            )?;
        }
        // Only when there are any: buffers without async ranges keep their line.
        if (self.async_unmatched_begin, self.async_unmatched_end) != (0, 0) {
            write!(
                f,
                ", {} async begins never ended, {} async ends without a begin",
                self.async_unmatched_begin, self.async_unmatched_end
            )?;
        }
        if self.set_aside > 0 {
            write!(f, ", {}", self.set_aside_phrase())?;
        }
        Ok(())
    }
}

impl DiagnosticCounts {
    /// `2 lanes set aside, their stamps not of this launch: block 5 · group 1 (warp 4, SM
    /// 10); block 9 · group 0 (warp 0, SM 3)`, naming the first [`DiagnosticCounts::NAMED`]
    /// (the end of the [`Display`](std::fmt::Display) line when any was set aside).
    pub fn set_aside_phrase(&self) -> String {
        let names: Vec<String> = self.set_aside_named.iter().map(TrackId::name).collect();
        let (lanes, their) = if self.set_aside == 1 {
            ("lane", "its")
        } else {
            ("lanes", "their")
        };
        let why = if self.set_aside_unordered_rings == self.set_aside {
            "full rings that never finalized (their order is unknown)".to_string()
        } else if self.set_aside_unordered_rings > 0 {
            format!("{their} stamps not of this launch or full rings that never finalized")
        } else {
            format!("{their} stamps not of this launch")
        };
        let mut s = format!(
            "{} {lanes} set aside, {why}: {}",
            self.set_aside,
            names.join("; ")
        );
        let more = self
            .set_aside
            .saturating_sub(self.set_aside_named.len() as u64);
        if more > 0 {
            s.push_str(&format!("; and {more} more"));
        }
        s
    }
}

/// A decoded launch (the default is an empty trace with no lanes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// Where it came from.
    pub source: Source,
    /// Region and counter names.
    pub names: Names,
    /// Lanes that recorded anything (ran init, or wrote a record), ascending by id; not
    /// those set aside ([`Diagnostics::set_aside`]).
    pub lanes: Vec<Lane>,
    /// Paired regions.
    pub spans: Spans,
    /// Point events.
    pub instants: Instants,
    /// Wait-counter samples.
    pub samples: CounterSamples,
    /// Async ranges of the launch, paired across lanes (not per lane: no
    /// [`Lane`] range indexes them).
    pub async_ranges: AsyncRanges,
    /// Wait-counter totals per lane: `counter_totals[lane_pos * n_counters + counter]`,
    /// where `lane_pos` indexes [`Trace::lanes`].
    pub counter_totals: Vec<u64>,
    /// Unpaired and unknown records.
    pub diagnostics: Diagnostics,
}

impl Trace {
    /// Number of wait counters.
    pub fn n_counters(&self) -> usize {
        self.names.counters.len()
    }

    /// Totals of every counter for the lane at position `lane_pos` of [`Trace::lanes`].
    pub fn lane_counters(&self, lane_pos: usize) -> &[u64] {
        let n = self.n_counters();
        &self.counter_totals[lane_pos * n..(lane_pos + 1) * n]
    }

    /// Records dropped by full lanes, summed.
    pub fn dropped(&self) -> u64 {
        self.lanes.iter().map(|l| l.dropped).sum()
    }

    /// Records overwritten in ring lanes, summed.
    pub fn overwritten(&self) -> u64 {
        self.lanes.iter().map(|l| l.overwritten).sum()
    }

    /// The diagnostics as counts.
    pub fn diagnostic_counts(&self) -> DiagnosticCounts {
        let d = &self.diagnostics;
        DiagnosticCounts {
            unmatched_begin: d.unmatched_begin.len() as u64,
            unmatched_end: d.unmatched_end.len() as u64,
            after_finalize: d.after_finalize,
            unknown_records: d.unknown_records,
            backward_steps: d.backward_steps,
            dropped: self.dropped(),
            lanes: self.lanes.len() as u64,
            set_aside: d.set_aside.len() as u64,
            set_aside_named: (d.set_aside.iter())
                .take(DiagnosticCounts::NAMED)
                .map(|s| s.track)
                .collect(),
            overwritten: self.overwritten(),
            ends_of_overwritten_begins: d.ends_of_overwritten_begins,
            set_aside_unordered_rings: (d.set_aside.iter())
                .filter(|s| s.reason == SetAsideReason::UnorderedRing)
                .count() as u64,
            async_unmatched_begin: d.async_unmatched_begin.len() as u64,
            async_unmatched_end: d.async_unmatched_end.len() as u64,
        }
    }

    /// The earliest and latest time of the lanes' bounds and of their events (`None`
    /// without lanes). The time base is left out, so the extents of traces holding
    /// different lanes of one launch combine (min of the starts, max of the ends) into
    /// the extent of the trace holding them all.
    pub(crate) fn time_extent(&self) -> Option<(Timestamp, Timestamp)> {
        let mut lo = u64::MAX;
        let mut hi = 0u64;
        for lane in &self.lanes {
            lo = lo.min(lane.start);
            hi = hi.max(lane.end).max(lane.start);
            if let Some(&b) = self.spans.begin.get(lane.spans.start) {
                // Spans are sorted by begin within a lane: the first one is the earliest.
                if !lane.spans.is_empty() {
                    lo = lo.min(b);
                }
            }
            for i in [lane.instants.start, lane.instants.end.wrapping_sub(1)] {
                if lane.instants.contains(&i) {
                    lo = lo.min(self.instants.ts[i]);
                    hi = hi.max(self.instants.ts[i]);
                }
            }
            for i in [lane.samples.start, lane.samples.end.wrapping_sub(1)] {
                if lane.samples.contains(&i) {
                    lo = lo.min(self.samples.ts[i]);
                    hi = hi.max(self.samples.ts[i]);
                }
            }
        }
        hi = self.spans.end.iter().fold(hi, |m, &e| m.max(e));
        (lo != u64::MAX).then_some((lo, hi))
    }

    /// A trace with the source, names and whole-launch diagnostics of `self` and no
    /// lanes: what [`Trace::extend_lanes`] fills.
    pub(crate) fn empty_like(&self) -> Trace {
        Trace {
            source: self.source.clone(),
            names: self.names.clone(),
            lanes: Vec::new(),
            spans: Spans::default(),
            instants: Instants::default(),
            samples: CounterSamples::default(),
            async_ranges: AsyncRanges::default(),
            counter_totals: Vec::new(),
            diagnostics: Diagnostics {
                unmatched_begin: Vec::new(),
                unmatched_end: Vec::new(),
                set_aside: Vec::new(),
                async_unmatched_begin: Vec::new(),
                async_unmatched_end: Vec::new(),
                ..self.diagnostics.clone()
            },
        }
    }

    /// Appends the lanes of `src` at `positions` (ascending positions of
    /// [`Trace::lanes`]), with their events, counter totals and unpaired records, as the
    /// next lanes of `self`; `src` must have the same names (so the same counters). The
    /// earlier of the two time bases is kept.
    pub(crate) fn extend_lanes(&mut self, src: &Trace, positions: impl IntoIterator<Item = usize>) {
        let (s, i, c) = (&src.spans, &src.instants, &src.samples);
        let first_new = self.lanes.len();
        for pos in positions {
            let l = &src.lanes[pos];
            let (s0, i0, c0) = (self.spans.len(), self.instants.len(), self.samples.len());
            let d = &mut self.spans;
            let r = l.spans.clone();
            d.lane.extend_from_slice(&s.lane[r.clone()]);
            d.region.extend_from_slice(&s.region[r.clone()]);
            d.depth.extend_from_slice(&s.depth[r.clone()]);
            d.payload.extend_from_slice(&s.payload[r.clone()]);
            d.begin.extend_from_slice(&s.begin[r.clone()]);
            d.end.extend_from_slice(&s.end[r]);
            let d = &mut self.instants;
            let r = l.instants.clone();
            d.lane.extend_from_slice(&i.lane[r.clone()]);
            d.region.extend_from_slice(&i.region[r.clone()]);
            d.payload.extend_from_slice(&i.payload[r.clone()]);
            d.ts.extend_from_slice(&i.ts[r]);
            let d = &mut self.samples;
            let r = l.samples.clone();
            d.lane.extend_from_slice(&c.lane[r.clone()]);
            d.counter.extend_from_slice(&c.counter[r.clone()]);
            d.ts.extend_from_slice(&c.ts[r.clone()]);
            d.value.extend_from_slice(&c.value[r]);
            self.lanes.push(Lane {
                spans: s0..self.spans.len(),
                instants: i0..self.instants.len(),
                samples: c0..self.samples.len(),
                ..l.clone()
            });
            if src.counter_totals.len() == src.lanes.len() * src.n_counters() {
                self.counter_totals
                    .extend_from_slice(src.lane_counters(pos));
            }
        }
        let added: std::collections::HashSet<u32> =
            self.lanes[first_new..].iter().map(|l| l.id).collect();
        let d = &mut self.diagnostics;
        for (to, from) in [
            (&mut d.unmatched_begin, &src.diagnostics.unmatched_begin),
            (&mut d.unmatched_end, &src.diagnostics.unmatched_end),
        ] {
            to.extend(from.iter().filter(|u| added.contains(&u.lane)));
        }
        self.source.time_base = self.source.time_base.min(src.source.time_base);
    }

    /// A copy holding only the lanes of the blocks `filter` keeps (`self` itself when it
    /// keeps every block); [`Source::block_filter`] records the filter. Times, names and
    /// the rest of [`Source`] (its `time_base` included, so the kept events stay where they
    /// were on the launch's axis) are unchanged; unpaired records are kept with their
    /// lanes, and so are the lanes set aside of those blocks; the counts that are not per
    /// lane (`after_finalize`, `unfinalized_lanes`, `unknown_records`, `backward_steps`,
    /// `ends_of_overwritten_begins`, [`Source::clock`] and
    /// [`Source::overhead_correction`]) stay those of the whole launch. An async range is
    /// kept when either of its lanes is (a transfer issued or completed in a kept block
    /// concerns it), as it was paired over the whole launch; its other lane may then be
    /// absent from [`Trace::lanes`]. Unmatched async records are kept with their lanes.
    pub fn filter_blocks(&self, filter: &BlockFilter) -> Trace {
        if filter.keeps_all() {
            return self.clone();
        }
        let mut out = self.empty_like();
        let kept = (self.lanes.iter().enumerate())
            .filter(|(_, l)| filter.contains(l.block))
            .map(|(pos, _)| pos);
        out.extend_lanes(self, kept);
        out.diagnostics.set_aside = (self.diagnostics.set_aside.iter())
            .filter(|s| filter.contains(s.track.block))
            .copied()
            .collect();
        let kept: std::collections::HashSet<u32> = out.lanes.iter().map(|l| l.id).collect();
        let a = &self.async_ranges;
        out.async_ranges =
            a.retain(|i| kept.contains(&a.begin_lane[i]) || kept.contains(&a.end_lane[i]));
        let d = &self.diagnostics;
        for (to, from) in [
            (
                &mut out.diagnostics.async_unmatched_begin,
                &d.async_unmatched_begin,
            ),
            (
                &mut out.diagnostics.async_unmatched_end,
                &d.async_unmatched_end,
            ),
        ] {
            to.extend(from.iter().filter(|u| kept.contains(&u.lane)));
        }
        out.source.time_base = self.source.time_base;
        out.source.block_filter = filter.clone();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{BlockFilter, Source};
    use crate::decode::{decode as decode_words, DecodeOptions};

    #[test]
    fn filter_blocks_keeps_exactly_the_lanes_of_those_blocks() {
        let words = ikp_device::sample::attention().unwrap().into_words();
        let t = decode_words(&words, &DecodeOptions::default()).unwrap();
        // Keeping every block is the identity.
        assert_eq!(t.filter_blocks(&BlockFilter::default()), t);
        let f = t.filter_blocks(&BlockFilter::new(vec![5, 1]));
        assert_eq!(f.lanes.len(), 2 * t.source.groups_per_block as usize);
        for l in &f.lanes {
            assert!(l.block == 1 || l.block == 5);
            let (pos, o) = t
                .lanes
                .iter()
                .enumerate()
                .find(|(_, o)| o.id == l.id)
                .unwrap();
            assert_eq!(
                f.spans.begin[l.spans.clone()],
                t.spans.begin[o.spans.clone()]
            );
            assert_eq!(
                f.spans.region[l.spans.clone()],
                t.spans.region[o.spans.clone()]
            );
            assert_eq!(
                f.instants.ts[l.instants.clone()],
                t.instants.ts[o.instants.clone()]
            );
            assert_eq!(
                f.samples.value[l.samples.clone()],
                t.samples.value[o.samples.clone()]
            );
            let fpos = f.lanes.iter().position(|x| x.id == l.id).unwrap();
            assert_eq!(f.lane_counters(fpos), t.lane_counters(pos));
        }
        let want: usize = (t.lanes.iter())
            .filter(|l| l.block == 1 || l.block == 5)
            .map(|l| l.spans.len())
            .sum();
        assert_eq!(f.spans.len(), want);
        assert_eq!(f.source.block_filter.blocks(), [1, 5]);
        assert_eq!(
            f.source,
            Source {
                block_filter: BlockFilter::new(vec![1, 5]),
                epoch: None,
                overhead_correction: None,
                ..t.source.clone()
            }
        );
        assert!(t
            .filter_blocks(&BlockFilter::new(vec![9999]))
            .lanes
            .is_empty());
    }
}
