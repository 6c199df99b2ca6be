//! Native Perfetto protobuf traces: the main output format (`ikp decode buf.bin --perfetto
//! out.trace`), opened in the Perfetto UI or queried with trace processor.
//!
//! [`write_perfetto`] streams one or more decoded launches to any [`io::Write`] as a
//! `perfetto.protos.Trace`: each `TracePacket` is written as soon as it is encoded, so
//! memory stays bounded by the largest lane, never by the trace. Every byte is
//! hand-encoded (no protobuf library is linked): the lane event packets (slice begin / end,
//! instants, counter values) by `enc`'s sequence encoder straight into the output buffer,
//! the rest (track descriptors, sequence setup, clock snapshots, the events of sequence 1)
//! by `enc::cold`. Both cite their field numbers from Perfetto's protos
//! (github.com/google/perfetto, `protos/perfetto/trace/trace.proto`, `trace_packet.proto`,
//! `track_event/*.proto`, `clock_snapshot.proto`, `trace_packet_defaults.proto`,
//! `interned_data/interned_data.proto`, `common/builtin_clock.proto`); the tests decode
//! every packet with rust-protobuf types generated from those protos
//! (`host/tests/perfetto-schema`, imported as `perfetto_protos`), and golden files pin the
//! bytes.
//!
//! # Format
//!
//! The file is a `Trace` message: a run of `packet` fields (tag `0x0A`, varint length,
//! `TracePacket` bytes), in this order, launch by launch:
//!
//! 0. **Host clock snapshot** of a launch recorded with a host clock sync (see `# Host
//!    clocks`), on sequence 1, just before the launch's track descriptors.
//! 1. **Track descriptors** (`TracePacket.track_descriptor`, on sequence 1), always before
//!    the first event that uses the track. The hierarchy of named tracks (`parent_uuid`):
//!    ```text
//!    launch k: <label>                      one root per launch (the label alone when
//!    │                                      there is a single launch)
//!    ├── SM 3                               a group per SM (GroupBy::Sm) or per block
//!    │   ├── active lanes                   counter: lanes of this SM between init and
//!    │   │                                  finalize (GroupBy::Sm only)
//!    │   ├── block 7 / group 0 / warp 2     a slice track per lane
//!    │   ├── block 7 / group 0 / warp 2 (overlap 1)   only if spans of the lane cross
//!    │   ├── block 7 / group 0 / warp 2 · kv_wait     counter: a wait counter's samples
//!    │   ├── block 7 / group 0 / warp 2 · lifetime    native lanes: init to finalize
//!    │   └── ...
//!    └── SM occupancy                       GroupBy::Block only: one "SM n active lanes"
//!        └── SM 3 active lanes              counter per SM
//!    ```
//!    Every parent sets `child_ordering = EXPLICIT` and every child a `sibling_order_rank`,
//!    so SMs, blocks and lanes sort numerically (SM 2 before SM 10), and a lane's overlap
//!    and counter tracks sit right after it. Lanes without an SM (TVM and Mirage buffers) are
//!    grouped by block whatever the grouping asked for.
//!
//!    **Lifetimes**: in a format that records each lane's start and end of its own (the
//!    native format's init and finalize stamps:
//!    [`WireFormat::records_lane_lifetimes`](crate::model::WireFormat::records_lane_lifetimes)),
//!    every lane has a `<lane> · lifetime` track, after its overlap and counter tracks,
//!    holding one slice from the lane's start to its end (its last record when it never
//!    finalized), right after that track's descriptor: `TYPE_SLICE_BEGIN` and
//!    `TYPE_SLICE_END` on sequence 1 with absolute timestamps and plain names, named
//!    `lifetime`, category `lane`, debug annotations `sm` (if known), `block`, `group`,
//!    `warp` (if known) and `finalized` (1 or 0), all `uint_value`. A kernel without
//!    loops (nothing but a lane's start and end recorded) so still shows its warps and
//!    their waves; a lane with no event has its tracks and lifetime but no sequence.
//! 2. **Active-lanes counter values** of a group right after its descriptors: absolute
//!    timestamps on sequence 1, `TYPE_COUNTER` events, one per distinct start / end time.
//! 3. **One packet sequence per lane** that recorded events
//!    (`trusted_packet_sequence_id` 2, 3, ... in emission order). Its first packet has
//!    `first_packet_on_sequence`, `sequence_flags = SEQ_INCREMENTAL_STATE_CLEARED` and sets
//!    up the sequence's incremental state:
//!    - `trace_packet_defaults`: `timestamp_clock_id = 64` and
//!      `track_event_defaults.track_uuid` = the lane's slice track;
//!    - `interned_data`: event categories (`1 = "span"`, `2 = "instant"`) and debug
//!      annotation names (`1 = payload`, `2 = sm`, `3 = block`, `4 = group`);
//!    - `clock_snapshot`: the sequence-scoped clock 64, `is_incremental`, at the lane's
//!      first event time, paired with `BUILTIN_CLOCK_BOOTTIME` at the same value.
//!
//!    Every following packet on the sequence has `sequence_flags =
//!    SEQ_NEEDS_INCREMENTAL_STATE` and a `timestamp` that is the delta (ns) from the
//!    previous packet of the sequence; events are emitted in time order, so deltas are
//!    never negative. Event names are interned lazily: the first event of a region on a
//!    sequence carries `interned_data.event_names { iid = region + 1, name }`.
//!    - a **span** becomes `TYPE_SLICE_BEGIN` (name, category `span`, debug annotations
//!      `payload`, `sm` (if known), `block`, `group`, all `uint_value`) and
//!      `TYPE_SLICE_END`; spans that cross instead of nesting go to an "overlap n" track
//!      (explicit `track_uuid`), so every track's slices nest;
//!    - an **instant** becomes `TYPE_INSTANT` with the same fields, category `instant`;
//!    - a **wait-counter sample** becomes `TYPE_COUNTER` (`counter_value` = spin
//!      iterations) on the lane's counter track for that counter.
//!
//!    At equal timestamps a lane emits slice ends first, then begins, instants, counter
//!    values; trace processor sorts by timestamp stably, so this is the order it parses.
//!
//!    Field order, for readers of the bytes: a packet is `timestamp (8)`,
//!    `trusted_packet_sequence_id (10)`, `sequence_flags (13)`, `track_event (11)`,
//!    `[interned_data (12)]`; a named event is `type (9)`, `name_iid (10)`,
//!    `category_iids (3)`, `debug_annotations (4)` (payload first), `[track_uuid (11)]`,
//!    `[flow_ids (47)...]`; a slice end is `type (9)`, `[track_uuid (11)]`,
//!    `[terminating_flow_ids (48)]`. Flow ids are `fixed64`, one field per id (not packed).
//!    The other packets write their fields in the generated types' order (a message's
//!    plain fields in `.proto` declaration order, then its `oneof`s), so a track descriptor
//!    packet is `track_descriptor (60)` then `trusted_packet_sequence_id (10)`, an event on
//!    sequence 1 `timestamp (8)`, `track_event (11)`, `trusted_packet_sequence_id (10)`.
//! 4. **Flows**: every signal → wait link that [`links::links`] finds (a `signal.<ch>`
//!    instant or span and a `wait.<ch>` span of another lane of the same block, same
//!    token) is a flow arrow from the signal to the wait, carried by the lane sequences'
//!    event packets above (no packets of their own):
//!    - the wait slice's **end** (`TYPE_SLICE_END`, at the time the wait was released)
//!      has the flow id in `terminating_flow_ids`;
//!    - the signal's **instant**, or the signal span's **begin** (`TYPE_SLICE_BEGIN`), has
//!      it in `flow_ids`. A signal that released several waits starts one flow each.
//!
//!    Trace processor attaches a flow id to the *slice* of the event that carries it (a
//!    begin and an end of one slice are the same slice to it) and records `slice_out` →
//!    `slice_in` in its `flow` table, from which the UI draws the arrow between those two
//!    slices: begin or end on either side gives the same arrow. What differs is *when* the id is parsed: trace
//!    processor reads events in timestamp order and ignores a terminating id whose flow
//!    has not started yet. A wait usually begins before its signal and always ends at or
//!    after it (that is what links it), so the terminating id goes on the wait's end; the
//!    signal span's begin is its earliest packet, which keeps the flow started before the
//!    wait's end even when the release is timed at the signal's own end. Only an instant
//!    (or zero-length span) signal at exactly the wait's release time depends on the
//!    order of equal timestamps: the file order, in which the signal's lane must come
//!    first (lanes are written by group, ascending within one).
//!
//!    **Flow ids** are `base + w + 1` for the link into wait span `w` (its index in
//!    [`Trace::spans`]), `base` being the number of spans of the launches written before:
//!    unique in the whole trace (a wait has at most one link), the same for the same input.
//!    The per-lane lookups (event index → flow ids) are built before the lanes are
//!    written, and not at all when no channel has both a `signal.` and a `wait.` region
//!    ([`links::may_link`]): such traces are written byte for byte as before, by the same
//!    event loop (the flow lookups are compiled out of it).
//! 5. **Critical path** (only with [`PerfettoOptions::critical_path`]): after a launch's
//!    lanes, a track `critical path · block B (slowest)` under the launch's root, first
//!    among its children (`sibling_order_rank = -1`), holding the critical path of the
//!    slowest block ([`links::critical_path`]) as slices on sequence 1 with absolute
//!    timestamps and plain (not interned) names: one `TYPE_SLICE_BEGIN` / `TYPE_SLICE_END`
//!    pair per step, named after the step's region, category `critical_path`, debug
//!    annotations `step` (1-based), `track` (`block B · group G (warp W, SM S)`),
//!    `dur_ns` (the step's whole duration) and, for a wait released by another group's
//!    signal, `waited_on` (`<signal region> from <track>`). Steps overlap (a wait begins
//!    before what releases it), so each slice covers the step from the later of its begin
//!    and the previous step's end: the slices tile the path without overlapping. Without
//!    the option nothing of this is written.
//! 6. **Async ranges** ([`Trace::async_ranges`]: begin and end paired by token across
//!    lanes, [`crate::decode::async_ranges`]), after the launch's lanes (and critical
//!    path): under the launch's root, after its groups and SM occupancy, one track
//!    `async · <region>` per async region (ids ascending), followed by `async · <region>
//!    (overlap n)` tracks when ranges of the region overlap: each range goes to the
//!    first of the region's rows whose last range ended at or before its begin, so no
//!    two ranges of a row overlap. Each range is a `TYPE_SLICE_BEGIN` / `TYPE_SLICE_END`
//!    pair on sequence 1 with absolute timestamps and a plain name (the region's),
//!    category `async`, debug annotations `token` (`uint`), `from` and `to` (the tracks,
//!    as `block B · group G (warp W, SM S)`, of the lanes that began and ended it; one
//!    that a block filter left out is omitted). A range linked to a wait of another lane
//!    ([`links::links`]) carries a flow from its begin (`flow_ids`) to the wait's end
//!    (`terminating_flow_ids` in the end lane's sequence), flow id `2^62 + a + k + 1` for
//!    range `k`, `a` being the number of async ranges of the launches written before. A
//!    wait span terminates one flow: the naming convention's link first, else the first
//!    range's; a range whose link is not drawn starts no flow. [`write_perfetto_streamed`]
//!    writes the same tracks and slices (the buffer pairs the ranges as it is opened:
//!    [`StreamedBuffer::async_ranges`]) but no async flows, as its lanes are decoded a
//!    run at a time. A launch without async ranges writes none of this.
//!
//! **Track UUIDs** are 1, 2, 3, ... in the order descriptors are written: the same input
//! and options give byte-identical output.
//!
//! **Compression** ([`Compression::Deflate`]): the same packets, grouped into bundles of
//! whole packets below 480 KiB; each bundle is one `TracePacket { compressed_packets
//! (50) }` holding a zlib stream of `Trace.packet` fields, as Perfetto's tracing service
//! writes them. Trace processor and the UI expand bundles transparently. The compressed
//! bytes depend on the deflate backend flate2 was built with (still deterministic for a
//! given build); the golden tests pin the plain format, and that the bundles inflate to
//! exactly its bytes.
//!
//! # Time
//!
//! Timestamps are integer nanoseconds. Each launch has its own time base: the smallest
//! time in it (its [`Source::time_base`](crate::model::Source::time_base), or an earlier
//! event time if a decoder left one), so a model time `t` of launch `k` is written as
//! `t - base_k + offset_k`. With [`LaunchLayout::Sequential`] (the default) `offset_0 = 0`
//! and each next launch starts after the previous one's last event plus a gap of 5% of
//! that launch's duration (at least 1 µs); with [`LaunchLayout::Aligned`] every launch
//! starts at 0, for side-by-side comparison. A single launch therefore starts at 0.
//!
//! With [`PerfettoOptions::host_clock`] set, every launch is placed on that host clock
//! instead, by its clock sync ([`Source::clock_sync`](crate::model::Source::clock_sync),
//! see [`crate::clock_sync`]): a model time `t` is written as the host clock's ns at
//! device time `t` (Unix ns for realtime), so launches sit where they ran, and next to a
//! host trace of the same clock (`ikp merge`). The launch layout is then ignored; a launch
//! without a clock sync is an error ([`WriteErrorKind::NoClockSync`]).
//!
//! # Host clocks
//!
//! The trace's own clock (Perfetto's default, `BUILTIN_CLOCK_BOOTTIME`, which the lane
//! sequences' clock 64 resolves to) carries the times above. For a launch with a clock
//! sync, a `TracePacket.clock_snapshot` on sequence 1 written before the launch's track
//! descriptors ties it to the host's clocks: `BUILTIN_CLOCK_BOOTTIME` = the trace time of
//! the launch's time base `b`, `BUILTIN_CLOCK_REALTIME` = host realtime at device time
//! `b`, `BUILTIN_CLOCK_MONOTONIC` = host monotonic at `b`, so trace processor and the UI
//! (timestamps shown as wall-clock time) can convert trace times to the host's clocks.
//! A snapshot is written for every launch with a clock sync in the default sequential
//! layout (their trace times increase, as Perfetto requires of the trace clock), and for
//! the first one only otherwise (aligned launches share time 0; on a host clock the
//! offsets between clocks are the same for all). Without a clock sync nothing of this is
//! written and the bytes are as before.
//!
//! [`Source::time_base`]: crate::model::Source::time_base
//! [`links::links`]: crate::analysis::links::links
//! [`links::may_link`]: crate::analysis::links::may_link
//! [`links::critical_path`]: crate::analysis::links::critical_path

