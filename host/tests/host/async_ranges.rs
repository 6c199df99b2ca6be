//! Async ranges end to end: a small native buffer whose producer lane begins transfers
//! that consumer lanes (of its block and of another) end, decoded, filtered, streamed,
//! linked and written (goldens of the Chrome JSON, summary JSON and Perfetto trace).
//! `IKP_BLESS=1 cargo test -p ikp-host --test host async_ranges::` rewrites the goldens.
use crate::golden_check::golden;

use ikp_device::encoder::BufferWriter;
use ikp_device::Layout;
use ikp_host::analysis::links::{async_links, links, SignalEvent};
use ikp_host::decode::{decode, DecodeOptions};
use ikp_host::write::{self, ChromeOptions};
use ikp_host::TraceStats;
use ikp_host::{
    write_perfetto, write_perfetto_streamed, BlockFilter, Compression, Launch, PerfettoOptions,
    StreamedBuffer,
};
use ikp_host::{Trace, Unpaired};
use perfetto_protos::trace::Trace as PTrace;
use perfetto_protos::track_event::track_event::Type;
use protobuf::Message;
use serde_json::Value;

const T0: u64 = 1_000_000;
const MAINLOOP: u32 = 0;
const TMA: u32 = 1;
const WAIT: u32 = 2;

/// Two blocks of two lanes. Lane 0 (block 0) begins transfers of `tma` (async): token 7
/// twice (the token reused while the first is in flight), token 8, token 9 (never ends).
/// Lane 1 (block 0) waits and ends both token 7s, then an end of token 5 with no begin.
/// Lane 2 (block 1) ends token 8 (across blocks) and runs a range of its own, token 3,
/// beside a plain `wait` region whose payloads are the tokens' numbers. Lane 3 never
/// ran. With `async_tma` false the header declares no async region.
fn buffer(async_tma: bool) -> Vec<u64> {
    let layout = Layout {
        grid: [2, 1, 1],
        groups_per_block: 2,
        records_per_lane: 16,
        regions: vec!["mainloop".into(), "tma".into(), "wait".into()],
        async_regions: if async_tma { vec![TMA] } else { vec![] },
        ..Layout::default()
    };
    let mut b = BufferWriter::new(layout).unwrap();
    b.lane(0)
        .init(2, 0, 0, T0, 0)
        .begin(MAINLOOP, 0, T0 + 10)
        .range_begin(TMA, 7, T0 + 20)
        .range_begin(TMA, 7, T0 + 30)
        .range_begin(TMA, 8, T0 + 40)
        .range_begin(TMA, 9, T0 + 45)
        .end(MAINLOOP, 0, T0 + 200)
        .finalize(T0 + 210, 0);
    b.lane(1)
        .init(2, 4, 0, T0 + 5, 0)
        .begin(WAIT, 7, T0 + 25)
        .end(WAIT, 7, T0 + 58)
        .range_end(TMA, 7, T0 + 60)
        .begin(WAIT, 7, T0 + 70)
        .end(WAIT, 7, T0 + 88)
        .range_end(TMA, 7, T0 + 90)
        .range_end(TMA, 5, T0 + 95)
        .finalize(T0 + 220, 0);
    b.lane(2)
        .init(7, 0, 0, T0 + 8, 0)
        .begin(WAIT, 8, T0 + 95)
        .end(WAIT, 8, T0 + 99)
        .range_end(TMA, 8, T0 + 100)
        .range_begin(TMA, 3, T0 + 110)
        .range_end(TMA, 3, T0 + 120)
        .finalize(T0 + 230, 0);
    b.into_words()
}

fn dec(words: &[u64], blocks: &str) -> Trace {
    let opts = DecodeOptions {
        blocks: BlockFilter::parse(blocks).unwrap(),
        ..Default::default()
    };
    decode(words, &opts).unwrap()
}

/// `(region, token, begin - T0, end - T0, begin lane, end lane)` of every range.
fn ranges(t: &Trace) -> Vec<(u16, u32, u64, u64, u32, u32)> {
    let a = &t.async_ranges;
    (0..a.len())
        .map(|i| {
            let (b, e) = (a.begin[i] - T0, a.end[i] - T0);
            (
                a.region[i],
                a.token[i],
                b,
                e,
                a.begin_lane[i],
                a.end_lane[i],
            )
        })
        .collect()
}

