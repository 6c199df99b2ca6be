//! Device-side overflow: a lane that records past its capacity keeps exactly its first
//! `capacity` records, counts the rest as dropped, and leaves its neighbours' segments
//! untouched.
//!
//! Two lanes per block (a warp each). Group 0 records a few instants (fits); group 1
//! records exactly the capacity in block 0 and more in every later block. Every lane also
//! adds its number of attempts to a wait counter, which lives after the records in the
//! trailer. Checked: each lane's written and dropped counts, its instants' payloads (0, 1,
//! ... in order), its counter total, and in the raw buffer every event slot past a lane's
//! last record still zero.

use ikp_device::wire::lane as seg;
use ikp_device::{Header, Layout};
use ikp_host::cuda::cudarc::driver::PushKernelArg;
use ikp_host::Trace;
use serde_json::json;

use super::{Error, Gpu};
use crate::results::Check;

/// Record capacity of every lane.
pub const CAPACITY: u32 = 16;
/// Blocks.
pub const BLOCKS: u32 = 8;

/// Attempts of lane (block, group): group 0 fits, group 1 overflows from block 1 on.
pub fn attempts(block: u32, group: u32) -> u32 {
    if group == 0 {
        3 + block
    } else {
        CAPACITY + 7 * block
    }
}

/// The layout of the launch.
pub fn layout() -> Layout {
    Layout {
        grid: [BLOCKS, 1, 1],
        groups_per_block: 2,
        records_per_lane: CAPACITY,
        regions: vec!["mark".into()],
        counters: vec!["attempts".into()],
        ..Layout::default()
    }
}

/// Every difference between the decoded trace (and raw buffer) and what the lanes did.
pub fn differences(trace: &Trace, words: &[u64]) -> Vec<String> {
    let mut bad = Vec::new();
    let header = match Header::parse(words) {
        Ok(h) => h,
        Err(e) => return vec![format!("the buffer's header does not parse: {e}")],
    };
    if trace.lanes.len() as u32 != BLOCKS * 2 {
        bad.push(format!(
            "{} lanes decoded, expected {}",
            trace.lanes.len(),
            BLOCKS * 2
        ));
    }
    for (pos, lane) in trace.lanes.iter().enumerate() {
        let n = attempts(lane.block, lane.group);
        let written = n.min(CAPACITY);
        let who = format!(
            "lane {} (block {} group {})",
            lane.id, lane.block, lane.group
        );
        if !lane.finalized {
            bad.push(format!("{who} not finalized"));
        }
        if lane.written != written as u64 || lane.dropped != (n - written) as u64 {
            bad.push(format!(
                "{who}: written {} dropped {}, expected {written} and {}",
                lane.written,
                lane.dropped,
                n - written
            ));
        }
        let payloads = &trace.instants.payload[lane.instants.clone()];
        if payloads != (0..written).collect::<Vec<_>>() {
            bad.push(format!("{who}: instant payloads {payloads:?}"));
        }
        if trace.lane_counters(pos) != [n as u64] {
            bad.push(format!(
                "{who}: counter {:?}, expected [{n}]",
                trace.lane_counters(pos)
            ));
        }
        let range = header.lane_range(lane.id as u64);
        let events = &words[range.start + seg::EVENTS as usize..][..CAPACITY as usize];
        if let Some(k) = events[written as usize..].iter().position(|&w| w != 0) {
            bad.push(format!(
                "{who}: event slot {} past its last record holds {:#x}",
                written as usize + k,
                events[written as usize + k]
            ));
        }
    }
    let d = &trace.diagnostics;
    if d.unknown_records + d.after_finalize > 0 || !d.unmatched_end.is_empty() {
        bad.push(format!(
            "{} unknown records, {} after finalize, {} unmatched ends",
            d.unknown_records,
            d.after_finalize,
            d.unmatched_end.len()
        ));
    }
    bad
}

/// The `overflow` check.
pub fn check(gpu: &Gpu) -> Result<Check, Error> {
    let mut session = gpu.session(layout())?;
    let table: Vec<u32> = (0..BLOCKS * 2)
        .map(|lane| attempts(lane / 2, lane % 2))
        .collect();
    let dev = gpu.upload(&table)?;
    let arg = session.kernel_arg();
    // SAFETY: overflow(const unsigned* attempts, ikp::Arg) with one entry per lane.
    unsafe { launch!(gpu, "overflow", BLOCKS, 64; &dev, &arg) }?;
    let trace = super::decode(&mut session)?;
    let words = session.words().ok_or("no host copy after read_back")?;
    let bad = differences(&trace, words);
    let expected_dropped: u64 = table
        .iter()
        .map(|&n| n.saturating_sub(CAPACITY) as u64)
        .sum();
    let full = table.iter().filter(|&&n| n > CAPACITY).count();
    let pass = format!(
        "{full} of {} lanes overflowed their {CAPACITY} slots: {} records dropped, as \
         attempted; every kept record, counter and neighbouring slot intact",
        table.len(),
        trace.dropped()
    );
    Ok(super::words::verdict("overflow", bad, pass)
        .figure("lanes", table.len())
        .figure("overflowing_lanes", full)
        .figure("dropped_expected", expected_dropped)
        .figure("dropped_decoded", json!(trace.dropped())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ikp_device::encoder::BufferWriter;
    use ikp_host::decode::{decode, DecodeOptions};

    /// The buffer the kernel should write; `tamper` may change the words afterwards.
    fn buffer(tamper: impl Fn(&mut Vec<u64>)) -> (Trace, Vec<u64>) {
        let mut w = BufferWriter::new(layout()).unwrap();
        for lane in 0..BLOCKS * 2 {
            let (block, group) = (lane / 2, lane % 2);
            let n = attempts(block, group);
            let mut l = w.lane(lane as u64);
            l.init(block, group, 0, 1_000, 0);
            for i in 0..n {
                l.instant(0, i, 2_000 + i as u64);
            }
            l.counter_add(0, n as u64);
            l.finalize(9_000, 0);
        }
        let mut words = w.into_words();
        tamper(&mut words);
        (decode(&words, &DecodeOptions::default()).unwrap(), words)
    }

    #[test]
    fn the_expected_buffer_has_no_differences() {
        let (t, w) = buffer(|_| {});
        assert_eq!(differences(&t, &w), Vec::<String>::new());
        assert_eq!(t.dropped(), (1..BLOCKS as u64).map(|b| 7 * b).sum::<u64>());
    }

    #[test]
    fn a_stray_word_and_a_wrong_count_are_reported() {
        // A record written into lane 0's free slot 5 (it keeps 3).
        let (t, w) = buffer(|w| {
            let at = Header::parse(w).unwrap().lane_range(0).start + seg::EVENTS as usize + 5;
            w[at] = 0xdead_0000_0002;
        });
        let d = differences(&t, &w);
        assert!(d.iter().any(|m| m.contains("slot 5")), "{d:?}");
        // Lane 3's dropped count one short.
        let (t, w) = buffer(|w| {
            let r = Header::parse(w).unwrap().lane_range(3);
            let count = r.start + (seg::EVENTS + CAPACITY + seg::T_COUNT) as usize;
            w[count] -= 1 << 32;
        });
        let d = differences(&t, &w);
        assert!(
            d.iter()
                .any(|m| m.contains("lane 3") && m.contains("dropped 6")),
            "{d:?}"
        );
    }
}
