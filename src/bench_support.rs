//! Inputs shared by the benches (not part of the API: hidden from the docs).
//!
//! The TVM-format input is `ikp_device::sample::attention_tvm`; this module adds the same
//! attention-shaped schedule in the native format, written with the reference encoder, so
//! every bench decodes the same kind of kernel in both formats.
use ikp_device::encoder::BufferWriter;
use ikp_device::sample;
use ikp_device::{Layout, LayoutError, TimerMode};

/// The attention sample's schedule (`sample::block_schedule`) for `blocks` blocks of
/// `tiles` KV tiles, in the native format: three lanes per block, records per lane sized
/// to the longest lane, counter samples and totals included.
pub fn native_attention(blocks: u32, tiles: u32) -> Result<Vec<u64>, LayoutError> {
    let sched: Vec<_> = (0..blocks)
        .map(|b| sample::block_schedule(b, tiles))
        .collect();
    let cap = sched
        .iter()
        .flat_map(|s| s.iter().map(|l| l.2.len()))
        .max()
        .unwrap_or(0) as u32;
    let layout = Layout {
        grid: [blocks, 1, 1],
        groups_per_block: sample::GROUPS,
        records_per_lane: cap,
        timer: TimerMode::Globaltimer,
        regions: sample::REGIONS.iter().map(|s| s.to_string()).collect(),
        counters: sample::COUNTERS.iter().map(|s| s.to_string()).collect(),
        ..Layout::default()
    };
    let mut w = BufferWriter::new(layout)?;
    for (b, lanes) in sched.into_iter().enumerate() {
        for (g, (start, end, evs)) in lanes.into_iter().enumerate() {
            let mut l = w.lane(b as u64 * sample::GROUPS as u64 + g as u64);
            l.init(sample::sm_of(b as u32), g as u32 * 4, 0, start, 0);
            for e in evs {
                e.write_to(&mut l);
            }
            l.finalize(end, 0);
        }
    }
    Ok(w.into_words())
}

/// The warpscope comparison workload of BENCHMARKS.md (`ikp sample BUF --tvm-blocks
/// BLOCKS --tiles TILES` decoded with `--format tvm --names` the sample's region names):
/// the TVM-format buffer and the options that decode it with those names, so that its
/// `signal.` / `wait.` regions link (the Perfetto writer's flows). 102 blocks of 2,000
/// tiles make 4.9 M records.
pub fn tvm_named(blocks: u32, tiles: u32) -> (Vec<u64>, ikp_host::decode::DecodeOptions) {
    let names = ikp_host::Names {
        regions: sample::REGIONS.iter().map(|s| s.to_string()).collect(),
        counters: Vec::new(),
    };
    let opts = ikp_host::decode::DecodeOptions {
        format: ikp_host::decode::FormatChoice::Tvm,
        names: Some(names),
        ..Default::default()
    };
    (sample::attention_tvm(blocks, tiles), opts)
}
