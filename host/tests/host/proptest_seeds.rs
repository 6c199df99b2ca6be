//! The fuzz seed corpus (`fuzz/corpus/<target>/`): small buffers from the reference
//! encoder and the sample generator, committed so the CI fuzz run starts from valid
//! inputs of every feature (overlapping regions included). This test regenerates them and
//! fails if the committed files differ (a wire-format change must refresh the corpus: run
//! it with `IKP_BLESS_CORPUS=1`), and checks that every seed decodes.
use ikp_device::encoder::BufferWriter;
use ikp_device::tvm::pack;
use ikp_device::wire::lane_flags;
use ikp_device::{Layout, TimerMode};
use ikp_host::decode::{decode_launches, DecodeOptions};
use std::path::PathBuf;

fn layout(blocks: u32, groups: u32, cap: u32, timer: TimerMode, nc: usize) -> Layout {
    Layout {
        grid: [blocks, 1, 1],
        groups_per_block: groups,
        records_per_lane: cap,
        timer,
        regions: vec!["outer".into(), "inner".into(), "mark".into()],
        counters: (0..nc).map(|c| format!("spin{c}")).collect(),
        ..Layout::default()
    }
}

fn bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn native_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    // Nesting, repeats, payloads, instants, counters.
    let mut b = BufferWriter::new(layout(2, 2, 16, TimerMode::Globaltimer, 2)).unwrap();
    b.lane(1)
        .init(3, 1, 0, 1000, 0)
        .begin(0, 1, 1010)
        .begin(0, 2, 1020)
        .begin(1, 3, 1030)
        .counter_sample(1, 77)
        .end(1, 0, 1040)
        .end(0, 0, 1050)
        .instant(2, 9, 1060)
        .end(0, 0, 1070)
        .counter_add(0, 5)
        .finalize(1100, 0);
    b.lane(2)
        .init(4, 0, 0, 2000, 0)
        .begin(1, 0xFFFFF, 2010)
        .finalize(2100, 0);
    out.push(("nested.ikp", b.to_bytes()));
    // A region across the 32-bit wrap; an unmatched end; an unfinalized lane.
    let mut b = BufferWriter::new(layout(1, 2, 8, TimerMode::Globaltimer, 0)).unwrap();
    let t0 = (5u64 << 32) - 30;
    b.lane(0)
        .init(0, 0, 0, t0, 0)
        .begin(0, 0, t0 + 10)
        .end(0, 0, t0 + 50)
        .end(1, 0, t0 + 60)
        .finalize(t0 + 70, 0);
    b.lane(1).init(1, 0, 0, t0, 0).begin(2, 4, t0 + 5);
    out.push(("wrap.ikp", b.to_bytes()));
    // A full lane that drops.
    let mut b = BufferWriter::new(layout(1, 1, 4, TimerMode::Globaltimer, 1)).unwrap();
    let mut l = b.lane(0);
    l.init(0, 0, 0, 500, 0);
    for k in 0..4 {
        l.begin(0, k, 510 + 20 * k as u64)
            .end(0, 0, 520 + 20 * k as u64);
    }
    l.finalize(700, 0);
    out.push(("drops.ikp", b.to_bytes()));
    // Clock mode with its own calibration.
    let mut b = BufferWriter::new(layout(1, 2, 8, TimerMode::Clock, 1)).unwrap();
    for lane in 0..2u64 {
        b.lane(lane)
            .init(lane as u32, 0, lane_flags::CLOCK, 10_000, 1_000)
            .begin(0, 0, 1_100)
            .counter_sample(0, 3)
            .end(0, 0, 1_900)
            .finalize(12_000, 2_000);
    }
    out.push(("clock.ikp", b.to_bytes()));
    // Overlapping regions (an end closing a region begun before others still open), a
    // stray end while regions are open, a region left open under one that ended.
    let mut b = BufferWriter::new(layout(1, 1, 16, TimerMode::Globaltimer, 0)).unwrap();
    b.lane(0)
        .init(0, 0, 0, 3000, 0)
        .begin(0, 0, 3010)
        .begin(1, 1, 3020)
        .end(0, 0, 3030)
        .end(1, 0, 3040)
        .begin(0, 2, 3050)
        .begin(1, 3, 3060)
        .begin(2, 4, 3070)
        .end(0, 0, 3080)
        .end(3, 0, 3085)
        .end(2, 0, 3090)
        .end(1, 0, 3100)
        .begin(0, 5, 3110)
        .begin(1, 6, 3120)
        .end(0, 0, 3130)
        .finalize(3200, 0);
    out.push(("overlap.ikp", b.to_bytes()));
    // A ring that wrapped twice (an orphan end among the survivors), one that did not,
    // with record costs measured.
    let ring = Layout {
        overflow: ikp_device::Overflow::Ring,
        ..layout(1, 2, 4, TimerMode::Globaltimer, 0)
    };
    let mut b = BufferWriter::new(ring).unwrap();
    let mut l = b.lane(0);
    l.init(0, 0, lane_flags::RING, 4000, 0).calibrate(7);
    l.begin(0, 0, 4010);
    for k in 0..5u64 {
        l.begin(1, k as u32, 4020 + 20 * k).end(1, 0, 4030 + 20 * k);
    }
    l.end(0, 0, 4200).finalize(4300, 600);
    b.lane(1)
        .init(1, 0, lane_flags::RING, 4000, 0)
        .begin(2, 0, 4050)
        .end(2, 0, 4060)
        .finalize(4300, 600);
    out.push(("ring.ikp", b.to_bytes()));
    // Three launches into a buffer of two epochs (the third not recorded).
    let epochs = Layout {
        epochs: 2,
        ..layout(1, 2, 4, TimerMode::Globaltimer, 1)
    };
    let mut b = BufferWriter::new(epochs).unwrap();
    for k in 0..3u64 {
        for lane in 0..2u64 {
            let t0 = 10_000 * (k + 1);
            if let Some(mut l) = b.launch(lane) {
                l.init(lane as u32, 0, 0, t0, 0)
                    .begin(0, k as u32, t0 + 10)
                    .counter_sample(0, 2)
                    .end(0, 0, t0 + 90)
                    .finalize(t0 + 100, 0);
            }
        }
    }
    out.push(("epochs.ikp", b.to_bytes()));
    // The sample kernel buffer.
    out.push((
        "attention.ikp",
        ikp_device::sample::attention().unwrap().to_bytes(),
    ));
    out
}