fn unpaired(v: &[Unpaired]) -> Vec<(u32, u16, u32, u64)> {
    v.iter()
        .map(|u| (u.lane, u.region, u.payload, u.ts - T0))
        .collect()
}

#[test]
fn ranges_pair_across_lanes_fifo_by_token_and_leftovers_are_counted() {
    let t = dec(&buffer(true), "");
    let tma = TMA as u16;
    assert_eq!(
        ranges(&t),
        [
            (tma, 7, 20, 60, 0, 1),
            (tma, 7, 30, 90, 0, 1),
            (tma, 8, 40, 100, 0, 2),
            (tma, 3, 110, 120, 2, 2),
        ]
    );
    let d = &t.diagnostics;
    assert_eq!(unpaired(&d.async_unmatched_begin), [(0, tma, 9, 45)]);
    assert_eq!(unpaired(&d.async_unmatched_end), [(1, tma, 5, 95)]);
    // Plain regions pair in their lanes as before, whatever the tokens' numbers.
    assert!(d.unmatched_begin.is_empty() && d.unmatched_end.is_empty());
    let spans: Vec<(u32, u16, u64, u64)> = (0..t.spans.len())
        .map(|i| {
            let s = &t.spans;
            (s.lane[i], s.region[i], s.begin[i] - T0, s.end[i] - T0)
        })
        .collect();
    let (m, w) = (MAINLOOP as u16, WAIT as u16);
    assert_eq!(
        spans,
        [
            (0, m, 10, 200),
            (1, w, 25, 58),
            (1, w, 70, 88),
            (2, w, 95, 99)
        ]
    );
    // The span slots the counting pass gave async begins are closed up.
    let per_lane: Vec<usize> = t.lanes.iter().map(|l| l.spans.len()).collect();
    assert_eq!(per_lane, [1, 2, 1]);
    let c = t.diagnostic_counts();
    assert_eq!((c.async_unmatched_begin, c.async_unmatched_end), (1, 1));
    assert!(!c.is_clean());
    let line = c.to_string();
    assert!(
        line.ends_with("1 async begins never ended, 1 async ends without a begin"),
        "{line}"
    );
}

#[test]
fn without_the_async_bit_the_same_records_pair_inside_their_lanes() {
    let t = dec(&buffer(false), "");
    assert!(t.async_ranges.is_empty());
    let d = &t.diagnostics;
    assert!(d.async_unmatched_begin.is_empty() && d.async_unmatched_end.is_empty());
    // Lane 0's four begins of tma never end in lane 0; lane 1's three ends have no begin
    // there; lane 2's token 3 pairs, its end of token 8 does not.
    let tma = TMA as u16;
    assert_eq!(
        d.unmatched_begin.iter().filter(|u| u.region == tma).count(),
        4
    );
    assert_eq!(
        d.unmatched_end.iter().filter(|u| u.region == tma).count(),
        4
    );
    let tma_spans = t.spans.region.iter().filter(|&&r| r == tma).count();
    assert_eq!(tma_spans, 1);
    assert_eq!(
        t.diagnostic_counts().to_string().matches("async").count(),
        0
    );
}

#[test]
fn a_block_filter_keeps_the_ranges_with_either_lane_in_its_blocks() {
    let words = buffer(true);
    let whole = dec(&words, "");
    let tma = TMA as u16;
    let b1 = dec(&words, "1");
    assert_eq!(
        ranges(&b1),
        [(tma, 8, 40, 100, 0, 2), (tma, 3, 110, 120, 2, 2)]
    );
    assert!(b1.diagnostics.async_unmatched_begin.is_empty());
    assert!(b1.diagnostics.async_unmatched_end.is_empty());
    assert_eq!(b1, whole.filter_blocks(&BlockFilter::new(vec![1])));
    let b0 = dec(&words, "0");
    assert_eq!(ranges(&b0), ranges(&whole)[..3]);
    assert_eq!(b0.diagnostic_counts().async_unmatched_begin, 1);
    assert_eq!(b0.diagnostic_counts().async_unmatched_end, 1);
}