mod async_tracks;
mod critical;
mod enc;
mod events;
mod feed;
mod flows;
mod host;
mod sink;

pub use host::{write_merged, MergeStats};

use crate::clock_sync::{ClockSync, HostClock};
use crate::time::Timestamp;
use std::io;

use super::{Launch, WriteError, WriteErrorKind};
use crate::decode::StreamedBuffer;
use crate::model::{Lane, Trace};
use enc::cold::{self, Value};
use events::{count_levels, LaneRun, LaneState, Regions};
use feed::Feed;
use flows::{flows_of, lane_flows, LaneFlows, LaunchFlows};
use sink::Sink;

/// How lanes are grouped into parent tracks (and, in the Chrome JSON, into pids).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum GroupBy {
    /// One group per SM, the SM the lane's leader ran on (Chrome: pid = SM, tid = block << 6
    /// | warp).
    #[default]
    Sm,
    /// One group per thread block (Chrome: pid = block, tid = warp * 32).
    Block,
}

/// Where several launches are placed on the time axis (see the module's `# Time`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum LaunchLayout {
    /// One after the other, in the order given (with a small gap).
    #[default]
    Sequential,
    /// All starting at 0, for side-by-side comparison.
    Aligned,
}

/// Whether packets are written as they are or deflate-compressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Compression {
    /// Plain packets (fastest to write, several times larger).
    None,
    /// Deflate-compressed packet bundles (read transparently by the Perfetto UI and trace
    /// processor).
    ///
    /// `TracePacket.compressed_packets` bundles (zlib, fastest level), as the Perfetto
    /// tracing service writes them: several times smaller (about 10x smaller than the
    /// Chrome JSON of the shipped sample, against about 2x for `None`), slower to write.
    /// The default, in the library as in `ikp decode`.
    #[default]
    Deflate,
}

