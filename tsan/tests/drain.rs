//! The drain copies while the lanes record; ThreadSanitizer (TSAN_OPTIONS=halt_on_error=1,
//! set by scripts/tsan.sh) fails the run at the first data race between them. Each run
//! also checks what arrived: in wait mode every record, in drop mode the records and the
//! drops add up in every lane, the drops announced by marks.

use ikp_device::wire::{self, Kind};
use ikp_device::{stream, Layout, Overflow};
use ikp_host::drain::Drain;
use ikp_host::stream_file::{self, StreamCapture};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

const LANES: u32 = 4;
const PAIRS: u32 = 3_000;

/// The lanes and the drain, which starts `pause` late; the stream file it wrote.
fn run(overflow: Overflow, pause: Duration) -> StreamCapture {
    let layout = Layout {
        grid: [LANES, 1, 1],
        records_per_lane: 64,
        regions: vec!["work".into()],
        overflow,
        ..Layout::default()
    };
    let header = layout.header_words().unwrap();
    let buf: Vec<AtomicU64> = (0..layout.buffer_words())
        .map(|_| AtomicU64::new(0))
        .collect();
    for (w, h) in buf.iter().zip(&header) {
        w.store(*h, Ordering::Relaxed);
    }
    let arg = layout.kernel_arg(buf.as_ptr() as u64);
    let done = AtomicBool::new(false);
    let wait = (overflow == Overflow::StreamWait) as i32;
    let file = std::thread::scope(|s| {
        let drainer = s.spawn(|| {
            let mut drain = Drain::new(&buf, Vec::new()).unwrap();
            std::thread::sleep(pause);
            drain.run_until(&done, Duration::from_micros(20)).unwrap();
            drain
        });
        // SAFETY: `arg` describes `buf`, which outlives the call; the lanes write only
        // their own segments.
        let rc = unsafe { ikp_tsan::ikp_emu_stream_run(&arg, LANES, PAIRS, wait, 2) };
        assert_eq!(rc, 0);
        done.store(true, Ordering::Release);
        drainer.join().unwrap().finish().unwrap().0
    });
    stream_file::read(&file).expect("the drain's file reads back")
}

/// Per lane: `(records of pairs arrived, dropped, stall marks)`, after checking that the
/// records and the drops add up to the attempts and that drop marks announce the drops.
fn tally(c: &StreamCapture) -> Vec<(u64, u64, u64)> {
    (0..LANES as usize)
        .map(|l| {
            let (mut pairs, mut marked, mut stalls) = (0u64, 0u64, 0u64);
            for &r in &c.lanes[l].records {
                let rec = wire::unpack_record(r);
                match (rec.kind, rec.region) {
                    (Kind::Meta, stream::META_DROPPED) => marked += rec.time_lo as u64,
                    (Kind::Meta, stream::META_STALLED) => stalls += 1,
                    (Kind::Meta, k) => panic!("lane {l}: meta kind {k}"),
                    _ => pairs += 1,
                }
            }
            let dropped = c.dropped(l);
            assert!(marked <= dropped, "lane {l}: marks past the drops");
            assert_eq!(pairs + dropped, 2 * PAIRS as u64, "lane {l}");
            (pairs, dropped, stalls)
        })
        .collect()
}

#[test]
fn wait_mode_delivers_every_record_with_a_late_drain() {
    let t = tally(&run(Overflow::StreamWait, Duration::from_millis(50)));
    assert!(t.iter().all(|&(_, dropped, _)| dropped == 0), "{t:?}");
    assert!(t.iter().any(|&(_, _, stalls)| stalls > 0), "no lane waited: {t:?}");
}

#[test]
fn drop_mode_counts_add_up_with_a_late_drain() {
    let t = tally(&run(Overflow::Stream, Duration::from_millis(20)));
    assert!(t.iter().any(|&(_, dropped, _)| dropped > 0), "nothing dropped: {t:?}");
}

#[test]
fn wait_mode_with_a_prompt_drain() {
    let t = tally(&run(Overflow::StreamWait, Duration::ZERO));
    assert!(t.iter().all(|&(_, dropped, _)| dropped == 0), "{t:?}");
}
