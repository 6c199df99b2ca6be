//! Summary JSON: statistics of every paired region, formatted from a [`TraceStats`].
//!
//! # Format
//!
//! A pretty-printed JSON object. Durations are ns times [`SummaryOptions::scale`].
//! ```text
//! trace                 name of the Chrome trace written beside it (or the buffer)
//! buffer                the buffer file it was decoded from (`ikp decode`; absent when
//!                       a session wrote it from device memory)
//! format                "ikp" | "tvm" | "flashinfer" | "mirage" | "yao-jz" | "proton"
//! displayTimeUnit       "ns"
//! scale                 the scale
//! blocks                blocks in the grid
//! warps_per_block       lanes (warp groups) per block
//! per_warp_cap          record capacity of a lane (slots per lane for TVM buffers)
//! clock                 null (globaltimer stamps), or clock mode's cycles-to-ns
//!                       calibration: {pooled_mhz, pooled_ns, pooled_cycles, pool_lanes,
//!                       own_ratio_lanes, pooled_ratio_lanes} (see below)
//! assumed_clock         Proton traces only (absent otherwise): {mhz, given}, the clock
//!                       rate cycles were converted to ns at, never measured: Proton's
//!                       own 1000 MHz (`given` false) or the rate the user gave
//! block_filter          blocks included ([] = all)
//! unmatched_begin       begins never closed, summed (should be 0)
//! unmatched_end         ends without an open begin, summed (should be 0)
//! unmatched_by_region   [{region, name, begin, end}] for regions with any
//! after_finalize        records written after a lane's finalize (not decoded)
//! unfinalized_lanes     lanes that never ran finalize
//! unknown_records       records of a kind this version does not know
//! backward_steps        stamps behind their lane's latest time (a timer that stepped
//!                       back; or a lane's end stamp before its start), each clamped to
//!                       that time (should be 0)
//! dropped               records lanes could not write (segment full), summed
//! dropped_by_lane       [{lane, block, group, warp, sm, dropped}] for lanes that dropped
//! set_aside_lanes       [{lane, block, group, warp, sm, start, end, start_clock,
//!                       end_clock, reason}] for lanes whose stamps cannot belong to
//!                       this launch (any format), which were not decoded (absent when
//!                       there are none; see below)
//! overwritten           ring lanes: records overwritten by newer ones, summed (absent
//!                       when 0, as the three fields below)
//! overwritten_by_lane   [{lane, block, group, warp, sm, overwritten}] for ring lanes
//!                       that wrapped
//! ends_of_overwritten_begins  ends in rings that wrapped whose begins were overwritten
//!                       (not spans, not in unmatched_end)
//! epoch                 buffers of several launches only (absent otherwise): {index,
//!                       epochs, launches, not_recorded}: this launch's index, the
//!                       launches the buffer has room for, the launches that ran (launch
//!                       counters), and those that ran past the room and were not recorded
//! overhead_correction   with --correct-overhead only (absent otherwise):
//!                       {per_record_ns_median, lanes_corrected,
//!                       lanes_unmeasured, spans_corrected, total_ns_removed}: span ends
//!                       were moved earlier by each lane's per-record cost for every
//!                       record between begin and end (see below)
//! stream                stream files (`.ikps`) only (absent otherwise): {ring_records,
//!                       wait, drained_records, drain_polls, drain_max_backlog}: each
//!                       lane's ring, whether full lanes waited (else dropped), and the
//!                       drain's figures ([`crate::model::StreamSource`])
//! percentile_method     how percentiles were computed (exact, see below)
//! filters               {summary_hist_bins, summary_topk_block_warp_per_region}
//! lane_dur              lane time: the lanes' first-to-last-stamp times, summed
//! outside_dur           lane time outside any region
//! outside_share         outside_dur / lane_dur (0 without lane time)
//! regions               [region entry], region ids ascending
//! by_block_warp_regions {"region_<name>": {region, name, by_block_warp: [entry]}}
//!                       (only with summary_dump_by_block_warp; the key gets "_<id>"
//!                       appended when two regions share a name)
//! clock_sync            ikp buffers recorded with a host clock sync only (absent
//!                       otherwise): {host_realtime_ns, host_monotonic_ns,
//!                       device_globaltimer_ns, round_trip_ns, error_bound_ns, samples,
//!                       realtime_minus_device_ns, monotonic_minus_device_ns,
//!                       time_base_realtime_ns, time_base_monotonic_ns} (see below)
//! async_ranges          native buffers with async ranges or unmatched async records
//!                       only (absent otherwise): {count, unmatched_begin,
//!                       unmatched_end, regions: [async region entry]} (see below)
//! lanes_over_time       {bounds, start, end, peak_lanes, tail_start, tail_dur,
//!                       tail_share, waves: [{wave, lanes, start, end}], lanes: [{lane,
//!                       block, group, warp, sm, start, end, finalized, wave}]} (absent
//!                       without lanes; see below)
//! ```
//! **lanes_over_time** ([`crate::stats::LaneWaves`]) is when each lane ran and how the
//! lanes came in waves: `bounds` is `"init_finalize"` where the format records each lane's
//! init and finalize (the native format; a lane that never finalized ends at its last
//! record) and `"records"` where lanes are known by their first and last records (the
//! other formats). Times (`start`, `end`, `tail_start`, and those of the waves and lanes)
//! are ns since the trace's time base (its earliest stamp) times `scale`, as durations
//! are. `peak_lanes` is the most lanes running at once; a wave is the lanes that started
//! before the earliest end among the wave's lanes before them (`wave` from 0, by start
//! time); the tail is from when the running lanes last fell below the peak to the last
//! end (`tail_share` of `end - start`). `lanes` lists every lane in lane order.
//! The **clock_sync** object ([`crate::clock_sync`]) is the mapping the session took: device
//! `%globaltimer` ns `g` is host realtime `g + realtime_minus_device_ns` (monotonic:
//! `g + monotonic_minus_device_ns`) within `error_bound_ns` (`round_trip_ns / 2`, the kept
//! reading's half round trip, out of `samples` readings); `time_base_realtime_ns` and
//! `time_base_monotonic_ns` are the trace's time base (its earliest stamp) on those clocks.
//! **async_ranges** ([`Trace::async_ranges`](crate::model::Trace::async_ranges), paired across lanes by token:
//! [`crate::decode::async_ranges`]): `count` ranges; `unmatched_begin`, async begins never
//! ended (a token that never ends); `unmatched_end`, async ends with no open begin. An
//! **async region entry** has `region` (id), `name`, `count`, `total_dur` (durations
//! summed: ranges may overlap, so it is no share of any lane's time), `mean_dur`,
//! `min_dur`, `max_dur` (0 without ranges), `unmatched_begin` and `unmatched_end`, for
//! every async region with a range or an unmatched record, ids ascending. Async ranges
//! are in none of the other figures (`regions`, `unmatched_*`, lane shares). With a block
//! filter, ranges with either lane in the kept blocks count (as
//! [`Trace::filter_blocks`](crate::model::Trace::filter_blocks) keeps them).
//! The **clock** object ([`crate::model::ClockCalibration`]) gives the pooled ratio
//! both as `pooled_mhz` (`pooled_cycles * 1000 / pooled_ns`) and as its two sums: the
//! globaltimer ns and clock64 cycles of the `pool_lanes` finalized lanes' init-to-finalize
//! intervals; `own_ratio_lanes` lanes (a globaltimer span of at least 1 ms) were converted
//! with their own ratio, `pooled_ratio_lanes` with the pooled one. Like
//! `after_finalize`, `unfinalized_lanes`, `unknown_records` and `backward_steps`, it
//! describes the whole buffer, whatever the block filter.
//!
//! A **set_aside_lanes** entry ([`crate::model::SetAsideLane`]) gives the lane's stamps:
//! for a native lane as written, `start` and `end` its `%globaltimer` ns at init and
//! finalize, `start_clock` and `end_clock` its clock64 cycles (`end` and `end_clock` are
//! null for a lane that never finalized); for a lane of any other format, `start` and
//! `end` the times of its first and latest records (ns, as decoded) and null clocks. And
//! `reason` the rule that set it aside, the same for every format
//! ([`crate::decode::set_aside`], `# Lanes set aside`): `"span"` (its end is more than
//! 2^44 ns from its start), `"apart"` (more than 2^40 ns from the launch's other lanes),
//! `"clock"` (native clock mode: its clock64 and globaltimer intervals disagree at the
//! launch's clock rate), `"range"` (its stamps reach 2^63 ns, the year 2262) or
//! `"unordered_ring"` (a native full ring that never finalized:
//! its oldest record is unknown). Such a lane is in no other figure of the summary. The
//! list is
//! restricted to the blocks of `block_filter`.
//!
//! **overhead_correction** ([`crate::model::OverheadCorrection`], rules in
//! [`crate::decode::native`], `# Overhead correction`): `per_record_ns_median` is the
//! median over the corrected lanes of their per-record cost in ns; `lanes_unmeasured`
//! lanes had no measured cost (or no cycles-to-ns ratio) and were left as recorded;
//! `total_ns_removed` is the ns taken off all durations together (unscaled). Every
//! duration of the summary is then a corrected one.
//!
//! A **region entry** has `region` (id), `name`, `count` (paired spans), `total_dur`
//! (inclusive time), `mean_dur`, `cv_dur` (population std / mean), `var_dur_pop`,
//! `var_dur_sample` (0 for a single span), `min_dur`, `max_dur`, `percentiles` `{p5, p10,
//! p25, p50, p75, p90, p95, p99}`, `self_dur` (self time), `self_share` (`self_dur /
//! lane_dur`) and `hist` `{bins, min, max, prob}` (equal-width bins over `[min, max]`,
//! `prob` sums to 1; see [`crate::stats::histogram`]). The statistics are of whole-span
//! durations. Inclusive time, self time, lane time and shares are defined in
//! [`crate::definitions`]; the `self_share` of all regions plus `outside_share` is 1.
//!
//! Percentiles are **exact**: computed from every duration, not from the histogram, by
//! linear interpolation between closest ranks (see [`crate::stats`]).
//!
//! A **by_block_warp entry** is one lane: `block`, `warp` (the leader's warp; the group
//! for TVM buffers), `group`, `lane`, `sm` (null for TVM buffers), and the same statistics
//! as a region entry without `hist`. Entries are in lane order, or, with
//! `summary_topk_block_warp_per_region = K > 0`, the K with the largest `total_dur`,
//! largest first.
//!
use super::WriteError;
use crate::model::{Epoch, SetAsideReason, TrackId, WireFormat};
use crate::stats::{self, DurStats, LaneSetStats, TraceStats, UnmatchedRegion, PERCENTILES};
use crate::time::scaled;
use serde::ser::Serializer;
use serde::Serialize;
use std::io::Write;