#[test]
fn a_streamed_buffer_pairs_the_ranges_of_the_whole_launch() {
    let words = buffer(true);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("async.ikp");
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&path, bytes).unwrap();
    for f in ["", "0", "1", "5"] {
        let opts = DecodeOptions {
            blocks: BlockFilter::parse(f).unwrap(),
            ..Default::default()
        };
        let whole = decode(&words, &opts).unwrap();
        let buf = StreamedBuffer::open(&path, &opts).unwrap();
        assert_eq!(buf.async_ranges(), &whole.async_ranges, "blocks {f:?}");
        assert_eq!(buf.diagnostic_counts(), whole.diagnostic_counts(), "{f:?}");
        // A run decoded alone holds no range: the buffer has the launch's.
        let n = buf.outline().lanes.len();
        assert!(buf.decode_lanes(0..n).unwrap().async_ranges.is_empty());
        // The streamed Perfetto trace has the same async slices as the in-memory one.
        let opt = plain();
        let mut mem = Vec::new();
        write_perfetto(&mut mem, &[Launch::new("async.ikp", &whole)], &opt).unwrap();
        let mut streamed = Vec::new();
        let st = write_perfetto_streamed(&mut streamed, "async.ikp", &buf, &opt).unwrap();
        assert_eq!(st.async_slices, whole.async_ranges.len() as u64);
        // Streamed, the slices are the same, but start no flow.
        let no_flows = |v: Vec<(String, String, u64, u64, u64, usize)>| -> Vec<_> {
            v.into_iter().map(|s| (s.0, s.1, s.2, s.3, s.4)).collect()
        };
        let (a, b) = (async_slices(&streamed), async_slices(&mem));
        assert!(a.iter().all(|s| s.5 == 0));
        assert_eq!(no_flows(a), no_flows(b), "{f:?}");
    }
}

#[test]
fn ranges_across_lanes_are_links_to_the_consumer_s_region() {
    let t = dec(&buffer(true), "");
    let l = async_links(&t);
    // Ranges 0 and 1 end in lane 1 after its waits; range 2 in lane 2 (block 1) after its
    // wait; range 3 begins and ends in lane 2: no link.
    let got: Vec<(u32, u32, u32, usize, u64, u64, SignalEvent)> = l
        .iter()
        .map(|l| {
            let (f, t) = (l.from_ts - T0, l.to_ts - T0);
            (l.block, l.from_lane, l.to_lane, l.to_span, f, t, l.from)
        })
        .collect();
    assert_eq!(
        got,
        [
            (0, 0, 1, 1, 20, 60, SignalEvent::Async(0)),
            (0, 0, 1, 2, 30, 90, SignalEvent::Async(1)),
            (1, 0, 2, 3, 40, 100, SignalEvent::Async(2)),
        ]
    );
    assert_eq!(
        links(&t),
        l,
        "no naming convention here: the async links alone"
    );
    assert_eq!(SignalEvent::Async(2).region(&t), TMA as u16);
    // The critical path still walks (and stops at the block's edge).
    let path = ikp_host::analysis::links::critical_path(&t, 0, &l);
    assert!(!path.is_empty());
    // A filter that leaves the beginning lane out leaves the range unlinked.
    assert!(async_links(&dec(&buffer(true), "1")).is_empty());
}

fn plain() -> PerfettoOptions {
    PerfettoOptions {
        compression: Compression::None,
        ..Default::default()
    }
}

/// `(track name, slice name, begin, end, token, flows started)` of every slice of the
/// async tracks, in file order.
fn async_slices(bytes: &[u8]) -> Vec<(String, String, u64, u64, u64, usize)> {
    let p = PTrace::parse_from_bytes(bytes).unwrap();
    let mut names = std::collections::HashMap::new();
    for pk in &p.packet {
        if pk.has_track_descriptor() {
            let d = pk.track_descriptor();
            names.insert(d.uuid(), d.name().to_string());
        }
    }
    let mut out = Vec::new();
    let mut open: std::collections::HashMap<u64, usize> = Default::default();
    for pk in &p.packet {
        if !pk.has_track_event() {
            continue;
        }
        let te = pk.track_event();
        let track = names.get(&te.track_uuid()).cloned().unwrap_or_default();
        if !track.starts_with("async · ") {
            continue;
        }
        match te.type_() {
            Type::TYPE_SLICE_BEGIN => {
                let token = (te.debug_annotations.iter())
                    .find(|a| a.name() == "token")
                    .map_or(u64::MAX, |a| a.uint_value());
                open.insert(te.track_uuid(), out.len());
                let name = te.name().to_string();
                out.push((track, name, pk.timestamp(), 0, token, te.flow_ids.len()));
            }
            Type::TYPE_SLICE_END => out[open[&te.track_uuid()]].3 = pk.timestamp(),
            _ => {}
        }
    }
    out
}

