//! The `ikp analyze --json` contract ([`super::kernel`]'s `# Format`), pinned exactly on a
//! buffer written by the reference encoder and decoded like any other. Every expected
//! value is worked out by hand in the comments, not copied from the output.
use super::kernel::{analyze, KernelOptions};
use crate::decode::{decode as decode_words, DecodeOptions};
use ikp_device::encoder::BufferWriter;
use ikp_device::{Layout, TimerMode};
use serde_json::json;

/// Absolute time of the buffer's first stamp.
const T: u64 = 1_000_000;

/// Two blocks of two groups (regions: 0 load, 1 signal.kv, 2 wait.kv, 3 mma):
/// - block 0 on SM 3: group 0 (warp 0) loads [0,40) and signals kv (token 0) at 40;
///   group 1 (warp 4) waits for kv [5,45), then computes [45,100);
/// - block 1 on SM 7: group 0 (warp 0) computes [10,40); group 1 (warp 4) records nothing
///   between its init at 10 and finalize at 20.
fn buffer() -> Vec<u64> {
    let mut b = BufferWriter::new(Layout {
        grid: [2, 1, 1],
        groups_per_block: 2,
        records_per_lane: 8,
        timer: TimerMode::Globaltimer,
        regions: ["load", "signal.kv", "wait.kv", "mma"]
            .map(String::from)
            .to_vec(),
        counters: vec![],
        ..Layout::default()
    })
    .unwrap();
    b.lane(0)
        .init(3, 0, 0, T, 0)
        .begin(0, 0, T)
        .end(0, 0, T + 40)
        .instant(1, 0, T + 40)
        .finalize(T + 40, 0);
    b.lane(1)
        .init(3, 4, 0, T, 0)
        .begin(2, 0, T + 5)
        .end(2, 0, T + 45)
        .begin(3, 0, T + 45)
        .end(3, 0, T + 100)
        .finalize(T + 100, 0);
    b.lane(2)
        .init(7, 0, 0, T + 10, 0)
        .begin(3, 0, T + 10)
        .end(3, 0, T + 40)
        .finalize(T + 40, 0);
    b.lane(3).init(7, 4, 0, T + 10, 0).finalize(T + 20, 0);
    b.into_words()
}

fn zero() -> serde_json::Value {
    json!({"min": 0, "median": 0, "p90": 0, "max": 0})
}