/// Options of the summary JSON. Field names (the keys of its `filters`) and defaults
/// follow the in-kernel profiler whose layout it reproduces (yao-jz/intra-kernel-profiler's
/// `TraceWriteOptions`; see the repository's `docs/references.md`).
/// Serialized as the summary's `filters`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SummaryOptions {
    /// Multiplier from ns to the reported unit of durations. Default 1.0.
    #[serde(skip)]
    pub scale: f64,
    /// Histogram bins of each region. Default 128.
    pub summary_hist_bins: u32,
    /// Include per-(block, warp) statistics of every region. Default true.
    #[serde(skip)]
    pub summary_dump_by_block_warp: bool,
    /// Keep only the K (block, warp) entries with the largest total time per region
    /// (0 = all). Default 0.
    pub summary_topk_block_warp_per_region: u32,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            scale: 1.0,
            summary_hist_bins: 128,
            summary_dump_by_block_warp: true,
            summary_topk_block_warp_per_region: 0,
        }
    }
}

/// The percentile method, as stated in every summary.
pub const PERCENTILE_METHOD: &str =
    "exact: linear interpolation between closest ranks over all durations";

/// `p5` .. `p99`, serialized in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Percentiles(pub [f64; 8]);

impl Serialize for Percentiles {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(PERCENTILES.iter().map(|(k, _)| k).zip(self.0))
    }
}

