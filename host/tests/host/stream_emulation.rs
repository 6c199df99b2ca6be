//! Stream launches without a GPU: `ikp.cuh`'s stream lanes run as real threads under host
//! emulation (`tests/kernels/emulate_stream.cpp`, a shared library) while ikp-host's own
//! [`Drain`] empties their rings on another thread, as it does beside a running kernel.
//!
//! Each lane records `pairs` begin / end pairs whose payload is the pair index, so the
//! stream file says exactly which records arrived: in wait mode every record, once, in
//! order, even with a drain that pauses; in drop mode the records that arrived plus the
//! drops add up to what the lanes attempted, with each gap announced by a drop mark.
//! The same lanes built with ThreadSanitizer, with `ikp_host.hpp`'s C++ drain, check the
//! header's publication order under a race detector (this Drain under ThreadSanitizer is
//! `tsan/`, `scripts/tsan.sh`: std must be instrumented too). The stream file's reader
//! refuses a torn or half-written file.

use ikp_device::wire::{self, KernelArg, Kind, Overflow};
use ikp_device::{stream, Layout};
use ikp_host::drain::{Drain, DrainError, DrainThread};
use ikp_host::stream_file::{self, StreamCapture, StreamFileError};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// Ring capacity of the tests' lanes: small, so rings wrap hundreds of times.
const CAP: u32 = 64;

fn layout(blocks: u32, overflow: Overflow) -> Layout {
    Layout {
        grid: [blocks, 1, 1],
        records_per_lane: CAP,
        regions: vec!["work".into()],
        overflow,
        ..Layout::default()
    }
}

fn kernels_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels")
}

/// A directory with the generated header, written once per test process.
fn header_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir for ikp.cuh");
        ikp_device::cuh::write_to_dir(dir.path()).expect("writing ikp.cuh");
        dir
    })
    .path()
}

/// The host C++ compiler `cc` picks for this target.
fn cxx() -> Command {
    let triple = std::env::var("TARGET")
        .ok()
        .unwrap_or_else(|| format!("{}-unknown-linux-gnu", std::env::consts::ARCH));
    cc::Build::new()
        .cpp(true)
        .host(&triple)
        .target(&triple)
        .opt_level(2)
        .cargo_metadata(false)
        .get_compiler()
        .to_command()
}

fn compile(extra: &[&str], out: &Path) {
    let mut cmd = cxx();
    cmd.arg("-std=c++17")
        .arg("-pthread")
        .arg("-I")
        .arg(header_dir())
        .args(extra)
        .arg(kernels_dir().join("emulate_stream.cpp"))
        .arg("-o")
        .arg(out);
    let o = cmd.output().expect("running the C++ compiler");
    assert!(
        o.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

type RunFn = unsafe extern "C" fn(*const KernelArg, u32, u32, i32, u32) -> i32;

/// Held while lanes of the shared library run: its system-scope counters count every
/// lane of the process, so a test that reads them must run its lanes alone.
fn exclusive_lanes() -> std::sync::MutexGuard<'static, ()> {
    static LANES: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LANES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The emulated lanes, as a shared library loaded once.
fn lanes_library() -> &'static libloading::Library {
    static LIB: OnceLock<(tempfile::TempDir, libloading::Library)> = OnceLock::new();
    &LIB.get_or_init(|| shared_library(&[])).1
}

/// The emulated lanes built with `-DIKP_OFF_BRANCH=0` (no warp vote but a stream lane's,
/// which gates its slow path), as a shared library loaded once.
fn predicated_lanes_library() -> &'static libloading::Library {
    static LIB: OnceLock<(tempfile::TempDir, libloading::Library)> = OnceLock::new();
    &LIB.get_or_init(|| shared_library(&["-DIKP_OFF_BRANCH=0"]))
        .1
}

fn shared_library(defines: &[&str]) -> (tempfile::TempDir, libloading::Library) {
    let dir = tempfile::tempdir().expect("temp dir");
    let so = dir.path().join("libemulate_stream.so");
    let mut flags = vec!["-fPIC", "-shared"];
    flags.extend_from_slice(defines);
    compile(&flags, &so);
    // SAFETY: the library is ours, built above; its initializers only set globals.
    let lib = unsafe { libloading::Library::new(&so) }.expect("loading the emulated lanes");
    (dir, lib)
}

/// What a run of the emulated kernel and the drain produced.
struct Run {
    capture: StreamCapture,
    file: Vec<u8>,
}

/// Runs `blocks` lanes of `pairs` pairs with the real drain, which sleeps `pause` before
/// its first poll.
fn run(blocks: u32, pairs: u32, overflow: Overflow, slow_every: u32, pause: Duration) -> Run {
    let file = emulate(blocks, pairs, overflow, slow_every, pause, Vec::new()).expect("draining");
    let capture = stream_file::read(&file).expect("the drain's file reads back");
    Run { capture, file }
}

