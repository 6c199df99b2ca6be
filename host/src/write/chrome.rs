//! Chrome Trace Event JSON, for chrome://tracing and the Perfetto UI.
//!
//! # Format
//!
//! One JSON object: `{"displayTimeUnit":"ns","traceEvents":[ ... ]}`, one event per line.
//! `ts` and `dur` are microseconds (as the Trace Event Format defines) with three decimals,
//! so every nanosecond is kept; times are relative to the trace's earliest stamp
//! (`Source::time_base`) and multiplied by [`TraceWriteOptions::scale`].
//!
//! Events, in this order:
//! 1. Metadata, one `process_name` per pid and one `thread_name` per (pid, tid):
//!    `{"ph":"M","name":"process_name","pid":3,"tid":0,"args":{"name":"sm 3"}}`,
//!    `{"ph":"M","name":"thread_name","pid":3,"tid":130,"args":{"name":"block 2 warp 2"}}`.
//! 2. Per lane (lanes ascending), its spans in begin order, either as
//!    - complete events (`emit_complete_events`, the default): `{"name":"mma","ph":"X",
//!      "ts":1.250,"dur":0.750,"pid":3,"tid":130,"args":{...}}`, or
//!    - `B`/`E` pairs: `{"name":"mma","ph":"B","ts":1.250,"pid":3,"tid":130,
//!      "args":{...}}` then `{"ph":"E","ts":2.000,"pid":3,"tid":130}`, properly nested
//!      per thread;
//!
//!    then its instants `{"name":"tile_done","ph":"i","s":"t","ts":..,"pid":..,"tid":..,
//!    "args":{...}}`, then its wait-counter samples as counter events
//!    `{"name":"wait_full","ph":"C","ts":..,"pid":..,"args":{"block 2 warp 2":17}}`.
//!
//! `args` of spans and instants: native lanes `{"sm":3,"block":2,"warp":2,"payload":5}`;
//! TVM-format lanes `{"block":2,"group":1}` (no SM, warp or payload in that format);
//! FlashInfer-format lanes `{"sm":3,"block":2,"group":1}`; Mirage-format lanes
//! `{"block":2,"group":0,"payload":7}` (the event number).
//!
//! pid / tid mapping ([`TraceWriteOptions::group_by_smid`]):
//!
//! | grouping | pid | tid | process / thread names |
//! |---|---|---|---|
//! | by SM (default) | SM id | `block << 6 \| warp` | `sm N` / `block B warp W` |
//! | by block | block | `warp * 32` | `block B` / `warp W` |
//!
//! Lanes of the TVM family have no warp: "warp" is the lane's group. Without an SM (TVM,
//! Mirage), by-SM grouping uses the block as pid (`block N` process). Two lanes with the same (pid, tid) (e.g. two
//! groups led from one warp) share a row.

use super::json::{escape, push_scaled_us, push_u64};
use super::{TraceWriteOptions, WriteError};
use crate::model::{Lane, Trace, WireFormat};
use rayon::prelude::*;
use std::io::{self, Write};

/// Row identity of a lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    pid: u64,
    tid: u64,
}

fn warp_of(l: &Lane) -> u32 {
    l.warp.unwrap_or(l.group)
}

fn row(l: &Lane, by_sm: bool) -> Row {
    let w = warp_of(l) as u64;
    if by_sm {
        Row {
            pid: l.sm.map_or(l.block as u64, u64::from),
            tid: (l.block as u64) << 6 | w,
        }
    } else {
        Row {
            pid: l.block as u64,
            tid: w * 32,
        }
    }
}

fn process_name(l: &Lane, by_sm: bool) -> String {
    match (by_sm, l.sm) {
        (true, Some(sm)) => format!("sm {sm}"),
        _ => format!("block {}", l.block),
    }
}

fn thread_name(l: &Lane, by_sm: bool, tvm: bool) -> String {
    let unit = if tvm { "group" } else { "warp" };
    if by_sm {
        format!("block {} {unit} {}", l.block, warp_of(l))
    } else {
        format!("{unit} {}", warp_of(l))
    }
}

/// Bytes of formatted events per parallel work item before it is handed to the writer.
const BATCH_SPANS: usize = 1 << 15;

