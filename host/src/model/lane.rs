//! Lanes: one writer's track each, and how users name them.

use super::Timestamp;
use std::ops::Range;

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
    /// Index range into [`Trace::spans`](super::Trace::spans).
    pub spans: Range<usize>,
    /// Index range into [`Trace::instants`](super::Trace::instants).
    pub instants: Range<usize>,
    /// Index range into [`Trace::samples`](super::Trace::samples).
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