/// The emulated kernel (`blocks` lanes of `pairs` pairs) with the real drain writing to
/// `sink` beside it; the drain sleeps `pause` before its first poll. Returns the sink,
/// finished, or the drain's error once the lanes ended.
fn emulate<W: std::io::Write + Send>(
    blocks: u32,
    pairs: u32,
    overflow: Overflow,
    slow_every: u32,
    pause: Duration,
    sink: W,
) -> Result<W, DrainError> {
    let layout = layout(blocks, overflow);
    let header = layout.header_words().expect("a valid stream layout");
    let buf: Vec<AtomicU64> = (0..layout.buffer_words())
        .map(|_| AtomicU64::new(0))
        .collect();
    for (w, h) in buf.iter().zip(&header) {
        w.store(*h, Ordering::Relaxed);
    }
    let arg = layout.kernel_arg(buf.as_ptr() as u64);
    let done = AtomicBool::new(false);
    // SAFETY: the symbol has this signature (emulate_stream.cpp).
    let lanes: libloading::Symbol<RunFn> =
        unsafe { lanes_library().get(b"ikp_emu_stream_run") }.expect("ikp_emu_stream_run");
    let wait = (overflow == Overflow::StreamWait) as i32;
    std::thread::scope(|s| {
        let drainer = s.spawn(|| -> Result<_, DrainError> {
            let mut drain = Drain::new(&buf, sink).expect("a stream buffer");
            std::thread::sleep(pause);
            drain.run_until(&done, Duration::from_micros(20))?;
            Ok(drain)
        });
        // SAFETY: `arg` points into `buf`, which outlives the call; the lanes write only
        // their own segments, through atomics-compatible u64 words.
        let rc = {
            let _turn = exclusive_lanes();
            unsafe { lanes(&arg, blocks, pairs, wait, slow_every) }
        };
        assert_eq!(rc, 0);
        done.store(true, Ordering::Release);
        let drain = drainer.join().expect("the drain thread")?;
        Ok(drain.finish()?.0)
    })
}

/// Per lane: the records that arrived, checked in order; returns `(arrived, marked drops,
/// unmarked drops at the end, stall marks)`.
fn check_lane(capture: &StreamCapture, lane: usize, pairs: u32) -> (u64, u64, u64, u64) {
    let l = &capture.lanes[lane];
    let state = l.state.as_ref().expect("every lane has its final state");
    let trailer = &state[(wire::lane::PROLOGUE_WORDS + stream::CTRL_WORDS) as usize..];
    let count = trailer[wire::lane::T_COUNT as usize];
    let (written, dropped) = (count as u32 as u64, count >> wire::COUNT_DROPPED_SHIFT);
    assert_eq!(
        written,
        l.records.len() as u64,
        "lane {lane}: written vs arrived"
    );
    let (mut next, mut marked, mut stalls) = (0u64, 0u64, 0u64);
    for (i, &r) in l.records.iter().enumerate() {
        let rec = wire::unpack_record(r);
        if rec.kind == Kind::Meta {
            match rec.region {
                stream::META_DROPPED => {
                    assert!(rec.time_lo > 0, "lane {lane}: an empty drop mark");
                    next += rec.time_lo as u64;
                    marked += rec.time_lo as u64;
                }
                stream::META_STALLED => stalls += 1,
                k => panic!("lane {lane}: unexpected meta kind {k}"),
            }
            continue;
        }
        let want_kind = if next % 2 == 0 {
            Kind::Begin
        } else {
            Kind::End
        };
        assert_eq!(
            (rec.kind, rec.payload),
            (want_kind, (next / 2) as u32 & wire::MAX_PAYLOAD),
            "lane {lane}: record {i} is not attempt {next}"
        );
        next += 1;
    }
    assert!(dropped >= marked, "lane {lane}: marks exceed the drops");
    let unmarked = dropped - marked;
    assert_eq!(
        next + unmarked,
        2 * pairs as u64,
        "lane {lane}: arrived + dropped != attempted"
    );
    (next - marked, marked, unmarked, stalls)
}

#[test]
fn wait_mode_delivers_every_record_once_and_in_order() {
    let (blocks, pairs) = (6, 20_000);
    let r = run(blocks, pairs, Overflow::StreamWait, 3, Duration::ZERO);
    for lane in 0..blocks as usize {
        let (arrived, marked, unmarked, _) = check_lane(&r.capture, lane, pairs);
        assert_eq!(
            (arrived, marked, unmarked),
            (2 * pairs as u64, 0, 0),
            "lane {lane}"
        );
    }
    // 40,000 records per lane through a ring of 64: the ring turned over 600 times.
    assert!(r.capture.drain.max_backlog <= CAP as u64);
    assert_eq!(
        r.capture.drain.records,
        r.capture
            .lanes
            .iter()
            .map(|l| l.records.len() as u64)
            .sum::<u64>()
    );
}

