//! A lane's events as the packets of its sequence (the module's `# Format`, item 3): the
//! event loop, the throughput-critical path of the writer. [`LaneRun::emit`] encodes
//! straight into the output buffer and stops when it is full; the writer flushes it and
//! calls again.

use super::enc::{self, NameHead, SeqEncoder};
use super::flows::{run_of, LaneFlows};
use super::{LaunchClock, ANN_PAYLOAD, CAT_INSTANT, CAT_SPAN};
use crate::model::{Lane, Trace};
use crate::time::Timestamp;
use crate::write::{rows_used, span_rows};

/// A launch's region names, pre-encoded, and which sequence interned each one last.
#[derive(Debug, Default)]
pub(super) struct Regions {
    /// `interned_data` field bytes interning region `r`'s name, per launch.
    blobs: Vec<Box<[u8]>>,
    /// Pre-encoded type, name and category of region `r`'s slices and instants.
    heads: Vec<(NameHead, NameHead)>,
    /// Sequence id that last interned region `r` (`interned_on[r]`); sequence ids are
    /// unique in the whole trace, so this outlives launches.
    interned_on: Vec<u64>,
}

impl Regions {
    /// Encodes the names of every region id `trace` uses, and of every id up to `max`.
    pub(super) fn prepare(&mut self, trace: &Trace, max: Option<usize>) {
        let used = (trace.spans.region.iter()).chain(&trace.instants.region);
        let max = used.fold(max.unwrap_or(0) as u16, |m, &r| m.max(r)) as usize;
        self.blobs.clear();
        self.blobs.extend(
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
}

/// The writer's per-lane state, set up for each lane and reused from lane to lane.
#[derive(Debug, Default)]
pub(super) struct LaneState {
    pub(super) enc: SeqEncoder,
    /// Per-level stacks of open slice end times (level 0 = the lane's own track); the lane
    /// uses the first `level_uuid.len()`, cleared.
    pub(super) levels: Vec<Vec<u64>>,
    /// Track UUID per level the lane needs (0 for level 0: the sequence's default track).
    pub(super) level_uuid: Vec<u64>,
    /// Per-level stacks of the open slices' span indices (lane-local), in step with
    /// `levels`: kept only for lanes with flows, to find the wait a slice end closes.
    pub(super) open_spans: Vec<Vec<usize>>,
    /// Counter track UUID per counter id for the current lane (0 = none).
    pub(super) counter_uuid: Vec<u64>,
}

/// Events written, by kind.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) packets: u64,
    pub(super) slices: u64,
    pub(super) instants: u64,
    pub(super) counter_values: u64,
    pub(super) flows: u64,
}

/// One lane's event columns, as sub-slices, and its time shift.
struct LaneEvents<'a> {
    shift: u64,
    begin: &'a [Timestamp],
    end: &'a [Timestamp],
    region: &'a [u16],
    payload: &'a [u32],
    i_ts: &'a [Timestamp],
    i_region: &'a [u16],
    i_payload: &'a [u32],
    c_ts: &'a [Timestamp],
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

/// The flows of a lane without any: what the loop without flows never reads.
static NO_FLOWS: LaneFlows = LaneFlows {
    out_span: Vec::new(),
    out_span_id: Vec::new(),
    out_instant: Vec::new(),
    out_instant_id: Vec::new(),
    in_span: Vec::new(),
    in_span_id: Vec::new(),
};

/// One lane's events being written on sequence `seq`: its columns and flows, where the
/// merge stands (the next span, instant and sample, and the next entries of the span and
/// instant flow lists), and what was written.
pub(super) struct LaneRun<'a> {
    ev: LaneEvents<'a>,
    flows: Option<&'a LaneFlows>,
    seq: u64,
    si: usize,
    ii: usize,
    ci: usize,
    so: usize,
    io: usize,
    pub(super) counts: Counts,
}

