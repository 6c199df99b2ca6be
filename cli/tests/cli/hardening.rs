//! `ikp decode` hardening: the streaming Perfetto path gives the same bytes as the
//! in-memory one, an output that is the input is refused, an unwritable output is a clear
//! error naming the path, and exit codes are as documented (1 for these errors).
use crate::util::{ikp, s};
use ikp_device::encoder::BufferWriter;
use ikp_device::wire::lane_flags;
use ikp_device::{Layout, TimerMode};
use std::path::Path;

/// A buffer with everything the streamed path must reproduce: unused lanes, drops,
/// unmatched records, an unfinalized lane, counters, several SMs, a timer that steps
/// back, clock mode optional.
fn messy(clock: bool) -> Vec<u8> {
    let mut b = BufferWriter::new(Layout {
        grid: [3, 1, 1],
        groups_per_block: 2,
        records_per_lane: 6,
        timer: if clock {
            TimerMode::Clock
        } else {
            TimerMode::Globaltimer
        },
        regions: vec!["outer".into(), "inner".into()],
        counters: vec!["spin".into()],
        ..Layout::default()
    })
    .unwrap();
    let f = if clock { lane_flags::CLOCK } else { 0 };
    // The start globaltimer: in clock mode the records count cycles from the start clock,
    // in globaltimer mode they are ns after the start stamp itself.
    let start_gt = |gt: u64, clk: u64| if clock { gt } else { clk };
    b.lane(0)
        .init(5, 0, f, start_gt(1000, 100), 100)
        .begin(0, 1, 110)
        .begin(1, 2, 120)
        .counter_sample(0, 9)
        .end(1, 0, 130)
        .end(0, 0, 140)
        .instant(3, 7, 150)
        .begin(0, 3, 160) // dropped
        .counter_add(0, 4)
        .finalize(2000, 200);
    b.lane(3)
        .init(2, 1, f, start_gt(900, 50), 50)
        .end(1, 0, 60) // unmatched
        .begin(0, 0, 70)
        .begin(1, 0, 80)
        .end(0, 0, 90) // closes outer, inner unmatched
        .instant(3, 1, 85) // the timer stepped back: clamped to 90
        .finalize(1500, 120);
    if !clock {
        b.lane(5).init(5, 1, f, 1200, 0).begin(1, 0, 1300); // never finalized
    }
    b.to_bytes()
}

/// Buffers with lanes whose stamps cannot belong to the launch (set aside by the
/// decoder): the sample with one lane's start 544 years late and another lane moved 2^41
/// ns away whole; or, in clock mode, a launch with one lane's end clock64 corrupted.
fn corrupted(clock: bool) -> Vec<u8> {
    use ikp_device::wire::lane;
    let mut words = if clock {
        let mut b = BufferWriter::new(Layout {
            grid: [3, 1, 1],
            groups_per_block: 2,
            records_per_lane: 4,
            timer: TimerMode::Clock,
            regions: vec!["step".into()],
            counters: vec![],
            ..Layout::default()
        })
        .unwrap();
        for l in 0..6u64 {
            let (gt, clk) = (5_000 + l * 100, 70_000 + l * 3);
            b.lane(l)
                .init(l as u32, 0, lane_flags::CLOCK, gt, clk)
                .begin(0, 0, clk + 300)
                .end(0, 0, clk + 3_000)
                .finalize(gt + 2_000_000, clk + 3_000_000);
        }
        b.into_words()
    } else {
        ikp_device::sample::attention().unwrap().into_words()
    };
    let h = ikp_device::Header::parse(&words).unwrap();
    let trailer =
        |l: u64| h.lane_range(l).start + (lane::EVENTS + h.layout.records_per_lane) as usize;
    if clock {
        words[trailer(3) + lane::T_END_CLK as usize] |= 1 << 60;
    } else {
        words[h.lane_range(100).start] =
            words[h.lane_range(100).start].wrapping_add(17_175_002_975_966_379_653);
        words[h.lane_range(7).start] += 1 << 41;
        words[trailer(7)] += 1 << 41;
    }
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[test]
fn streamed_perfetto_is_byte_identical_to_in_memory() {
    let d = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("messy.ikp", messy(false)),
        ("clock.ikp", messy(true)),
        (
            "attention.ikp",
            ikp_device::sample::attention().unwrap().to_bytes(),
        ),
        ("corrupted.ikp", corrupted(false)),
        ("corrupted_clock.ikp", corrupted(true)),
    ];
    for (name, bytes) in cases {
        let buf = d.path().join(name);
        std::fs::write(&buf, bytes).unwrap();
        for group in ["sm", "block"] {
            let a = d.path().join(format!("{name}.{group}.mem.trace"));
            let b = d.path().join(format!("{name}.{group}.stream.trace"));
            // --quiet: the lines naming the two files differ; the warnings must not.
            let o1 = ikp(&[
                "decode",
                s(&buf),
                "--perfetto",
                s(&a),
                "--group-by",
                group,
                "-q",
            ]);
            let o2 = ikp(&[
                "decode",
                s(&buf),
                "--perfetto",
                s(&b),
                "--group-by",
                group,
                "--stream",
                "-q",
            ]);
            assert!(o1.status.success() && o2.status.success(), "{o1:?} {o2:?}");
            let (x, y) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
            assert!(!x.is_empty());
            assert!(x == y, "{name} --group-by {group}: streamed output differs");
            // Same warnings too.
            assert_eq!(o1.stderr, o2.stderr);
            let err = String::from_utf8_lossy(&o1.stderr);
            if name.starts_with("messy") || name.starts_with("clock") {
                assert!(err.contains(", 1 backward timer steps (clamped),"), "{err}");
            }
            // The lanes set aside are counted and named alike on both paths.
            let set_aside = match name {
                "corrupted.ikp" => "2 lanes set aside, their stamps not of this launch: block 2 · group 1 (warp ",
                "corrupted_clock.ikp" => "1 lane set aside, its stamps not of this launch: block 1 · group 1 (warp 0, SM 3) (",
                _ => " set aside, ",
            };
            assert_eq!(
                err.contains(set_aside),
                name.starts_with("corrupted"),
                "{err}"
            );
        }
    }
}