type CountsFn = unsafe extern "C" fn(*mut u64, *mut u64);

/// Runs `blocks` drop-mode lanes of `pairs` pairs with no drain, the lanes' threads
/// playing the host (`host`: `u32::MAX` keeps up perfectly, `u32::MAX - 1` keeps up late
/// by all but half a chunk; emulate_stream.cpp); returns the system-scope (releases, acquires)
/// of all lanes and each lane's final (stored, dropped) count word.
fn self_drained(blocks: u32, pairs: u32, host: u32) -> ((u64, u64), Vec<u64>) {
    self_drained_in(blocks, pairs, host, Overflow::Stream)
}

/// [`self_drained`] in either stream mode (`u32::MAX - 2`: a waiting lane's host hands
/// back one chunk per sleep).
fn self_drained_in(
    blocks: u32,
    pairs: u32,
    host: u32,
    overflow: Overflow,
) -> ((u64, u64), Vec<u64>) {
    let (counts, buf) = self_drained_warps(lanes_library(), blocks, pairs, host, overflow, 0);
    let layout = layout(blocks, overflow);
    let words = (0..blocks as usize)
        .map(|l| {
            let seg = layout.lane_base() as usize + l * layout.lane_stride() as usize;
            buf[seg
                + (wire::lane::EVENTS + stream::CTRL_WORDS + CAP) as usize
                + wire::lane::T_COUNT as usize]
        })
        .collect();
    (counts, words)
}

type FollowersFn = unsafe extern "C" fn(*const KernelArg, u32, u32, i32, u32, u32) -> i32;

/// [`self_drained_in`] with the lanes of `lib` and `followers` threads of each lane's warp
/// beside its leader (emulate_stream.cpp runs them in step with it); returns the
/// system-scope (releases, acquires) of all lanes and the whole buffer.
fn self_drained_warps(
    lib: &libloading::Library,
    blocks: u32,
    pairs: u32,
    host: u32,
    overflow: Overflow,
    followers: u32,
) -> ((u64, u64), Vec<u64>) {
    let layout = layout(blocks, overflow);
    let header = layout.header_words().expect("a valid stream layout");
    let mut buf = vec![0u64; layout.buffer_words() as usize];
    buf[..header.len()].copy_from_slice(&header);
    let arg = layout.kernel_arg(buf.as_mut_ptr() as u64);
    // SAFETY: the symbols have these signatures (emulate_stream.cpp).
    let (lanes, counts): (
        libloading::Symbol<FollowersFn>,
        libloading::Symbol<CountsFn>,
    ) = unsafe {
        (
            lib.get(b"ikp_emu_stream_run_followers")
                .expect("ikp_emu_stream_run_followers"),
            lib.get(b"ikp_emu_system_scope_counts")
                .expect("ikp_emu_system_scope_counts"),
        )
    };
    let (mut releases, mut acquires) = (0u64, 0u64);
    {
        // The counters count every lane of the process: these run alone.
        let _turn = exclusive_lanes();
        // SAFETY: `arg` points into `buf`, which outlives the call; nothing else reads it
        // meanwhile.
        unsafe {
            counts(&mut releases, &mut acquires);
            let wait = (overflow == Overflow::StreamWait) as i32;
            assert_eq!(lanes(&arg, blocks, pairs, wait, host, followers), 0);
            counts(&mut releases, &mut acquires);
        }
    }
    ((releases, acquires), buf)
}

/// The whole leader's warp takes a stream lane's slow path together (issue #35: a call
/// from the leader alone left the warp split on the GPU, and the kernel ran its work once
/// per part): each follower keeps the leader's slot, limit and room, so it reaches the
/// slow path at the same records and reads TAIL with the leader (one acquire each, so the
/// acquires grow with the warp), while only the leader publishes and stores (the releases
/// and the whole buffer are the same as with the leader alone). With a host that keeps up,
/// and one late by all but half a chunk (drops and their marks); built as shipped and with
/// `IKP_OFF_BRANCH=0`.
#[test]
fn a_stream_lanes_whole_warp_takes_its_slow_path_and_only_the_leader_writes() {
    let (blocks, pairs, followers) = (2u32, 3_000u32, 3u32);
    for (build, lib) in [
        ("default", lanes_library()),
        ("IKP_OFF_BRANCH=0", predicated_lanes_library()),
    ] {
        for host in [u32::MAX, u32::MAX - 1] {
            let what = format!("{build}, host {host:#x}");
            let run = |n| self_drained_warps(lib, blocks, pairs, host, Overflow::Stream, n);
            let ((alone, alone_buf), (warp, warp_buf)) = (run(0), run(followers));
            assert!(alone.1 > 0, "{what}: no TAIL read");
            assert_eq!(warp.0, alone.0, "{what}: releases");
            assert_eq!(warp.1, alone.1 * (1 + followers as u64), "{what}: acquires");
            assert!(
                warp_buf == alone_buf,
                "{what}: the followers changed the buffer"
            );
        }
    }
}

