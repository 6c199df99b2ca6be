//! A stream capture as a native buffer, so every decoder, writer and analysis of ikp reads
//! a stream launch as it reads a fixed one.
//!
//! The buffer has the launch's header and names, and each lane's segment as long as the
//! records it streamed (no lane is padded to the longest: a persistent kernel's lanes may
//! differ by orders of magnitude), each lane's records in order, and its stamps, IDS
//! (stream flags cleared), record cost, counters and counts from its final state. The stream's marks
//! become what the native format can say:
//!
//! - a drop mark becomes a span of the region `[ikp] records dropped` (added after the
//!   launch's regions when a lane dropped any), its payload the records dropped there
//!   (saturating at the payload's 2^20 - 1), from the time of the record before it (the
//!   lane's start if none) to the time of the first record after it (the lane's end if
//!   none, its begin if the lane never finalized): the interval that held the records
//!   lost, whose time is then that region's, not time outside any region. The lane's
//!   `dropped` count is the exact total, as for a full fixed lane, and its `written` the
//!   records it streamed (marks included);
//! - an end that would close a region begun before a drop mark becomes an instant of
//!   `[ikp] end of a region begun before a drop` (payload: the region's id), and that
//!   region's begin stays unmatched: the records dropped may have held its real end, so no
//!   span is made across a gap;
//! - a stall mark becomes an instant of `[ikp] waited for room (us)`, its payload the wait
//!   in microseconds (saturating); a wait-mode launch also gets two wait counters per lane,
//!   `[ikp] waits for room` and `[ikp] ns waiting for room`, the lane's exact totals.

use super::{DecodeError, DecodeOptions, Recycled};
use crate::model::{StreamSource, Trace};
use crate::stream_file::{StreamCapture, StreamFileError};
use ikp_device::wire::{self, lane, Kind, Overflow};
use ikp_device::{stream, Layout};

/// Name of the region drop marks become.
pub const DROPPED_REGION: &str = "[ikp] records dropped";
/// Name of the region stall marks become.
pub const STALLED_REGION: &str = "[ikp] waited for room (us)";
/// Name of the region an end becomes when it would close a region begun before a drop
/// mark; its payload is the region's id.
pub const ACROSS_REGION: &str = "[ikp] end of a region begun before a drop";
/// Name of the wait counter of a wait-mode lane's waits.
pub const STALLS_COUNTER: &str = "[ikp] waits for room";
/// Name of the wait counter of a wait-mode lane's time waiting, ns.
pub const STALL_NS_COUNTER: &str = "[ikp] ns waiting for room";

/// The native form's words: the header words, then the lanes' segments at `offsets`.
struct Ragged {
    words: Vec<u64>,
    offsets: Vec<usize>,
    /// Records each lane streamed (marks included).
    written: Vec<u64>,
}

/// A capture's native form: the header words, then each lane's segment as long as its own
/// records, lane `l`'s at `offsets[l]..offsets[l + 1]` (read by
/// [`native::decode_ragged`](super::native)), and what the native form cannot say, to
/// put on every trace decoded from it ([`NativeForm::finish`]).
#[derive(Debug)]
pub(crate) struct NativeForm {
    pub words: Vec<u64>,
    pub offsets: Vec<usize>,
    /// Records each lane streamed (marks included).
    written: Vec<u64>,
    /// Each lane's own dropped total (a native lane's drops are only its newest).
    dropped: Vec<u64>,
    /// The ring's capacity.
    ring_records: u32,
    stream: StreamSource,
}

impl NativeForm {
    /// Gives a trace decoded from the native form (all of its lanes, or some) what the
    /// capture says that the native form does not: each lane's dropped total, the ring as
    /// `records_per_lane`, the stream's figures.
    pub fn finish(&self, trace: &mut Trace) {
        for lane in &mut trace.lanes {
            lane.written = self.written[lane.id as usize];
            lane.dropped = self.dropped[lane.id as usize];
        }
        trace.source.records_per_lane = self.ring_records;
        trace.source.stream = Some(self.stream);
    }
}

impl StreamCapture {
    /// The capture decoded: its native form (the module doc) decoded, each lane's
    /// `dropped` the lane's own total. (Users decode a stream file as any buffer:
    /// `ikp_host::load`, `decode_bytes`.)
    pub(crate) fn native_trace(
        self,
        opts: &DecodeOptions,
        reuse: Recycled,
    ) -> Result<Trace, DecodeError> {
        let form = self.into_native_form()?;
        let offsets = form.offsets.clone();
        let mut trace = super::native::decode_ragged(&form.words, offsets, opts, reuse)?;
        form.finish(&mut trace);
        Ok(trace)
    }