/// A JSON object whose keys keep insertion order.
#[derive(Debug, Clone, PartialEq)]
pub struct Ordered<T>(pub Vec<(String, T)>);

impl<T: Serialize> Serialize for Ordered<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// Duration statistics in output units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    /// Paired spans.
    pub count: u64,
    /// Sum of durations.
    pub total_dur: f64,
    /// Mean.
    pub mean_dur: f64,
    /// Coefficient of variation.
    pub cv_dur: f64,
    /// Population variance.
    pub var_dur_pop: f64,
    /// Sample variance.
    pub var_dur_sample: f64,
    /// Smallest.
    pub min_dur: f64,
    /// Largest.
    pub max_dur: f64,
    /// Exact percentiles.
    pub percentiles: Percentiles,
}

impl Stats {
    /// Scales ns statistics by `k`.
    pub fn from_ns(s: &DurStats, k: f64) -> Stats {
        Stats {
            count: s.count,
            total_dur: scaled(s.total, k),
            mean_dur: s.mean * k,
            cv_dur: s.cv,
            var_dur_pop: s.var_pop * k * k,
            var_dur_sample: s.var_sample * k * k,
            min_dur: scaled(s.min, k),
            max_dur: scaled(s.max, k),
            percentiles: Percentiles(s.percentiles.map(|p| p * k)),
        }
    }
}