fn tvm_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let (blocks, groups) = (2u32, 2u32);
    let s = (blocks * groups) as usize;
    let mut w = vec![0u64; 1 + s * 5];
    w[0] = (groups as u64) << 32 | blocks as u64;
    for l in 0..s as u32 {
        let t = 0xFFFF_FF00u32.wrapping_add(l * 40);
        let recs = [
            pack(t, l, 0, 0),
            pack(t.wrapping_add(100), l, 1, 0),
            pack(t.wrapping_add(200), l, 1, 1),
            pack(t.wrapping_add(300), l, 0, 1),
            pack(t.wrapping_add(400), l, 2, 3),
        ];
        for (k, r) in recs.iter().enumerate() {
            w[1 + l as usize + k * s] = *r;
        }
    }
    // One lane: begin A, begin B, end A, end B; then A B C ended A C B.
    let recs = [
        (0, 0),
        (1, 0),
        (0, 1),
        (1, 1),
        (0, 0),
        (1, 0),
        (2, 0),
        (0, 1),
        (2, 1),
        (1, 1),
    ];
    let mut o = vec![1u64 << 32 | 1];
    o.extend(
        (recs.iter().enumerate()).map(|(k, &(ev, kind))| pack(50 + 10 * k as u32, 0, ev, kind)),
    );
    o.push(pack(200, 0, 0, 3));
    vec![
        ("nested.tvm", bytes(&w)),
        ("overlap.tvm", bytes(&o)),
        (
            "attention.tvm",
            bytes(&ikp_device::sample::attention_tvm(2, 3)),
        ),
    ]
}

fn corpus() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    let mut v = Vec::new();
    for (n, b) in native_seeds() {
        v.push(("decode_native", n, b.clone()));
        v.push(("read_file", n, b));
    }
    for (n, b) in tvm_seeds() {
        v.push(("decode_tvm", n, b.clone()));
        v.push(("read_file", n, b));
    }
    v.push(("read_file", "names.txt", b"outer\ninner\n\nmark\n".to_vec()));
    v.push((
        "read_file",
        "names.json",
        br#"{"0": "outer", "2": "mark"}"#.to_vec(),
    ));
    v
}

#[test]
fn fuzz_seed_corpus_is_current() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let bless = std::env::var_os("IKP_BLESS_CORPUS").is_some();
    for (target, name, b) in corpus() {
        if target != "read_file" || !name.starts_with("names") {
            let w: Vec<u64> = b
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect();
            decode_launches(&w, &DecodeOptions::default())
                .unwrap_or_else(|e| panic!("seed {target}/{name} does not decode: {e}"));
        }
        let p = root.join(target).join(name);
        if bless {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, &b).unwrap();
        } else {
            let have = std::fs::read(&p).unwrap_or_default();
            assert!(
                have == b,
                "{} is missing or stale: rerun with IKP_BLESS_CORPUS=1",
                p.display()
            );
        }
    }
}