/// What a record costs at system scope while the host keeps up: lanes whose host drains
/// them perfectly publish HEAD once per chunk (a quarter ring: one release) and read TAIL
/// once per three chunks (one acquire: the room cached from the last read runs out only
/// when the slots of the chunks since are needed), never per record; every record is
/// stored.
#[test]
fn a_lane_whose_host_keeps_up_releases_once_per_chunk_and_acquires_once_per_lap() {
    let (blocks, pairs) = (3u32, 6_000u32);
    let ((releases, acquires), counts) = self_drained(blocks, pairs, u32::MAX);
    let records = 2 * pairs as u64;
    let chunk = (CAP >> stream::PUBLISH_SHIFT) as u64;
    let lanes_n = blocks as u64;
    // One release per chunk (at the record after its end; the last one's at finalize).
    assert_eq!(releases, lanes_n * records.div_ceil(chunk), "releases");
    // One acquire per three chunks (the ring's four less the one being written).
    let per_lane = records.div_ceil(CAP as u64 - chunk);
    assert!(
        acquires <= lanes_n * per_lane && acquires >= lanes_n * (per_lane - 1),
        "{acquires} acquires for {lanes_n} lanes of {records} records (about {per_lane} each)"
    );
    for (l, &c) in counts.iter().enumerate() {
        assert_eq!(c, wire::pack_count(records as u32, 0), "lane {l}");
    }
}

/// A host as fast as the lanes but late by all but half a chunk of the ring (a drain that
/// just keeps up): the lanes drop (a ring with less than a chunk of room counts as full,
/// and a full lane goes back to the host once per STREAM_RECHECK drops), and go back to
/// the host at most once per chunk of records attempted, one release and one acquire,
/// never per few records.
#[test]
fn a_lane_kept_nearly_full_goes_back_to_its_host_at_most_once_per_chunk() {
    let (blocks, pairs) = (3u32, 6_000u32);
    let ((releases, acquires), counts) = self_drained(blocks, pairs, u32::MAX - 1);
    let records = 2 * pairs as u64;
    let chunk = (CAP >> stream::PUBLISH_SHIFT) as u64;
    let bound = blocks as u64 * (records / chunk + 2);
    assert!(
        releases <= bound && acquires <= bound,
        "{releases} releases, {acquires} acquires for {blocks} lanes of {records} records \
         (at most {bound} each)"
    );
    for (l, &c) in counts.iter().enumerate() {
        // Stored counts the drop marks too.
        let (stored, dropped) = (c as u32 as u64, c >> 32);
        assert!(
            stored + dropped >= records,
            "lane {l}: {stored} + {dropped}"
        );
        assert!(dropped > 0, "lane {l}: nothing dropped");
    }
}

/// A waiting lane whose host hands back one chunk at a time: each wait ends with exactly
/// a chunk of room, the stall mark takes one slot of it, and the record still goes in
/// (a lane that took the room left for less than a chunk would drop it): nothing dropped,
/// every record and stall mark stored.
#[test]
fn a_waiting_lane_given_back_one_chunk_at_a_time_drops_nothing() {
    let (blocks, pairs) = (2u32, 3_000u32);
    let (_, counts) = self_drained_in(blocks, pairs, u32::MAX - 2, Overflow::StreamWait);
    let records = 2 * pairs as u64;
    for (l, &c) in counts.iter().enumerate() {
        let (stored, dropped) = (c as u32 as u64, c >> 32);
        assert_eq!(dropped, 0, "lane {l}");
        // Stored holds the stall marks too: one per wait, at most one per chunk.
        assert!(stored > records, "lane {l}: {stored} stored, no stall");
    }
}

#[test]
fn wait_mode_loses_nothing_while_the_drain_pauses() {
    let (blocks, pairs) = (4, 2_000);
    let r = run(
        blocks,
        pairs,
        Overflow::StreamWait,
        0,
        Duration::from_millis(200),
    );
    let mut stall_marks = 0;
    for lane in 0..blocks as usize {
        let (arrived, _, _, stalls) = check_lane(&r.capture, lane, pairs);
        assert_eq!(arrived, 2 * pairs as u64, "lane {lane}");
        stall_marks += stalls;
        let state = r.capture.lanes[lane].state.as_ref().unwrap();
        let ctrl = wire::lane::PROLOGUE_WORDS as usize;
        let (stall_count, stall_ns) = (
            state[ctrl + stream::ctrl::STALLS as usize],
            state[ctrl + stream::ctrl::STALL_NS as usize],
        );
        assert_eq!(stall_count, stalls, "lane {lane}: STALLS vs stall marks");
        // Every lane filled its ring before the drain's first poll, 200 ms in.
        assert!(
            stall_count >= 1 && stall_ns > 0,
            "lane {lane}: {stall_count} stalls, {stall_ns} ns"
        );
    }
    assert!(stall_marks >= blocks as u64);
}