/// A histogram in output units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hist {
    /// Bins.
    pub bins: u32,
    /// Left edge.
    pub min: f64,
    /// Right edge.
    pub max: f64,
    /// Probability per bin.
    pub prob: Vec<f64>,
}

/// One region's statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegionEntry {
    /// Region id.
    pub region: u16,
    /// Region name.
    pub name: String,
    /// Statistics.
    #[serde(flatten)]
    pub stats: Stats,
    /// Self time.
    pub self_dur: f64,
    /// Self time / lane time.
    pub self_share: f64,
    /// Histogram.
    pub hist: Hist,
}

/// One lane's statistics of one region.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockWarpEntry {
    /// Block.
    pub block: u32,
    /// Warp (group for TVM buffers).
    pub warp: u32,
    /// Group.
    pub group: u32,
    /// Lane id.
    pub lane: u32,
    /// SM, if known.
    pub sm: Option<u32>,
    /// Statistics.
    #[serde(flatten)]
    pub stats: Stats,
}

/// `by_block_warp_regions` value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockWarpRegion {
    /// Region id.
    pub region: u16,
    /// Region name.
    pub name: String,
    /// Entries.
    pub by_block_warp: Vec<BlockWarpEntry>,
}

/// Drops of one lane.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaneDrops {
    /// Lane id.
    pub lane: u32,
    /// Where it sits.
    #[serde(flatten)]
    pub track: TrackId,
    /// Records dropped.
    pub dropped: u64,
}

/// A ring lane's overwritten records.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaneOverwritten {
    /// Lane id.
    pub lane: u32,
    /// Where it sits.
    #[serde(flatten)]
    pub track: TrackId,
    /// Records overwritten.
    pub overwritten: u64,
}

/// Which launch of a buffer of several.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpochSummary {
    /// Its index, the launches the buffer has room for, the launches that ran.
    #[serde(flatten)]
    pub epoch: Epoch,
    /// Launches that ran and were not recorded.
    pub not_recorded: u64,
}

/// The overhead correction applied (see [`crate::model::OverheadCorrection`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorrectionSummary {
    /// Median per-record cost of the corrected lanes, ns.
    pub per_record_ns_median: f64,
    /// Lanes corrected.
    pub lanes_corrected: u64,
    /// Lanes without a measured cost.
    pub lanes_unmeasured: u64,
    /// Spans whose end moved.
    pub spans_corrected: u64,
    /// ns removed in all.
    pub total_ns_removed: u64,
}

