//! Issue #26, item 8: one rule for damaged stamps, for every format. A lane thrown far
//! from the launch by one corrupted stamp is set aside and named in every format ikp
//! reads, and the rest decodes as if that lane had never run: a yao-jz warp with a
//! flipped high bit (once a GPU wall time of 9.2e18 ns), a Proton scope whose `ts` reads
//! 10^15 us (once a kernel of 31 years), a TVM-family lane pushed beyond the bounds, a
//! native buffer decoded lane by lane, a host trace's thread. A TVM-family stamp is 32
//! bits: one corrupted stamp moves its lane by less than 2^32 ns, within the bounds, and
//! the lane is decoded with its damage counted (module docs of
//! `ikp_host::decode::set_aside`).
use ikp_host::analysis::blocks::gpu_wall;
use ikp_host::analysis::kernel::{analyze, KernelOptions};
use ikp_host::decode::{decode, decode_bytes, DecodeOptions, FormatChoice, LANE_SPAN_MAX_NS};
use ikp_host::{write_perfetto, Compression, Launch, PerfettoOptions, StreamedBuffer};
use ikp_host::{SetAsideLane, SetAsideReason, Trace};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn sample(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../samples")
        .join(name);
    std::fs::read(p).unwrap()
}

fn words(bytes: &[u8]) -> Vec<u64> {
    (bytes.chunks_exact(8))
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn with(format: FormatChoice) -> DecodeOptions {
    DecodeOptions {
        format,
        ..Default::default()
    }
}

fn perfetto(t: &Trace) {
    let mut out = Vec::new();
    let opts = PerfettoOptions {
        compression: Compression::None,
        ..Default::default()
    };
    write_perfetto(&mut out, &[Launch::new("t", t)], &opts).expect("every time fits");
}

/// Inclusive time and count of each region, by name: what `ikp summary` ranks.
fn region_totals(t: &Trace) -> BTreeMap<String, (u64, usize)> {
    let mut m = BTreeMap::new();
    for k in 0..t.spans.len() {
        let e = m
            .entry(t.names.region(t.spans.region[k]).into_owned())
            .or_insert((0, 0));
        *e = (e.0 + t.spans.dur(k), e.1 + 1);
    }
    m
}

/// Checks that `corrupt` set aside exactly the lanes `want` (id, reason) and is
/// otherwise `removed` (the capture without those lanes): the same trace, GPU wall time
/// and region totals; that the warning line names them; and that every output can be
/// written. Returns the entries.
fn set_aside_as_if_removed(
    corrupt: &Trace,
    removed: &Trace,
    want: &[(u32, SetAsideReason)],
) -> Vec<SetAsideLane> {
    let got: Vec<(u32, SetAsideReason)> = (corrupt.diagnostics.set_aside.iter())
        .map(|s| (s.lane, s.reason))
        .collect();
    assert_eq!(got, want);
    let mut t = corrupt.clone();
    let aside = std::mem::take(&mut t.diagnostics.set_aside);
    assert_eq!(&t, removed, "the rest decodes as without the lanes");
    assert_eq!(gpu_wall(corrupt), gpu_wall(removed));
    let wall = analyze(corrupt, &KernelOptions::default()).gpu_wall_ns;
    assert_eq!(wall, gpu_wall(removed));
    assert_eq!(region_totals(corrupt), region_totals(removed));
    perfetto(corrupt);
    let line = corrupt.diagnostic_counts().to_string();
    let names: Vec<String> = aside.iter().take(3).map(|s| s.track.name()).collect();
    let (n, lanes, their) = match aside.len() {
        1 => (1, "lane", "its"),
        n => (n, "lanes", "their"),
    };
    let phrase = format!(
        ", {n} {lanes} set aside, {their} stamps not of this launch: {}",
        names.join("; ")
    );
    assert!(line.contains(&phrase), "{line}");
    aside
}

// ---------------------------------------------------------------- yao-jz

/// The shipped dump: `(bytes, events word, cap)`.
fn yaojz() -> (Vec<u8>, usize, usize) {
    let b = sample("yaojz_attention.yjz");
    let w = words(&b);
    let (cap, blocks, wpb) = (w[1] >> 32, w[2] as u32 as u64, w[2] >> 32);
    let events = (24 + 4 * blocks * wpb).next_multiple_of(16) / 8;
    (b, events as usize, cap as usize)
}

fn yaojz_decode(b: &[u8]) -> Trace {
    let names = ikp_host::read_names(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../samples/yaojz_attention.names"),
    )
    .unwrap();
    let opts = DecodeOptions {
        names: Some(names),
        ..with(FormatChoice::YaoJz)
    };
    decode_bytes(b, &opts).unwrap()
}

/// `b` with warp slot `s`'s record `i` (as stored) having its stamp xored with `mask`.
fn yaojz_flip(b: &[u8], s: usize, i: usize, mask: u64) -> Vec<u8> {
    let (_, events, cap) = yaojz();
    let mut w = words(b);
    w[events + 2 * (s * cap + i)] ^= mask;
    bytes(&w)
}

/// `b` with warp slot `s` never flushed: its count 0, as if it had never run.
fn yaojz_without(b: &[u8], s: usize) -> Vec<u8> {
    let mut b = b.to_vec();
    b[24 + 4 * s..28 + 4 * s].fill(0);
    b
}

#[test]
fn a_yaojz_warp_with_a_flipped_high_stamp_bit_is_set_aside() {
    let (clean, _, _) = yaojz();
    let t0 = yaojz_decode(&clean);
    let removed = yaojz_decode(&yaojz_without(&clean, 5));
    // A record in the middle (the warp then ends 2^63 ns after it starts), the first one
    // (the warp starts 2^63 ns after the others), a record moved back 2^60 ns before
    // the others (bit 60 is set in today's ns since 1970), a bit flipped in two records.
    for (i, mask, why) in [
        (3, 1 << 63, SetAsideReason::Span),
        (0, 1 << 63, SetAsideReason::Apart),
        (0, 1 << 60, SetAsideReason::Span),
        (4, 1 << 62 | 1 << 50, SetAsideReason::Span),
    ] {
        let corrupt = yaojz_decode(&yaojz_flip(&clean, 5, i, mask));
        let s = set_aside_as_if_removed(&corrupt, &removed, &[(5, why)]);
        let orig = t0.lanes.iter().find(|l| l.id == 5).unwrap();
        assert_eq!(s[0].track, orig.track());
        assert_eq!((s[0].start_clock, s[0].end_clock), (None, None));
        assert!(gpu_wall(&corrupt) <= gpu_wall(&t0));
    }
    // A few bits flipped in two warps: both are set aside.
    let two = yaojz_flip(&yaojz_flip(&clean, 5, 3, 1 << 63), 9, 2, 1 << 61);
    let removed = yaojz_decode(&yaojz_without(&yaojz_without(&clean, 5), 9));
    let span = SetAsideReason::Span;
    set_aside_as_if_removed(&yaojz_decode(&two), &removed, &[(5, span), (9, span)]);
}

#[test]
fn a_yaojz_stamp_moved_within_the_bounds_is_decoded_and_bounded() {
    let (clean, _, _) = yaojz();
    let t0 = yaojz_decode(&clean);
    // 2^40 ns (18 min) later: a plausible stamp, which the rules cannot tell from one.
    let t = yaojz_decode(&yaojz_flip(&clean, 5, 3, 1 << 40));
    assert!(t.diagnostics.set_aside.is_empty());
    assert!(gpu_wall(&t) <= gpu_wall(&t0) + LANE_SPAN_MAX_NS);
    perfetto(&t);
}

// ---------------------------------------------------------------- Proton

fn proton_json() -> Value {
    serde_json::from_slice(&sample("proton_attn_fwd.chrome_trace")).unwrap()
}

fn proton_decode(v: &Value) -> Trace {
    decode_bytes(v.to_string().as_bytes(), &DecodeOptions::default()).unwrap()
}

/// `v` without the events of CTA `cta`'s warps `warps` (as if the trace never had them).
fn proton_without(v: &Value, cta: u32, warps: &[u32]) -> Value {
    let mut v = v.clone();
    let pid = format!(" CTA{cta}");
    v["traceEvents"].as_array_mut().unwrap().retain(|e| {
        let (p, t) = (e["pid"].as_str().unwrap(), e["tid"].as_str().unwrap());
        let warp: u32 = t["warp ".len()..t.find(" (").unwrap()].parse().unwrap();
        !(p.ends_with(&pid) && warps.contains(&warp))
    });
    v
}

#[test]
fn a_proton_scope_at_ts_1e15_us_sets_its_warp_aside() {
    let clean = proton_json();
    let ev = &clean["traceEvents"][5];
    assert_eq!(
        (ev["pid"].as_str(), ev["tid"].as_str()),
        (Some("attn_fwd Core1 CTA0"), Some("warp 1 (line 1)"))
    );
    let mut corrupt = clean.clone();
    corrupt["traceEvents"][5]["ts"] = 1e15.into();
    let t = proton_decode(&corrupt);
    let removed = proton_decode(&proton_without(&clean, 0, &[1]));
    // Lane 1: CTA 0 (4 warps per CTA), warp 1; 31 years after its first scope.
    let s = set_aside_as_if_removed(&t, &removed, &[(1, SetAsideReason::Span)]);
    let years = s[0].end.unwrap() - s[0].start;
    assert!(
        years.abs_diff(1_000_000_000_000_000_000) < 10_000,
        "{years}"
    );
    assert!(gpu_wall(&t) <= gpu_wall(&proton_decode(&clean)));
}

#[test]
fn a_proton_scope_far_before_its_cta_sets_the_cta_aside() {
    // The CTA's first scope places all its warps: one at -10^15 us throws the CTA's other
    // scopes 31 years after it. Its warp spans 31 years, the others lie apart.
    let clean = proton_json();
    let mut corrupt = clean.clone();
    corrupt["traceEvents"][5]["ts"] = (-1e15).into();
    let t = proton_decode(&corrupt);
    let removed = proton_decode(&proton_without(&clean, 0, &[0, 1, 2, 3]));
    let (span, apart) = (SetAsideReason::Span, SetAsideReason::Apart);
    let want = [(0, apart), (1, span), (2, apart), (3, apart)];
    set_aside_as_if_removed(&t, &removed, &want);
}

// ---------------------------------------------------------------- the TVM family

/// The shipped samples of the TVM family, with their formats.
const FAMILY: [(&str, FormatChoice); 3] = [
    ("attention_tvm.bin", FormatChoice::Tvm),
    ("attention_flashinfer.bin", FormatChoice::FlashInfer),
    ("mpk_mirage.bin", FormatChoice::Mirage),
];

#[test]
fn a_corrupted_tvm_family_stamp_moves_its_lane_less_than_2_32_ns() {
    for (file, format) in FAMILY {
        let clean = words(&sample(file));
        let t0 = decode(&clean, &with(format)).unwrap();
        let (groups, blocks) = ikp_device::tvm::unpack_header(clean[0]);
        let stride = (groups * blocks) as usize;
        let lane = 1usize;
        let rows = (clean.len() - 1) / stride;
        let used = (0..rows)
            .filter(|r| clean[1 + lane + r * stride] != 0)
            .count();
        // The stamp is the word's high half: its bits 31, 30 and 28, in the lane's first
        // record and in one in the middle.
        for row in [0, used / 2] {
            for bit in [63, 62, 60] {
                let mut w = clean.clone();
                w[1 + lane + row * stride] ^= 1 << bit;
                let t = decode(&w, &with(format)).unwrap();
                let what = format!("{file}, row {row}, bit {bit}");
                assert!(t.diagnostics.set_aside.is_empty(), "{what}");
                assert!(gpu_wall(&t) < gpu_wall(&t0) + (1 << 32), "{what}");
                assert_eq!(t.lanes.len(), t0.lanes.len(), "{what}");
                let wall = analyze(&t, &KernelOptions::default()).gpu_wall_ns;
                assert_eq!(wall, gpu_wall(&t), "{what}");
                perfetto(&t);
            }
        }
    }
}

/// A buffer of `format` of three one-group blocks, 8,200 records each: lanes 0 and 2 a
/// region every 100 ns; lane 1 (with `far`) one record every 2^31 - 1 ns, so that it
/// ends more than 2^44 ns after it starts: beyond the bounds, where only damage (or far
/// more than one corrupted stamp) can put a lane.
fn family_buffer(format: FormatChoice, far: bool) -> Vec<u64> {
    use ikp_device::{flashinfer, mirage, tvm};
    let (rows, stride) = (8_200u64, 3u64);
    let mut w = vec![0u64; 1 + (rows * stride) as usize];
    w[0] = tvm::header(1, 3);
    for lane in 0..stride {
        if lane == 1 && !far {
            continue;
        }
        for r in 0..rows {
            let t = if lane == 1 {
                5_000 + r * ((1 << 31) - 1)
            } else {
                5_000 + lane * 7 + r * 100
            } as u32;
            let kind = (r % 2) as u32;
            let l = lane as u32;
            w[(1 + lane + r * stride) as usize] = match format {
                FormatChoice::Tvm => tvm::pack(t, l, 1, kind),
                FormatChoice::FlashInfer => flashinfer::pack(t, 10 + l, l, 1, kind),
                _ => mirage::pack(t, l, 1, (r / 2) as u32, kind),
            };
        }
    }
    w
}

#[test]
fn a_tvm_family_lane_beyond_the_bounds_is_set_aside_as_if_it_never_ran() {
    for (_, format) in FAMILY {
        let t = decode(&family_buffer(format, true), &with(format)).unwrap();
        let removed = decode(&family_buffer(format, false), &with(format)).unwrap();
        let s = set_aside_as_if_removed(&t, &removed, &[(1, SetAsideReason::Span)]);
        assert!(
            s[0].end.unwrap() - s[0].start > LANE_SPAN_MAX_NS,
            "{format:?}"
        );
        // On one thread into a used trace (the one-pass path) too.
        let one = DecodeOptions {
            single_threaded: true,
            ..with(format)
        };
        let mut reused = removed.clone();
        ikp_host::decode_into(&family_buffer(format, true), &one, &mut reused).unwrap();
        assert_eq!(reused, t, "{format:?}");
    }
}

// ---------------------------------------------------------------- native, lane by lane

#[test]
fn a_native_buffer_decoded_lane_by_lane_sets_aside_as_in_memory() {
    let clean = ikp_device::sample::attention().unwrap().into_words();
    let h = ikp_device::Header::parse(&clean).unwrap();
    let r = h.lane_range(100);
    let mut corrupt = clean.clone();
    corrupt[r.start + ikp_device::wire::lane::START_GT as usize] ^= 1 << 62;
    let mut removed = clean;
    removed[r].fill(0);
    let whole = decode(&corrupt, &DecodeOptions::default()).unwrap();
    assert_eq!(whole.diagnostics.set_aside.len(), 1);
    let d = tempfile::tempdir().unwrap();
    let open = |name: &str, w: &[u64]| {
        let path = d.path().join(name);
        std::fs::write(&path, bytes(w)).unwrap();
        StreamedBuffer::open(&path, &DecodeOptions::default()).unwrap()
    };
    let (a, b) = (open("corrupt.ikp", &corrupt), open("removed.ikp", &removed));
    assert_eq!(a.diagnostic_counts(), whole.diagnostic_counts());
    assert_eq!(a.outline().lanes, b.outline().lanes);
    assert_eq!((a.extent(), a.time_base()), (b.extent(), b.time_base()));
    let all = 0..a.outline().lanes.len();
    let (x, y) = (
        a.decode_lanes(all.clone()).unwrap(),
        b.decode_lanes(all).unwrap(),
    );
    assert_eq!((x.lanes, x.spans), (y.lanes, y.spans));
}

// ---------------------------------------------------------------- host traces

#[test]
fn a_host_thread_with_an_event_decades_away_is_set_aside() {
    let read = |text: &str| {
        ikp_host::parse_chrome_trace(
            text.as_bytes(),
            std::path::Path::new("h.json"),
            &Default::default(),
        )
        .unwrap()
    };
    let events = |far: &str| {
        format!(
            r#"{{"baseTimeNanoseconds":1700000000000000000,"traceEvents":[
            {{"ph":"X","name":"step","pid":7,"tid":1,"ts":10,"dur":500}},
            {{"ph":"X","name":"mm","pid":7,"tid":1,"ts":20,"dur":30}},
            {{"ph":"X","name":"load","pid":7,"tid":2,"ts":15,"dur":40}},
            {{"ph":"X","name":"load","pid":7,"tid":2,"ts":{far},"dur":40}},
            {{"ph":"i","name":"mark","pid":7,"tid":3,"ts":12}},
            {{"ph":"M","name":"thread_name","pid":7,"tid":2,"args":{{"name":"loader"}}}}
            ]}}"#
        )
    };
    let clean = read(&events("60"));
    assert!(clean.set_aside.is_empty() && clean.set_aside_phrase().is_none());
    // One event's ts read as 10^15 us: 31 years after the thread's others.
    let t = read(&events("1e15"));
    assert_eq!(t.set_aside.len(), 1);
    let s = &t.set_aside[0];
    assert_eq!((s.thread.tid.as_str(), s.events), ("2", 2));
    assert_eq!(s.thread.thread_name.as_deref(), Some("loader"));
    assert_eq!(s.reason, SetAsideReason::Span);
    assert_eq!(
        t.set_aside_phrase().unwrap(),
        "1 thread set aside, its stamps not of this trace: pid 7 · tid 2 (its end stamp is \
         implausibly far from its start)"
    );
    // The others are as read, the thread and its events gone.
    assert_eq!(t.threads.len(), 2);
    assert!(t.threads.iter().all(|th| th.tid != "2"));
    let names: Vec<&str> = t.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["step", "mm", "mark"]);
    assert!(t.events.iter().all(|e| t.threads[e.thread].tid != "2"));
}