/// Drop mode, made to drop: the drain sleeps 5 ms before its first poll, long after every
/// lane filled its ring of 64 (microseconds), and every lane runs longer than that (it
/// sleeps 50 us every 64 pairs: 312 sleeps, at least 15.6 ms), so each lane drops records
/// and then finds room again, where it writes a drop mark.
fn dropping_run(blocks: u32, pairs: u32) -> Run {
    run(blocks, pairs, Overflow::Stream, 1, Duration::from_millis(5))
}

#[test]
fn drop_mode_counts_every_drop_and_marks_each_gap() {
    let (blocks, pairs) = (4, 20_000);
    let r = dropping_run(blocks, pairs);
    for lane in 0..blocks as usize {
        let (arrived, marked, _, stalls) = check_lane(&r.capture, lane, pairs);
        assert_eq!(stalls, 0, "drop mode never waits");
        assert!(marked > 0, "lane {lane}: no drop mark");
        assert!(
            arrived >= CAP as u64 - 1,
            "lane {lane}: the first ring's worth arrives"
        );
    }
}

#[test]
fn a_stream_file_decodes_like_a_buffer() {
    let (blocks, pairs) = (3, 300);
    let r = run(blocks, pairs, Overflow::StreamWait, 0, Duration::ZERO);
    let trace = ikp_host::decode_bytes(&r.file, &Default::default()).expect("decodes");
    assert_eq!(trace.lanes.len(), blocks as usize);
    assert_eq!(
        trace.spans.len(),
        (blocks * pairs) as usize,
        "every pair is a span"
    );
    assert_eq!(trace.names.regions[0], "work");
    assert_eq!(trace.dropped(), 0);

    // Drop mode with a paused drain: each gap is a span of the drop region, from the record
    // before it to the record after it, its payload the records dropped there; the lanes'
    // dropped counts are the exact totals and their written counts what they streamed.
    let r = dropping_run(2, 20_000);
    let trace = ikp_host::decode_bytes(&r.file, &Default::default()).expect("decodes");
    let drop_region = trace
        .names
        .regions
        .iter()
        .position(|n| n == ikp_host::decode::stream_capture::DROPPED_REGION)
        .expect("the drop region is named") as u16;
    let is_mark = |&w: &u64| {
        let rec = wire::unpack_record(w);
        rec.kind == Kind::Meta && rec.region == stream::META_DROPPED
    };
    for lane in &trace.lanes {
        let records = &r.capture.lanes[lane.id as usize].records;
        assert_eq!(lane.written, records.len() as u64, "lane {}", lane.id);
        let gaps: Vec<(u64, u64)> = (lane.spans.clone())
            .filter(|&i| trace.spans.region[i] == drop_region)
            .map(|i| (trace.spans.begin[i], trace.spans.end[i]))
            .collect();
        let marks: Vec<usize> = (0..records.len())
            .filter(|&i| is_mark(&records[i]))
            .collect();
        assert_eq!(
            gaps.len(),
            marks.len(),
            "lane {}: a gap span per drop mark",
            lane.id
        );
        assert!(!gaps.is_empty());
        // The payloads: the records each mark says were dropped there.
        let payloads: Vec<u32> = (lane.spans.clone())
            .filter(|&i| trace.spans.region[i] == drop_region)
            .map(|i| trace.spans.payload[i])
            .collect();
        let said: Vec<u32> = marks
            .iter()
            .map(|&i| {
                wire::unpack_record(records[i])
                    .time_lo
                    .min(wire::MAX_PAYLOAD)
            })
            .collect();
        assert_eq!(payloads, said, "lane {}", lane.id);
        // Each gap lasts from the record before the mark to the record after it (8 ns per
        // timer read in the emulation: never empty), and no other span is made across it:
        // the records dropped may have held its end.
        for &(gb, ge) in &gaps {
            assert!(gb < ge, "lane {}: gap {gb}..{ge}", lane.id);
        }
        for i in lane.spans.clone() {
            if trace.spans.region[i] == drop_region {
                continue;
            }
            let (b, e) = (trace.spans.begin[i], trace.spans.end[i]);
            assert!(
                !gaps.iter().any(|&(gb, ge)| b <= gb && ge <= e),
                "lane {}: span {b}..{e} spans a gap",
                lane.id
            );
        }
    }
    let dropped = trace.dropped();
    let want: u64 = (0..2)
        .map(|l| {
            let (_, marked, unmarked, _) = check_lane(&r.capture, l, 20_000);
            marked + unmarked
        })
        .sum();
    assert_eq!(dropped, want);
}