/// Options of [`write_perfetto`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerfettoOptions {
    /// Grouping of lane tracks.
    pub group_by: GroupBy,
    /// Placement of launches on the time axis.
    pub launch_layout: LaunchLayout,
    /// Plain or compressed packets.
    pub compression: Compression,
    /// Also draw the critical path of each launch's slowest block on a track of its own
    /// (see the module's `# Format`, item 5). Needs the spans: [`write_perfetto_streamed`]
    /// ignores it.
    pub critical_path: bool,
    /// Place every launch on this host clock by its clock sync (absolute host ns) instead
    /// of the launch layout's relative times; see the module's `# Time`. `None` (the
    /// default): relative times.
    pub host_clock: Option<HostClock>,
}

/// What [`write_perfetto`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerfettoStats {
    /// Bytes written.
    pub bytes: u64,
    /// Trace packets written.
    pub packets: u64,
    /// Track descriptors written.
    pub tracks: u64,
    /// Packet sequences (lanes with events) opened.
    pub sequences: u64,
    /// Slices (begin / end pairs) written: the spans of all launches.
    pub slices: u64,
    /// Instant events written.
    pub instants: u64,
    /// Counter values written (wait-counter samples and active-lanes values).
    pub counter_values: u64,
    /// Flows written: signal → wait links drawn as arrows (see the module's `# Format`).
    pub flows: u64,
    /// Critical-path steps drawn on the critical-path tracks (0 unless asked for).
    pub critical_path_steps: u64,
    /// Async ranges drawn as slices on their async tracks.
    pub async_slices: u64,
    /// Lane lifetimes drawn as slices on their lifetime tracks.
    pub lifetimes: u64,
}

