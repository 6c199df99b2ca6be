//! The formats of the TVM family beside the native one: FlashInfer's SM ids and Mirage's
//! event numbers decoded into the model, their header and record checks, and
//! auto-detection on every pair of formats (each buffer fits its own format alone, a
//! forced wrong format fails on the first word that disagrees, naming the format, and
//! buffers that fit several formats are refused with the list); and the shipped samples of
//! the family are what the peers' own packing writes (`peers/`: encoders re-implemented
//! from the peers' sources, sharing no constant with ikp).
use ikp_device::{flashinfer as fi, mirage, sample, tvm};
use ikp_host::decode::{self, decode, DecodeError, DecodeOptions, FormatChoice};
use ikp_host::{Trace, WireFormat};

use crate::peers;

const FORMATS: [WireFormat; 6] = [
    WireFormat::Ikp,
    WireFormat::Tvm,
    WireFormat::FlashInfer,
    WireFormat::Mirage,
    WireFormat::YaoJz,
    WireFormat::Proton,
];

fn forced(words: &[u64], f: WireFormat) -> Result<Trace, DecodeError> {
    let opts = DecodeOptions {
        format: f.into(),
        ..Default::default()
    };
    decode(words, &opts)
}

/// A buffer of each format: the shipped samples.
fn buffers() -> Vec<(WireFormat, Vec<u64>)> {
    vec![
        (WireFormat::Ikp, sample::attention().unwrap().into_words()),
        (WireFormat::Tvm, shipped("attention_tvm.bin")),
        (WireFormat::FlashInfer, shipped("attention_flashinfer.bin")),
        (WireFormat::Mirage, shipped("mpk_mirage.bin")),
        (WireFormat::YaoJz, shipped("yaojz_attention.yjz")),
        (WireFormat::Proton, shipped("proton_attn_fwd.chrome_trace")),
    ]
}

/// A shipped sample's bytes as words (text padded with zeros to a whole word, as a caller
/// holding a Proton trace in a word buffer does).
fn shipped(name: &str) -> Vec<u64> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../samples")
        .join(name);
    let mut b = std::fs::read(p).unwrap();
    b.resize(b.len().div_ceil(8) * 8, 0);
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The formats a buffer fits.
fn fits(words: &[u64]) -> Vec<WireFormat> {
    (decode::candidate_formats(words).into_iter())
        .filter(|(_, r)| r.is_ok())
        .map(|(f, _)| f)
        .collect()
}

/// Slots of `blocks * groups` lanes, each lane's records in its column.
fn slots(groups: u32, blocks: u32, lanes: &[Vec<u64>]) -> Vec<u64> {
    let mut s = tvm::Slots::new(groups, blocks);
    for (l, recs) in lanes.iter().enumerate() {
        for &r in recs {
            s.push(l as u32, r);
        }
    }
    s.into_words()
}

#[test]
fn every_format_fits_alone_and_every_wrong_choice_fails_on_a_named_word() {
    let dir = tempfile::tempdir().unwrap();
    for (f, words) in buffers() {
        assert_eq!(fits(&words), [f], "{f}");
        let t = decode(&words, &DecodeOptions::default()).unwrap();
        assert_eq!(t.source.format, f);
        assert!(!t.spans.is_empty());
        // The file-based look agrees with the in-memory one.
        let p = dir.path().join(format!("{}.bin", f.name()));
        std::fs::write(&p, bytemuck_bytes(&words)).unwrap();
        assert_eq!(
            decode::detect_file(&p, FormatChoice::Auto).unwrap(),
            f,
            "{f}"
        );
        for other in FORMATS.into_iter().filter(|&o| o != f) {
            let e = forced(&words, other)
                .err()
                .unwrap_or_else(|| panic!("{f} buffer decoded as {other}"));
            let msg = e.to_string();
            // Where the buffer disagrees, after the name of the format chosen: the native
            // header, slot 0, or a record's slot.
            let named = match other {
                WireFormat::Ikp => msg.starts_with("ikp header: "),
                WireFormat::YaoJz => msg.starts_with("yao-jz ring dump: "),
                WireFormat::Proton => msg.starts_with("Proton trace: "),
                _ => {
                    msg.starts_with(&format!("{other}-format header (slot 0 = "))
                        || (msg.starts_with(&format!("{other} format: slot "))
                            && msg.contains(": record 0x"))
                }
            };
            assert!(named, "{f} as {other}: {msg}");
            // And the misfit auto-detection reports says the same.
            let why = decode::candidate_formats(&words)
                .into_iter()
                .find(|(g, _)| *g == other)
                .unwrap()
                .1
                .unwrap_err();
            assert!(!why.is_empty());
        }
    }
}