#[test]
fn a_torn_or_unfinished_stream_file_is_refused() {
    let r = run(2, 100, Overflow::StreamWait, 0, Duration::ZERO);
    let f = &r.file;
    // Cut inside a word.
    assert!(matches!(
        stream_file::read(&f[..f.len() - 3]),
        Err(StreamFileError::Torn(_))
    ));
    // Cut before the end block (6 words: its two block words and four figures).
    let e = stream_file::read(&f[..f.len() - 6 * 8]).unwrap_err();
    assert!(matches!(e, StreamFileError::Truncated { .. }), "{e}");
    assert!(e.to_string().contains("did not finish"), "{e}");
    // A records block lost from the middle: the next one does not continue the lane.
    let words: Vec<u64> = f
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let header_len = (words[1] >> 32) as usize;
    let first_block = 2 + header_len;
    let count = (words[first_block + 1] >> 32) as usize;
    let mut cut = words[..first_block].to_vec();
    cut.extend_from_slice(&words[first_block + 2 + count..]);
    let bytes: Vec<u8> = cut.iter().flat_map(|w| w.to_le_bytes()).collect();
    let e = stream_file::read(&bytes).unwrap_err();
    assert!(
        e.to_string().contains("missing or repeated")
            || e.to_string().contains("records, the file holds"),
        "{e}"
    );
    // Through the loader, the same errors name the input.
    let e = ikp_host::decode_bytes(&f[..f.len() - 6 * 8], &Default::default()).unwrap_err();
    assert!(e.to_string().contains("did not finish"), "{e}");
    // A stream launch's buffer given to the decoder says what it is.
    let layout = layout(1, Overflow::Stream);
    let mut buf = layout.header_words().unwrap();
    buf.resize(layout.buffer_words() as usize, 0);
    let e = ikp_host::decode(&buf, &Default::default()).unwrap_err();
    assert!(e.to_string().contains("stream launch's buffer"), "{e}");
    // A newer version asks for a newer ikp.
    let mut newer = f.clone();
    newer[8..12].copy_from_slice(&(stream_file::FILE_VERSION + 1).to_le_bytes());
    let e = stream_file::read(&newer).unwrap_err();
    assert!(e.to_string().contains("upgrade ikp"), "{e}");
}

/// The lanes and the C++ launcher's drain (`ikp_host.hpp`'s `ikp::StreamDrain`), built
/// with ThreadSanitizer: any data race between the header's record stores and the drain
/// fails the run (TSan exits 66); the file the drain wrote must hold every lane's records
/// in order, as the Rust drain's does, and decode.
#[test]
fn stream_lanes_and_the_cpp_drain_are_race_free_under_thread_sanitizer() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("emulate_stream_tsan");
    compile(&["-O1", "-g", "-fsanitize=thread", "-DIKP_EMU_MAIN"], &exe);
    let (blocks, pairs) = (4u32, 3000u32);
    let launch = |out: &Path, overflow: Overflow, pause_ms: u32| {
        let wait = (overflow == Overflow::StreamWait) as u32;
        let o = Command::new(&exe)
            .arg(out)
            .args([blocks, pairs, wait, 2, pause_ms, CAP].map(|n| n.to_string()))
            .env("TSAN_OPTIONS", "halt_on_error=1")
            .output()
            .expect("running the TSan build");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!text.contains("ThreadSanitizer"), "{text}");
        (o.status.code(), text)
    };
    for (overflow, pause_ms) in [
        (Overflow::StreamWait, 50),
        (Overflow::Stream, 20),
        (Overflow::StreamWait, 0),
    ] {
        let out = dir.path().join(format!("{overflow:?}-{pause_ms}.ikps"));
        let (code, text) = launch(&out, overflow, pause_ms);
        assert!(
            code == Some(0) && text.contains("drained"),
            "{overflow:?}, pause {pause_ms} ms:\n{text}"
        );
        assert!(!dir
            .path()
            .join(format!("{overflow:?}-{pause_ms}.ikps.part"))
            .exists());
        let bytes = std::fs::read(&out).unwrap();
        let capture = stream_file::read(&bytes).expect("the C++ drain's file reads back");
        let (mut dropped, mut stalls) = (0, 0);
        for l in 0..blocks as usize {
            let (_, marked, unmarked, stalled) = check_lane(&capture, l, pairs);
            dropped += marked + unmarked;
            stalls += stalled;
        }
        let waits = overflow == Overflow::StreamWait;
        assert!(!waits || dropped == 0, "wait mode dropped {dropped}");
        if pause_ms > 0 {
            // The drain started late: rings filled, and lanes waited or dropped.
            assert!(if waits { stalls > 0 } else { dropped > 0 }, "{text}");
        }
        let trace = ikp_host::decode_bytes(&bytes, &Default::default()).expect("decodes");
        assert_eq!(trace.dropped(), dropped);
    }
    // A file that cannot be created: the message names it, exit 3, the lanes still ran.
    let nowhere = dir.path().join("no/such/dir/run.ikps");
    let (code, text) = launch(&nowhere, Overflow::Stream, 0);
    assert_eq!(code, Some(3), "{text}");
    assert!(
        text.contains("cannot create") && text.contains("run.ikps.part"),
        "{text}"
    );
    // A disk that fills while waiting lanes run (a 256 KiB file size limit; 1.6 M records
    // need 12.8 MB): the drain keeps handing the slots back, so the lanes finish; finish()
    // reports the write error and leaves no file.
    let full = dir.path().join("full.ikps");
    let o = Command::new("timeout")
        .arg("120")
        .args([
            "sh",
            "-c",
            "trap '' XFSZ; ulimit -f 256; exec \"$0\" \"$@\"",
        ])
        .arg(&exe)
        .arg(&full)
        .args([blocks, 200_000, 1, 0, 0, CAP].map(|n| n.to_string()))
        .env("TSAN_OPTIONS", "halt_on_error=1")
        .output()
        .expect("running the TSan build");
    let text = String::from_utf8_lossy(&o.stdout) + String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(
        text.contains("writing") && text.contains("full.ikps.part"),
        "{text}"
    );
    assert!(!full.exists() && !dir.path().join("full.ikps.part").exists());
    assert!(!text.contains("ThreadSanitizer"), "{text}");
}