/// Writes `launches` as one Perfetto protobuf trace to `out` (see the module's `# Format`).
///
/// `out` gets large sequential writes; wrapping it in a `BufWriter` is not needed. It is
/// flushed at the end. Writing to a file atomically is the caller's business.
pub fn write_perfetto<W: io::Write>(
    out: W,
    launches: &[Launch<'_>],
    opts: &PerfettoOptions,
) -> Result<PerfettoStats, WriteError> {
    let clocks = launch_clocks(launches.iter().map(launch_times), opts)?;
    let mut w = Writer::new(out, opts.compression);
    w.launches(launches, &clocks, opts)?;
    w.finish()
}

impl<W: io::Write> Writer<W> {
    /// Writes `launches`, each placed by its clock.
    fn launches(
        &mut self,
        launches: &[Launch<'_>],
        clocks: &[LaunchClock],
        opts: &PerfettoOptions,
    ) -> Result<(), WriteError> {
        let w = self;
        // Flow ids of launch k start after the span indices of the launches before it.
        let mut flow_base = 0u64;
        let mut async_flow_base = async_tracks::ASYNC_FLOW_IDS;
        // Whether a launch before this one had a clock sync (and so a snapshot).
        let mut synced = false;
        for (k, (launch, clock)) in launches.iter().zip(clocks).enumerate() {
            let source = &launch.trace.source;
            w.snapshot(source, *clock, !synced, opts)?;
            synced |= source.clock_sync.is_some();
            let name = match (launches.len(), launch.label.is_empty()) {
                (1, false) => launch.label.to_string(),
                (_, false) => format!("launch {k}: {}", launch.label),
                (_, true) => format!("launch {k}"),
            };
            let t = launch.trace;
            let at = LaunchPlace {
                trace: t,
                clock: *clock,
                name: &name,
                rank: k,
            };
            let lanes = Lanes::InMemory(lane_flows(t, flow_base, async_flow_base));
            let (root, first_rank) = w.launch(&at, opts.group_by, lanes)?;
            if opts.critical_path {
                w.critical_path_track(&at, root)?;
            }
            let a = &t.async_ranges;
            w.async_tracks(&at, a, root, first_rank, Some(async_flow_base))?;
            flow_base += t.spans.len() as u64;
            async_flow_base += a.len() as u64;
        }
        Ok(())
    }
}

/// Writes the launch of `buf`, labelled `label`, decoding its lanes on demand, so that
/// memory stays bounded by the largest lane instead of the trace: the streaming path of
/// `ikp decode --perfetto` for multi-GB buffers.
///
/// The tracks are laid out from the buffer's outline ([`StreamedBuffer::outline`]: the
/// lanes without their events, learnt as it was opened); then each lane is decoded once
/// more, in track order, to write its events. When the names allow signal → wait links
/// (see [`crate::analysis::links`]), a lane's whole block is decoded at once (links never
/// leave a block), so memory is bounded by the largest block instead of the largest lane;
/// a block whose lanes are split between groups (a lane without an SM) is decoded once
/// per part. The output is byte-identical to [`write_perfetto`] of the trace decoded at
/// once with the same options (block filter included), flows included, except for the
/// flows of async ranges, which it does not draw (the module's `# Format`, item 6). The diagnostics
/// are the buffer's ([`StreamedBuffer::diagnostic_counts`]).
pub fn write_perfetto_streamed<W: io::Write>(
    out: W,
    label: &str,
    buf: &StreamedBuffer,
    opts: &PerfettoOptions,
) -> Result<PerfettoStats, WriteError> {
    let outline = buf.outline();
    let s = &outline.source;
    let launch = (label, buf.extent(), s.time_base, s.clock_sync);
    let clock = launch_clocks([launch].into_iter(), opts)?[0];
    let mut w = Writer::new(out, opts.compression);
    w.snapshot(&outline.source, clock, true, opts)?;
    let mut feed = Feed::new(buf);
    let lanes = Lanes::Streamed(&mut feed);
    let at = LaunchPlace {
        trace: outline,
        clock,
        name: label,
        rank: 0,
    };
    let (root, first_rank) = w.launch(&at, opts.group_by, lanes)?;
    w.async_tracks(&at, buf.async_ranges(), root, first_rank, None)?;
    w.finish()
}

/// Where a launch's lanes come from.
enum Lanes<'f, 'b> {
    /// All in the trace given, with their flows.
    InMemory(LaunchFlows),
    /// Decoded on demand (the trace given holds the lanes without their events).
    Streamed(&'f mut Feed<'b>),
}

/// Sequence of track descriptors and of the active-lanes counters.
const META_SEQ: u32 = 1;
/// The sequence-scoped incremental clock each lane sequence defines.
const LANE_CLOCK: u32 = 64;
/// `BuiltinClock` ids (`protos/perfetto/common/builtin_clock.proto`):
/// `BUILTIN_CLOCK_REALTIME`, `BUILTIN_CLOCK_MONOTONIC`, `BUILTIN_CLOCK_BOOTTIME`.
const REALTIME: u32 = 1;
const MONOTONIC: u32 = 3;
const BOOTTIME: u32 = 6;

/// Interned category ids.
const CAT_SPAN: u8 = 1;
const CAT_INSTANT: u8 = 2;
/// Interned debug annotation name ids.
const ANN_PAYLOAD: u8 = 1;
const ANN_SM: u8 = 2;
const ANN_BLOCK: u8 = 3;
const ANN_GROUP: u8 = 4;

/// One launch as the writer lays it out: its trace (the lanes without their events, when
/// streamed), the clock that places it, and its track's name and rank among the launches.
struct LaunchPlace<'a> {
    trace: &'a Trace,
    clock: LaunchClock,
    name: &'a str,
    rank: usize,
}

/// Model time → trace time of one launch: `t + shift` (wrapping), `shift = offset - base`.
#[derive(Clone, Copy, Debug)]
struct LaunchClock {
    shift: u64,
}

impl LaunchClock {
    #[inline]
    fn map(self, t: Timestamp) -> u64 {
        t.wrapping_add(self.shift)
    }
}

/// What places a launch on the time axis: its label, time extent, time base, clock sync.
type LaunchTimes<'a> = (
    &'a str,
    Option<(Timestamp, Timestamp)>,
    Timestamp,
    Option<ClockSync>,
);

