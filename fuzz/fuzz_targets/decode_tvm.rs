//! The TVM family's decoder on arbitrary words, as each of its formats (TVM, FlashInfer,
//! Mirage MPK: one generic decoder over three tag layouts): never panics, allocates within
//! the bound.
#![no_main]
use ikp_fuzz::{decode_within_bound, Counting};
use ikp_host::decode::FormatChoice;
use libfuzzer_sys::fuzz_target;

#[global_allocator]
static A: Counting = Counting;

fuzz_target!(|data: &[u8]| {
    decode_within_bound(data, FormatChoice::Tvm, "TVM decode");
    decode_within_bound(data, FormatChoice::FlashInfer, "FlashInfer decode");
    decode_within_bound(data, FormatChoice::Mirage, "Mirage decode");
});
