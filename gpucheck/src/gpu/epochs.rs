//! `epochs/graph`: one launch captured into a CUDA Graph, replayed 4 times with nothing in
//! between into a buffer of 3 epochs: each lane's launch counter says 4, epochs 0..3 each
//! hold one launch, in launch order, and the 4th replay wrote nothing. Each block holds two
//! lanes in one warp and one lane over two warps, the shapes the header's warp-wide epoch
//! hand-off (`redux.sync.max` of the leaders' claims) must get right.

use ikp_device::wire::{self, lane as seg, Kind};
use ikp_device::Layout;
use ikp_host::cuda::cudarc::driver::{sys, PushKernelArg};

use super::words::{counts, header, read, verdict};
use super::{drv, grid, Error, Gpu};
use crate::results::Check;

/// Epochs of the graph check's buffer, and the replays launched into it.
pub const EPOCHS: u32 = 3;
/// Replays of the graph: one more than the epochs.
pub const REPLAYS: u32 = 4;
/// The graph kernel's instant payload.
pub const TAG: u32 = 7;
/// Blocks of the graph launch.
pub const BLOCKS: u32 = 4;
/// Threads per block: warp 0 holds lanes 0 and 1 (16 threads each), warps 1 and 2 lane 2.
pub const THREADS: u32 = 96;
/// Lanes per block.
pub const GROUPS: u32 = 3;

/// The graph check's layout.
pub fn epochs_layout() -> Layout {
    Layout {
        grid: [BLOCKS, 1, 1],
        groups_per_block: GROUPS,
        records_per_lane: 4,
        regions: vec!["replay".into()],
        epochs: EPOCHS,
        ..Layout::default()
    }
}

/// Every difference between the graph check's buffer and `replays` replays of one launch.
pub fn epochs_differences(words: &[u64], replays: u32) -> Vec<String> {
    let h = match header(words) {
        Ok(h) => h,
        Err(e) => return e,
    };
    let mut bad = Vec::new();
    let cap = h.layout.records_per_lane;
    for l in 0..h.layout.lane_count() {
        let counter = words[h.launch_counter(l)];
        if counter != replays as u64 {
            bad.push(format!(
                "lane {l}: launch counter {counter}, expected {replays}"
            ));
        }
        let mut previous_end = 0;
        for e in 0..EPOCHS {
            let s = &words[h.segment_range(e, l)];
            let who = format!("lane {l} epoch {e}");
            let ran = wire::unpack_ids(s[seg::IDS as usize]).is_some();
            if ran != (e < replays) {
                bad.push(format!("{who}: ran init {ran}, {replays} replays"));
                continue;
            }
            if !ran {
                continue;
            }
            let (written, dropped, fin) = counts(s, cap);
            let r = wire::unpack_record(s[seg::EVENTS as usize]);
            if !fin || (written, dropped) != (1, 0) || (r.kind, r.payload) != (Kind::Instant, TAG) {
                bad.push(format!(
                    "{who}: finalized {fin}, {written} written {dropped} dropped, first {r:?}"
                ));
            }
            let start = s[seg::START_GT as usize];
            if start < previous_end {
                bad.push(format!(
                    "{who}: starts at {start} ns, before epoch {} ended ({previous_end} ns)",
                    e - 1
                ));
            }
            previous_end = s[(seg::EVENTS + cap + seg::T_END_GT) as usize];
        }
    }
    bad
}

/// The `epochs/graph` check: one launch captured into a CUDA Graph on a new stream (the
/// legacy default stream cannot be captured), replayed [`REPLAYS`] times back to back.
pub fn check(gpu: &Gpu) -> Result<Check, Error> {
    let f = gpu.function("epoch_replay")?;
    let mut session = gpu.session(epochs_layout())?;
    let arg = session.kernel_arg();
    let stream = gpu.ctx.new_stream().map_err(drv("cuStreamCreate"))?;
    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .map_err(drv("cuStreamBeginCapture"))?;
    let mut b = stream.launch_builder(&f);
    b.arg(&TAG).arg(&arg);
    // SAFETY: epoch_replay(unsigned tag, ikp::Arg).
    let launched = unsafe { b.launch(grid(BLOCKS, THREADS)) }
        .map_err(drv("cuLaunchKernel (epoch_replay, captured)"));
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .map_err(drv("cuStreamEndCapture"))?;
    launched?;
    let graph = graph.ok_or("the capture produced no graph")?;
    for _ in 0..REPLAYS {
        graph.launch().map_err(drv("cuGraphLaunch"))?;
    }
    let words = read(&mut session)?;
    let pass = format!(
        "a CUDA Graph replayed {REPLAYS} times into {EPOCHS} epochs: every lane counted \
         {REPLAYS} launches, epochs 0..{EPOCHS} hold one launch each in launch order, the \
         last replay wrote nothing"
    );
    Ok(
        verdict("epochs/graph", epochs_differences(&words, REPLAYS), pass)
            .figure("replays", REPLAYS)
            .figure("epochs", EPOCHS),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ikp_device::encoder::BufferWriter;

    fn epochs_buffer(replays: u32) -> Vec<u64> {
        let mut w = BufferWriter::new(epochs_layout()).unwrap();
        for r in 0..replays {
            for l in 0..(BLOCKS * GROUPS) as u64 {
                let t = 10_000 * (r as u64 + 1);
                if let Some(mut lw) = w.launch(l) {
                    lw.init(0, 0, 0, t, 0);
                    lw.instant(0, TAG, t + 5);
                    lw.finalize(t + 10, 0);
                }
            }
        }
        w.into_words()
    }

    #[test]
    fn replays_fill_one_epoch_each_and_a_missing_replay_is_caught() {
        assert_eq!(
            epochs_differences(&epochs_buffer(4), 4),
            Vec::<String>::new()
        );
        let d = epochs_differences(&epochs_buffer(2), 4);
        assert!(d.iter().any(|m| m.contains("launch counter 2")), "{d:?}");
        assert!(
            d.iter().any(|m| m.contains("epoch 2: ran init false")),
            "{d:?}"
        );
    }
}
