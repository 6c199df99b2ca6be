//! The file readers on arbitrary bytes: the buffer file (length checks, format detection,
//! decode) and the names file (lines or JSON). Never panics, allocates within the bound.
#![no_main]
use ikp_fuzz::{check_bound, peak_of, Counting};
use ikp_host::RawBuffer;
use ikp_host::decode::{self, DecodeOptions};
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

#[global_allocator]
static A: Counting = Counting;

fn path() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("ikp-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("input.bin")
    })
}

fuzz_target!(|data: &[u8]| {
    let p = path();
    std::fs::write(p, data).unwrap();
    let opts = DecodeOptions {
        single_threaded: true,
        ..Default::default()
    };
    let (r, peak) = peak_of(|| decode::load(p, &opts));
    // `load` holds the file's words (or maps them) as well as the trace.
    check_bound("load", data.len(), peak.saturating_sub(data.len()));
    drop(r);
    let (r, peak) = peak_of(|| RawBuffer::from_bytes("fuzz", data).map(|b| b.words.len()));
    check_bound("from_bytes", data.len(), peak);
    drop(r);
    let (r, peak) = peak_of(|| decode::names::read(p));
    check_bound("names", data.len(), peak);
    drop(r);
});