/// A lane set aside (see [`crate::model::SetAsideLane`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaneSetAside {
    /// Lane id.
    pub lane: u32,
    /// Where it sits.
    #[serde(flatten)]
    pub track: TrackId,
    /// Start, ns: a native lane's start globaltimer as written; in other formats its
    /// first record's time.
    pub start: u64,
    /// End, ns: a native lane's end globaltimer as written (null: never finalized); in
    /// other formats its latest record's time.
    pub end: Option<u64>,
    /// A native lane's start clock64, as written (null in other formats).
    pub start_clock: Option<u64>,
    /// A native lane's end clock64, as written (null: never finalized, or another format).
    pub end_clock: Option<u64>,
    /// The rule that set it aside.
    pub reason: SetAsideReason,
}

/// The clock-mode calibration (see [`crate::model::ClockCalibration`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockSummary {
    /// Pooled clock rate, MHz.
    pub pooled_mhz: f64,
    /// Pooled ns.
    pub pooled_ns: u64,
    /// Pooled cycles.
    pub pooled_cycles: u64,
    /// Lanes in the pool.
    pub pool_lanes: u64,
    /// Lanes on their own ratio.
    pub own_ratio_lanes: u64,
    /// Lanes on the pooled ratio.
    pub pooled_ratio_lanes: u64,
}

/// A clock rate that was not measured (see [`crate::model::AssumedClock`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssumedClockSummary {
    /// The rate, MHz.
    pub mhz: f64,
    /// Whether the user gave it (false: the writing tool's own assumption).
    pub given: bool,
}

/// The whole summary document.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[allow(non_snake_case)]
pub struct Summary {
    /// Trace name.
    pub trace: String,
    /// The buffer file the summary was decoded from (`ikp decode` sets it; absent when the
    /// buffer came straight from a session).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer: Option<String>,
    /// Wire format.
    pub format: WireFormat,
    /// Always "ns".
    pub displayTimeUnit: &'static str,
    /// Scale.
    pub scale: f64,
    /// Blocks in the grid.
    pub blocks: u64,
    /// Lanes per block.
    pub warps_per_block: u32,
    /// Lane capacity.
    pub per_warp_cap: u32,
    /// Clock-mode calibration (null for globaltimer stamps).
    pub clock: Option<ClockSummary>,
    /// The clock rate cycles were converted at without a measurement (Proton traces only;
    /// absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assumed_clock: Option<AssumedClockSummary>,
    /// Included blocks (empty = all).
    pub block_filter: Vec<u32>,
    /// Unmatched begins.
    pub unmatched_begin: u64,
    /// Unmatched ends.
    pub unmatched_end: u64,
    /// Unmatched per region.
    pub unmatched_by_region: Vec<UnmatchedRegion>,
    /// Records after finalize.
    pub after_finalize: u64,
    /// Lanes never finalized.
    pub unfinalized_lanes: u64,
    /// Unknown records.
    pub unknown_records: u64,
    /// Backward steps of the timer.
    pub backward_steps: u64,
    /// Dropped records.
    pub dropped: u64,
    /// Dropped per lane.
    pub dropped_by_lane: Vec<LaneDrops>,
    /// Lanes set aside (absent when none, so that the summary of a sound buffer keeps
    /// its shape).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub set_aside_lanes: Vec<LaneSetAside>,
    /// Records overwritten in rings (absent when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub overwritten: u64,
    /// Overwritten per ring lane that wrapped (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overwritten_by_lane: Vec<LaneOverwritten>,
    /// Ends whose begins were overwritten (absent when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub ends_of_overwritten_begins: u64,
    /// Which launch of several (absent for a buffer of one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epoch: Option<EpochSummary>,
    /// The overhead correction applied (absent when not asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overhead_correction: Option<CorrectionSummary>,
    /// A stream launch's rings and drain (absent for other inputs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<crate::model::StreamSource>,
    /// Percentile method.
    pub percentile_method: &'static str,
    /// The options in effect (those the `# Format` lists as `filters`).
    pub filters: SummaryOptions,
    /// Lane time.
    pub lane_dur: f64,
    /// Lane time outside any region.
    pub outside_dur: f64,
    /// `outside_dur / lane_dur`.
    pub outside_share: f64,
    /// Regions.
    pub regions: Vec<RegionEntry>,
    /// Per-lane breakdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_block_warp_regions: Option<Ordered<BlockWarpRegion>>,
    /// The host clock sync (absent when the buffer has none, so that other summaries keep
    /// their shape).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_sync: Option<ClockSyncSummary>,
    /// Async ranges (absent without any, so that other summaries keep their shape).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub async_ranges: Option<stats::AsyncStats>,
    /// The lanes over time (absent without lanes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lanes_over_time: Option<LanesOverTime>,
}

