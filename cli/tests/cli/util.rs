//! What every CLI test needs: the `ikp` binary under test, and paths.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use perfetto_protos::trace::Trace as PTrace;
use perfetto_protos::trace_packet::TracePacket;
use perfetto_protos::track_event::track_event::Type;
use protobuf::Message;

/// Runs the `ikp` binary built for these tests with `args`, to completion.
pub fn ikp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ikp"))
        .args(args)
        .output()
        .expect("run ikp")
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
        if p.has_track_event() && p.track_event().type_() == Type::TYPE_SLICE_BEGIN {
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