fn bytemuck_bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Every pair of formats of the family that one buffer can fit, and the three together,
/// are refused with the list; the native format shares no buffer with the others (its
/// magic is no usable slot 0 of theirs).
///
/// TVM and Mirage never fit without FlashInfer: for a lane `L` with records, TVM needs
/// bits 12..32 to be `L` and Mirage bits 11..19, so bits 12..19 hold both `L` and `L >> 1`,
/// so `L = 0`, the block-0 lane FlashInfer also accepts (and neither writes type 3, has
/// more than 4096 blocks or lets a lane's bits 24..32 vary).
#[test]
fn buffers_that_fit_several_formats_are_refused_with_the_list() {
    let tvm_rec = |t, l, e, k| tvm::pack(t, l, e, k);
    // One lane, no finalize, event ids below 512: all three.
    let one = slots(1, 1, &[vec![tvm_rec(10, 0, 1, 0), tvm_rec(20, 0, 1, 1)]]);
    // Two blocks of one group, no finalize: TVM, or FlashInfer with both blocks on SM 0.
    let two = slots(
        1,
        2,
        &[
            vec![tvm_rec(10, 0, 1, 0), tvm_rec(20, 0, 1, 1)],
            vec![tvm_rec(11, 1, 1, 0), tvm_rec(21, 1, 1, 1)],
        ],
    );
    // One block on SM 1, whose bits 24..32 read as Mirage's event number 32 (bits 12..19
    // are 0): FlashInfer or Mirage, not TVM (its lane field would be 4096).
    let fm = slots(
        1,
        1,
        &[vec![
            fi::pack(10, 1, 0, 2, fi::BEGIN),
            fi::pack(20, 1, 0, 2, fi::END),
        ]],
    );
    use WireFormat::*;
    for (words, want) in [
        (&one, vec![Tvm, FlashInfer, Mirage]),
        (&two, vec![Tvm, FlashInfer]),
        (&fm, vec![FlashInfer, Mirage]),
    ] {
        assert_eq!(fits(words), want);
        let e = decode(words, &DecodeOptions::default()).unwrap_err();
        assert!(matches!(&e, DecodeError::Ambiguous(v) if *v == want), "{e}");
        // Each candidate decodes when chosen, into spans at the same times (their other
        // fields may differ: Mirage reads FlashInfer's SM as an event number).
        let times: Vec<_> = want
            .iter()
            .map(|&f| {
                let s = forced(words, f).unwrap().spans;
                (s.begin, s.end)
            })
            .collect();
        assert!(times.windows(2).all(|p| p[0] == p[1]));
        assert!(!times[0].0.is_empty());
    }
    let e = decode(&one, &DecodeOptions::default())
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "the buffer fits 3 formats: TVM, FlashInfer and Mirage MPK; choose one explicitly"
    );
    // A TVM finalize in the probe rules out the formats that have none: a TVM buffer of
    // one group per block is TVM's alone once its lanes finalize.
    let fin = slots(
        1,
        2,
        &[
            vec![tvm_rec(10, 0, 1, 0), tvm_rec(30, 0, 0, tvm::FINALIZE)],
            vec![tvm_rec(11, 1, 1, 0), tvm_rec(31, 1, 0, tvm::FINALIZE)],
        ],
    );
    assert_eq!(fits(&fin), [Tvm]);
}

/// A finalize far from the head is found in the probe's tail; without it the buffer is
/// ambiguous.
#[test]
fn the_probe_reads_the_records_before_the_trailing_empty_slots() {
    let rows = decode::PROBE_HEAD_WORDS / 2 + 100;
    let lane = |l: u32, fin: bool| -> Vec<u64> {
        let mut v: Vec<u64> = (0..rows as u32)
            .map(|k| tvm::pack(100 + k, l, 1, k % 2))
            .collect();
        if fin {
            v.push(tvm::pack(100 + rows as u32, l, 0, tvm::FINALIZE));
        }
        v
    };
    let mut with = slots(1, 2, &[lane(0, true), lane(1, true)]);
    // Room for more records than were written: trailing empty slots.
    with.extend(std::iter::repeat_n(0, 5000));
    assert_eq!(fits(&with), [WireFormat::Tvm]);
    let without = slots(1, 2, &[lane(0, false), lane(1, false)]);
    assert_eq!(fits(&without), [WireFormat::Tvm, WireFormat::FlashInfer]);
}