/// The lanes over time ([`crate::stats::LaneWaves`]): times since the trace's time base.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LanesOverTime {
    /// `"init_finalize"` (the lanes' recorded init and finalize) or `"records"` (their
    /// first and last records).
    pub bounds: &'static str,
    /// The earliest lane start.
    pub start: f64,
    /// The latest lane end.
    pub end: f64,
    /// The most lanes running at once.
    pub peak_lanes: u64,
    /// When the running lanes last fell below the peak.
    pub tail_start: f64,
    /// From `tail_start` to `end`.
    pub tail_dur: f64,
    /// `tail_dur / (end - start)` (0 when the lanes take no time).
    pub tail_share: f64,
    /// The waves, in time order.
    pub waves: Vec<WaveEntry>,
    /// Every lane, in lane order.
    pub lanes: Vec<LaneLifetime>,
}

/// One wave of lanes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaveEntry {
    /// Its index, from 0.
    pub wave: u32,
    /// Lanes in it.
    pub lanes: u64,
    /// Its first lane's start.
    pub start: f64,
    /// Its last lane's end.
    pub end: f64,
}

/// One lane's lifetime.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaneLifetime {
    /// Lane id.
    pub lane: u32,
    /// Where it sits.
    #[serde(flatten)]
    pub track: TrackId,
    /// Its start.
    pub start: f64,
    /// Its end.
    pub end: f64,
    /// Whether it ran finalize.
    pub finalized: bool,
    /// Its wave.
    pub wave: u32,
}

impl LanesOverTime {
    /// The lanes of `trace` over time as `w` finds them, times `k` (output units per ns).
    pub fn new(trace: &crate::model::Trace, w: &stats::LaneWaves, k: f64) -> LanesOverTime {
        let at = |t: u64| scaled(t.saturating_sub(trace.source.time_base), k);
        let len = w.end - w.start;
        LanesOverTime {
            bounds: if w.init_finalize {
                "init_finalize"
            } else {
                "records"
            },
            start: at(w.start),
            end: at(w.end),
            peak_lanes: w.peak,
            tail_start: at(w.tail_start),
            tail_dur: scaled(w.tail(), k),
            tail_share: if len == 0 {
                0.0
            } else {
                w.tail() as f64 / len as f64
            },
            waves: (w.waves.iter().enumerate())
                .map(|(i, v)| WaveEntry {
                    wave: i as u32,
                    lanes: v.lanes,
                    start: at(v.start),
                    end: at(v.end),
                })
                .collect(),
            lanes: (trace.lanes.iter().zip(&w.wave_of))
                .map(|(l, &wave)| LaneLifetime {
                    lane: l.id,
                    track: l.track(),
                    start: at(l.start),
                    end: at(l.end.max(l.start)),
                    finalized: l.finalized,
                    wave,
                })
                .collect(),
        }
    }
}

/// A buffer's host clock sync and what it maps (see the module's `# Format`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClockSyncSummary {
    /// Host `CLOCK_REALTIME` at the sync, ns.
    pub host_realtime_ns: u64,
    /// Host `CLOCK_MONOTONIC` at the sync, ns.
    pub host_monotonic_ns: u64,
    /// Device `%globaltimer` at the sync, ns.
    pub device_globaltimer_ns: u64,
    /// The kept reading's round trip, ns.
    pub round_trip_ns: u32,
    /// The mapping's error bound, ns: half the round trip.
    pub error_bound_ns: u32,
    /// Readings taken.
    pub samples: u32,
    /// Host realtime minus device time, ns.
    pub realtime_minus_device_ns: i128,
    /// Host monotonic minus device time, ns.
    pub monotonic_minus_device_ns: i128,
    /// The trace's time base on the host's realtime clock, ns.
    pub time_base_realtime_ns: u64,
    /// The trace's time base on the host's monotonic clock, ns.
    pub time_base_monotonic_ns: u64,
}

