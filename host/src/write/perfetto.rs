//! Native Perfetto protobuf traces: the main output format (`ikp decode buf.bin --perfetto
//! out.trace`), opened in the Perfetto UI or queried with trace processor.
//!
//! [`write_perfetto`] streams one or more decoded launches to any [`io::Write`] as a
//! `perfetto.protos.Trace`: each `TracePacket` is written as soon as it is encoded, so
//! memory stays bounded by the largest lane, never by the trace. Track descriptors and
//! per-sequence setup packets are built with the `perfetto_protos` types; the hot event
//! packets (slice begin / end, instants, counter values) are hand-encoded into a reused
//! buffer, byte-identical to what those types would write (the tests decode every packet
//! with them).
//!
//! # Format
//!
//! The file is a `Trace` message: a run of `packet` fields (tag `0x0A`, varint length,
//! `TracePacket` bytes), in this order, launch by launch:
//!
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
//!    │   └── ...
//!    └── SM occupancy                       GroupBy::Block only: one "SM n active lanes"
//!        └── SM 3 active lanes              counter per SM
//!    ```
//!    Every parent sets `child_ordering = EXPLICIT` and every child a `sibling_order_rank`,
//!    so SMs, blocks and lanes sort numerically (SM 2 before SM 10), and a lane's overlap
//!    and counter tracks sit right after it. Lanes without an SM (TVM-format buffers) are
//!    grouped by block whatever the grouping asked for.
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
//!    `[terminating_flow_ids (48)]`. Flow ids are `fixed64`, one field per id (not packed,
//!    as `perfetto_protos` writes them).
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
//!
//! **Track UUIDs** are 1, 2, 3, ... in the order descriptors are written: the same input
//! and options give byte-identical output.
//!
//! **Compression** ([`Compression::Deflate`]): the same packets, grouped into bundles of
//! whole packets below 480 KiB; each bundle is one `TracePacket { compressed_packets
//! (50) }` holding a zlib stream of `Trace.packet` fields, as Perfetto's tracing service
//! writes them. Trace processor and the UI expand bundles transparently. The compressed
//! bytes depend on the deflate backend flate2 was built with (still deterministic for a
//! given build); the golden test pins the plain format.
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
//! [`Source::time_base`]: crate::model::Source::time_base
//! [`links::links`]: crate::analysis::links::links
//! [`links::may_link`]: crate::analysis::links::may_link
//! [`links::critical_path`]: crate::analysis::links::critical_path

mod critical;
mod enc;
mod feed;
mod flows;

use std::io;

use perfetto_protos::builtin_clock::BuiltinClock;
use perfetto_protos::clock_snapshot::{clock_snapshot, ClockSnapshot};
use perfetto_protos::counter_descriptor::{counter_descriptor, CounterDescriptor};
use perfetto_protos::debug_annotation::DebugAnnotationName;
use perfetto_protos::interned_data::InternedData;
use perfetto_protos::trace_packet::TracePacket;
use perfetto_protos::trace_packet_defaults::TracePacketDefaults;
use perfetto_protos::track_descriptor::{track_descriptor::ChildTracksOrdering, TrackDescriptor};
use perfetto_protos::track_event::{EventCategory, TrackEventDefaults};
use protobuf::{Message, MessageField};

use super::{Launch, WriteError, WriteErrorKind};
use crate::decode::StreamedBuffer;
use crate::model::{Lane, Ns, Trace};
use enc::SeqEncoder;
use feed::Feed;
use flows::{lane_flows, run_of, LaneFlows, LaunchFlows};

/// How lanes are grouped into parent tracks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum GroupBy {
    /// One group per SM (the SM the lane's leader ran on).
    #[default]
    Sm,
    /// One group per thread block.
    Block,
}

/// Where several launches are placed on the time axis (see the module's `# Time`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LaunchLayout {
    /// One after another, in the order given.
    #[default]
    Sequential,
    /// All starting at 0.
    Aligned,
}

