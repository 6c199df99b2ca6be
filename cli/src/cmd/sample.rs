//! `ikp sample OUT`: writes a sample buffer (the shipped attention-shaped one, or a
//! TVM-format one of any size for benchmarks), so every command can be tried without a GPU;
//! `--seed N` writes another run of the same kernel, for `ikp diff`.
use ikp_device::sample;
use ikp_host::atomic;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `ikp sample`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output file.
    pub out: PathBuf,
    /// Write the TVM / warpscope format with this many blocks (3 lanes each)
    /// instead of the native sample.
    #[arg(long, value_name = "BLOCKS")]
    pub tvm_blocks: Option<u32>,
    /// KV tiles per block of the TVM-format sample (24 records per tile per block).
    #[arg(long, default_value_t = 10)]
    pub tiles: u32,
    /// Another run of the same kernel: every duration's jitter drawn from this seed (0, the
    /// default, is the shipped sample). Two seeds give two runs to try `ikp diff` on.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// Runs `ikp sample`.
pub fn run(a: Args) -> anyhow::Result<()> {
    let bytes: Vec<u8> = match a.tvm_blocks {
        Some(blocks) => {
            anyhow::ensure!(
                (1..=1 << 18).contains(&blocks) && (1..=1 << 16).contains(&a.tiles),
                "--tvm-blocks must be 1..=262144 and --tiles 1..=65536"
            );
            sample::attention_tvm_seeded(blocks, a.tiles, a.seed)
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect()
        }
        None => sample::attention_seeded(a.seed)?.to_bytes(),
    };
    atomic::write_file(&a.out, |w| w.write_all(&bytes))?;
    Ok(())
}