impl ClockSyncSummary {
    /// The summary of `sync` for a trace whose time base is `time_base`.
    pub fn new(sync: &ikp_device::ClockSync, time_base: u64) -> ClockSyncSummary {
        let d = sync.device_globaltimer_ns as i128;
        ClockSyncSummary {
            host_realtime_ns: sync.host_realtime_ns,
            host_monotonic_ns: sync.host_monotonic_ns,
            device_globaltimer_ns: sync.device_globaltimer_ns,
            round_trip_ns: sync.round_trip_ns,
            error_bound_ns: sync.round_trip_ns / 2,
            samples: sync.samples,
            realtime_minus_device_ns: sync.host_realtime_ns as i128 - d,
            monotonic_minus_device_ns: sync.host_monotonic_ns as i128 - d,
            time_base_realtime_ns: sync.device_to_realtime(time_base),
            time_base_monotonic_ns: sync.device_to_monotonic(time_base),
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The region entries of `set`, durations times `k`, histograms of `bins` bins.
pub(super) fn region_entries(
    stats: &TraceStats,
    set: &LaneSetStats,
    bins: u32,
    k: f64,
) -> Vec<RegionEntry> {
    (set.regions.iter())
        .map(|r| {
            let h = stats::histogram(&r.durations, bins);
            let self_ns = set.shares.region(r.region).map_or(0, |t| t.self_time);
            RegionEntry {
                region: r.region,
                name: stats.trace.names.region(r.region).into_owned(),
                stats: Stats::from_ns(&r.stats, k),
                self_dur: scaled(self_ns, k),
                self_share: set.shares.share(self_ns),
                hist: Hist {
                    bins: h.bins,
                    min: scaled(h.min, k),
                    max: scaled(h.max, k),
                    prob: h.prob,
                },
            }
        })
        .collect()
}

/// Lane time, time outside any region and its share of `set`, in output units.
pub(super) fn lane_totals(set: &LaneSetStats, k: f64) -> (f64, f64, f64) {
    let s = &set.shares;
    (
        scaled(s.lane_time, k),
        scaled(s.outside, k),
        s.share(s.outside),
    )
}

/// `by_block_warp_regions`: per region, one entry per lane with spans of it.
fn by_block_warp(stats: &TraceStats, opt: &SummaryOptions) -> Ordered<BlockWarpRegion> {
    let (names, k) = (&stats.trace.names, opt.scale);
    let mut per: Vec<(u16, Vec<BlockWarpEntry>)> = (stats.all.regions.iter())
        .map(|r| (r.region, Vec::new()))
        .collect();
    for (l, set) in stats.by_lane() {
        for r in &set.regions {
            let slot = per.binary_search_by_key(&r.region, |p| p.0);
            per[slot.expect("region seen")].1.push(BlockWarpEntry {
                block: l.block,
                warp: l.warp.unwrap_or(l.group),
                group: l.group,
                lane: l.id,
                sm: l.sm,
                stats: Stats::from_ns(&r.stats, k),
            });
        }
    }
    let mut seen = std::collections::HashMap::new();
    for (r, _) in &per {
        *seen.entry(names.region(*r)).or_insert(0) += 1;
    }
    let topk = opt.summary_topk_block_warp_per_region as usize;
    Ordered(
        (per.into_iter())
            .map(|(r, mut by_block_warp)| {
                let name = names.region(r).into_owned();
                if topk > 0 {
                    by_block_warp.sort_by(|a, b| {
                        (b.stats.total_dur.total_cmp(&a.stats.total_dur)).then(a.lane.cmp(&b.lane))
                    });
                    by_block_warp.truncate(topk);
                }
                let key = if seen[name.as_str()] > 1 {
                    format!("region_{name}_{r}")
                } else {
                    format!("region_{name}")
                };
                (
                    key,
                    BlockWarpRegion {
                        region: r,
                        name,
                        by_block_warp,
                    },
                )
            })
            .collect(),
    )
}

/// The summary of the trace of `stats`; `trace_name` fills the `trace` field.
pub fn summarize(stats: &TraceStats, opt: &SummaryOptions, trace_name: &str) -> Summary {
    let (trace, k) = (stats.trace, opt.scale);
    let (lane_dur, outside_dur, outside_share) = lane_totals(&stats.all, k);
    let d = &trace.diagnostics;
    let dropped_by_lane: Vec<LaneDrops> = (trace.lanes.iter())
        .filter(|l| l.dropped > 0)
        .map(|l| LaneDrops {
            lane: l.id,
            track: l.track(),
            dropped: l.dropped,
        })
        .collect();
    Summary {
        trace: trace_name.to_owned(),
        buffer: None,
        format: trace.source.format,
        displayTimeUnit: "ns",
        scale: k,
        blocks: trace.source.grid.iter().map(|&g| g as u64).product(),
        warps_per_block: trace.source.groups_per_block,
        per_warp_cap: trace.source.records_per_lane,
        clock: trace.source.clock.map(|c| ClockSummary {
            pooled_mhz: c.pooled_mhz(),
            pooled_ns: c.pooled_ns,
            pooled_cycles: c.pooled_cycles,
            pool_lanes: c.pool_lanes,
            own_ratio_lanes: c.own_ratio_lanes,
            pooled_ratio_lanes: c.pooled_ratio_lanes,
        }),
        assumed_clock: (trace.source.assumed_clock).map(|c| AssumedClockSummary {
            mhz: c.mhz(),
            given: c.given,
        }),
        block_filter: trace.source.block_filter.blocks().to_vec(),
        unmatched_begin: d.unmatched_begin.len() as u64,
        unmatched_end: d.unmatched_end.len() as u64,
        unmatched_by_region: stats.unmatched.clone(),
        after_finalize: d.after_finalize,
        unfinalized_lanes: d.unfinalized_lanes,
        unknown_records: d.unknown_records,
        backward_steps: d.backward_steps,
        dropped: dropped_by_lane.iter().map(|l| l.dropped).sum(),
        dropped_by_lane,
        set_aside_lanes: (d.set_aside.iter())
            .map(|s| LaneSetAside {
                lane: s.lane,
                track: s.track,
                start: s.start,
                end: s.end,
                start_clock: s.start_clock,
                end_clock: s.end_clock,
                reason: s.reason,
            })
            .collect(),
        overwritten: trace.overwritten(),
        overwritten_by_lane: (trace.lanes.iter())
            .filter(|l| l.overwritten > 0)
            .map(|l| LaneOverwritten {
                lane: l.id,
                track: l.track(),
                overwritten: l.overwritten,
            })
            .collect(),
        ends_of_overwritten_begins: d.ends_of_overwritten_begins,
        epoch: (trace.source.epoch).map(|epoch| EpochSummary {
            not_recorded: epoch.not_recorded(),
            epoch,
        }),
        overhead_correction: (trace.source.overhead_correction).map(|c| CorrectionSummary {
            per_record_ns_median: c.per_record_ns_median(),
            lanes_corrected: c.lanes_corrected,
            lanes_unmeasured: c.lanes_unmeasured,
            spans_corrected: c.spans_corrected,
            total_ns_removed: c.total_ns_removed,
        }),
        stream: trace.source.stream,
        percentile_method: PERCENTILE_METHOD,
        filters: opt.clone(),
        lane_dur,
        outside_dur,
        outside_share,
        regions: region_entries(stats, &stats.all, opt.summary_hist_bins, k),
        by_block_warp_regions: opt
            .summary_dump_by_block_warp
            .then(|| by_block_warp(stats, opt)),
        clock_sync: (trace.source.clock_sync.as_ref())
            .map(|c| ClockSyncSummary::new(c, trace.source.time_base)),
        async_ranges: (stats.async_ranges.as_ref()).map(|a| a.scaled(k)),
        lanes_over_time: (stats.lanes.as_ref()).map(|w| LanesOverTime::new(trace, w, k)),
    }
}

/// Writes a summary made by [`summarize`] (and completed, e.g. with its `buffer`) to
/// `out`.
pub fn write_summary<W: Write>(mut out: W, summary: &Summary) -> Result<(), WriteError> {
    serde_json::to_writer_pretty(&mut out, summary)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}