#[test]
fn perfetto_draws_ranges_on_async_tracks_with_flows_to_the_waits() {
    let t = dec(&buffer(true), "");
    let mut bytes = Vec::new();
    let stats = write_perfetto(&mut bytes, &[Launch::new("async.ikp", &t)], &plain()).unwrap();
    golden("async_ranges.pftrace", &bytes);
    let s = async_slices(&bytes);
    // Perfetto times are relative to the launch's time base (the first lane's start).
    let at = |ns: u64| T0 + ns - t.source.time_base;
    let rel: Vec<(&str, u64, u64, u64, usize)> = s
        .iter()
        .map(|(tr, _, b, e, tok, f)| (tr.as_str(), *b, *e, *tok, *f))
        .collect();
    // Token 7's two transfers and token 8's overlap: rows 0, 1 and 2; token 3's range
    // (no link: one lane) goes back to row 0.
    assert_eq!(
        rel,
        [
            ("async · tma", at(20), at(60), 7, 1),
            ("async · tma (overlap 1)", at(30), at(90), 7, 1),
            ("async · tma (overlap 2)", at(40), at(100), 8, 1),
            ("async · tma", at(110), at(120), 3, 0),
        ]
    );
    assert_eq!((stats.async_slices, stats.flows), (4, 3));
    // Each flow that a range starts ends in a lane (at the end of the wait it links):
    // ids 2^62 + k + 1 for ranges 0, 1 and 2.
    let p = PTrace::parse_from_bytes(&bytes).unwrap();
    let events = || (p.packet.iter()).filter(|pk| pk.has_track_event());
    let mut started: Vec<u64> = events()
        .flat_map(|pk| pk.track_event().flow_ids.clone())
        .collect();
    let mut ended: Vec<u64> = events()
        .flat_map(|pk| pk.track_event().terminating_flow_ids.clone())
        .collect();
    started.sort_unstable();
    ended.sort_unstable();
    assert_eq!(started, [1, 2, 3].map(|k| (1u64 << 62) + k));
    assert_eq!(ended, started);
}

#[test]
fn chrome_json_and_summary_hold_the_ranges() {
    let t = dec(&buffer(true), "");
    let mut doc = Vec::new();
    write::chrome::write_chrome(&mut doc, &t, &ChromeOptions::default()).unwrap();
    let opt = Default::default();
    golden("async_ranges_chrome.json", &doc);
    let v: Value = serde_json::from_slice(&doc).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    let asyncs: Vec<&Value> = ev.iter().filter(|e| e["cat"] == "async").collect();
    assert_eq!(asyncs.len(), 2 * t.async_ranges.len());
    for (k, pair) in asyncs.chunks(2).enumerate() {
        let (b, e) = (pair[0], pair[1]);
        assert_eq!((b["ph"].as_str(), e["ph"].as_str()), (Some("b"), Some("e")));
        assert_eq!(
            (b["id"].as_u64(), e["id"].as_u64()),
            (Some(k as u64), Some(k as u64))
        );
        assert_eq!((&b["pid"], &b["tid"]), (&e["pid"], &e["tid"]));
        assert_eq!(b["name"], "tma");
        assert_eq!(
            b["args"]["token"].as_u64(),
            Some(t.async_ranges.token[k] as u64)
        );
        let us = |ns: u64| (ns - t.source.time_base) as f64 / 1e3;
        assert!((b["ts"].as_f64().unwrap() - us(t.async_ranges.begin[k])).abs() < 1e-9);
        assert!((e["ts"].as_f64().unwrap() - us(t.async_ranges.end[k])).abs() < 1e-9);
    }
    // Range 2 ends in block 1: its end lane is named in args.
    assert_eq!(asyncs[4]["args"]["end"]["block"].as_u64(), Some(1));

    let mut doc = Vec::new();
    write::summary::write_summary(
        &mut doc,
        &write::summary::summarize(&TraceStats::of(&t), &opt, "a.json"),
    )
    .unwrap();
    golden("async_ranges_summary.json", &doc);
    let v: Value = serde_json::from_slice(&doc).unwrap();
    let a = &v["async_ranges"];
    assert_eq!(a["count"].as_u64(), Some(4));
    assert_eq!(
        (a["unmatched_begin"].as_u64(), a["unmatched_end"].as_u64()),
        (Some(1), Some(1))
    );
    let r = &a["regions"][0];
    assert_eq!(r["name"], "tma");
    // 40, 60, 60 and 10 ns.
    let f = |k: &str| r[k].as_f64().unwrap();
    assert_eq!(
        (f("total_dur"), f("mean_dur"), f("min_dur"), f("max_dur")),
        (170.0, 42.5, 10.0, 60.0)
    );
    // Async ranges are in no region entry: mainloop and wait only.
    let names: Vec<&str> = (v["regions"].as_array().unwrap().iter())
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mainloop", "wait"]);
    // A buffer without async ranges has no key at all.
    let plain = dec(&buffer(false), "");
    let s = serde_json::to_value(write::summary::summarize(
        &TraceStats::of(&plain),
        &opt,
        "p.json",
    ))
    .unwrap();
    assert!(s.get("async_ranges").is_none());
}

