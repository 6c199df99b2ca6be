//! Chrome Trace Event JSON, for chrome://tracing and the Perfetto UI.
//!
//! # Format
//!
//! One JSON object: `{"displayTimeUnit":"ns","traceEvents":[ ... ]}`, one event per line.
//! `ts` and `dur` are microseconds (as the Trace Event Format defines) with three decimals,
//! so every nanosecond is kept; times are relative to the trace's earliest stamp
//! (`Source::time_base`) and multiplied by [`ChromeOptions::scale`].
//!
//! Events, in this order:
//! 1. Metadata, one `process_name` per pid and one `thread_name` per (pid, tid):
//!    `{"ph":"M","name":"process_name","pid":3,"tid":0,"args":{"name":"sm 3"}}`,
//!    `{"ph":"M","name":"thread_name","pid":3,"tid":130,"args":{"name":"block 2 warp 2"}}`.
//! 2. Per lane (lanes ascending), its lifetime (below), then its spans in begin order,
//!    either as
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
//! pid / tid mapping ([`ChromeOptions::group_by_smid`]):
//!
//! | grouping | pid | tid | process / thread names |
//! |---|---|---|---|
//! | by SM (default) | SM id | `block << 6 \| warp` | `sm N` / `block B warp W` |
//! | by block | block | `warp * 32` | `block B` / `warp W` |
//!
//! Lanes of the TVM family have no warp: "warp" is the lane's group. Without an SM (TVM,
//! Mirage), by-SM grouping uses the block as pid (`block N` process). Two lanes with the same (pid, tid) (e.g. two
//! groups led from one warp) share a row.
//!
//! **Overlapping spans.** A thread's spans must nest for viewers to draw them (and for its
//! `B`/`E` pairs to pair). Spans of a lane that overlap instead (a region that ends while
//! one begun inside it is still open: see [`crate::model`]) go to **overlap rows**: each
//! span goes to the first row of its lane where it nests (the lane's own row first; the
//! Perfetto writer places spans on its "overlap n" tracks by the same rule), so every row
//! nests. Overlap row `n` (1, 2, ...) of the lane with tid `T` has the same pid and tid
//! `T + n * 1000000000000` (above every lane's tid, and exact in a JavaScript number up to
//! n = 9006; n = 9007 is the lifetime row below), named `<thread name> (overlap n)` by its own `thread_name` metadata event;
//! it holds only spans (instants and counters stay on the lane's row). A lane whose spans
//! nest has no overlap rows. Lanes sharing a row share its overlap rows too; spans are
//! placed lane by lane, so it is only each lane's spans that are guaranteed to nest there.
//!
//! **Lifetimes.** In a format that records each lane's start and end of its own (the
//! native format's init and finalize stamps:
//! [`WireFormat::records_lane_lifetimes`]), every lane has a **lifetime row**: the same
//! pid, tid `T + 9007 * 1000000000000` (the largest such step below 2^53), named `<thread name> (lifetime)` by its own `thread_name`
//! event, holding one event from the lane's start to its end (its last record when it
//! never finalized), written before the lane's spans: `{"name":"lifetime","ph":"X",
//! "ts":0.000,"dur":1.250,"pid":3,"tid":9007000000000130,"args":{"sm":3,"block":2,
//! "warp":2,"finalized":true}}`, or a `B` / `E` pair. A kernel without loops, whose lanes
//! record nothing but their start and end, so still shows its warps and their waves.
//! Lanes sharing a row share its lifetime row.
//!
//! **Async ranges** ([`Trace::async_ranges`], native buffers whose header declares async
//! regions) come last, one pair of nestable async events per range, in begin order:
//! `{"name":"tma","cat":"async","ph":"b","id":4,"ts":..,"pid":3,"tid":130,
//! "args":{"token":7,"begin":{"sm":3,"block":2,"warp":2},"end":{"sm":5,"block":2,"warp":0}}}`
//! then `{"name":"tma","cat":"async","ph":"e","id":4,"ts":..,"pid":3,"tid":130}`. Both
//! events sit on the row of the lane that began the range (of the one that ended it when
//! a block filter left the beginning lane out); `args` name both lanes (a lane a block
//! filter left out is omitted). The Trace Event Format ("Async Events", phases `b` and
//! `e`: <https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU>;
//! the phases as Chrome's own viewer names them, `ASYNC_NESTABLE_START` / `_END`, in
//! `chrome-devtools-frontend`'s `TraceEvents.ts`) pairs a `b` with the `e` of the same
//! `cat`, `id` and process. `id` is the range's index in `Trace::async_ranges`, not its
//! token: a token reused while an earlier range of it is still open would make a viewer
//! nest the two ranges and pair their ends last-in first-out, where ikp pairs them first-in
//! first-out ([`crate::decode::async_ranges`]); the token is in `args`. A trace without
//! async ranges has none of these events.