    /// The capture's native form (the module doc). Each lane's records are released once
    /// copied, so the capture and its native form are not both held whole.
    pub(crate) fn into_native_form(self) -> Result<NativeForm, StreamFileError> {
        let dropped: Vec<u64> = (0..self.lanes.len()).map(|l| self.dropped(l)).collect();
        let layout = &self.header.layout;
        let ring_records = layout.records_per_lane;
        let stream = StreamSource {
            ring_records,
            wait: layout.overflow == Overflow::StreamWait,
            drained_records: self.drain.records,
            drain_polls: self.drain.polls,
            drain_max_backlog: self.drain.max_backlog,
        };
        let Ragged {
            words,
            offsets,
            written,
        } = self.into_native()?;
        Ok(NativeForm {
            words,
            offsets,
            written,
            dropped,
            ring_records,
            stream,
        })
    }

    /// The capture's native form (see the module doc).
    fn into_native(mut self) -> Result<Ragged, StreamFileError> {
        let src = &self.header.layout;
        let meta_of = |r: u64| {
            let r = wire::unpack_record(r);
            (r.kind == Kind::Meta).then_some(r.region)
        };
        const DROP: u32 = stream::META_DROPPED;
        let has = |kind: u32| {
            self.lanes
                .iter()
                .any(|l| l.records.iter().any(|&r| meta_of(r) == Some(kind)))
        };
        let mut regions = src.regions.clone();
        let mut add_region = |name: &str, present: bool| {
            present.then(|| {
                regions.push(name.to_string());
                regions.len() as u32 - 1
            })
        };
        let across: Vec<Vec<bool>> = (self.lanes.iter())
            .map(|l| ends_across_drops(&l.records, src))
            .collect();
        let dropped_region = add_region(DROPPED_REGION, has(stream::META_DROPPED));
        let stalled_region = add_region(STALLED_REGION, has(stream::META_STALLED));
        let across_region = add_region(ACROSS_REGION, across.iter().any(|l| l.iter().any(|&a| a)));
        let waits = src.overflow == Overflow::StreamWait;
        let mut counters = src.counters.clone();
        if waits {
            counters.extend([STALLS_COUNTER.to_string(), STALL_NS_COUNTER.to_string()]);
        }
        if let Some((lane, l)) =
            (self.lanes.iter().enumerate()).find(|(_, l)| l.records.len() > u32::MAX as usize)
        {
            return Err(StreamFileError::LaneTooLong {
                lane: lane as u64,
                records: l.records.len() as u64,
            });
        }
        // The header's records_per_lane is not read for ragged segments: the ring's stays.
        let layout = Layout {
            regions,
            counters,
            overflow: Overflow::DropNewest,
            epochs: 1,
            ..src.clone()
        };
        let bad = |why: String| StreamFileError::Block { at: 0, why };
        let mut words = layout
            .header_words()
            .map_err(|e| bad(format!("the capture has no native form: {e}")))?;
        words.resize(layout.lane_base() as usize, 0);
        let total: usize = self.lanes.iter().map(|l| l.records.len()).sum();
        let fixed = wire::lane_stride(0, layout.counters.len() as u32) as usize;
        words.reserve(total + self.lanes.len() * fixed);
        let mut offsets = Vec::with_capacity(self.lanes.len() + 1);
        let mut written = Vec::with_capacity(self.lanes.len());
        let n_src_counters = src.counters.len();
        let pro = lane::PROLOGUE_WORDS as usize;
        for (l, capture) in self.lanes.iter_mut().enumerate() {
            let seg0 = words.len();
            offsets.push(seg0);
            let records = std::mem::take(&mut capture.records);
            written.push(records.len() as u64);
            // A drop mark becomes two records: the gap's begin and end.
            let marks = records
                .iter()
                .filter(|&&r| meta_of(r) == Some(DROP))
                .count();
            let cap = records.len() + marks;
            words.resize(seg0 + fixed + cap, 0);
            let Some(state) = &capture.state else {
                continue;
            };
            let seg = &mut words[seg0..];
            let ctrl = stream::CTRL_WORDS as usize;
            seg[..pro].copy_from_slice(&state[..pro]);
            let native_flags = wire::lane_flags::CLOCK | wire::lane_flags::BLOCK_FENCE;
            if let Some(ids) = wire::unpack_ids(state[lane::IDS as usize]) {
                seg[lane::IDS as usize] =
                    wire::pack_ids(ids.smid, ids.warp, ids.flags & native_flags);
            }
            // A mark takes the time of the record before it: the lane's start if none.
            let clock = wire::unpack_ids(state[lane::IDS as usize])
                .is_some_and(|i| i.flags & wire::lane_flags::CLOCK != 0);
            let start = if clock {
                lane::START_CLK
            } else {
                lane::START_GT
            };
            let mut last_time = state[start as usize] as u32;
            let trailer = &state[pro + ctrl..];
            // A gap with no record after it ends at the lane's end (if it finalized).
            let end = if clock {
                lane::T_END_CLK
            } else {
                lane::T_END_GT
            };
            let lane_end =
                (trailer[lane::T_END_GT as usize] != 0).then(|| trailer[end as usize] as u32);
            let mut at = pro;
            for (i, &r) in records.iter().enumerate() {
                let rec = wire::unpack_record(r);
                let native = match (rec.kind, rec.region) {
                    (Kind::Meta, DROP) => {
                        let region = dropped_region.expect("a drop mark adds the region");
                        let tag =
                            |kind| wire::pack_tag(kind, region, rec.time_lo.min(wire::MAX_PAYLOAD));
                        let after = (records[i + 1..].iter())
                            .map(|&r| wire::unpack_record(r))
                            .find(|r| r.kind != Kind::Meta)
                            .map(|r| r.time_lo)
                            .or(lane_end)
                            .unwrap_or(last_time);
                        seg[at] = wire::pack_record(last_time, tag(Kind::Begin));
                        seg[at + 1] = wire::pack_record(after, tag(Kind::End));
                        at += 2;
                        continue;
                    }
                    (Kind::Meta, k) if k == stream::META_STALLED => {
                        let region = stalled_region.expect("a stall mark adds the region");
                        let payload = (rec.time_lo / 1000).min(wire::MAX_PAYLOAD);
                        wire::pack_record(last_time, wire::pack_tag(Kind::Instant, region, payload))
                    }
                    (Kind::Meta, _) => r,
                    (Kind::End, r_id) if across[l][i] => {
                        let region = across_region.expect("an end across a drop adds the region");
                        last_time = rec.time_lo;
                        wire::pack_record(rec.time_lo, wire::pack_tag(Kind::Instant, region, r_id))
                    }
                    _ => {
                        last_time = rec.time_lo;
                        r
                    }
                };
                seg[at] = native;
                at += 1;
            }
            drop(records);
            let t = pro + cap;
            seg[t + lane::T_END_GT as usize] = trailer[lane::T_END_GT as usize];
            seg[t + lane::T_END_CLK as usize] = trailer[lane::T_END_CLK as usize];
            // Written = the slots used. The decoded lane gets the records it streamed
            // (marks included) and its own drops, anywhere in the stream, from
            // `NativeForm::finish`: a native lane's drops are only its newest records.
            seg[t + lane::T_COUNT as usize] = if trailer[lane::T_END_GT as usize] == 0 {
                0
            } else {
                wire::pack_count(cap as u32, 0)
            };
            let counters = t + lane::T_COUNTERS as usize;
            let src_counters = lane::T_COUNTERS as usize;
            seg[counters..counters + n_src_counters]
                .copy_from_slice(&trailer[src_counters..src_counters + n_src_counters]);
            if waits {
                seg[counters + n_src_counters] = state[pro + stream::ctrl::STALLS as usize];
                seg[counters + n_src_counters + 1] = state[pro + stream::ctrl::STALL_NS as usize];
            }
        }
        offsets.push(words.len());
        Ok(Ragged {
            words,
            offsets,
            written,
        })
    }
}