impl<'a> LaneRun<'a> {
    /// The events of `lane` (of `trace`), on sequence `seq`, with `flows` if it has any.
    pub(super) fn new(
        trace: &'a Trace,
        lane: &Lane,
        clock: LaunchClock,
        seq: u64,
        flows: Option<&'a LaneFlows>,
    ) -> Self {
        LaneRun {
            ev: LaneEvents::new(trace, lane, clock),
            flows,
            seq,
            si: 0,
            ii: 0,
            ci: 0,
            so: 0,
            io: 0,
            counts: Counts::default(),
        }
    }

    /// Writes the lane's events in time order (see the module's `# Format` for ties) into
    /// `buf[*pos..]`, until done (`None`) or the buffer needs flushing (`Some(bytes
    /// needed)`; call again after flushing). `st` was set up for the lane (levels, tracks,
    /// encoder); `regions` for its launch. Lanes without flows (every lane of a trace
    /// without signal / wait regions) run the loop compiled without the flow lookups.
    #[inline]
    pub(super) fn emit(
        &mut self,
        st: &mut LaneState,
        regions: &mut Regions,
        buf: &mut [u8],
        pos: &mut usize,
    ) -> Option<usize> {
        if self.flows.is_some() {
            emit_lane::<true>(self, st, regions, buf, pos)
        } else {
            emit_lane::<false>(self, st, regions, buf, pos)
        }
    }
}

/// The number of levels a lane's spans need so that each level nests (the Chrome trace's
/// rows: [`span_rows`]); leaves `st.levels` and `st.open_spans` with at least that many
/// stacks, all cleared.
pub(super) fn count_levels(st: &mut LaneState, trace: &Trace, lane: &Lane) -> usize {
    let n = rows_used(span_rows(trace, lane).as_deref()) as usize;
    st.levels.iter_mut().for_each(Vec::clear);
    st.open_spans.iter_mut().for_each(Vec::clear);
    st.levels.resize_with(n.max(st.levels.len()), Vec::new);
    st.open_spans
        .resize_with(n.max(st.open_spans.len()), Vec::new);
    n
}

/// [`LaneRun::emit`], with or without the flow lookups. With `FLOWS`, signal events start
/// their flows and linked waits' ends terminate theirs; without, the flows are not
/// touched and the loop is the plain one.
fn emit_lane<const FLOWS: bool>(
    run: &mut LaneRun<'_>,
    st: &mut LaneState,
    regions: &mut Regions,
    buf: &mut [u8],
    pos: &mut usize,
) -> Option<usize> {
    // Plain locals for the loop: slices and counters, written back at the end.
    let LaneState {
        enc,
        levels,
        level_uuid,
        open_spans,
        counter_uuid,
    } = st;
    let n_levels = level_uuid.len();
    let levels = &mut levels[..n_levels];
    let open = &mut open_spans[..n_levels];
    let (level_uuid, counter_uuid) = (&level_uuid[..], &counter_uuid[..]);
    let Regions {
        blobs,
        heads,
        interned_on,
    } = regions;
    let (blobs, heads) = (&blobs[..], &heads[..]);
    let ev = &run.ev;
    let flows = run.flows.unwrap_or(&NO_FLOWS);
    let seq = run.seq;
    let shift = ev.shift;
    let at = |col: &[Timestamp], i: usize| col.get(i).map_or(u64::MAX, |&t| t.wrapping_add(shift));
    let (mut si, mut ii, mut ci) = (run.si, run.ii, run.ci);
    let (mut so, mut io) = (run.so, run.io);
    let mut p = *pos;
    let mut need = None;
    let mut c = std::mem::take(&mut run.counts);
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
                let i = open[nl].pop().expect("open spans in step with levels");
                (u32::try_from(i).ok())
                    .and_then(|i| flows.in_span.binary_search(&i).ok())
                    .map(|k| flows.in_span_id[k])
            } else {
                None
            };
            p = enc.end(buf, p, ne, level_uuid[nl], flow);
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
                let k = run_of(&flows.out_span, so, si);
                (&flows.out_span_id[k.clone()], k.end)
            } else {
                let k = run_of(&flows.out_instant, io, ii);
                (&flows.out_instant_id[k.clone()], k.end)
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
                    open[level].push(si);
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
    (run.si, run.ii, run.ci, run.so, run.io) = (si, ii, ci, so, io);
    *pos = p;
    run.counts = c;
    need
}