#[test]
fn a_buffer_of_no_format_says_why_for_each() {
    let words = [
        1u64 << 32 | 2,
        tvm::pack(1, 0, 0, 0),
        tvm::pack(1, 9, 0, 0) | 1 << 11,
    ];
    let e = decode(&words, &DecodeOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("unrecognized buffer: it fits none of the formats ikp reads: ikp: word 0 is 0x0000000100000002, not the ikp magic; TVM: slot 2: record "),
        "{e}"
    );
    for part in [
        "(lane id out of range)",
        "; FlashInfer: slot 2: record ",
        "names block 9, but the layout",
        "; Mirage MPK: slot 2: record ",
    ] {
        assert!(e.contains(part), "{part:?} in {e}");
    }
}

#[test]
fn flashinfer_lanes_carry_their_sm_and_group_by_it() {
    let words = sample::attention_flashinfer(8, 3);
    let t = forced(&words, WireFormat::FlashInfer).unwrap();
    assert_eq!((t.source.grid, t.source.groups_per_block), ([8, 1, 1], 3));
    assert_eq!(t.lanes.len(), 24);
    for l in &t.lanes {
        assert_eq!(l.sm, Some(sample::sm_of(l.block)), "lane {}", l.id);
        assert!(!l.finalized);
    }
    // No finalize in the format: no lane is reported unfinalized.
    assert_eq!(t.diagnostics.unfinalized_lanes, 0);
    assert!(
        t.diagnostic_counts().is_clean(),
        "{}",
        t.diagnostic_counts()
    );
    // The SM figures are available: two blocks per SM.
    let view = ikp_host::analysis::blocks::BlockView::new(&t, &Default::default());
    let im = ikp_host::analysis::imbalance::imbalance(&view);
    let sms = im.sms.expect("SM ids");
    assert_eq!(sms.count, 4);
    // The same records as the TVM sample's begins and ends, paired the same way.
    let tv = forced(&sample::attention_tvm(8, 3), WireFormat::Tvm).unwrap();
    assert_eq!(t.spans.begin, tv.spans.begin);
    assert_eq!(t.spans.end, tv.spans.end);
    assert_eq!(t.spans.region, tv.spans.region);
}

#[test]
fn flashinfer_errors_name_the_header_block_type_or_sm_that_is_wrong() {
    let f = |blocks: u64, groups: u64, recs: &[u64]| {
        let mut w = vec![groups << 32 | blocks];
        w.extend_from_slice(recs);
        forced(&w, WireFormat::FlashInfer)
            .expect_err("an error")
            .to_string()
    };
    let e = f(4097, 1, &[]);
    assert!(e.starts_with("FlashInfer-format header (slot 0 = 0x0000000100001001): more than the 4096 blocks the 12-bit block field can name"), "{e}");
    // 4096 blocks are fine.
    let mut w = vec![1u64 << 32 | 4096];
    w.resize(1 + 4096, 0);
    w[4096] = fi::pack(5, 3, 4095, 1, fi::BEGIN);
    let t = forced(&w, WireFormat::FlashInfer).unwrap();
    assert_eq!((t.lanes[0].block, t.lanes[0].sm), (4095, Some(3)));
    // Two groups: lane 3 is block 1, group 1; a record naming block 2 there.
    let e = f(2, 2, &[0, 0, 0, fi::pack(5, 0, 2, 1, fi::BEGIN)]);
    assert_eq!(e, "FlashInfer format: slot 4: record 0x0000000500002004 names block 2, but the layout (stride 4 = blocks x groups, 2 groups) puts block 1, group 1 there (block id out of range)");
    let e = f(1, 1, &[fi::pack(5, 0, 0, 1, 3)]);
    assert!(e.contains("slot 1: record 0x0000000500000007 is of type 3, which FlashInfer's profiler never writes"), "{e}");
    let e = f(
        1,
        1,
        &[
            fi::pack(5, 7, 0, 1, fi::BEGIN),
            fi::pack(9, 8, 0, 1, fi::END),
        ],
    );
    assert_eq!(e, "FlashInfer format: slot 2: record 0x0000000908000005 says SM 8, but the first record of its lane (block 0, group 0) says SM 7: a lane's records all carry the SM its block ran on");
}