/// `samples/stream_emulated.ikps`, shipped so that every command can be tried on a stream
/// capture without a GPU: the emulated lanes in drop mode (4 lanes of 6,000 pairs, each
/// sleeping 50 us every 64 pairs, the drain starting 2 ms late, so each lane drops records
/// early and marks the gap). `IKP_BLESS=1` records it again (its drops then differ: the
/// test checks what holds for any such capture), and the fuzz corpus's stream seeds.
#[test]
fn the_stream_sample_is_a_whole_capture_of_the_emulated_lanes() {
    let (blocks, pairs) = (4, 6_000);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/stream_emulated.ikps");
    if std::env::var_os("IKP_BLESS").is_some() {
        let r = run(blocks, pairs, Overflow::Stream, 1, Duration::from_millis(2));
        std::fs::write(&path, &r.file).unwrap();
        // A small one seeds the fuzzers of the file reader and the native decoder.
        let seed = run(2, 40, Overflow::StreamWait, 0, Duration::ZERO).file;
        let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
        for target in ["read_file", "decode_native"] {
            std::fs::write(fuzz.join(target).join("stream.ikps"), &seed).unwrap();
        }
    }
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let capture = stream_file::read(&bytes).expect("the sample reads");
    assert_eq!(capture.lanes.len(), blocks as usize);
    let mut marked_lanes = 0;
    for lane in 0..blocks as usize {
        let (_, marked, _, _) = check_lane(&capture, lane, pairs);
        marked_lanes += (marked > 0) as u32;
    }
    assert!(marked_lanes > 0, "the sample shows no drop mark");
    let trace = ikp_host::load(&path, &Default::default()).expect("decodes");
    assert!(trace.dropped() > 0 && !trace.spans.is_empty());
}

