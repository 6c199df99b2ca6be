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
//! **Track UUIDs** are 1, 2, 3, ... in the order descriptors are written: the same input
//! and options give byte-identical output.
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

mod enc;

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

use crate::model::{Lane, Ns, Trace};
use enc::SeqEncoder;

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

/// Options of [`write_perfetto`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerfettoOptions {
    /// Grouping of lane tracks.
    pub group_by: GroupBy,
    /// Placement of launches on the time axis.
    pub launch_layout: LaunchLayout,
}

/// One decoded buffer to write, with the label its root track gets (usually the file name).
#[derive(Clone, Copy, Debug)]
pub struct Launch<'a> {
    /// Shown in the launch's root track name.
    pub label: &'a str,
    /// The decoded trace.
    pub trace: &'a Trace,
}

impl<'a> Launch<'a> {
    /// A launch labelled `label`.
    pub fn new(label: &'a str, trace: &'a Trace) -> Self {
        Launch { label, trace }
    }
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
}

/// Why a Perfetto trace could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PerfettoError {
    /// The writer failed.
    #[error("writing the Perfetto trace: {0}")]
    Io(#[from] io::Error),
    /// More lanes than Perfetto packet sequence ids (`u32`).
    #[error("too many lanes for one Perfetto trace: at most {max} lanes with events")]
    TooManySequences {
        /// The largest number of lanes with events one trace can hold.
        max: u64,
    },
    /// Launch offsets pushed a timestamp past Perfetto's `int64` nanosecond axis.
    #[error("launch {launch} ({label}) does not fit on the trace's int64 ns time axis")]
    TimeOverflow {
        /// Index of the launch.
        launch: usize,
        /// Its label.
        label: String,
    },
}