/// `--block-filter` takes the streaming path too, with the bytes and warnings of the
/// filtered trace decoded in memory: the whole launch's time axis (block 1 starts first)
/// and its counts that are not per lane (block 1's backward step, whatever is kept).
#[test]
fn streamed_perfetto_with_a_block_filter_is_byte_identical_to_in_memory() {
    let d = tempfile::tempdir().unwrap();
    for (name, bytes) in [("messy.ikp", messy(false)), ("clock.ikp", messy(true))] {
        let buf = d.path().join(name);
        std::fs::write(&buf, bytes).unwrap();
        for blocks in ["0", "1,2", "2"] {
            for group in ["sm", "block"] {
                let out = |how: &str| d.path().join(format!("{name}.{blocks}.{group}.{how}"));
                let (a, b) = (out("mem"), out("stream"));
                let run = |p: &Path, stream: bool| {
                    let mut v = vec!["decode", s(&buf), "--perfetto", s(p), "--group-by", group];
                    v.extend(["--block-filter", blocks, "-q"]);
                    if stream {
                        v.push("--stream");
                    }
                    ikp(&v)
                };
                let (o1, o2) = (run(&a, false), run(&b, true));
                assert!(o1.status.success() && o2.status.success(), "{o1:?} {o2:?}");
                let (x, y) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
                assert!(!x.is_empty());
                assert!(
                    x == y,
                    "{name} --block-filter {blocks} --group-by {group}: differs"
                );
                assert_eq!(o1.stderr, o2.stderr);
                let err = String::from_utf8_lossy(&o1.stderr);
                assert!(err.contains(", 1 backward timer steps (clamped),"), "{err}");
            }
        }
    }
}

#[test]
fn an_output_that_is_the_input_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let buf = d.path().join("run.ikp");
    let bytes = messy(false);
    std::fs::write(&buf, &bytes).unwrap();
    std::fs::create_dir(d.path().join("sub")).unwrap();
    // The same file spelled differently, for each kind of output.
    let alias = d.path().join("sub/../run.ikp");
    for flag in ["--perfetto", "--chrome", "--summary", "--csv"] {
        for stream in [false, true] {
            let mut args = vec!["decode", s(&buf), flag, s(&alias)];
            if stream {
                args.push("--stream");
            }
            let o = ikp(&args);
            assert_eq!(o.status.code(), Some(1), "{flag}: {o:?}");
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains("refusing to overwrite") && err.contains("run.ikp"),
                "{err}"
            );
            assert_eq!(std::fs::read(&buf).unwrap(), bytes, "the input was touched");
        }
    }
}

#[test]
fn an_unwritable_output_is_a_clear_error_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let buf = d.path().join("run.ikp");
    std::fs::write(&buf, messy(false)).unwrap();
    // A path below a regular file cannot be created, even by root.
    let blocker = d.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let out = blocker.join("out.trace");
    for flag in ["--perfetto", "--chrome"] {
        for stream in [false, true] {
            let mut args = vec!["decode", s(&buf), flag, s(&out)];
            if stream {
                args.push("--stream");
            }
            let o = ikp(&args);
            assert_eq!(o.status.code(), Some(1), "{o:?}");
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains(s(&out)) || err.contains(s(&blocker)), "{err}");
            assert!(
                err.lines()
                    .last()
                    .is_some_and(|l| l.starts_with("ikp: error:")),
                "{err}"
            );
        }
    }
    // Nothing half-written is left next to the target.
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
}

#[test]
fn a_usage_error_exits_2() {
    let o = ikp(&["decode", "--no-such-flag"]);
    assert_eq!(o.status.code(), Some(2));
}