/// Per record of a lane: whether it is an end that would close a region begun before a drop
/// mark (the innermost open begin of its region, as the decoder pairs, was recorded before
/// the last drop mark). The records dropped between may have held that region's own end,
/// so such an end is not trusted to close it: it becomes an instant of [`ACROSS_REGION`]
/// and the begin stays unmatched (counted). Async regions pair across lanes by token and
/// are left to their own rules.
fn ends_across_drops(records: &[u64], layout: &Layout) -> Vec<bool> {
    let mut open: Vec<(u32, u32)> = Vec::new(); // (region, drop marks before its begin)
    let mut marks = 0u32;
    let mut across = vec![false; records.len()];
    for (i, &r) in records.iter().enumerate() {
        let rec = wire::unpack_record(r);
        match rec.kind {
            Kind::Meta if rec.region == stream::META_DROPPED => marks += 1,
            Kind::Begin if !layout.is_async(rec.region) => open.push((rec.region, marks)),
            Kind::End if !layout.is_async(rec.region) => {
                match open.iter().rposition(|o| o.0 == rec.region) {
                    Some(p) if open[p].1 == marks => {
                        open.remove(p);
                    }
                    Some(_) => across[i] = true,
                    None => {}
                }
            }
            _ => {}
        }
    }
    across
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_end_after_a_drop_does_not_close_a_begin_before_it() {
        let layout = Layout {
            regions: vec!["a".into(), "b".into(), "c".into()],
            async_regions: vec![2],
            ..Layout::default()
        };
        let rec = |kind, region| wire::pack_record(0, wire::pack_tag(kind, region, 0));
        let mark = wire::pack_record(5, wire::pack_tag(Kind::Meta, stream::META_DROPPED, 0));
        let records = [
            rec(Kind::Begin, 0), // a, before the drop
            rec(Kind::Begin, 2), // async c
            mark,
            rec(Kind::Begin, 1), // b, after the drop
            rec(Kind::End, 1),   // closes b: kept
            rec(Kind::End, 0),   // would close a across the drop
            rec(Kind::End, 2),   // async: its own rules
            rec(Kind::End, 1),   // no open b: the decoder's unmatched end
            rec(Kind::End, 0),   // a still open from before the drop: across again
        ];
        assert_eq!(
            ends_across_drops(&records, &layout),
            [false, false, false, false, false, true, false, false, true]
        );
    }
}