#[test]
fn mirage_event_numbers_are_payloads_and_scheduler_lanes_are_absent() {
    let words = sample::mpk(8, 2);
    let t = forced(&words, WireFormat::Mirage).unwrap();
    assert_eq!(t.source.grid, [8 + sample::MPK_SCHEDULERS, 1, 1]);
    assert_eq!(t.lanes.len(), 8, "the scheduler blocks recorded nothing");
    assert!(t.lanes.iter().all(|l| l.sm.is_none() && !l.finalized));
    assert!(
        t.diagnostic_counts().is_clean(),
        "{}",
        t.diagnostic_counts()
    );
    for l in &t.lanes {
        // The n-th region of a worker carries n, in begin order.
        let payloads: Vec<u32> = l.spans.clone().map(|k| t.spans.payload[k]).collect();
        let n = payloads.len() as u32;
        assert_eq!(payloads, (0..n).collect::<Vec<_>>(), "lane {}", l.id);
        let regions: Vec<u16> = l.spans.clone().map(|k| t.spans.region[k]).collect();
        assert_eq!(regions[..2], [10, 101]);
        assert_eq!(*regions.last().unwrap(), 109);
    }
}

#[test]
fn mirage_errors_name_the_header_lane_or_type_that_is_wrong() {
    let e = forced(&[1u64 << 32 | 257], WireFormat::Mirage)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("Mirage MPK-format header (slot 0 = 0x0000000100000101): blocks x groups exceeds the 256 lanes"), "{e}");
    assert!(forced(&[1u64 << 32 | 256], WireFormat::Mirage).is_ok());
    let e = forced(
        &[1u64 << 32 | 2, mirage::pack(5, 1, 3, 0, mirage::BEGIN)],
        WireFormat::Mirage,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(e, "Mirage MPK format: slot 1: record 0x000000050000080c names lane 1, but the layout (stride 2 = blocks x groups) puts lane 0 there");
    let e = forced(
        &[1u64 << 32 | 2, mirage::pack(5, 0, 3, 0, 3)],
        WireFormat::Mirage,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("is of type 3, which Mirage MPK's profiler never writes"),
        "{e}"
    );
}

/// What one record of a lane was, as the decoded trace says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rec {
    Begin,
    End,
    Instant,
}

/// The records of lane `p` of `t` in the order its leader wrote them, rebuilt from the
/// decoded spans and instants: `(globaltimer_lo, record, region, payload)`. Records at one
/// time are ordered ends first (innermost first), then instants, then begins (outermost
/// first); a wrong guess would make the re-encoded buffer differ, not pass.
fn lane_records(t: &Trace, p: usize) -> Vec<(u32, Rec, u32, u32)> {
    let l = &t.lanes[p];
    let s = &t.spans;
    let mut v: Vec<(u64, u8, i32, Rec, u32, u32)> = Vec::new();
    for k in l.spans.clone() {
        let (r, pl, d) = (s.region[k] as u32, s.payload[k], s.depth[k] as i32);
        v.push((s.begin[k], 2, d, Rec::Begin, r, pl));
        v.push((s.end[k], 0, -d, Rec::End, r, pl));
    }
    let i = &t.instants;
    for k in l.instants.clone() {
        v.push((
            i.ts[k],
            1,
            0,
            Rec::Instant,
            i.region[k] as u32,
            i.payload[k],
        ));
    }
    v.sort_by_key(|r| (r.0, r.1, r.2));
    v.into_iter()
        .map(|(ts, _, _, rec, r, pl)| (ts as u32, rec, r, pl))
        .collect()
}

