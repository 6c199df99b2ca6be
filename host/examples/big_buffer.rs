//! Writes a very large native buffer, lane by lane, for the measurement in BENCHMARKS.md
//! (`## Very large buffers`): 8 lanes per block on a 132-SM-like grid, nested
//! `tile { load, wait, mma }` spans, counter samples and instants, lane starts across a
//! 2^32 ns wrap.
//!
//! ```text
//! cargo run --release -p ikp-host --example big_buffer -- target/big.ikp 4   # GiB
//! ```
//! `host/tests/host/big_buffer.rs` checks that what it writes decodes as designed.
use ikp_device::wire::{self, Kind};
use ikp_device::{Layout, TimerMode};
use std::io::Write;

/// Layout of a buffer of about `bytes`: 8 lanes per block on a 132-SM-like grid.
pub fn layout(bytes: u64) -> Layout {
    let lanes: u64 = 1056 * 8;
    let per_lane = (bytes / 8 / lanes).max(16) - 6 - 1;
    Layout {
        grid: [1056, 1, 1],
        groups_per_block: 8,
        records_per_lane: per_lane as u32,
        timer: TimerMode::Globaltimer,
        regions: vec!["tile".into(), "load".into(), "mma".into(), "wait".into()],
        counters: vec!["spin".into()],
        ..Layout::default()
    }
}

/// Lane `l`'s segment: tiles of `tile { load, wait, mma }` plus a counter sample per wait,
/// an instant every 64 tiles, filling the lane exactly; starts are spread across a 2^32
/// ns wrap so unwrapping is exercised.
fn segment(lay: &Layout, l: u64, seg: &mut Vec<u64>) {
    let cap = lay.records_per_lane as usize;
    seg.clear();
    let start = (3u64 << 32) - 20_000_000 + l * 1_000;
    seg.push(start);
    seg.push(0);
    seg.push(wire::pack_ids((l % 132) as u32, (l % 8) as u32, 0));
    seg.push(0); // record cost: not measured
    let mut t = start;
    let rec = |seg: &mut Vec<u64>, k: Kind, r: u32, p: u32, lo: u32| {
        seg.push(wire::pack_record(lo, wire::pack_tag(k, r, p)))
    };
    let mut tile = 0u32;
    while seg.len() - 4 + 10 <= cap {
        let step = 50 + (l * 7 + tile as u64 * 13) % 400;
        rec(seg, Kind::Begin, 0, tile & wire::PAYLOAD_MASK, t as u32);
        t += step;
        rec(seg, Kind::Begin, 1, 0, t as u32);
        t += step * 2;
        rec(seg, Kind::End, 1, 0, t as u32);
        rec(seg, Kind::Begin, 3, 0, t as u32);
        t += step / 2;
        rec(seg, Kind::End, 3, 0, t as u32);
        rec(seg, Kind::Meta, 0, 0, (step / 10) as u32);
        rec(seg, Kind::Begin, 2, 0, t as u32);
        t += step * 3;
        rec(seg, Kind::End, 2, 0, t as u32);
        rec(seg, Kind::End, 0, 0, t as u32);
        if tile.is_multiple_of(64) {
            rec(seg, Kind::Instant, 0, tile & wire::PAYLOAD_MASK, t as u32);
        }
        tile += 1;
    }
    let written = seg.len() - 4;
    seg.resize(4 + cap, 0);
    seg.push(t + 100);
    seg.push(0);
    seg.push(wire::pack_count(written as u32, 0));
    seg.push(tile as u64 * 5);
}

pub fn write(out: &mut impl Write, lay: &Layout) -> std::io::Result<()> {
    let header = lay.header_words().unwrap();
    let mut bytes: Vec<u8> = header.iter().flat_map(|w| w.to_le_bytes()).collect();
    // One epoch: the launch counters stay zero.
    bytes.resize(bytes.len() + lay.lane_count() as usize * 8, 0);
    out.write_all(&bytes)?;
    let mut seg = Vec::new();
    for l in 0..lay.lane_count() {
        segment(lay, l, &mut seg);
        bytes.clear();
        bytes.extend(seg.iter().flat_map(|w| w.to_le_bytes()));
        out.write_all(&bytes)?;
    }
    Ok(())
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(out), gib) = (args.next(), args.next()) else {
        eprintln!("usage: big_buffer OUT [GIB (default 4)]");
        std::process::exit(2);
    };
    let gib: u64 = match gib.map(|g| g.parse()) {
        None => 4,
        Some(Ok(g)) if g > 0 => g,
        Some(_) => {
            eprintln!("big_buffer: GIB must be a whole number of GiB above 0");
            std::process::exit(2);
        }
    };
    let lay = layout(gib << 30);
    let mut f = std::io::BufWriter::with_capacity(8 << 20, std::fs::File::create(&out)?);
    write(&mut f, &lay)?;
    f.flush()?;
    eprintln!(
        "{out}: {} bytes, {} lanes x {} records",
        lay.buffer_words() * 8,
        lay.lane_count(),
        lay.records_per_lane
    );
    Ok(())
}
