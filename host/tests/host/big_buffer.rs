//! Very large buffers: the generator of the measurement in BENCHMARKS.md
//! (`## Very large buffers`, `cargo run --release -p ikp-host --example big_buffer`)
//! writes a buffer that decodes as designed, so the measured buffer is a valid one.
#[allow(dead_code)] // its `main`
#[path = "../../examples/big_buffer.rs"]
mod generator;

use generator::{layout, write};

#[test]
fn generated_buffer_decodes_as_designed() {
    let lay = layout(8 << 20);
    let mut v = Vec::new();
    write(&mut v, &lay).unwrap();
    assert_eq!(v.len() as u64, lay.buffer_words() * 8);
    let words: Vec<u64> = v
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let t = ikp_host::decode::decode(&words, &Default::default()).unwrap();
    assert_eq!(t.lanes.len() as u64, lay.lane_count());
    assert!(t.diagnostics.unmatched_begin.is_empty() && t.diagnostics.unmatched_end.is_empty());
    assert_eq!(t.dropped(), 0);
    assert!(t.spans.len() > 4 * t.lanes.len());
}