/// The shipped sample `name`, decoded as `f`, with the launch shape it records: the trace
/// (clean: every record paired) and `(blocks, groups)`.
fn decoded_sample(name: &str, f: WireFormat) -> (Vec<u64>, Trace, u32, u32) {
    let words = shipped(name);
    let t = forced(&words, f).unwrap();
    assert!(
        t.diagnostic_counts().is_clean(),
        "{name}: {}",
        t.diagnostic_counts()
    );
    let blocks = t.source.grid.iter().product();
    let groups = t.source.groups_per_block;
    (words, t, blocks, groups)
}

/// `got` (the re-encoding) equals `want` (the shipped file), or the first slot that
/// differs is named.
fn same_words(got: &[u64], want: &[u64]) {
    assert_eq!(got.len(), want.len());
    if let Some(k) = (0..got.len()).find(|&k| got[k] != want[k]) {
        panic!(
            "slot {k}: re-encoded {:#018x}, shipped {:#018x} ({} of {} slots differ)",
            got[k],
            want[k],
            (0..got.len()).filter(|&j| got[j] != want[j]).count(),
            got.len()
        );
    }
}

/// The shipped TVM sample is what TVM's `CudaProfiler` writes (`peers::tvm`, from TVM's
/// own page): every record decoded from it, written again by that re-implementation into
/// a zeroed buffer of the same size, gives the same words.
#[test]
fn the_tvm_sample_is_what_tvms_profiler_writes() {
    let (words, t, blocks, groups) = decoded_sample("attention_tvm.bin", WireFormat::Tvm);
    assert_eq!((blocks, groups, t.lanes.len()), (8, 3, 24));
    let mut buf = vec![0u64; words.len()];
    for (p, l) in t.lanes.iter().enumerate() {
        let mut w = peers::tvm::Profiler::init(&mut buf, blocks, groups, l.block, l.group);
        for (lo, rec, r, _) in lane_records(&t, p) {
            match rec {
                Rec::Begin => w.start(&mut buf, r, lo),
                Rec::End => w.end(&mut buf, r, lo),
                Rec::Instant => w.instant(&mut buf, r, lo),
            }
        }
        assert!(l.finalized, "lane {}", l.id);
        w.finalize(&mut buf, l.end as u32);
    }
    same_words(&buf, &words);
}

/// The shipped FlashInfer sample is what FlashInfer's `PROFILER_*` macros write
/// (`peers::flashinfer`, from `profiler.cuh`), with each lane's SM from the trace.
#[test]
fn the_flashinfer_sample_is_what_flashinfers_profiler_writes() {
    let (words, t, blocks, groups) =
        decoded_sample("attention_flashinfer.bin", WireFormat::FlashInfer);
    assert_eq!((blocks, groups, t.lanes.len()), (8, 3, 24));
    let mut buf = vec![0u64; words.len()];
    for (p, l) in t.lanes.iter().enumerate() {
        let sm = l.sm.expect("an SM id");
        let mut c =
            peers::flashinfer::Closure::init(&mut buf, blocks, groups, l.block, l.group, sm);
        for (lo, rec, r, _) in lane_records(&t, p) {
            match rec {
                Rec::Begin => c.event_start(&mut buf, r, lo),
                Rec::End => c.event_end(&mut buf, r, lo),
                Rec::Instant => c.event_instant(&mut buf, r, lo),
            }
        }
    }
    same_words(&buf, &words);
}

/// The shipped Mirage sample is what the persistent kernel's `PROFILER_*` macros write
/// (`peers::mirage`, from `profiler.h`): one group, each region's event number (its
/// payload in the trace) in both its records, scheduler blocks writing nothing.
#[test]
fn the_mirage_sample_is_what_mirages_profiler_writes() {
    let (words, t, blocks, groups) = decoded_sample("mpk_mirage.bin", WireFormat::Mirage);
    assert_eq!((blocks, groups, t.lanes.len()), (10, 1, 8));
    let mut buf = vec![0u64; words.len()];
    for (p, l) in t.lanes.iter().enumerate() {
        let mut c = peers::mirage::Closure::init(&mut buf, blocks, groups, l.block, l.group);
        for (lo, rec, r, no) in lane_records(&t, p) {
            match rec {
                Rec::Begin => c.event_start(&mut buf, r, no, lo),
                Rec::End => c.event_end(&mut buf, r, no, lo),
                Rec::Instant => c.event_instant(&mut buf, r, no, lo),
            }
        }
    }
    same_words(&buf, &words);
}