/// The [`LaunchTimes`] of `l`.
fn launch_times<'a>(l: &Launch<'a>) -> LaunchTimes<'a> {
    let s = &l.trace.source;
    (l.label, l.trace.time_extent(), s.time_base, s.clock_sync)
}

/// Each launch's time mapping (see the module's `# Time`): a launch starts at the earlier
/// of its time base and its extent's start.
fn launch_clocks<'a>(
    launches: impl Iterator<Item = LaunchTimes<'a>>,
    opts: &PerfettoOptions,
) -> Result<Vec<LaunchClock>, WriteError> {
    let layout = opts.launch_layout;
    let mut offset: u64 = 0;
    let mut clocks = Vec::new();
    for (k, (label, ext, time_base, sync)) in launches.enumerate() {
        let (lo, hi) = ext.map_or((time_base, 0), |(lo, hi)| (lo.min(time_base), hi));
        let len = hi.saturating_sub(lo);
        let overflow = || WriteErrorKind::TimeOverflow {
            launch: k,
            label: label.to_string(),
        };
        let start = match opts.host_clock {
            Some(host) => host.map(
                &sync.ok_or_else(|| WriteErrorKind::NoClockSync {
                    launch: k,
                    label: label.to_string(),
                })?,
                lo,
            ),
            None => offset,
        };
        if (start.checked_add(len)).is_none_or(|end| end > i64::MAX as u64) {
            return Err(overflow().into());
        }
        clocks.push(LaunchClock {
            shift: start.wrapping_sub(lo),
        });
        if opts.host_clock.is_none() && layout == LaunchLayout::Sequential {
            offset = offset
                .checked_add(len)
                .and_then(|o| o.checked_add((len / 20).max(1_000)))
                .ok_or_else(overflow)?;
        }
    }
    Ok(clocks)
}

