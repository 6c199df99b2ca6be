//! What the root tests share: the GPU tests' gate and skip notices (the host tests' own
//! `session_support`, so both binaries skip with the same words), and reading the ids a
//! CUDA source gives its regions and counters.

#[path = "../host/tests/host/session_support.rs"]
mod session;
pub use session::gpu_or_skip;

/// Every one-line `enum : unsigned { A = 0, B = 1u }` of a CUDA source, in order, as
/// (name, value) pairs. Values must be explicit.
pub fn unsigned_enums(source: &str) -> Vec<Vec<(String, u32)>> {
    source
        .lines()
        .filter_map(|line| {
            line.trim()
                .strip_prefix("enum : unsigned {")
                .and_then(|b| b.split('}').next())
        })
        .map(|body| {
            body.split(',')
                .map(|item| {
                    let (n, v) = item.split_once('=').expect("explicit enum values");
                    let v = v.trim().trim_end_matches('u').parse().expect("a number");
                    (n.trim().to_owned(), v)
                })
                .collect()
        })
        .collect()
}
