//! The event tables, struct of arrays: spans, instants, counter samples, async ranges.

use super::{DurationNs, Timestamp};

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

/// The row count of tables whose first column is `$first`.
macro_rules! rows {
    ($($table:ident.$first:ident: $noun:literal),+) => {$(
        impl $table {
            #[doc = concat!("Number of ", $noun, ".")]
            pub fn len(&self) -> usize {
                self.$first.len()
            }

            /// Whether there are none.
            pub fn is_empty(&self) -> bool {
                self.$first.is_empty()
            }
        }
    )+};
}

rows!(
    Spans.lane: "spans",
    Instants.lane: "instants",
    CounterSamples.lane: "samples",
    AsyncRanges.region: "ranges"
);

/// Row operations applied to every column of a table alike (and, given the columns'
/// types, `push`).
macro_rules! every_column {
    ($table:ident: $($col:ident: $ty:ty),+) => {
        every_column!($table: $($col),+);
        impl $table {
            /// Appends one row.
            pub fn push(&mut self, $($col: $ty),+) {
                $(self.$col.push($col);)+
            }
        }
    };
    ($table:ident: $($col:ident),+) => {
        impl $table {
            /// Appends rows `rows` of `src`.
            pub(crate) fn extend_rows(&mut self, src: &$table, rows: std::ops::Range<usize>) {
                $(self.$col.extend_from_slice(&src.$col[rows.clone()]);)+
            }

            /// Copies rows `rows` to the rows from `to` on.
            pub(crate) fn copy_within(&mut self, rows: std::ops::Range<usize>, to: usize) {
                $(self.$col.copy_within(rows.clone(), to);)+
            }

            /// Keeps the first `n` rows.
            pub(crate) fn truncate(&mut self, n: usize) {
                $(self.$col.truncate(n);)+
            }

            /// Lengthens each column shorter than `n` rows to `n` (keeping its rows).
            pub(crate) fn grow(&mut self, n: usize) {
                $(if self.$col.len() < n {
                    self.$col.resize(n, Default::default());
                })+
            }

            /// Each column `n` rows long, reusing its memory ([`recycled`]).
            pub(crate) fn recycled(self, n: usize) -> $table {
                $table { $($col: recycled(self.$col, n)),+ }
            }
        }
    };
}

every_column!(Spans: lane, region, depth, payload, begin, end);
every_column!(Instants: lane: u32, region: u16, payload: u32, ts: Timestamp);
every_column!(CounterSamples: lane: u32, counter: u16, ts: Timestamp, value: u32);

/// `v` with length `n`. A recycled column keeps its old contents: a decode writes every
/// row of every lane's range before it is read, and rows outside the lanes' ranges are
/// dropped by its compaction, so stale rows never reach the trace. Only a column too small
/// to reuse is replaced, by a zeroed allocation (which the allocator gets from fresh
/// pages without writing them).
fn recycled<T: Clone + Default>(mut v: Vec<T>, n: usize) -> Vec<T> {
    if v.capacity() < n {
        drop(v);
        return vec![T::default(); n];
    }
    v.resize(n, T::default());
    v
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