/// Whether packets are written as they are or deflate-compressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Plain packets: the fastest to write, several times larger.
    None,
    /// Packets in `TracePacket.compressed_packets` bundles (zlib, fastest level), as the
    /// Perfetto tracing service writes them: several times smaller (about 10x smaller than
    /// the Chrome JSON of the shipped sample, against about 2x for `None`), slower to
    /// write. The default, in the library as in `ikp decode`.
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
    let clocks = launch_clocks(launches, opts.launch_layout)?;
    let mut w = Writer::new(out, opts.compression);
    // Flow ids of launch k start after the span indices of the launches before it.
    let mut flow_base = 0u64;
    for (k, (launch, clock)) in launches.iter().zip(&clocks).enumerate() {
        let name = match (launches.len(), launch.label.is_empty()) {
            (1, false) => launch.label.to_string(),
            (_, false) => format!("launch {k}: {}", launch.label),
            (_, true) => format!("launch {k}"),
        };
        let lanes = Lanes::InMemory(lane_flows(launch.trace, flow_base));
        let root = w.launch(launch.trace, *clock, &name, k, opts.group_by, lanes)?;
        if opts.critical_path {
            w.critical_path_track(launch.trace, *clock, root)?;
        }
        flow_base += launch.trace.spans.len() as u64;
    }
    w.finish()
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
/// once with the same options (block filter included), flows included. The diagnostics
/// are the buffer's ([`StreamedBuffer::diagnostic_counts`]).
pub fn write_perfetto_streamed<W: io::Write>(
    out: W,
    label: &str,
    buf: &StreamedBuffer,
    opts: &PerfettoOptions,
) -> Result<PerfettoStats, WriteError> {
    let outline = buf.outline();
    let launch = (label, buf.extent(), outline.source.time_base);
    let clock = launch_clocks_of([launch].into_iter(), opts.launch_layout)?[0];
    let mut w = Writer::new(out, opts.compression);
    let mut feed = Feed::new(buf);
    let lanes = Lanes::Streamed(&mut feed);
    w.launch(outline, clock, label, 0, opts.group_by, lanes)?;
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
/// Output buffered before a write to the underlying writer.
const FLUSH_AT: usize = 1 << 20;
/// Uncompressed bytes per `compressed_packets` bundle: Perfetto asks for bundles below
/// 512 KiB, and deflate never grows data by more than a few bytes per 16 KiB.
const BUNDLE_AT: usize = 480 << 10;

/// Interned category ids.
const CAT_SPAN: u8 = 1;
const CAT_INSTANT: u8 = 2;
/// Interned debug annotation name ids.
const ANN_PAYLOAD: u8 = 1;
const ANN_SM: u8 = 2;
const ANN_BLOCK: u8 = 3;
const ANN_GROUP: u8 = 4;

/// Model time → trace time of one launch: `t + shift` (wrapping), `shift = offset - base`.
#[derive(Clone, Copy, Debug)]
struct LaunchClock {
    shift: u64,
}

impl LaunchClock {
    #[inline]
    fn map(self, t: Ns) -> u64 {
        t.wrapping_add(self.shift)
    }
}

/// Each launch's time mapping (see the module's `# Time`).
fn launch_clocks(
    launches: &[Launch<'_>],
    layout: LaunchLayout,
) -> Result<Vec<LaunchClock>, WriteError> {
    launch_clocks_of(
        launches
            .iter()
            .map(|l| (l.label, l.trace.time_extent(), l.trace.source.time_base)),
        layout,
    )
}

/// [`launch_clocks`] from each launch's `(label, time extent, time base)`: a launch
/// starts at the earlier of its time base and its extent's start.
fn launch_clocks_of<'a>(
    launches: impl Iterator<Item = (&'a str, Option<(Ns, Ns)>, Ns)>,
    layout: LaunchLayout,
) -> Result<Vec<LaunchClock>, WriteError> {
    let mut offset: u64 = 0;
    let mut clocks = Vec::new();
    for (k, (label, ext, time_base)) in launches.enumerate() {
        let (lo, hi) = ext.map_or((time_base, 0), |(lo, hi)| (lo.min(time_base), hi));
        let len = hi.saturating_sub(lo);
        let overflow = || WriteErrorKind::TimeOverflow {
            launch: k,
            label: label.to_string(),
        };
        if offset
            .checked_add(len)
            .is_none_or(|end| end > i64::MAX as u64)
        {
            return Err(overflow().into());
        }
        clocks.push(LaunchClock {
            shift: offset.wrapping_sub(lo),
        });
        if layout == LaunchLayout::Sequential {
            offset = offset
                .checked_add(len)
                .and_then(|o| o.checked_add((len / 20).max(1_000)))
                .ok_or_else(overflow)?;
        }
    }
    Ok(clocks)
}

/// A group of lanes: its sort key and lane positions (indices into `Trace::lanes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum GroupKey {
    Sm(u32),
    Block(u32),
}

fn group_key(lane: &Lane, by: GroupBy) -> GroupKey {
    match (by, lane.sm) {
        (GroupBy::Sm, Some(sm)) => GroupKey::Sm(sm),
        _ => GroupKey::Block(lane.block),
    }
}

/// `(key, lane positions)` of every group, keys ascending, lanes ascending within.
fn groups(trace: &Trace, by: GroupBy) -> Vec<(GroupKey, Vec<usize>)> {
    let mut order: Vec<(GroupKey, usize)> = trace
        .lanes
        .iter()
        .enumerate()
        .map(|(pos, l)| (group_key(l, by), pos))
        .collect();
    order.sort_unstable_by_key(|&(k, pos)| (k, trace.lanes[pos].id));
    let mut out: Vec<(GroupKey, Vec<usize>)> = Vec::new();
    for (k, pos) in order {
        match out.last_mut() {
            Some((last, v)) if *last == k => v.push(pos),
            _ => out.push((k, vec![pos])),
        }
    }
    out
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

/// The streaming writer: output buffer, UUID and sequence counters, reused scratch space.
struct Writer<W: io::Write> {
    out: W,
    /// Output buffer: `buf[..pos]` is pending; `buf.len()` is its fixed size.
    buf: Vec<u8>,
    pos: usize,
    /// Framing scratch for packets built elsewhere.
    frame: Vec<u8>,
    /// The deflate stream state and output, when compressing.
    deflate: Option<(flate2::Compress, Vec<u8>)>,
    stats: PerfettoStats,
    next_uuid: u64,
    next_seq: u64,
    /// Serialized scratch for crate-built packets.
    scratch: Vec<u8>,
    /// Interned data every lane sequence starts with (categories, annotation names).
    base_interned: InternedData,
    enc: SeqEncoder,
    /// Per-level stacks of open slice end times (level 0 = the lane's own track).
    levels: Vec<Vec<u64>>,
    /// Track UUID per level (0 for level 0: the sequence's default track).
    level_uuid: Vec<u64>,
    /// Per-level stacks of the open slices' span indices (lane-local), in step with
    /// `levels`: kept only for lanes with flows, to find the wait a slice end closes.
    open_spans: Vec<Vec<usize>>,
    /// Counter track UUID per counter id for the current lane (0 = none).
    counter_uuid: Vec<u64>,
    /// Sequence id that last interned region `r` (`interned_on[r]`).
    interned_on: Vec<u64>,
    /// `interned_data` field bytes interning region `r`'s name, per launch.
    name_blobs: Vec<Box<[u8]>>,
    /// Pre-encoded type, name and category of region `r`'s slices and instants.
    heads: Vec<(enc::NameHead, enc::NameHead)>,
    /// Scratch for active-lanes computations.
    edges: Vec<(u64, i8)>,
}

impl<W: io::Write> Writer<W> {
    fn new(out: W, compression: Compression) -> Self {
        let mut base_interned = InternedData::new();
        for (iid, name) in [(CAT_SPAN, "span"), (CAT_INSTANT, "instant")] {
            let mut c = EventCategory::new();
            c.set_iid(iid as u64);
            c.set_name(name.into());
            base_interned.event_categories.push(c);
        }
        for (iid, name) in [
            (ANN_PAYLOAD, "payload"),
            (ANN_SM, "sm"),
            (ANN_BLOCK, "block"),
            (ANN_GROUP, "group"),
        ] {
            let mut n = DebugAnnotationName::new();
            n.set_iid(iid as u64);
            n.set_name(name.into());
            base_interned.debug_annotation_names.push(n);
        }
        Writer {
            out,
            buf: vec![
                0;
                match compression {
                    Compression::None => FLUSH_AT,
                    Compression::Deflate => BUNDLE_AT,
                }
            ],
            pos: 0,
            frame: Vec::new(),
            deflate: match compression {
                Compression::None => None,
                Compression::Deflate => Some((
                    flate2::Compress::new(flate2::Compression::fast(), true),
                    Vec::new(),
                )),
            },
            stats: PerfettoStats::default(),
            next_uuid: 1,
            next_seq: META_SEQ as u64 + 1,
            scratch: Vec::new(),
            base_interned,
            enc: SeqEncoder::default(),
            levels: Vec::new(),
            level_uuid: Vec::new(),
            open_spans: Vec::new(),
            counter_uuid: Vec::new(),
            interned_on: Vec::new(),
            name_blobs: Vec::new(),
            heads: Vec::new(),
            edges: Vec::new(),
        }
    }

    /// Writes the pending output (whole packets) to the writer, as one
    /// `compressed_packets` bundle when compressing.
    fn flush_buf(&mut self) -> io::Result<()> {
        if self.pos == 0 {
            return Ok(());
        }
        let Some((z, zbuf)) = &mut self.deflate else {
            self.out.write_all(&self.buf[..self.pos])?;
            self.stats.bytes += self.pos as u64;
            self.pos = 0;
            return Ok(());
        };
        let input = &self.buf[..self.pos];
        z.reset();
        zbuf.clear();
        zbuf.reserve(input.len() + input.len() / 64 + 64);
        loop {
            let consumed = z.total_in() as usize;
            let status = z
                .compress_vec(&input[consumed..], zbuf, flate2::FlushCompress::Finish)
                .map_err(io::Error::other)?;
            match status {
                flate2::Status::StreamEnd => break,
                _ => zbuf.reserve(zbuf.len().max(4096)),
            }
        }
        self.frame.clear();
        enc::put_compressed_bundle(&mut self.frame, zbuf.len());
        self.out.write_all(&self.frame)?;
        self.out.write_all(zbuf)?;
        self.stats.bytes += (self.frame.len() + zbuf.len()) as u64;
        self.pos = 0;
        Ok(())
    }

    /// Makes room for `n` more bytes in the buffer.
    #[inline]
    fn room(&mut self, n: usize) -> io::Result<()> {
        if self.pos + n > self.buf.len() {
            self.flush_buf()?;
            if n > self.buf.len() {
                self.buf.resize(n, 0);
            }
        }
        Ok(())
    }

    fn put_bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.room(b.len())?;
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
        Ok(())
    }

    fn finish(mut self) -> Result<PerfettoStats, WriteError> {
        self.flush_buf()?;
        self.out.flush()?;
        Ok(self.stats)
    }

    /// Writes a crate-built packet.
    fn packet(&mut self, p: &TracePacket) -> io::Result<()> {
        self.scratch.clear();
        p.write_to_vec(&mut self.scratch)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        self.frame.clear();
        enc::put_packet(&mut self.frame, &self.scratch);
        let frame = std::mem::take(&mut self.frame);
        self.put_bytes(&frame)?;
        self.frame = frame;
        self.stats.packets += 1;
        Ok(())
    }

    /// Declares a track and returns its UUID.
    fn track(
        &mut self,
        parent: u64,
        name: String,
        sibling_rank: Option<i32>,
        parent_of_many: bool,
        counter: Option<CounterDescriptor>,
    ) -> io::Result<u64> {
        let uuid = self.next_uuid;
        self.next_uuid += 1;
        let mut d = TrackDescriptor::new();
        d.set_uuid(uuid);
        if parent != 0 {
            d.set_parent_uuid(parent);
        }
        d.set_name(name);
        if parent_of_many {
            d.set_child_ordering(ChildTracksOrdering::EXPLICIT);
        }
        if let Some(r) = sibling_rank {
            d.set_sibling_order_rank(r);
        }
        if let Some(c) = counter {
            d.counter = MessageField::some(c);
        }
        let mut p = TracePacket::new();
        p.set_trusted_packet_sequence_id(META_SEQ);
        p.set_track_descriptor(d);
        self.packet(&p)?;
        self.stats.tracks += 1;
        Ok(uuid)
    }

    fn counter_track(&mut self, parent: u64, name: String, rank_: i32) -> io::Result<u64> {
        let mut c = CounterDescriptor::new();
        c.set_unit(counter_descriptor::Unit::UNIT_COUNT);
        self.track(parent, name, Some(rank_), false, Some(c))
    }

    fn launch(
        &mut self,
        trace: &Trace,
        clock: LaunchClock,
        name: &str,
        k: usize,
        by: GroupBy,
        mut lanes_from: Lanes<'_, '_>,
    ) -> Result<u64, WriteError> {
        // A streamed launch does not know its regions yet: prepare every possible id
        // (the blobs do not depend on which ones are used).
        self.prepare_names(
            trace,
            matches!(lanes_from, Lanes::Streamed(_))
                .then_some(ikp_device::wire::MAX_REGIONS as usize - 1),
        );
        let root = self.track(0, name.to_string(), Some(rank(k)), true, None)?;
        let groups = groups(trace, by);
        for (gi, (key, lanes)) in groups.iter().enumerate() {
            let gname = match *key {
                GroupKey::Sm(sm) => format!("SM {sm}"),
                GroupKey::Block(b) => match lanes.iter().find_map(|&p| trace.lanes[p].sm) {
                    Some(sm) => format!("block {b} (SM {sm})"),
                    None => format!("block {b}"),
                },
            };
            let group = self.track(root, gname, Some(rank(gi)), true, None)?;
            let mut r = 0usize;
            if let GroupKey::Sm(_) = key {
                let t = self.counter_track(group, "active lanes".into(), 0)?;
                r += 1;
                self.active_lanes(trace, clock, lanes, t)?;
            }
            let in_block = matches!(key, GroupKey::Block(_));
            for &pos in lanes {
                match &mut lanes_from {
                    Lanes::InMemory(flows) => {
                        let fl = if flows.is_empty() {
                            None
                        } else {
                            flows.get(&pos)
                        };
                        self.lane(trace, clock, pos, fl, group, in_block, &mut r)?
                    }
                    Lanes::Streamed(f) => {
                        let (t, p, fl) = f.get(pos)?;
                        self.lane(t, clock, p, fl, group, in_block, &mut r)?;
                    }
                }
            }
        }
        if by == GroupBy::Block && trace.lanes.iter().any(|l| l.sm.is_some()) {
            let occ = self.track(
                root,
                "SM occupancy".into(),
                Some(rank(groups.len())),
                true,
                None,
            )?;
            let mut by_sm: Vec<(u32, usize)> = trace
                .lanes
                .iter()
                .enumerate()
                .filter_map(|(pos, l)| l.sm.map(|sm| (sm, pos)))
                .collect();
            by_sm.sort_unstable();
            let mut i = 0;
            let mut r = 0;
            while i < by_sm.len() {
                let sm = by_sm[i].0;
                let j = i + by_sm[i..].iter().take_while(|e| e.0 == sm).count();
                let lanes: Vec<usize> = by_sm[i..j].iter().map(|e| e.1).collect();
                let t = self.counter_track(occ, format!("SM {sm} active lanes"), rank(r))?;
                self.active_lanes(trace, clock, &lanes, t)?;
                r += 1;
                i = j;
            }
        }
        Ok(root)
    }

    /// Builds the `interned_data` bytes of every region id the launch uses.
    fn prepare_names(&mut self, trace: &Trace, max: Option<usize>) {
        let max = trace
            .spans
            .region
            .iter()
            .chain(&trace.instants.region)
            .fold(max.unwrap_or(0) as u16, |m, &r| m.max(r)) as usize;
        self.name_blobs.clear();
        self.name_blobs.extend(
            (0..=max).map(|r| {
                enc::interned_event_name(r as u64 + 1, &trace.names.region(r as u16)).into()
            }),
        );
        self.heads.clear();
        self.heads.extend((0..=max as u64).map(|r| {
            (
                enc::name_head(enc::ty::SLICE_BEGIN, r + 1, CAT_SPAN),
                enc::name_head(enc::ty::INSTANT, r + 1, CAT_INSTANT),
            )
        }));
        if self.interned_on.len() <= max {
            self.interned_on.resize(max + 1, 0);
        }
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
                let frame = std::mem::take(&mut self.frame);
                self.put_bytes(&frame)?;
                self.frame = frame;
                self.stats.packets += 1;
                self.stats.counter_values += 1;
            }
        }
        self.edges = edges;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn lane(
        &mut self,
        trace: &Trace,
        clock: LaunchClock,
        pos: usize,
        flows: Option<&LaneFlows>,
        group: u64,
        in_block_group: bool,
        r: &mut usize,
    ) -> Result<(), WriteError> {
        let lane = &trace.lanes[pos];
        let name = lane_name(lane, in_block_group);
        let lane_uuid = self.track(group, name.clone(), Some(rank(*r)), false, None)?;
        *r += 1;

        // Overlap tracks, if spans cross.
        let n_levels = count_levels(&mut self.levels, trace, clock, lane);
        self.level_uuid.clear();
        self.level_uuid.push(0);
        for l in 1..n_levels {
            let u = self.track(
                group,
                format!("{name} (overlap {l})"),
                Some(rank(*r)),
                false,
                None,
            )?;
            *r += 1;
            self.level_uuid.push(u);
        }

        // Counter tracks, for the counters this lane sampled.
        let samples = &trace.samples;
        self.counter_uuid.clear();
        for i in lane.samples.clone() {
            let c = samples.counter[i] as usize;
            if self.counter_uuid.len() <= c {
                self.counter_uuid.resize(c + 1, 0);
            }
            self.counter_uuid[c] = 1; // marks "used"; replaced by the UUID below
        }
        for c in 0..self.counter_uuid.len() {
            if self.counter_uuid[c] != 0 {
                let cname = format!("{name} · {}", trace.names.counter(c as u16));
                self.counter_uuid[c] = self.counter_track(group, cname, rank(*r))?;
                *r += 1;
            }
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

        // Open the lane's sequence.
        let seq = self.next_seq;
        if seq > u32::MAX as u64 {
            return Err(WriteErrorKind::TooManySequences {
                max: u32::MAX as u64 - META_SEQ as u64,
            }
            .into());
        }
        self.next_seq += 1;
        self.stats.sequences += 1;
        let mut p = TracePacket::new();
        p.set_trusted_packet_sequence_id(seq as u32);
        p.set_first_packet_on_sequence(true);
        p.set_sequence_flags(enc::SEQ_INCREMENTAL_STATE_CLEARED);
        let mut defaults = TracePacketDefaults::new();
        defaults.set_timestamp_clock_id(LANE_CLOCK);
        let mut te_defaults = TrackEventDefaults::new();
        te_defaults.set_track_uuid(lane_uuid);
        defaults.track_event_defaults = MessageField::some(te_defaults);
        p.trace_packet_defaults = MessageField::some(defaults);
        p.interned_data = MessageField::some(self.base_interned.clone());
        let mut snap = ClockSnapshot::new();
        let mut c = clock_snapshot::Clock::new();
        c.set_clock_id(LANE_CLOCK);
        c.set_timestamp(t0);
        c.set_is_incremental(true);
        snap.clocks.push(c);
        let mut c = clock_snapshot::Clock::new();
        c.set_clock_id(BuiltinClock::BUILTIN_CLOCK_BOOTTIME as u32);
        c.set_timestamp(t0);
        snap.clocks.push(c);
        p.set_clock_snapshot(snap);
        self.packet(&p)?;

        let mut ann: [(u8, u32); 3] = [(0, 0); 3];
        let mut n_ann = 0;
        if let Some(sm) = lane.sm {
            ann[n_ann] = (ANN_SM, sm);
            n_ann += 1;
        }
        ann[n_ann] = (ANN_BLOCK, lane.block);
        ann[n_ann + 1] = (ANN_GROUP, lane.group);
        self.enc.reset(seq as u32, t0, &ann[..n_ann + 2]);

        let ev = LaneEvents::new(trace, lane, clock);
        let mut run = LaneRun::default();
        for st in &mut self.levels[..n_levels] {
            st.clear();
        }
        if self.open_spans.len() < n_levels {
            self.open_spans.resize(n_levels, Vec::new());
        }
        for st in &mut self.open_spans[..n_levels] {
            st.clear();
        }
        let no_flows = LaneFlows::default();
        let mut counts = Counts::default();
        loop {
            let mut fl = FlowRun {
                flows: flows.unwrap_or(&no_flows),
                open: &mut self.open_spans[..n_levels],
            };
            macro_rules! emit {
                ($flows:literal) => {
                    emit_lane::<$flows>(
                        &ev,
                        &mut run,
                        &mut self.levels[..n_levels],
                        &mut self.enc,
                        &mut self.buf,
                        &mut self.pos,
                        &self.name_blobs,
                        &self.heads,
                        &mut self.interned_on,
                        seq,
                        &self.level_uuid,
                        &self.counter_uuid,
                        &mut counts,
                        &mut fl,
                    )
                };
            }
            // Lanes without flows (every lane of a trace without signal / wait regions)
            // run the loop compiled without the flow lookups.
            let need = if flows.is_some() {
                emit!(true)
            } else {
                emit!(false)
            };
            let Some(need) = need else { break };
            self.flush_buf()?;
            if need > self.buf.len() {
                self.buf.resize(need, 0);
            }
        }
        self.stats.packets += counts.packets;
        self.stats.slices += counts.slices;
        self.stats.instants += counts.instants;
        self.stats.counter_values += counts.counter_values;
        self.stats.flows += counts.flows;
        Ok(())
    }
}

/// Places a span ending at `e` on the first level where it nests (all ends `<=` its begin
/// already popped); adds a level if none fits. Returns the level.
#[inline]
fn place(levels: &mut Vec<Vec<u64>>, e: u64) -> usize {
    for (l, st) in levels.iter_mut().enumerate() {
        if st.last().is_none_or(|&top| top >= e) {
            st.push(e);
            return l;
        }
    }
    levels.push(vec![e]);
    levels.len() - 1
}

/// The number of levels a lane's spans need so that each level nests; leaves `levels`
/// with at least that many (cleared) stacks.
fn count_levels(
    levels: &mut Vec<Vec<u64>>,
    trace: &Trace,
    clock: LaunchClock,
    lane: &Lane,
) -> usize {
    let sp = &trace.spans;
    for st in levels.iter_mut() {
        st.clear();
    }
    if levels.is_empty() {
        levels.push(Vec::new());
    }
    // Fast path: the spans nest (one stack of open ends suffices). The shift is the same
    // for all times of a launch, so model times compare as mapped ones do.
    let (begin, end) = (&sp.begin[lane.spans.clone()], &sp.end[lane.spans.clone()]);
    let st = &mut levels[0];
    let nested = begin.iter().zip(end).all(|(&b, &e)| {
        while st.last().is_some_and(|&top| top <= b) {
            st.pop();
        }
        let fits = st.last().is_none_or(|&top| top >= e);
        st.push(e);
        fits
    });
    st.clear();
    if nested {
        return 1;
    }
    let mut n = 1;
    for i in lane.spans.clone() {
        let b = clock.map(sp.begin[i]);
        for st in levels.iter_mut() {
            while st.last().is_some_and(|&top| top <= b) {
                st.pop();
            }
        }
        n = n.max(place(levels, clock.map(sp.end[i])) + 1);
    }
    for st in levels.iter_mut() {
        st.clear();
    }
    n
}

/// One lane's event columns, as sub-slices, and its time shift.
struct LaneEvents<'a> {
    shift: u64,
    begin: &'a [Ns],
    end: &'a [Ns],
    region: &'a [u16],
    payload: &'a [u32],
    i_ts: &'a [Ns],
    i_region: &'a [u16],
    i_payload: &'a [u32],
    c_ts: &'a [Ns],
    c_counter: &'a [u16],
    c_value: &'a [u32],
}

