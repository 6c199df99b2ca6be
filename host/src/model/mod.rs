//! The decoded trace: what every writer and analysis reads.
//!
//! Time is integer nanoseconds on one absolute axis per launch (the GPU's `%globaltimer`):
//! points in time are [`Timestamp`]s, lengths [`DurationNs`] (the crate's private `time` module, where
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

mod diagnostics;
mod filter;
mod host_trace;
mod lane;
mod names;
mod source;
mod tables;
mod trace;

pub use diagnostics::{DiagnosticCounts, Diagnostics, SetAsideLane, SetAsideReason, Unpaired};
pub use filter::{BlockFilter, BlockFilterError};
pub use host_trace::{HostEvent, HostThread, HostTrace, SetAsideThread};
pub use lane::{Lane, TrackId};
pub use names::Names;
pub use source::{
    AssumedClock, ClockCalibration, Epoch, OverheadCorrection, Source, StreamSource, WireFormat,
};
pub use tables::{AsyncRanges, CounterSamples, Instants, Spans};
pub use trace::Trace;

pub use crate::time::{DurationNs, Timestamp};