/// A stream file is read within memory proportional to it: a header declaring more lanes
/// than the file has final states for is refused before anything is allocated for them,
/// and lanes of very uneven lengths decode without padding any lane to the longest.
#[test]
fn a_stream_file_cannot_ask_for_more_memory_than_it_is_worth() {
    use ikp_host::stream_file::{DrainStats, StreamFileWriter};
    // A lane that ran: stamps 5 ns and 30 us, its IDS word, no drops.
    let mut state = vec![0u64; stream_file::lane_state_words(0) as usize];
    state[wire::lane::START_GT as usize] = 5;
    state[wire::lane::IDS as usize] = wire::pack_ids(0, 0, stream::lane_flags::STREAM);
    let trailer = (wire::lane::PROLOGUE_WORDS + stream::CTRL_WORDS) as usize;
    state[trailer + wire::lane::T_END_GT as usize] = 30_000;
    let file = |blocks: u32, lanes_written: u32, records: &[u64]| {
        let header = layout(blocks, Overflow::Stream).header_words().unwrap();
        let mut w = StreamFileWriter::new(Vec::new(), &header).unwrap();
        for (k, chunk) in records.chunks(CAP as usize).enumerate() {
            w.records(0, (k * CAP as usize) as u32, chunk).unwrap();
        }
        for l in 0..lanes_written {
            w.lane(l, &state).unwrap();
        }
        let stats = DrainStats {
            records: records.len() as u64,
            ..DrainStats::default()
        };
        w.finish(&stats).unwrap()
    };
    let e = stream_file::read(&file(1 << 20, 1, &[])).unwrap_err();
    assert!(e.to_string().contains("1048576 lanes"), "{e}");
    let pair = |n: u64| wire::pack_record(10 + n as u32, wire::pack_tag(Kind::Instant, 0, 0));
    let hot: Vec<u64> = (0..20_000).map(pair).collect();
    // One hot lane among 100,000 quiet ones (a megakernel's scheduler warp): padding
    // every lane to the longest would take 2 x 10^9 words (16 GB); each lane's segment is
    // its own length, so it decodes in memory proportional to the file.
    let bytes = file(100_000, 100_000, &hot);
    let t = ikp_host::decode_bytes(&bytes, &Default::default()).unwrap();
    assert_eq!(t.lanes.len(), 100_000);
    assert_eq!(t.instants.len(), 20_000);
    assert_eq!(t.lanes[0].instants, 0..20_000);
    assert!(t.lanes[1..]
        .iter()
        .all(|l| l.instants.is_empty() && l.written == 0));
    assert_eq!(
        t.source.records_per_lane, CAP,
        "the ring's size, as streamed"
    );
    let ts: Vec<u64> = t
        .instants
        .ts
        .iter()
        .map(|&x| x - t.source.time_base)
        .collect();
    assert_eq!(
        ts[..3],
        [5, 6, 7],
        "stamps unwrap from the lane's start (5 ns)"
    );
}

/// A sink that takes `left` bytes, then fails (a full disk).
#[derive(Debug)]
struct FullDisk {
    left: usize,
}

impl std::io::Write for FullDisk {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::other("no space left on device"));
        }
        let n = buf.len().min(self.left);
        self.left -= n;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A drain whose file cannot be written any more still hands the slots back, so lanes
/// waiting for room (wait mode) finish: the kernel never hangs on a dead drain, and the
/// error comes back once it ended.
#[test]
fn wait_mode_lanes_finish_when_the_drain_cannot_write() {
    let full = FullDisk { left: 8 << 10 };
    let result = emulate(3, 5_000, Overflow::StreamWait, 0, Duration::ZERO, full);
    let e = result.expect_err("the full disk is reported");
    assert!(e.to_string().contains("no space left"), "{e}");
}

/// `DrainThread` (the drain of a caller that launches the kernel itself, as the Python
/// package's): a file that cannot be created is refused before the launch; then the lanes
/// run while it drains, and `finish` puts a whole file in place with every record.
#[test]
fn a_drain_thread_drains_beside_lanes_launched_by_the_caller() {
    let dir = tempfile::tempdir().unwrap();
    let (blocks, pairs) = (3u32, 2_000u32);
    let layout = layout(blocks, Overflow::StreamWait);
    let header = layout.header_words().unwrap();
    // 'static as a caller holding the buffer for the drain's life makes it.
    let buf: &'static [AtomicU64] = Box::leak(
        (0..layout.buffer_words())
            .map(|_| AtomicU64::new(0))
            .collect(),
    );
    for (w, h) in buf.iter().zip(&header) {
        w.store(*h, Ordering::Relaxed);
    }
    std::fs::write(dir.path().join("a_file"), "not a directory").unwrap();
    let e = DrainThread::start(buf, dir.path().join("a_file/x.ikps")).unwrap_err();
    assert!(e.to_string().contains("a_file"), "{e}");
    let path = dir.path().join("run.ikps");
    let drain = DrainThread::start(buf, path.clone()).unwrap();
    let arg = layout.kernel_arg(buf.as_ptr() as u64);
    // SAFETY: the symbol has this signature (emulate_stream.cpp); `arg` describes `buf`.
    let lanes: libloading::Symbol<RunFn> =
        unsafe { lanes_library().get(b"ikp_emu_stream_run") }.expect("ikp_emu_stream_run");
    let rc = {
        let _turn = exclusive_lanes();
        unsafe { lanes(&arg, blocks, pairs, 1, 0) }
    };
    assert_eq!(rc, 0);
    let stats = drain.finish().unwrap();
    let capture = stream_file::read(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(capture.drain, stats);
    for l in 0..blocks as usize {
        let (arrived, marked, unmarked, _) = check_lane(&capture, l, pairs);
        assert_eq!((arrived, marked + unmarked), (2 * pairs as u64, 0));
    }
}