impl<'a> LaneEvents<'a> {
    fn new(trace: &'a Trace, lane: &Lane, clock: LaunchClock) -> Self {
        let (s, i, c) = (
            lane.spans.clone(),
            lane.instants.clone(),
            lane.samples.clone(),
        );
        LaneEvents {
            shift: clock.shift,
            begin: &trace.spans.begin[s.clone()],
            end: &trace.spans.end[s.clone()],
            region: &trace.spans.region[s.clone()],
            payload: &trace.spans.payload[s],
            i_ts: &trace.instants.ts[i.clone()],
            i_region: &trace.instants.region[i.clone()],
            i_payload: &trace.instants.payload[i],
            c_ts: &trace.samples.ts[c.clone()],
            c_counter: &trace.samples.counter[c.clone()],
            c_value: &trace.samples.value[c],
        }
    }
}

/// Where a lane's event merge stands: the next span, instant and sample, and the next
/// entries of the lane's span and instant flow lists.
#[derive(Debug, Default)]
struct LaneRun {
    si: usize,
    ii: usize,
    ci: usize,
    so: usize,
    io: usize,
}

/// Events written, by kind.
#[derive(Debug, Default)]
struct Counts {
    packets: u64,
    slices: u64,
    instants: u64,
    counter_values: u64,
    flows: u64,
}