#[test]
fn the_summary_table_counts_the_ranges_after_the_diagnostics() {
    let t = dec(&buffer(true), "");
    let mut out = Vec::new();
    write::table::write_table(&mut out, &TraceStats::of(&t), &Default::default()).unwrap();
    let text = String::from_utf8(out).unwrap();
    let tail: Vec<&str> = text.lines().rev().take(2).collect();
    assert_eq!(
        tail,
        [
            "  async tma: 4 ranges, total 170 ns, mean 42 ns, max 60 ns",
            "4 async ranges; 1 async begin never ended, 1 async end without a begin",
        ]
    );
    let plain = dec(&buffer(false), "");
    let mut out = Vec::new();
    write::table::write_table(&mut out, &TraceStats::of(&plain), &Default::default()).unwrap();
    assert!(!String::from_utf8(out).unwrap().contains("async"));
}

#[test]
fn the_html_report_tables_the_ranges_as_the_summary_counts_them() {
    use ikp_host::report::{prepare, write_html, ReportOptions};
    let html = |t: &Trace| {
        let mut out = Vec::new();
        let opts = ReportOptions::default();
        write_html(&mut out, &prepare(&[Launch::new("a.ikp", t)], &opts), &opts).unwrap();
        String::from_utf8(out).unwrap()
    };
    let page = html(&dec(&buffer(true), ""));
    let table = &page[page.find("id=\"async-0\"").expect("async table")..];
    let table = &table[..table.find("</table>").unwrap()];
    // 40, 60, 60 and 10 ns; token 9 never ends, token 5's end has no begin.
    let row = "<tr><td>tma</td><td>4</td><td>170 ns</td><td>42 ns</td><td>10 ns</td><td>60 ns</td><td>1</td><td>1</td></tr>";
    assert!(table.contains(row), "{table}");
    assert!(page.contains("4 ranges; 1 begins never ended, 1 ends without a begin"));
    assert!(!html(&dec(&buffer(false), "")).contains("Async ranges"));
}

/// A buffer large enough to be walked in parallel chunks: 64 lanes of 16 Ki records,
/// each lane beginning transfers that the next lane (wrapping) ends, with tokens reused.
#[test]
fn parallel_chunks_pair_as_one_thread_does() {
    let (lanes, per) = (64u32, 1u32 << 14);
    let layout = Layout {
        grid: [lanes / 2, 1, 1],
        groups_per_block: 2,
        records_per_lane: per,
        regions: vec!["tma".into()],
        async_regions: vec![0],
        ..Layout::default()
    };
    let mut b = BufferWriter::new(layout).unwrap();
    for l in 0..lanes {
        let mut w = b.lane(l as u64);
        w.init(l, 0, 0, T0, 0);
        // Begins for the next lane, ends of the previous lane's, interleaved in time.
        for k in 0..per / 2 {
            let t = T0 + 10 * k as u64;
            w.range_begin(0, k % 97, t + l as u64 % 3);
            w.range_end(0, k % 97, t + 5);
        }
        w.finalize(T0 + 10 * per as u64, 0);
    }
    let words = b.into_words();
    let one = decode(
        &words,
        &DecodeOptions {
            single_threaded: true,
            ..Default::default()
        },
    )
    .unwrap();
    let many = decode(&words, &DecodeOptions::default()).unwrap();
    assert_eq!(one.async_ranges, many.async_ranges);
    assert_eq!(one.diagnostics, many.diagnostics);
    let n = (lanes * per / 2) as usize;
    let a = &one.async_ranges;
    let d = &one.diagnostics;
    assert_eq!(a.len() + d.async_unmatched_begin.len(), n);
    assert_eq!(a.len() + d.async_unmatched_end.len(), n);
    assert!(a.begin.windows(2).all(|w| w[0] <= w[1]), "sorted by begin");
    assert!((0..a.len()).all(|i| a.end[i] >= a.begin[i]));
}