impl<W: io::Write> Writer<W> {
    /// Writes the host clock snapshot of the launch of `source` placed by `clock`, if it
    /// gets one (the module's `# Host clocks`): every launch with a clock sync in the
    /// default sequential layout, else only the `first` one.
    fn snapshot(
        &mut self,
        source: &crate::model::Source,
        clock: LaunchClock,
        first: bool,
        opts: &PerfettoOptions,
    ) -> io::Result<()> {
        let every = opts.host_clock.is_none() && opts.launch_layout == LaunchLayout::Sequential;
        let Some(sync) = source.clock_sync.filter(|_| first || every) else {
            return Ok(());
        };
        let b = source.time_base;
        let clocks = [
            (BOOTTIME, clock.map(b), false),
            (REALTIME, sync.device_to_realtime(b), false),
            (MONOTONIC, sync.device_to_monotonic(b), false),
        ];
        self.packet(|out| cold::clock_snapshot(out, META_SEQ, &clocks))
    }
}

/// A group of lanes: its sort key and lane positions (indices into `Trace::lanes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum GroupKey {
    Sm(u32),
    Block(u32),
}

/// `(key, lane positions)` of every group, keys ascending, lanes ascending within.
fn groups(trace: &Trace, by: GroupBy) -> Vec<(GroupKey, Vec<usize>)> {
    let key = |l: &Lane| match (by, l.sm) {
        (GroupBy::Sm, Some(sm)) => GroupKey::Sm(sm),
        _ => GroupKey::Block(l.block),
    };
    let mut order: Vec<(GroupKey, usize)> = (trace.lanes.iter().enumerate())
        .map(|(pos, l)| (key(l), pos))
        .collect();
    order.sort_unstable_by_key(|&(k, pos)| (k, trace.lanes[pos].id));
    (order.chunk_by(|a, b| a.0 == b.0))
        .map(|g| (g[0].0, g.iter().map(|e| e.1).collect()))
        .collect()
}

fn lane_name(lane: &Lane, in_block_group: bool) -> String {
    let mut s = if in_block_group {
        format!("group {}", lane.group)
    } else {
        format!("block {} / group {}", lane.block, lane.group)
    };
    if let Some(w) = lane.warp {
        s.push_str(&format!(" / warp {w}"));
    }
    s
}

fn rank(r: usize) -> i32 {
    i32::try_from(r).unwrap_or(i32::MAX)
}

/// The streaming writer: output, UUID and sequence counters, reused scratch space.
struct Writer<W: io::Write> {
    sink: Sink<W>,
    stats: PerfettoStats,
    next_uuid: u64,
    next_seq: u64,
    /// Scratch for the packets encoded outside the lane event loop.
    frame: Vec<u8>,
    /// The `interned_data` field every lane sequence starts with (categories, annotation
    /// names).
    base_interned: Vec<u8>,
    /// The current launch's region names, for the lane event loop.
    regions: Regions,
    /// The current lane's encoder, levels and tracks, for the lane event loop.
    lane: LaneState,
    /// Scratch for active-lanes computations.
    edges: Vec<(u64, i8)>,
}

/// Where the next lane track of a group goes: the group's track, whether the group is a
/// block, and the next sibling rank in it.
struct GroupSlot {
    uuid: u64,
    in_block: bool,
    rank: usize,
}

impl<W: io::Write> Writer<W> {
    fn new(out: W, compression: Compression) -> Self {
        let base_interned = cold::interned_names(
            &[(CAT_SPAN as u64, "span"), (CAT_INSTANT as u64, "instant")],
            &[
                (ANN_PAYLOAD as u64, "payload"),
                (ANN_SM as u64, "sm"),
                (ANN_BLOCK as u64, "block"),
                (ANN_GROUP as u64, "group"),
            ],
        );
        Writer {
            sink: Sink::new(out, compression),
            stats: PerfettoStats::default(),
            next_uuid: 1,
            next_seq: META_SEQ as u64 + 1,
            frame: Vec::new(),
            base_interned,
            regions: Regions::default(),
            lane: LaneState::default(),
            edges: Vec::new(),
        }
    }

    fn finish(mut self) -> Result<PerfettoStats, WriteError> {
        self.sink.finish()?;
        self.stats.bytes = self.sink.bytes;
        Ok(self.stats)
    }

    /// Writes the packet `encode` appends (one of [`enc::cold`]'s).
    fn packet(&mut self, encode: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        self.frame.clear();
        encode(&mut self.frame);
        self.put_frame()
    }