/// Writes the Chrome trace of `trace` to `out`.
pub fn write_chrome<W: Write>(
    mut out: W,
    trace: &Trace,
    opt: &TraceWriteOptions,
) -> Result<(), WriteError> {
    let w = &mut out;
    let by_sm = opt.group_by_smid;
    // Lanes of the TVM family are groups; the native format's leaders are warps.
    let tvm = trace.source.format != WireFormat::Ikp;
    let lanes: Vec<&Lane> = trace.lanes.iter().collect();
    w.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;

    // Metadata: one process name per pid, one thread name per row.
    let mut rows: Vec<(Row, &Lane)> = lanes.iter().map(|l| (row(l, by_sm), *l)).collect();
    rows.sort_by_key(|r| r.0);
    rows.dedup_by_key(|r| r.0);
    let mut first = true;
    let mut last_pid = None;
    let mut b = Vec::with_capacity(1 << 16);
    for (r, l) in &rows {
        if last_pid != Some(r.pid) {
            last_pid = Some(r.pid);
            if !first {
                b.extend_from_slice(b",\n");
            }
            first = false;
            b.extend_from_slice(b"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
            push_u64(&mut b, r.pid);
            b.extend_from_slice(b",\"tid\":0,\"args\":{\"name\":\"");
            b.extend_from_slice(escape(&process_name(l, by_sm)).as_bytes());
            b.extend_from_slice(b"\"}}");
        }
        b.extend_from_slice(b",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
        push_u64(&mut b, r.pid);
        b.extend_from_slice(b",\"tid\":");
        push_u64(&mut b, r.tid);
        b.extend_from_slice(b",\"args\":{\"name\":\"");
        b.extend_from_slice(escape(&thread_name(l, by_sm, tvm)).as_bytes());
        b.extend_from_slice(b"\"}}");
    }
    w.write_all(&b)?;

    // Events: lanes formatted in parallel batches, written in lane order.
    let ctx = Ctx::new(trace, opt, tvm);
    let mut groups: Vec<&[&Lane]> = Vec::new();
    let mut start = 0;
    let mut acc = 0;
    for (i, l) in lanes.iter().enumerate() {
        acc += l.spans.len() + l.instants.len() + l.samples.len() + 1;
        if acc >= BATCH_SPANS {
            groups.push(&lanes[start..=i]);
            start = i + 1;
            acc = 0;
        }
    }
    if start < lanes.len() {
        groups.push(&lanes[start..]);
    }
    // Formatting runs on a helper thread (and the rayon pool) while this thread writes,
    // so output I/O overlaps with formatting; a bounded channel caps buffered output.
    let per_round = rayon::current_num_threads().max(1) * 2;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(per_round);
    // Written buffers go back to the formatter: fresh multi-MB allocations would cost a
    // page fault per 4 KiB, as much system time as the write itself.
    let (back_tx, back_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::scope(|scope| {
        let ctx = &ctx;
        let groups = &groups;
        scope.spawn(move || {
            for round in groups.chunks(per_round) {
                let mut bufs: Vec<Vec<u8>> = round
                    .iter()
                    .map(|_| back_rx.try_recv().unwrap_or_default())
                    .collect();
                if round.len() > 1 {
                    round
                        .par_iter()
                        .zip(bufs.par_iter_mut())
                        .for_each(|(g, b)| ctx.lanes(g, b));
                } else {
                    ctx.lanes(round[0], &mut bufs[0]);
                }
                for buf in bufs {
                    if tx.send(buf).is_err() {
                        return; // the writer failed and hung up
                    }
                }
            }
        });
        for mut buf in rx {
            w.write_all(&buf)?;
            buf.clear();
            let _ = back_tx.send(buf);
        }
        Ok::<(), io::Error>(())
    })?;
    w.write_all(b"\n]}\n")?;
    w.flush()?;
    Ok(())
}

/// Per-trace constants of the event formatter.
struct Ctx<'a> {
    trace: &'a Trace,
    opt: &'a TraceWriteOptions,
    tvm: bool,
    /// Whether spans and instants carry a payload (native and Mirage formats).
    payload: bool,
    /// `"name":"<escaped>"` per region id.
    region_names: Vec<Vec<u8>>,
    counter_names: Vec<Vec<u8>>,
}

impl<'a> Ctx<'a> {
    fn new(trace: &'a Trace, opt: &'a TraceWriteOptions, tvm: bool) -> Self {
        let max_region = trace
            .spans
            .region
            .iter()
            .chain(&trace.instants.region)
            .copied()
            .max();
        let region_names = (0..max_region.map_or(0, |m| m as usize + 1))
            .map(|r| format!("\"name\":\"{}\"", escape(&trace.names.region(r as u16))).into_bytes())
            .collect();
        let max_counter = trace.samples.counter.iter().copied().max();
        let counter_names = (0..max_counter.map_or(0, |m| m as usize + 1))
            .map(|c| {
                format!("\"name\":\"{}\"", escape(&trace.names.counter(c as u16))).into_bytes()
            })
            .collect();
        let payload = matches!(trace.source.format, WireFormat::Ikp | WireFormat::Mirage);
        Ctx {
            trace,
            opt,
            tvm,
            payload,
            region_names,
            counter_names,
        }
    }

    #[inline]
    fn ts(&self, b: &mut Vec<u8>, t: u64) {
        push_scaled_us(b, t - self.trace.source.time_base, self.opt.scale);
    }

    fn lanes(&self, lanes: &[&Lane], b: &mut Vec<u8>) {
        let n: usize = lanes
            .iter()
            .map(|l| l.spans.len() * 2 + l.instants.len())
            .sum();
        b.reserve(n * 80 + 256);
        for l in lanes {
            self.lane(b, l);
        }
    }

    fn lane(&self, b: &mut Vec<u8>, l: &Lane) {
        let r = row(l, self.opt.group_by_smid);
        // `,"pid":P,"tid":T` and the constant part of args.
        let mut ids = Vec::with_capacity(48);
        ids.extend_from_slice(b",\"pid\":");
        push_u64(&mut ids, r.pid);
        ids.extend_from_slice(b",\"tid\":");
        push_u64(&mut ids, r.tid);
        let mut args = Vec::with_capacity(64);
        if self.tvm {
            args.extend_from_slice(b",\"args\":{");
            if let Some(sm) = l.sm {
                args.extend_from_slice(b"\"sm\":");
                push_u64(&mut args, sm as u64);
                args.push(b',');
            }
            args.extend_from_slice(b"\"block\":");
            push_u64(&mut args, l.block as u64);
            args.extend_from_slice(b",\"group\":");
            push_u64(&mut args, l.group as u64);
            if self.payload {
                args.extend_from_slice(b",\"payload\":");
            }
        } else {
            args.extend_from_slice(b",\"args\":{\"sm\":");
            push_u64(&mut args, l.sm.unwrap_or(0) as u64);
            args.extend_from_slice(b",\"block\":");
            push_u64(&mut args, l.block as u64);
            args.extend_from_slice(b",\"warp\":");
            push_u64(&mut args, warp_of(l) as u64);
            args.extend_from_slice(b",\"payload\":");
        }
        let s = &self.trace.spans;
        let push_args = |b: &mut Vec<u8>, payload: u32| {
            b.extend_from_slice(&args);
            if self.payload {
                push_u64(b, payload as u64);
            }
            b.extend_from_slice(b"}}");
        };
        if self.opt.emit_complete_events {
            for i in l.spans.clone() {
                b.extend_from_slice(b",\n{");
                b.extend_from_slice(&self.region_names[s.region[i] as usize]);
                b.extend_from_slice(b",\"ph\":\"X\",\"ts\":");
                self.ts(b, s.begin[i]);
                b.extend_from_slice(b",\"dur\":");
                push_scaled_us(b, s.end[i] - s.begin[i], self.opt.scale);
                b.extend_from_slice(&ids);
                push_args(b, s.payload[i]);
            }
        } else {
            // B/E: close open spans that are not ancestors of the next one. A span at the
            // same or a deeper stack position, or one ending before the next ends, cannot
            // contain it; what stays open always contains the next span in time.
            let mut open: Vec<(u64, u16)> = Vec::new();
            let close = |b: &mut Vec<u8>, end: u64| {
                b.extend_from_slice(b",\n{\"ph\":\"E\",\"ts\":");
                self.ts(b, end);
                b.extend_from_slice(&ids);
                b.push(b'}');
            };
            for i in l.spans.clone() {
                while let Some(&(end, depth)) = open.last() {
                    if depth >= s.depth[i] || end < s.end[i] {
                        close(b, end);
                        open.pop();
                    } else {
                        break;
                    }
                }
                b.extend_from_slice(b",\n{");
                b.extend_from_slice(&self.region_names[s.region[i] as usize]);
                b.extend_from_slice(b",\"ph\":\"B\",\"ts\":");
                self.ts(b, s.begin[i]);
                b.extend_from_slice(&ids);
                push_args(b, s.payload[i]);
                open.push((s.end[i], s.depth[i]));
            }
            while let Some((end, _)) = open.pop() {
                close(b, end);
            }
        }
        let ins = &self.trace.instants;
        for i in l.instants.clone() {
            b.extend_from_slice(b",\n{");
            b.extend_from_slice(&self.region_names[ins.region[i] as usize]);
            b.extend_from_slice(b",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
            self.ts(b, ins.ts[i]);
            b.extend_from_slice(&ids);
            push_args(b, ins.payload[i]);
        }
        if !l.samples.is_empty() {
            let series = escape(&thread_name(l, true, self.tvm));
            let c = &self.trace.samples;
            for i in l.samples.clone() {
                b.extend_from_slice(b",\n{");
                b.extend_from_slice(&self.counter_names[c.counter[i] as usize]);
                b.extend_from_slice(b",\"ph\":\"C\",\"ts\":");
                self.ts(b, c.ts[i]);
                b.extend_from_slice(b",\"pid\":");
                push_u64(b, r.pid);
                b.extend_from_slice(b",\"args\":{\"");
                b.extend_from_slice(series.as_bytes());
                b.extend_from_slice(b"\":");
                push_u64(b, c.value[i] as u64);
                b.extend_from_slice(b"}}");
            }
        }
    }
}