/// A range from another block that ends in a wait begun before it: the block's critical
/// path ignores the link (it stays in its block) and walks back through its own lane.
#[test]
fn the_critical_path_ignores_a_range_from_another_block() {
    let layout = Layout {
        grid: [2, 1, 1],
        groups_per_block: 1,
        regions: vec!["tma".into(), "prep".into(), "wait".into()],
        async_regions: vec![0],
        ..Layout::default()
    };
    let mut b = BufferWriter::new(layout).unwrap();
    b.lane(0)
        .init(0, 0, 0, T0, 0)
        .range_begin(0, 1, T0 + 50)
        .finalize(T0 + 100, 0);
    b.lane(1)
        .init(1, 0, 0, T0, 0)
        .begin(1, 0, T0)
        .end(1, 0, T0 + 5)
        .begin(2, 1, T0 + 10)
        .end(2, 1, T0 + 60)
        .range_end(0, 1, T0 + 61)
        .finalize(T0 + 100, 0);
    let t = dec(&b.into_words(), "");
    let l = links(&t);
    assert_eq!(l.len(), 1);
    assert_eq!((l[0].block, l[0].from_lane, l[0].to_span), (1, 0, 1));
    let path = ikp_host::analysis::links::critical_path(&t, 1, &l);
    assert_eq!(path, [0, 1], "prep then wait, in lane 1");
}

/// Clock mode: the async walk converts cycles to ns as the plain walk does (each lane
/// on its own ratio here: 2 cycles per ns).
#[test]
fn clock_mode_ranges_are_in_ns() {
    use ikp_device::wire::lane_flags::CLOCK;
    let layout = Layout {
        groups_per_block: 2,
        timer: ikp_device::TimerMode::Clock,
        regions: vec!["tma".into()],
        async_regions: vec![0],
        ..Layout::default()
    };
    let mut b = BufferWriter::new(layout).unwrap();
    let ms = 1_000_000u64;
    b.lane(0)
        .init(0, 0, CLOCK, T0, 10_000)
        .range_begin(0, 1, 10_000 + 1_000)
        .finalize(T0 + 2 * ms, 10_000 + 4 * ms);
    b.lane(1)
        .init(0, 4, CLOCK, T0, 50_000)
        .range_end(0, 1, 50_000 + 3_000)
        .finalize(T0 + 2 * ms, 50_000 + 4 * ms);
    let t = dec(&b.into_words(), "");
    assert_eq!(ranges(&t), [(0, 1, 500, 1_500, 0, 1)]);
}

/// With the beginning lane's block filtered out, a range's Chrome events sit on the
/// ending lane's row, and `args` name only that lane.
#[test]
fn chrome_events_of_a_range_whose_begin_lane_is_filtered_out() {
    let t = dec(&buffer(true), "1");
    let mut doc = Vec::new();
    write::chrome::write_chrome(&mut doc, &t, &ChromeOptions::default()).unwrap();
    let v: Value = serde_json::from_slice(&doc).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    let b: Vec<&Value> = (ev.iter())
        .filter(|e| e["cat"] == "async" && e["ph"] == "b")
        .collect();
    assert_eq!(b.len(), 2);
    // Range 0 of this trace: token 8, begun in block 0 (left out), ended in lane 2 (SM 7).
    assert_eq!(
        (b[0]["args"]["token"].as_u64(), b[0]["pid"].as_u64()),
        (Some(8), Some(7))
    );
    assert!(b[0]["args"].get("begin").is_none());
    assert_eq!(b[0]["args"]["end"]["block"].as_u64(), Some(1));
}