    /// Writes the packet in the frame buffer.
    fn put_frame(&mut self) -> io::Result<()> {
        self.sink.put_bytes(&self.frame)?;
        self.stats.packets += 1;
        Ok(())
    }

    /// Declares a track and returns its UUID: a slice track, or a counter track counting
    /// in `UNIT_COUNT`.
    fn track(
        &mut self,
        parent: u64,
        name: &str,
        sibling_rank: i32,
        parent_of_many: bool,
        counter: bool,
    ) -> io::Result<u64> {
        let uuid = self.next_uuid;
        self.next_uuid += 1;
        let t = cold::Track {
            uuid,
            parent,
            name,
            rank: sibling_rank,
            explicit_children: parent_of_many,
            counter,
        };
        self.packet(|out| cold::track_descriptor(out, META_SEQ, &t))?;
        self.stats.tracks += 1;
        Ok(uuid)
    }

    fn counter_track(&mut self, parent: u64, name: &str, rank_: i32) -> io::Result<u64> {
        self.track(parent, name, rank_, false, true)
    }

    /// Writes a launch's root, group and lane tracks and its lanes' events; returns the
    /// root's UUID and the rank of the root's next child.
    fn launch(
        &mut self,
        at: &LaunchPlace<'_>,
        by: GroupBy,
        mut lanes_from: Lanes<'_, '_>,
    ) -> Result<(u64, usize), WriteError> {
        let (trace, clock) = (at.trace, at.clock);
        // A streamed launch does not know its regions yet: prepare every possible id
        // (the blobs do not depend on which ones are used).
        self.regions.prepare(
            trace,
            matches!(lanes_from, Lanes::Streamed(_))
                .then_some(ikp_device::wire::MAX_REGIONS as usize - 1),
        );
        let root = self.track(0, at.name, rank(at.rank), true, false)?;
        let groups = groups(trace, by);
        for (gi, (key, lanes)) in groups.iter().enumerate() {
            let gname = match *key {
                GroupKey::Sm(sm) => format!("SM {sm}"),
                GroupKey::Block(b) => match lanes.iter().find_map(|&p| trace.lanes[p].sm) {
                    Some(sm) => format!("block {b} (SM {sm})"),
                    None => format!("block {b}"),
                },
            };
            let uuid = self.track(root, &gname, rank(gi), true, false)?;
            let mut g = GroupSlot {
                uuid,
                in_block: matches!(key, GroupKey::Block(_)),
                rank: 0,
            };
            if let GroupKey::Sm(_) = key {
                let t = self.counter_track(uuid, "active lanes", 0)?;
                g.rank += 1;
                self.active_lanes(trace, clock, lanes, t)?;
            }
            for &pos in lanes {
                let (t, p, fl) = match &mut lanes_from {
                    Lanes::InMemory(flows) => (trace, pos, flows_of(flows, pos)),
                    Lanes::Streamed(f) => f.get(pos)?,
                };
                self.lane(t, p, fl, clock, &mut g)?;
            }
        }
        if by == GroupBy::Block && trace.lanes.iter().any(|l| l.sm.is_some()) {
            let occ = self.track(root, "SM occupancy", rank(groups.len()), true, false)?;
            let mut by_sm: Vec<(u32, usize)> = trace
                .lanes
                .iter()
                .enumerate()
                .filter_map(|(pos, l)| l.sm.map(|sm| (sm, pos)))
                .collect();
            by_sm.sort_unstable();
            for (r, g) in by_sm.chunk_by(|a, b| a.0 == b.0).enumerate() {
                let lanes: Vec<usize> = g.iter().map(|e| e.1).collect();
                let name = format!("SM {} active lanes", g[0].0);
                let t = self.counter_track(occ, &name, rank(r))?;
                self.active_lanes(trace, clock, &lanes, t)?;
            }
        }
        Ok((root, groups.len() + 1))
    }

    /// The number of lanes between init and finalize, as a counter on `track`.
    fn active_lanes(
        &mut self,
        trace: &Trace,
        clock: LaunchClock,
        lanes: &[usize],
        track: u64,
    ) -> io::Result<()> {
        let mut edges = std::mem::take(&mut self.edges);
        edges.clear();
        for &pos in lanes {
            let l = &trace.lanes[pos];
            edges.push((clock.map(l.start), 1));
            edges.push((clock.map(l.end.max(l.start)), -1));
        }
        // Ends before starts at equal times: a lane that ends as another starts is not
        // counted as overlapping it.
        edges.sort_unstable();
        let mut value: i64 = 0;
        for (i, &(t, d)) in edges.iter().enumerate() {
            value += d as i64;
            if edges.get(i + 1).is_none_or(|n| n.0 != t) {
                self.frame.clear();
                enc::put_absolute_counter(&mut self.frame, META_SEQ, t, track, value);
                self.sink.put_bytes(&self.frame)?;
                self.stats.packets += 1;
                self.stats.counter_values += 1;
            }
        }
        self.edges = edges;
        Ok(())
    }

