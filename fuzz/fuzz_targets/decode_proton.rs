//! The Proton trace decoder on arbitrary bytes (JSON or not): never panics, allocates
//! within the bound.
#![no_main]
use ikp_fuzz::{check_bound, peak_of, Counting};
use ikp_host::decode::{decode_bytes, DecodeOptions, FormatChoice};
use libfuzzer_sys::fuzz_target;

#[global_allocator]
static A: Counting = Counting;

fuzz_target!(|data: &[u8]| {
    let opts = DecodeOptions {
        format: FormatChoice::Proton,
        single_threaded: true,
        ..Default::default()
    };
    let (r, peak) = peak_of(|| decode_bytes(data, &opts));
    check_bound("Proton decode", data.len(), peak);
    drop(r);
});