use super::json::{escape, push_scaled_us, push_u64};
use super::WriteError;
use crate::model::{Lane, Trace, WireFormat};
use rayon::prelude::*;
use std::io::{self, Write};

/// Options of the Chrome trace. Field names and defaults follow the in-kernel profiler
/// whose output layout this writer reproduces (yao-jz/intra-kernel-profiler's
/// `TraceWriteOptions`; see the repository's `docs/references.md`).
#[derive(Clone, Debug, PartialEq)]
pub struct ChromeOptions {
    /// Multiplier from ns to the unit of `ts` and `dur`. Default 1.0.
    pub scale: f64,
    /// Pair each span into one `X` (complete) event (default `true`): a fifth smaller and
    /// faster to load than the `B`/`E` pairs written when `false`.
    pub emit_complete_events: bool,
    /// `pid` = SM and `tid` = `block << 6 | warp` (true, default), or `pid` = block and
    /// `tid` = `warp * 32` (false). Lanes without an SM (TVM, Mirage formats): `pid` is
    /// the block.
    pub group_by_smid: bool,
}

impl Default for ChromeOptions {
    fn default() -> Self {
        ChromeOptions {
            scale: 1.0,
            emit_complete_events: true,
            group_by_smid: true,
        }
    }
}

/// Row identity of a lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    pid: u64,
    tid: u64,
}

fn warp_of(l: &Lane) -> u32 {
    l.warp.unwrap_or(l.group)
}

/// Tid of overlap row `n` of the row with tid `tid` (module docs, `# Format`).
fn overlap_tid(tid: u64, n: u32) -> u64 {
    tid + n as u64 * OVERLAP_TID_STEP
}

/// The tid step between a lane's row and its overlap rows: a round decimal number above
/// every lane tid (`block << 6 | warp` < 2^38 for u32 blocks and warps below 2^32).
const OVERLAP_TID_STEP: u64 = 1_000_000_000_000;

/// The row number (in steps of [`OVERLAP_TID_STEP`]) of a lane's lifetime row: the
/// largest below 2^53, where tids stop being exact JavaScript numbers.
const LIFETIME_ROW: u32 = 9007;

/// A lane to write, with the rows of its spans ([`super::span_rows`]).
struct LaneRows<'a> {
    lane: &'a Lane,
    rows: Option<Vec<u32>>,
}

