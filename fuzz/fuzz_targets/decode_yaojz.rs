//! The yao-jz ring dump decoder on arbitrary words: never panics, allocates within the
//! bound.
#![no_main]
use ikp_fuzz::{decode_within_bound, Counting};
use ikp_host::decode::FormatChoice;
use libfuzzer_sys::fuzz_target;

#[global_allocator]
static A: Counting = Counting;

fuzz_target!(|data: &[u8]| decode_within_bound(data, FormatChoice::YaoJz, "yao-jz decode"));