/// Writes `launches` as one Perfetto protobuf trace to `out` (see the module's `# Format`).
///
/// `out` gets large sequential writes; wrapping it in a `BufWriter` is not needed. It is
/// flushed at the end. Writing to a file atomically is the caller's business.
pub fn write_perfetto<W: io::Write>(
    out: W,
    launches: &[Launch<'_>],
    opts: &PerfettoOptions,
) -> Result<PerfettoStats, PerfettoError> {
    let clocks = launch_clocks(launches, opts.launch_layout)?;
    let mut w = Writer::new(out);
    for (k, (launch, clock)) in launches.iter().zip(&clocks).enumerate() {
        let name = match (launches.len(), launch.label.is_empty()) {
            (1, false) => launch.label.to_string(),
            (_, false) => format!("launch {k}: {}", launch.label),
            (_, true) => format!("launch {k}"),
        };
        w.launch(launch.trace, *clock, &name, k, opts.group_by)?;
    }
    w.finish()
}

/// Sequence of track descriptors and of the active-lanes counters.
const META_SEQ: u32 = 1;
/// The sequence-scoped incremental clock each lane sequence defines.
const LANE_CLOCK: u32 = 64;
/// Output buffered before a write to the underlying writer.
const FLUSH_AT: usize = 1 << 20;

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

/// The smallest and largest model time of a trace (lane bounds and every event).
fn extent(trace: &Trace) -> Option<(Ns, Ns)> {
    let mut lo = u64::MAX;
    let mut hi = 0u64;
    for lane in &trace.lanes {
        lo = lo.min(lane.start);
        hi = hi.max(lane.end).max(lane.start);
        if let Some(&b) = trace.spans.begin.get(lane.spans.start) {
            // Spans are sorted by begin within a lane: the first one is the earliest.
            if !lane.spans.is_empty() {
                lo = lo.min(b);
            }
        }
        for i in [lane.instants.start, lane.instants.end.wrapping_sub(1)] {
            if lane.instants.contains(&i) {
                lo = lo.min(trace.instants.ts[i]);
                hi = hi.max(trace.instants.ts[i]);
            }
        }
        for i in [lane.samples.start, lane.samples.end.wrapping_sub(1)] {
            if lane.samples.contains(&i) {
                lo = lo.min(trace.samples.ts[i]);
                hi = hi.max(trace.samples.ts[i]);
            }
        }
    }
    hi = trace.spans.end.iter().fold(hi, |m, &e| m.max(e));
    (lo != u64::MAX).then_some((lo.min(trace.source.time_base), hi))
}

/// Each launch's time mapping (see the module's `# Time`).
fn launch_clocks(
    launches: &[Launch<'_>],
    layout: LaunchLayout,
) -> Result<Vec<LaunchClock>, PerfettoError> {
    let mut offset: u64 = 0;
    let mut clocks = Vec::with_capacity(launches.len());
    for (k, l) in launches.iter().enumerate() {
        let (lo, hi) = extent(l.trace).unwrap_or((l.trace.source.time_base, 0));
        let len = hi.saturating_sub(lo);
        let overflow = || PerfettoError::TimeOverflow {
            launch: k,
            label: l.label.to_string(),
        };
        if offset
            .checked_add(len)
            .is_none_or(|end| end > i64::MAX as u64)
        {
            return Err(overflow());
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
    buf: Vec<u8>,
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
    /// Counter track UUID per counter id for the current lane (0 = none).
    counter_uuid: Vec<u64>,
    /// Sequence id that last interned region `r` (`interned_on[r]`).
    interned_on: Vec<u64>,
    /// `interned_data` field bytes interning region `r`'s name, per launch.
    name_blobs: Vec<Option<Box<[u8]>>>,
    /// Scratch for active-lanes computations.
    edges: Vec<(u64, i8)>,
}

impl<W: io::Write> Writer<W> {
    fn new(out: W) -> Self {
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
            buf: Vec::with_capacity(FLUSH_AT + (64 << 10)),
            stats: PerfettoStats::default(),
            next_uuid: 1,
            next_seq: META_SEQ as u64 + 1,
            scratch: Vec::new(),
            base_interned,
            enc: SeqEncoder::default(),
            levels: Vec::new(),
            level_uuid: Vec::new(),
            counter_uuid: Vec::new(),
            interned_on: Vec::new(),
            name_blobs: Vec::new(),
            edges: Vec::new(),
        }
    }

    fn maybe_flush(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.out.write_all(&self.buf)?;
            self.stats.bytes += self.buf.len() as u64;
            self.buf.clear();
        }
        Ok(())
    }

    fn finish(mut self) -> Result<PerfettoStats, PerfettoError> {
        self.out.write_all(&self.buf)?;
        self.stats.bytes += self.buf.len() as u64;
        self.buf.clear();
        self.out.flush()?;
        Ok(self.stats)
    }

    /// Writes a crate-built packet.
    fn packet(&mut self, p: &TracePacket) -> io::Result<()> {
        self.scratch.clear();
        p.write_to_vec(&mut self.scratch)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        enc::put_packet(&mut self.buf, &self.scratch);
        self.stats.packets += 1;
        self.maybe_flush()
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
    ) -> Result<(), PerfettoError> {
        self.name_blobs.clear();
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
                self.lane(trace, clock, pos, group, in_block, &mut r)?;
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
        Ok(())
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
                enc::put_absolute_counter(&mut self.buf, META_SEQ, t, track, value);
                self.stats.packets += 1;
                self.stats.counter_values += 1;
                self.maybe_flush()?;
            }
        }
        self.edges = edges;
        Ok(())
    }

    /// Whether region `region` still has to be interned on sequence `seq` (and marks it
    /// interned); its `interned_data` bytes are then in `name_blobs[region]`.
    #[inline]
    fn intern(&mut self, trace: &Trace, region: u16, seq: u64) -> bool {
        let r = region as usize;
        if self.interned_on.len() <= r {
            self.interned_on.resize(r + 1, 0);
        }
        if self.interned_on[r] == seq {
            return false;
        }
        self.interned_on[r] = seq;
        if self.name_blobs.len() <= r {
            self.name_blobs.resize(r + 1, None);
        }
        if self.name_blobs[r].is_none() {
            let blob = enc::interned_event_name(r as u64 + 1, &trace.names.region(region));
            self.name_blobs[r] = Some(blob.into());
        }
        true
    }

    /// Places span `(b, e)` (mapped) on the first level where it nests; all ends `<= b`
    /// must already be popped. Returns the level.
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

    /// The number of levels a lane's spans need so that each level nests.
    fn count_levels(&mut self, trace: &Trace, clock: LaunchClock, lane: &Lane) -> usize {
        let sp = &trace.spans;
        for st in &mut self.levels {
            st.clear();
        }
        let mut n = 1;
        for i in lane.spans.clone() {
            let b = clock.map(sp.begin[i]);
            for st in &mut self.levels {
                while st.last().is_some_and(|&top| top <= b) {
                    st.pop();
                }
            }
            n = n.max(Self::place(&mut self.levels, clock.map(sp.end[i])) + 1);
        }
        n
    }

    fn lane(
        &mut self,
        trace: &Trace,
        clock: LaunchClock,
        pos: usize,
        group: u64,
        in_block_group: bool,
        r: &mut usize,
    ) -> Result<(), PerfettoError> {
        let lane = &trace.lanes[pos];
        let name = lane_name(lane, in_block_group);
        let lane_uuid = self.track(group, name.clone(), Some(rank(*r)), false, None)?;
        *r += 1;

        // Overlap tracks, if spans cross.
        let n_levels = self.count_levels(trace, clock, lane);
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
            return Err(PerfettoError::TooManySequences {
                max: u32::MAX as u64 - META_SEQ as u64,
            });
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

        let mut ann: [(u8, u64); 3] = [(0, 0); 3];
        let mut n_ann = 0;
        if let Some(sm) = lane.sm {
            ann[n_ann] = (ANN_SM, sm as u64);
            n_ann += 1;
        }
        ann[n_ann] = (ANN_BLOCK, lane.block as u64);
        ann[n_ann + 1] = (ANN_GROUP, lane.group as u64);
        self.enc.reset(seq as u32, t0, &ann[..n_ann + 2]);

        self.events(trace, clock, lane, seq)?;
        Ok(())
    }

    /// The lane's events in time order (see the module's `# Format` for ties).
    fn events(
        &mut self,
        trace: &Trace,
        clock: LaunchClock,
        lane: &Lane,
        seq: u64,
    ) -> io::Result<()> {
        let (sp, ins, sam) = (&trace.spans, &trace.instants, &trace.samples);
        let (mut si, s_end) = (lane.spans.start, lane.spans.end);
        let (mut ii, i_end) = (lane.instants.start, lane.instants.end);
        let (mut ci, c_end) = (lane.samples.start, lane.samples.end);
        for st in &mut self.levels {
            st.clear();
        }
        if self.levels.is_empty() {
            self.levels.push(Vec::new());
        }
        let next =
            |i: usize, end: usize, col: &[Ns]| if i < end { clock.map(col[i]) } else { u64::MAX };
        let mut nb = next(si, s_end, &sp.begin);
        let mut ni = next(ii, i_end, &ins.ts);
        let mut nc = next(ci, c_end, &sam.ts);
        loop {
            // Earliest pending slice end over all levels (the top of each stack).
            let (mut ne, mut nl) = (u64::MAX, 0);
            for (l, st) in self.levels.iter().enumerate() {
                if let Some(&top) = st.last() {
                    if top < ne {
                        (ne, nl) = (top, l);
                    }
                }
            }
            let other = nb.min(ni).min(nc);
            if ne <= other && ne != u64::MAX {
                self.levels[nl].pop();
                self.enc.end(&mut self.buf, ne, self.level_uuid[nl]);
            } else if other == u64::MAX {
                break;
            } else if nb == other {
                let level = Self::place(&mut self.levels, clock.map(sp.end[si]));
                let region = sp.region[si];
                let blob: &[u8] = match self.intern(trace, region, seq) {
                    true => self.name_blobs[region as usize]
                        .as_deref()
                        .unwrap_or_default(),
                    false => &[],
                };
                self.enc.named(
                    &mut self.buf,
                    enc::ty::SLICE_BEGIN,
                    nb,
                    self.level_uuid[level],
                    region as u64 + 1,
                    CAT_SPAN,
                    ANN_PAYLOAD,
                    sp.payload[si] as u64,
                    blob,
                );
                self.stats.slices += 1;
                si += 1;
                nb = next(si, s_end, &sp.begin);
            } else if ni == other {
                let region = ins.region[ii];
                let blob: &[u8] = match self.intern(trace, region, seq) {
                    true => self.name_blobs[region as usize]
                        .as_deref()
                        .unwrap_or_default(),
                    false => &[],
                };
                self.enc.named(
                    &mut self.buf,
                    enc::ty::INSTANT,
                    ni,
                    0,
                    region as u64 + 1,
                    CAT_INSTANT,
                    ANN_PAYLOAD,
                    ins.payload[ii] as u64,
                    blob,
                );
                self.stats.instants += 1;
                ii += 1;
                ni = next(ii, i_end, &ins.ts);
            } else {
                let track = self.counter_uuid[sam.counter[ci] as usize];
                self.enc
                    .counter(&mut self.buf, nc, track, sam.value[ci] as u64);
                self.stats.counter_values += 1;
                ci += 1;
                nc = next(ci, c_end, &sam.ts);
            }
            self.stats.packets += 1;
            if self.buf.len() >= FLUSH_AT {
                self.maybe_flush()?;
            }
        }
        Ok(())
    }
}