impl LaneRows<'_> {
    /// Rows the lane's spans use (at least 1).
    fn n_rows(&self) -> u32 {
        super::rows_used(self.rows.as_deref())
    }

    /// The row numbers of the lane: its spans' rows, then its lifetime row if it has one.
    fn row_numbers(&self, lifetimes: bool) -> impl Iterator<Item = u32> {
        (0..self.n_rows()).chain(lifetimes.then_some(LIFETIME_ROW))
    }
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
    opt: &ChromeOptions,
) -> Result<(), WriteError> {
    let w = &mut out;
    let by_sm = opt.group_by_smid;
    // Lanes of the TVM family are groups; the native format's leaders are warps.
    let tvm = trace.source.format != WireFormat::Ikp;
    let lanes: Vec<LaneRows<'_>> = (trace.lanes.par_iter())
        .map(|lane| LaneRows {
            lane,
            rows: super::span_rows(trace, lane),
        })
        .collect();
    w.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;

    // Metadata: one process name per pid, one thread name per row (overlap rows after the
    // lanes' rows of their pid).
    let lifetimes = trace.source.format.records_lane_lifetimes();
    let mut rows: Vec<(Row, &Lane, u32)> = Vec::new();
    for l in &lanes {
        let r = row(l.lane, by_sm);
        rows.extend(l.row_numbers(lifetimes).map(|n| {
            let tid = overlap_tid(r.tid, n);
            (Row { tid, ..r }, l.lane, n)
        }));
    }
    rows.sort_by_key(|r| r.0);
    rows.dedup_by_key(|r| r.0);
    let mut last_pid = None;
    let mut b = Vec::with_capacity(1 << 16);
    for &(r, l, n) in &rows {
        if last_pid != Some(r.pid) {
            let sep = if last_pid.is_some() { ",\n" } else { "" };
            last_pid = Some(r.pid);
            let name = escape(&process_name(l, by_sm));
            write!(b, "{sep}{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":\"{name}\"}}}}", r.pid)?;
        }
        let mut name = thread_name(l, by_sm, tvm);
        match n {
            0 => {}
            LIFETIME_ROW => name.push_str(" (lifetime)"),
            n => name.push_str(&format!(" (overlap {n})")),
        }
        let name = escape(&name);
        write!(b, ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":\"{name}\"}}}}", r.pid, r.tid)?;
    }
    w.write_all(&b)?;

    // Events: lanes formatted in parallel batches, written in lane order.
    let ctx = Ctx::new(trace, opt, tvm, lifetimes);
    let mut groups: Vec<&[LaneRows<'_>]> = Vec::new();
    let (mut start, mut acc) = (0, 0);
    for (i, l) in lanes.iter().enumerate() {
        let l = l.lane;
        acc += l.spans.len() + l.instants.len() + l.samples.len() + 1;
        if acc >= BATCH_SPANS || i + 1 == lanes.len() {
            groups.push(&lanes[start..=i]);
            (start, acc) = (i + 1, 0);
        }
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
    if !trace.async_ranges.is_empty() {
        let mut b = Vec::new();
        async_events(&mut b, trace, opt)?;
        w.write_all(&b)?;
    }
    w.write_all(b"\n]}\n")?;
    w.flush()?;
    Ok(())
}

/// The async ranges' `b` / `e` events (module docs, `# Format`).
fn async_events(b: &mut Vec<u8>, trace: &Trace, opt: &ChromeOptions) -> io::Result<()> {
    let a = &trace.async_ranges;
    let ts = |b: &mut Vec<u8>, t: u64| push_scaled_us(b, t - trace.source.time_base, opt.scale);
    for i in 0..a.len() {
        let (from, to) = (trace.lane(a.begin_lane[i]), trace.lane(a.end_lane[i]));
        let Some(on) = from.or(to) else { continue };
        let r = row(on, opt.group_by_smid);
        let name = escape(&trace.names.region(a.region[i]));
        for (ph, t) in [('b', a.begin[i]), ('e', a.end[i])] {
            write!(
                b,
                ",\n{{\"name\":\"{name}\",\"cat\":\"async\",\"ph\":\"{ph}\",\"id\":{i},\"ts\":"
            )?;
            ts(b, t);
            write!(b, ",\"pid\":{},\"tid\":{}", r.pid, r.tid)?;
            if ph == 'e' {
                b.push(b'}');
                continue;
            }
            write!(b, ",\"args\":{{\"token\":{}", a.token[i])?;
            for (key, l) in [("begin", from), ("end", to)] {
                if let Some(l) = l {
                    let (sm, warp) = (l.sm.unwrap_or(0), warp_of(l));
                    write!(
                        b,
                        ",\"{key}\":{{\"sm\":{sm},\"block\":{},\"warp\":{warp}}}",
                        l.block
                    )?;
                }
            }
            b.extend_from_slice(b"}}");
        }
    }
    Ok(())
}

/// Per-trace constants of the event formatter.
struct Ctx<'a> {
    trace: &'a Trace,
    opt: &'a ChromeOptions,
    tvm: bool,
    /// Whether spans and instants carry a payload (native and Mirage formats).
    payload: bool,
    /// Whether every lane gets a lifetime row (module docs, `# Format`).
    lifetimes: bool,
    /// `"name":"<escaped>"` per region id.
    region_names: Vec<Vec<u8>>,
    counter_names: Vec<Vec<u8>>,
}

impl<'a> Ctx<'a> {
    fn new(trace: &'a Trace, opt: &'a ChromeOptions, tvm: bool, lifetimes: bool) -> Self {
        let (region_names, counter_names) = super::name_tables(trace, |n| {
            format!("\"name\":\"{}\"", escape(n)).into_bytes()
        });
        let payload = matches!(trace.source.format, WireFormat::Ikp | WireFormat::Mirage);
        Ctx {
            trace,
            opt,
            tvm,
            payload,
            lifetimes,
            region_names,
            counter_names,
        }
    }

    #[inline]
    fn ts(&self, b: &mut Vec<u8>, t: u64) {
        push_scaled_us(b, t - self.trace.source.time_base, self.opt.scale);
    }

    /// Starts an event named `name` (`"name":"…"`): `ph` (up to `"ts":`), then time `t`.
    #[inline]
    fn head(&self, b: &mut Vec<u8>, name: &[u8], ph: &[u8], t: u64) {
        b.extend_from_slice(b",\n{");
        b.extend_from_slice(name);
        b.extend_from_slice(ph);
        self.ts(b, t);
    }

    /// The lane's lifetime on its lifetime row: an `X` event, or a `B` / `E` pair; `args`
    /// the lane's args up to its payload, which the lifetime replaces by `finalized`.
    fn lifetime(&self, b: &mut Vec<u8>, l: &Lane, r: Row, args: &str) {
        let ids = format!(
            ",\"pid\":{},\"tid\":{}",
            r.pid,
            overlap_tid(r.tid, LIFETIME_ROW)
        );
        let args = args.strip_suffix(",\"payload\":").unwrap_or(args);
        let end = l.end.max(l.start);
        let ph: &[u8] = if self.opt.emit_complete_events {
            b",\"ph\":\"X\",\"ts\":"
        } else {
            b",\"ph\":\"B\",\"ts\":"
        };
        self.head(b, b"\"name\":\"lifetime\"", ph, l.start);
        if self.opt.emit_complete_events {
            b.extend_from_slice(b",\"dur\":");
            push_scaled_us(b, end - l.start, self.opt.scale);
        }
        b.extend_from_slice(ids.as_bytes());
        b.extend_from_slice(args.as_bytes());
        b.extend_from_slice(if l.finalized {
            b",\"finalized\":true}}"
        } else {
            b",\"finalized\":false}}"
        });
        if !self.opt.emit_complete_events {
            b.extend_from_slice(b",\n{\"ph\":\"E\",\"ts\":");
            self.ts(b, end);
            b.extend_from_slice(ids.as_bytes());
            b.push(b'}');
        }
    }

    fn lanes(&self, lanes: &[LaneRows<'_>], b: &mut Vec<u8>) {
        let n: usize = lanes
            .iter()
            .map(|l| l.lane.spans.len() * 2 + l.lane.instants.len())
            .sum();
        b.reserve(n * 80 + 256);
        for l in lanes {
            self.lane(b, l);
        }
    }

    fn lane(&self, b: &mut Vec<u8>, lr: &LaneRows<'_>) {
        let l = lr.lane;
        let r = row(l, self.opt.group_by_smid);
        // `,"pid":P,"tid":T` of the lane's row and of its overlap rows, and the constant
        // part of args.
        let row_ids: Vec<Vec<u8>> = (0..lr.n_rows())
            .map(|n| format!(",\"pid\":{},\"tid\":{}", r.pid, overlap_tid(r.tid, n)).into_bytes())
            .collect();
        let row_of = |i: usize| {
            lr.rows
                .as_ref()
                .map_or(0, |v| v[i - l.spans.start] as usize)
        };
        let span_ids = |i: usize| &row_ids[row_of(i)][..];
        let args = if self.tvm {
            let sm = l.sm.map_or(String::new(), |sm| format!("\"sm\":{sm},"));
            let payload = if self.payload { ",\"payload\":" } else { "" };
            format!(
                ",\"args\":{{{sm}\"block\":{},\"group\":{}{payload}",
                l.block, l.group
            )
        } else {
            let (sm, warp) = (l.sm.unwrap_or(0), warp_of(l));
            format!(
                ",\"args\":{{\"sm\":{sm},\"block\":{},\"warp\":{warp},\"payload\":",
                l.block
            )
        };
        if self.lifetimes {
            self.lifetime(b, l, r, &args);
        }
        let s = &self.trace.spans;
        let push_args = |b: &mut Vec<u8>, payload: u32| {
            b.extend_from_slice(args.as_bytes());
            if self.payload {
                push_u64(b, payload as u64);
            }
            b.extend_from_slice(b"}}");
        };
        if self.opt.emit_complete_events {
            for i in l.spans.clone() {
                let name = &self.region_names[s.region[i] as usize];
                self.head(b, name, b",\"ph\":\"X\",\"ts\":", s.begin[i]);
                b.extend_from_slice(b",\"dur\":");
                push_scaled_us(b, s.end[i] - s.begin[i], self.opt.scale);
                b.extend_from_slice(span_ids(i));
                push_args(b, s.payload[i]);
            }
        } else {
            // B/E, per row: close the row's open spans that are not ancestors of the next
            // one. A span of the same or a greater depth, or one ending before the next
            // ends, cannot contain it (every span open at a begin has a smaller depth);
            // what stays open always contains the next span in time.
            let mut open: Vec<Vec<(u64, u16)>> = vec![Vec::new(); lr.n_rows() as usize];
            let close = |b: &mut Vec<u8>, end: u64, ids: &[u8]| {
                b.extend_from_slice(b",\n{\"ph\":\"E\",\"ts\":");
                self.ts(b, end);
                b.extend_from_slice(ids);
                b.push(b'}');
            };
            for i in l.spans.clone() {
                let (open, ids) = (&mut open[row_of(i)], span_ids(i));
                while let Some(&(end, depth)) = open.last() {
                    if depth >= s.depth[i] || end < s.end[i] {
                        close(b, end, ids);
                        open.pop();
                    } else {
                        break;
                    }
                }
                let name = &self.region_names[s.region[i] as usize];
                self.head(b, name, b",\"ph\":\"B\",\"ts\":", s.begin[i]);
                b.extend_from_slice(ids);
                push_args(b, s.payload[i]);
                open.push((s.end[i], s.depth[i]));
            }
            for (n, open) in open.iter_mut().enumerate() {
                while let Some((end, _)) = open.pop() {
                    close(b, end, &row_ids[n]);
                }
            }
        }
        let ins = &self.trace.instants;
        for i in l.instants.clone() {
            let name = &self.region_names[ins.region[i] as usize];
            self.head(b, name, b",\"ph\":\"i\",\"s\":\"t\",\"ts\":", ins.ts[i]);
            b.extend_from_slice(&row_ids[0]);
            push_args(b, ins.payload[i]);
        }
        if !l.samples.is_empty() {
            let series = escape(&thread_name(l, true, self.tvm));
            let args = format!(",\"pid\":{},\"args\":{{\"{series}\":", r.pid);
            let c = &self.trace.samples;
            for i in l.samples.clone() {
                let name = &self.counter_names[c.counter[i] as usize];
                self.head(b, name, b",\"ph\":\"C\",\"ts\":", c.ts[i]);
                b.extend_from_slice(args.as_bytes());
                push_u64(b, c.value[i] as u64);
                b.extend_from_slice(b"}}");
            }
        }
    }
}
