//! Encoders of other profilers' formats, written from their sources (not from ikp's
//! decoders), for the golden, property and sample tests: each says which file of the
//! peer it re-implements.
#![allow(dead_code)]

pub mod flashinfer;
pub mod mirage;
pub mod proton;
pub mod tvm;
pub mod yaojz;

/// A small deterministic generator (xorshift64*), for junk bytes and sample programs.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
