//! The TVM-format decoder on arbitrary words: never panics, allocates within the bound.
#![no_main]
use ikp_fuzz::{check_bound, peak_of, words, Counting};
use ikp_host::decode::{decode_words, DecodeOptions, FormatChoice};
use libfuzzer_sys::fuzz_target;

#[global_allocator]
static A: Counting = Counting;

fuzz_target!(|data: &[u8]| {
    let w = words(data);
    let opts = DecodeOptions {
        format: FormatChoice::Tvm,
        single_threaded: true,
        ..Default::default()
    };
    let (r, peak) = peak_of(|| decode_words(&w, &opts));
    check_bound("TVM decode", w.len() * 8, peak);
    drop(r);
});