/// A lane's flows and the span indices of its open slices, for [`emit_lane`].
struct FlowRun<'a> {
    flows: &'a LaneFlows,
    open: &'a mut [Vec<usize>],
}

/// Writes a lane's events in time order (see the module's `# Format` for ties) into
/// `buf[*pos..]`, until done (`None`) or the buffer needs flushing (`Some(bytes needed)`;
/// call again after flushing). `levels` holds one cleared stack per level the lane needs.
/// With `FLOWS`, signal events start their flows and linked waits' ends terminate theirs
/// (`fl`); without, `fl` is not touched and the loop is the plain one.
#[allow(clippy::too_many_arguments)]
fn emit_lane<const FLOWS: bool>(
    ev: &LaneEvents<'_>,
    run: &mut LaneRun,
    levels: &mut [Vec<u64>],
    enc: &mut SeqEncoder,
    buf: &mut [u8],
    pos: &mut usize,
    blobs: &[Box<[u8]>],
    heads: &[(enc::NameHead, enc::NameHead)],
    interned_on: &mut [u64],
    seq: u64,
    level_uuid: &[u64],
    counter_uuid: &[u64],
    counts: &mut Counts,
    fl: &mut FlowRun<'_>,
) -> Option<usize> {
    let shift = ev.shift;
    let at = |col: &[Ns], i: usize| col.get(i).map_or(u64::MAX, |&t| t.wrapping_add(shift));
    let (mut si, mut ii, mut ci) = (run.si, run.ii, run.ci);
    let (mut so, mut io) = (run.so, run.io);
    let mut p = *pos;
    let mut need = None;
    let mut c = Counts::default();
    let single = levels.len() == 1;
    let (mut nb, mut ni, mut nc) = (at(ev.begin, si), at(ev.i_ts, ii), at(ev.c_ts, ci));
    loop {
        if p + enc::MAX_EVENT_BYTES > buf.len() {
            need = Some(enc::MAX_EVENT_BYTES);
            break;
        }
        // Earliest pending slice end: the top of each level's stack.
        let (ne, nl) = if single {
            (levels[0].last().copied().unwrap_or(u64::MAX), 0)
        } else {
            let mut m = (u64::MAX, 0);
            for (l, st) in levels.iter().enumerate() {
                if let Some(&top) = st.last() {
                    if top < m.0 {
                        m = (top, l);
                    }
                }
            }
            m
        };
        let other = nb.min(ni).min(nc);
        if ne <= other && ne != u64::MAX {
            levels[nl].pop();
            let flow = if FLOWS {
                let i = fl.open[nl].pop().expect("open spans in step with levels");
                let f = fl.flows;
                f.in_span.binary_search(&i).ok().map(|k| f.in_span_id[k])
            } else {
                None
            };
            p = match flow {
                Some(id) => enc.end_flow(buf, p, ne, level_uuid[nl], id),
                None => enc.end(buf, p, ne, level_uuid[nl]),
            };
        } else if other == u64::MAX {
            break;
        } else if nb == other || ni == other {
            let is_span = nb == other;
            let (r, payload) = if is_span {
                (ev.region[si], ev.payload[si])
            } else {
                (ev.i_region[ii], ev.i_payload[ii])
            };
            // The flows this event starts (signal events).
            let (ids, next_o): (&[u64], usize) = if !FLOWS {
                (&[], 0)
            } else if is_span {
                let k = run_of(&fl.flows.out_span, so, si);
                (&fl.flows.out_span_id[k.clone()], k.end)
            } else {
                let k = run_of(&fl.flows.out_instant, io, ii);
                (&fl.flows.out_instant_id[k.clone()], k.end)
            };
            let extra = if FLOWS { enc::flows_room(ids.len()) } else { 0 };
            let r = r as usize;
            let blob: &[u8] = if interned_on[r] != seq {
                let b = &blobs[r];
                if p + enc::MAX_EVENT_BYTES + b.len() + extra > buf.len() {
                    need = Some(enc::MAX_EVENT_BYTES + b.len() + extra);
                    break;
                }
                interned_on[r] = seq;
                b
            } else {
                if FLOWS && p + enc::MAX_EVENT_BYTES + extra > buf.len() {
                    need = Some(enc::MAX_EVENT_BYTES + extra);
                    break;
                }
                &[]
            };
            if is_span {
                let e = ev.end[si].wrapping_add(shift);
                let level = if single {
                    levels[0].push(e);
                    0
                } else {
                    let l = levels
                        .iter()
                        .position(|st| st.last().is_none_or(|&top| top >= e));
                    let l = l.expect("count_levels sized the levels");
                    levels[l].push(e);
                    l
                };
                if FLOWS {
                    fl.open[level].push(si);
                }
                let (head, track) = (&heads[r].0, level_uuid[level]);
                p = if FLOWS && !ids.is_empty() {
                    so = next_o;
                    c.flows += ids.len() as u64;
                    enc.named_flows(buf, p, head, nb, track, ANN_PAYLOAD, payload, blob, ids)
                } else {
                    enc.named(buf, p, head, nb, track, ANN_PAYLOAD, payload, blob)
                };
                c.slices += 1;
                si += 1;
                nb = at(ev.begin, si);
            } else {
                let head = &heads[r].1;
                p = if FLOWS && !ids.is_empty() {
                    io = next_o;
                    c.flows += ids.len() as u64;
                    enc.named_flows(buf, p, head, ni, 0, ANN_PAYLOAD, payload, blob, ids)
                } else {
                    enc.named(buf, p, head, ni, 0, ANN_PAYLOAD, payload, blob)
                };
                c.instants += 1;
                ii += 1;
                ni = at(ev.i_ts, ii);
            }
        } else {
            let track = counter_uuid[ev.c_counter[ci] as usize];
            p = enc.counter(buf, p, nc, track, ev.c_value[ci]);
            c.counter_values += 1;
            ci += 1;
            nc = at(ev.c_ts, ci);
        }
        c.packets += 1;
    }
    *run = LaneRun { si, ii, ci, so, io };
    *pos = p;
    counts.packets += c.packets;
    counts.slices += c.slices;
    counts.instants += c.instants;
    counts.counter_values += c.counter_values;
    counts.flows += c.flows;
    need
}