#[test]
fn analyze_json_is_exactly_the_documented_contract() {
    let trace = decode_words(&buffer(), &DecodeOptions::default()).unwrap();
    let got = serde_json::to_value(analyze(&trace, &KernelOptions::default())).unwrap();
    let track0 = "block 0 · group 0 (warp 0, SM 3)";
    let track1 = "block 0 · group 1 (warp 4, SM 3)";
    let want = json!({
        "format": "ikp",
        // First stamp T, last T + 100.
        "gpu_wall_ns": 100,
        "blocks": 2,
        // Block 0: [0,100) = 100; block 1: [10,40) = 30 (group 1's [10,20) inside it).
        "block_time_ns": 130,
        "breakdown": {
            "total": 130, "compute": 85, "exposed_wait": 40, "exposed_load": 5,
            "exposed_store": 0, "exposed_comm": 0, "exposed_other": 0, "idle": 0
        },
        "block_breakdowns": [
            // compute [45,100) = 55; wait [5,45) = 40; load [0,40) minus [5,45) = 5.
            {"block": 0, "start": T, "total": 100, "compute": 55, "exposed_wait": 40,
             "exposed_load": 5, "exposed_store": 0, "exposed_comm": 0,
             "exposed_other": 0, "idle": 0},
            {"block": 1, "start": T + 10, "total": 30, "compute": 30, "exposed_wait": 0,
             "exposed_load": 0, "exposed_store": 0, "exposed_comm": 0,
             "exposed_other": 0, "idle": 0}
        ],
        // Two blocks: the lower median is the smaller value, p90 the larger.
        "breakdown_spread": {
            "total": {"min": 30, "median": 30, "p90": 100, "max": 100},
            "compute": {"min": 30, "median": 30, "p90": 55, "max": 55},
            "exposed_wait": {"min": 0, "median": 0, "p90": 40, "max": 40},
            "exposed_load": {"min": 0, "median": 0, "p90": 5, "max": 5},
            "exposed_store": zero(), "exposed_comm": zero(),
            "exposed_other": zero(), "idle": zero()
        },
        "compute_isolation": {
            "length_ns": 130, "blocked_ns": 40, "compute_ns": 90,
            // The wait [5,45) and the compute [45,100) touch, never overlap.
            "overlap_ns": 0,
            "wait_sum_ns": 40,
            "blocked_from_counters_ns": null, "ns_per_iteration": null,
            "compute_spread": {"min": 30, "median": 30, "p90": 60, "max": 60},
            "blocked_spread": {"min": 0, "median": 0, "p90": 40, "max": 40},
            "per_block": [
                {"block": 0, "length_ns": 100, "blocked_ns": 40, "compute_ns": 60,
                 "overlap_ns": 0, "blocked_from_counters_ns": null},
                {"block": 1, "length_ns": 30, "blocked_ns": 0, "compute_ns": 30,
                 "overlap_ns": 0, "blocked_from_counters_ns": null}
            ]
        },
        "imbalance": {
            // Lanes 0..3 last 40, 100, 30, 10; sorted 10, 30, 40, 100.
            "lanes": {"count": 4, "min": 10, "median": 30, "p90": 100, "max": 100,
                      "max_over_median": 100.0 / 30.0,
                      "slowest": [[1, 100], [0, 40], [2, 30], [3, 10]]},
            "blocks": {"count": 2, "min": 30, "median": 30, "p90": 100, "max": 100,
                       "max_over_median": 100.0 / 30.0, "slowest": [[0, 100], [1, 30]]},
            // SM 3 busy [0,100), SM 7 [10,40).
            "sms": {"count": 2, "min": 30, "median": 30, "p90": 100, "max": 100,
                    "max_over_median": 100.0 / 30.0, "slowest": [[3, 100], [7, 30]]},
            "sm_occupancy": [[T, 1], [T + 10, 2], [T + 40, 1], [T + 100, 0]],
            // One SM (half the peak of 2) stays busy to the end: no tail.
            "tail": 0
        },
        "gaps": [{"from": 2, "to": 3, "count": 1, "total": 0, "max": 0}],
        "links": [{"block": 0, "from_lane": 0, "from_ts": T + 40,
                   "from": {"kind": "instant", "index": 0},
                   "to_lane": 1, "to_span": 1, "to_ts": T + 45, "token": 0}],
        // The mma ends last; before it on its lane the wait, released by the signal at 40,
        // which the load issued.
        "critical_path": {"block": 0, "length_ns": 100, "steps": [
            {"span": 0, "block": 0, "group": 0, "warp": 0, "sm": 3, "track": track0,
             "region": "load", "category": "load", "start_ns": T, "offset_ns": 0,
             "dur_ns": 40, "waited_on": null, "longest_wait": false},
            {"span": 1, "block": 0, "group": 1, "warp": 4, "sm": 3, "track": track1,
             "region": "wait.kv", "category": "wait", "start_ns": T + 5, "offset_ns": 5,
             "dur_ns": 40,
             "waited_on": {"block": 0, "group": 0, "warp": 0, "sm": 3, "track": track0,
                           "region": "signal.kv", "signal_ns": T + 40},
             "longest_wait": true},
            {"span": 2, "block": 0, "group": 1, "warp": 4, "sm": 3, "track": track1,
             "region": "mma", "category": "compute", "start_ns": T + 45, "offset_ns": 45,
             "dur_ns": 55, "waited_on": null, "longest_wait": false}
        ]},
        "roofline": []
    });
    assert_eq!(got, want, "{}", serde_json::to_string_pretty(&got).unwrap());
}
