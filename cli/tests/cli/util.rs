//! What every CLI test needs: the `ikp` binary under test, and paths.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ikp_device::encoder::BufferWriter;
use ikp_device::Layout;
use perfetto_protos::trace::Trace as PTrace;
use perfetto_protos::trace_packet::TracePacket;
use perfetto_protos::track_event::track_event::Type;
use protobuf::Message;

/// The `ikp` binary built for these tests with `args`, not started (to set its
/// environment or pipes).
pub fn ikp_command(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ikp"));
    c.args(args);
    c
}

/// Runs `ikp` with `args`, to completion.
pub fn ikp(args: &[&str]) -> Output {
    ikp_command(args).output().expect("run ikp")
}

/// Runs `ikp` with `args`, which must succeed; its standard output as text.
pub fn ikp_ok(args: &[&str]) -> String {
    let o = ikp(args);
    assert!(o.status.success(), "ikp {args:?}: {}", text(&o.stderr));
    String::from_utf8(o.stdout).expect("UTF-8 output")
}

/// Output bytes as text, for messages and searches.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Three launches recorded of four that ran, two lanes each; launch `k` has `k + 1`
/// spans per lane. Lane 0 measured its record cost (8 cycles at 0.5 ns per cycle).
pub fn write_epochs(path: &Path) {
    let mut b = BufferWriter::new(Layout {
        groups_per_block: 2,
        records_per_lane: 16,
        regions: vec!["step".into(), "inner".into()],
        epochs: 3,
        ..Layout::default()
    })
    .unwrap();
    for k in 0..4u64 {
        for l in 0..2u64 {
            let t0 = 1_000_000 * (k + 1) + 100 * l;
            if let Some(mut w) = b.launch(l) {
                w.init(0, l as u32, 0, t0, 0);
                if l == 0 {
                    w.calibrate(8);
                }
                w.begin(0, 0, t0 + 10);
                for j in 0..k {
                    w.begin(1, j as u32, t0 + 20 + 10 * j)
                        .end(1, j as u32, t0 + 25 + 10 * j);
                }
                w.end(0, 0, t0 + 100).finalize(t0 + 200, 400);
            }
        }
    }
    std::fs::write(path, b.to_bytes()).unwrap();
}

/// `p` as a command-line argument (test paths are UTF-8).
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The repository's root (for the shipped samples).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The packets of a Perfetto trace, compressed bundles expanded.
pub fn packets(bytes: &[u8]) -> Vec<TracePacket> {
    let trace = PTrace::parse_from_bytes(bytes).expect("a perfetto.protos.Trace");
    let mut out = Vec::new();
    for p in trace.packet {
        if p.has_compressed_packets() {
            let mut raw = Vec::new();
            flate2::read::ZlibDecoder::new(p.compressed_packets())
                .read_to_end(&mut raw)
                .expect("a zlib stream");
            out.extend(PTrace::parse_from_bytes(&raw).expect("packets").packet);
        } else {
            out.push(p);
        }
    }
    out
}

/// Per launch root track: its name and the slices on the tracks below it.
pub fn launches(packets: &[TracePacket]) -> Vec<(String, u64)> {
    let mut parent: HashMap<u64, Option<u64>> = HashMap::new();
    let mut roots: Vec<(u64, String)> = Vec::new();
    let mut default_track: HashMap<u32, u64> = HashMap::new();
    let mut slices: HashMap<u64, u64> = HashMap::new();
    for p in packets {
        if p.has_track_descriptor() {
            let td = p.track_descriptor();
            parent.insert(td.uuid(), td.parent_uuid);
            if td.parent_uuid.is_none() {
                roots.push((td.uuid(), td.name().to_string()));
            }
        }
        if let Some(t) = (p.trace_packet_defaults.as_ref())
            .and_then(|d| d.track_event_defaults.as_ref())
            .and_then(|d| d.track_uuid)
        {
            default_track.insert(p.trusted_packet_sequence_id(), t);
        }
        // The spans' slices: a lane's lifetime (category `lane`) is none.
        let lifetime = || p.track_event().categories.iter().any(|c| c == "lane");
        if p.has_track_event() && p.track_event().type_() == Type::TYPE_SLICE_BEGIN && !lifetime() {
            let mut t = (p.track_event().track_uuid)
                .or(default_track.get(&p.trusted_packet_sequence_id()).copied())
                .expect("a slice without a track");
            while let Some(Some(up)) = parent.get(&t) {
                t = *up;
            }
            *slices.entry(t).or_default() += 1;
        }
    }
    (roots.into_iter())
        .map(|(uuid, name)| (name, slices.get(&uuid).copied().unwrap_or(0)))
        .collect()
}
