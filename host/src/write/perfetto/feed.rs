//! The lanes of a [`StreamedBuffer`] as [`super::write_perfetto_streamed`] needs them:
//! decoded one at a time, or a block at a time when the names allow signal → wait links
//! (links never leave a block), with the block's flows.

use std::ops::Range;

use super::flows::{flows_of, lane_flows, LaneFlows, LaunchFlows};
use crate::analysis::links;
use crate::decode::StreamedBuffer;
use crate::model::Trace;
use crate::write::{WriteError, WriteErrorKind};

/// The run of the buffer's outline lanes decoded last, and its flows.
pub(super) struct Feed<'a> {
    buf: &'a StreamedBuffer,
    /// Whether to decode whole blocks and draw their links.
    blocks: bool,
    /// The lanes decoded last, and the outline positions they are.
    cur: Trace,
    cur_pos: Range<usize>,
    /// Flows of `cur`'s lanes, by position in `cur`.
    flows: LaunchFlows,
}

impl<'a> Feed<'a> {
    pub(super) fn new(buf: &'a StreamedBuffer) -> Self {
        Feed {
            buf,
            blocks: links::may_link(&buf.outline().names),
            cur: Trace::default(),
            cur_pos: 0..0,
            flows: LaunchFlows::default(),
        }
    }

    /// A trace holding outline lane `pos`, the lane's position in it, and its flows.
    pub(super) fn get(
        &mut self,
        pos: usize,
    ) -> Result<(&Trace, usize, Option<&LaneFlows>), WriteError> {
        if !self.cur_pos.contains(&pos) {
            let run = if self.blocks {
                self.block_of(pos)
            } else {
                pos..pos + 1
            };
            // Free the run decoded before first: memory holds one run at a time.
            self.cur = Trace::default();
            self.cur_pos = 0..0;
            self.flows.clear();
            self.cur = (self.buf.decode_lanes(run.clone()))
                .map_err(|e| WriteError::from(WriteErrorKind::Decode(e)))?;
            if self.blocks {
                // A run holds no async range (their flows are not drawn when streaming).
                let base = self.buf.first_span(run.start);
                self.flows = lane_flows(&self.cur, base, super::async_tracks::ASYNC_FLOW_IDS);
            }
            self.cur_pos = run;
        }
        let k = pos - self.cur_pos.start;
        Ok((&self.cur, k, flows_of(&self.flows, k)))
    }

    /// The positions of the lanes of `pos`'s block: the run of consecutive outline lanes
    /// of that block (the outline is ascending by lane id, so by block).
    fn block_of(&self, pos: usize) -> Range<usize> {
        let lanes = &self.buf.outline().lanes;
        let block = lanes[pos].block;
        let lo = lanes[..pos]
            .iter()
            .rposition(|l| l.block != block)
            .map_or(0, |p| p + 1);
        let hi = pos + lanes[pos..].iter().take_while(|l| l.block == block).count();
        lo..hi
    }
}