    /// Writes lane `pos` of `trace` (with `flows`, if it has any) in group `g`: its track,
    /// overlap and counter tracks, then its sequence of events.
    fn lane(
        &mut self,
        trace: &Trace,
        pos: usize,
        flows: Option<&LaneFlows>,
        clock: LaunchClock,
        g: &mut GroupSlot,
    ) -> Result<(), WriteError> {
        let lane = &trace.lanes[pos];
        let name = lane_name(lane, g.in_block);
        let lane_uuid = self.track(g.uuid, &name, rank(g.rank), false, false)?;
        g.rank += 1;

        // Overlap tracks, if spans cross.
        let n_levels = count_levels(&mut self.lane, trace, lane);
        self.lane.level_uuid.clear();
        self.lane.level_uuid.push(0);
        for l in 1..n_levels {
            let overlap = format!("{name} (overlap {l})");
            let u = self.track(g.uuid, &overlap, rank(g.rank), false, false)?;
            g.rank += 1;
            self.lane.level_uuid.push(u);
        }

        // Counter tracks, for the counters this lane sampled.
        let samples = &trace.samples;
        let mut used: Vec<u16> = lane.samples.clone().map(|i| samples.counter[i]).collect();
        used.sort_unstable();
        used.dedup();
        self.lane.counter_uuid.clear();
        (self.lane.counter_uuid).resize(used.last().map_or(0, |&c| c as usize + 1), 0);
        for c in used {
            let cname = format!("{name} · {}", trace.names.counter(c));
            self.lane.counter_uuid[c as usize] =
                self.counter_track(g.uuid, &cname, rank(g.rank))?;
            g.rank += 1;
        }

        if trace.source.format.records_lane_lifetimes() {
            let lifetime = format!("{name} · lifetime");
            let u = self.track(g.uuid, &lifetime, rank(g.rank), false, false)?;
            g.rank += 1;
            self.lifetime(lane, clock, u)?;
        }

        let first = [
            lane.spans.clone().next().map(|i| trace.spans.begin[i]),
            lane.instants.clone().next().map(|i| trace.instants.ts[i]),
            lane.samples.clone().next().map(|i| samples.ts[i]),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(first) = first else {
            return Ok(());
        };
        let t0 = clock.map(first);
        let seq = self.open_sequence(lane_uuid, t0)?;

        let ann = [(ANN_SM, lane.sm), (ANN_BLOCK, Some(lane.block))];
        let ann = ann.into_iter().chain([(ANN_GROUP, Some(lane.group))]);
        let ann: Vec<(u8, u32)> = ann.filter_map(|(k, v)| Some((k, v?))).collect();
        self.lane.enc.reset(seq as u32, t0, &ann);

        let mut run = LaneRun::new(trace, lane, clock, seq, flows);
        let sink = &mut self.sink;
        while let Some(need) = run.emit(
            &mut self.lane,
            &mut self.regions,
            &mut sink.buf,
            &mut sink.pos,
        ) {
            sink.room(need)?;
        }
        let c = &run.counts;
        self.stats.packets += c.packets;
        self.stats.slices += c.slices;
        self.stats.instants += c.instants;
        self.stats.counter_values += c.counter_values;
        self.stats.flows += c.flows;
        Ok(())
    }

    /// Writes `lane`'s lifetime, init to finalize, as one slice on `track` (the module's
    /// `# Format`, item 1, "Lifetimes").
    fn lifetime(&mut self, lane: &Lane, clock: LaunchClock, track: u64) -> io::Result<()> {
        let ids = [
            ("sm", lane.sm),
            ("block", Some(lane.block)),
            ("group", Some(lane.group)),
        ];
        let ids = ids.into_iter().chain([("warp", lane.warp)]);
        let annotations: Vec<(&str, Value<'_>)> = ids
            .filter_map(|(k, v)| Some((k, Value::Uint(v? as u64))))
            .chain([("finalized", Value::Uint(lane.finalized as u64))])
            .collect();
        let begin = cold::Event {
            ty: enc::ty::SLICE_BEGIN,
            track,
            name: "lifetime",
            category: "lane",
            annotations: &annotations,
            flow: None,
        };
        self.event(clock.map(lane.start), &begin)?;
        self.slice_end(clock.map(lane.end.max(lane.start)), track)?;
        self.stats.lifetimes += 1;
        Ok(())
    }

    /// Opens the next lane sequence, its default track `track` and its incremental clock
    /// at `t0` (the module's `# Format`, item 3), and returns its id.
    fn open_sequence(&mut self, track: u64, t0: u64) -> Result<u64, WriteError> {
        let seq = self.next_seq;
        if seq > u32::MAX as u64 {
            return Err(WriteErrorKind::TooManySequences {
                max: u32::MAX as u64 - META_SEQ as u64,
            }
            .into());
        }
        self.next_seq += 1;
        self.stats.sequences += 1;
        let start = cold::SequenceStart {
            seq: seq as u32,
            flags: enc::SEQ_INCREMENTAL_STATE_CLEARED,
            clock_id: LANE_CLOCK,
            track,
            interned: &self.base_interned,
            clocks: &[(LANE_CLOCK, t0, true), (BOOTTIME, t0, false)],
        };
        self.frame.clear();
        cold::sequence_start(&mut self.frame, &start);
        self.put_frame()?;
        Ok(seq)
    }
}
