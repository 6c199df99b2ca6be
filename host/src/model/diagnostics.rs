//! What went wrong inside a readable buffer: records not paired, lanes set aside, and
//! the counts tools report in one line.

use super::{Timestamp, TrackId};

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
/// ([`Diagnostics::set_aside`]) rather than decoded, in every format, by the rules of
/// [`SetAsideReason`]. The bounds lie far beyond the launches ikp profiles, so that a
/// genuine launch (persistent lanes, many waves, lanes that start late) keeps every lane;
/// the rules, why the bounds are safe, and the only launches they would cut are in
/// [`crate::decode::set_aside`], `# Lanes set aside`.
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
    /// ascending by lane. They are not in [`Trace::lanes`](super::Trace::lanes), and none of their records or
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
        let rings = self.set_aside_unordered_rings;
        set_aside_phrase(self.set_aside, "lane", &names, |their| {
            if rings == self.set_aside {
                "full rings that never finalized (their order is unknown)".to_string()
            } else if rings > 0 {
                format!("{their} stamps not of this launch or full rings that never finalized")
            } else {
                format!("{their} stamps not of this launch")
            }
        })
    }
}

/// `{n} {noun}s set aside, {why}: {names}; and {more} more`, `why` given `its` or `their`
/// as `n` is 1 or not, `more` the set-aside ones not among `names`.
pub(super) fn set_aside_phrase(
    n: u64,
    noun: &str,
    names: &[String],
    why: impl FnOnce(&str) -> String,
) -> String {
    let (s, their) = if n == 1 { ("", "its") } else { ("s", "their") };
    let mut phrase = format!(
        "{n} {noun}{s} set aside, {}: {}",
        why(their),
        names.join("; ")
    );
    let more = n.saturating_sub(names.len() as u64);
    if more > 0 {
        phrase.push_str(&format!("; and {more} more"));
    }
    phrase
}
