//! The per-block region distributions: each block's region statistics, formatted from a
//! [`TraceStats`] as the summary JSON's region entries are.
//!
//! # Format
//! A directory (`<trace stem>_block_region_dists/` beside the trace) with `index.json`
//! `{trace, dir, filters: {block_region_hist_bins, block_region_topk_blocks,
//! block_region_topk_regions_per_block}, blocks: [...]}` and one `block_<N>.json`
//! `{trace, block, lane_dur, outside_dur, outside_share, regions: [region entry]}` per
//! listed block, histograms with `block_region_hist_bins` bins, times and shares over
//! that block's lanes. `block_region_topk_blocks = K` keeps the K blocks with
//! the largest total span time (listed in block order); `block_region_topk_regions_per_block
//! = K` keeps each block's K regions with the largest total time (largest first).
//! A region entry is the summary JSON's ([`super::summary`], `# Format`), durations ns
//! times [`BlockDistOptions::scale`].

use super::atomic::Outputs;
use super::summary::{lane_totals, region_entries, RegionEntry};
use super::WriteError;
use crate::stats::TraceStats;
use serde::Serialize;
use std::io::{self, Write};
use std::path::Path;

/// Options of the distribution directory. Field names (the keys of its `filters`) and
/// defaults follow yao-jz/intra-kernel-profiler's `TraceWriteOptions` (see the
/// repository's `docs/references.md`).
/// Serialized as the index's `filters`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BlockDistOptions {
    /// Multiplier from ns to the reported unit of durations. Default 1.0.
    #[serde(skip)]
    pub scale: f64,
    /// Histogram bins of each region. Default 128.
    pub block_region_hist_bins: u32,
    /// Write distributions of only the K blocks with the largest total span time (0 =
    /// all). Default 0.
    pub block_region_topk_blocks: u32,
    /// Keep only the K regions with the largest total time per block file (0 = all).
    /// Default 0.
    pub block_region_topk_regions_per_block: u32,
}

impl Default for BlockDistOptions {
    fn default() -> Self {
        BlockDistOptions {
            scale: 1.0,
            block_region_hist_bins: 128,
            block_region_topk_blocks: 0,
            block_region_topk_regions_per_block: 0,
        }
    }
}

/// `index.json` of the distribution directory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DistIndex {
    /// Trace name.
    pub trace: String,
    /// Directory name.
    pub dir: String,
    /// Filters.
    pub filters: BlockDistOptions,
    /// Blocks with a file.
    pub blocks: Vec<u32>,
}

/// One `block_N.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockDist {
    /// Trace name.
    pub trace: String,
    /// Block.
    pub block: u32,
    /// The block's lane time.
    pub lane_dur: f64,
    /// The block's lane time outside any region.
    pub outside_dur: f64,
    /// `outside_dur / lane_dur`.
    pub outside_share: f64,
    /// Regions.
    pub regions: Vec<RegionEntry>,
}

/// Computes the distribution directory's documents: the index and one per block.
pub fn block_dists(
    stats: &TraceStats,
    opt: &BlockDistOptions,
    trace_name: &str,
    dir_name: &str,
) -> (DistIndex, Vec<BlockDist>) {
    let k = opt.scale;
    let mut blocks: Vec<(u32, u64, BlockDist)> = (stats.by_block().into_iter())
        .map(|(block, set)| {
            let bins = opt.block_region_hist_bins;
            let mut regions = region_entries(stats, &set, bins, k);
            let topr = opt.block_region_topk_regions_per_block as usize;
            if topr > 0 {
                regions.sort_by(|a, b| {
                    (b.stats.total_dur.total_cmp(&a.stats.total_dur)).then(a.region.cmp(&b.region))
                });
                regions.truncate(topr);
            }
            let (lane_dur, outside_dur, outside_share) = lane_totals(&set, k);
            let total = set.regions.iter().map(|r| r.stats.total).sum();
            let trace = trace_name.to_owned();
            let doc = BlockDist {
                trace,
                block,
                lane_dur,
                outside_dur,
                outside_share,
                regions,
            };
            (block, total, doc)
        })
        .collect();
    let topb = opt.block_region_topk_blocks as usize;
    if topb > 0 && blocks.len() > topb {
        blocks.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        blocks.truncate(topb);
        blocks.sort_by_key(|b| b.0);
    }
    let index = DistIndex {
        trace: trace_name.to_owned(),
        dir: dir_name.to_owned(),
        filters: opt.clone(),
        blocks: blocks.iter().map(|b| b.0).collect(),
    };
    (index, blocks.into_iter().map(|b| b.2).collect())
}

/// Writes the distribution directory `dir` into the batch `outs` (it replaces any
/// previous one when `outs` is committed).
pub fn write_block_dists(
    outs: &mut Outputs,
    dir: &Path,
    stats: &TraceStats,
    opt: &BlockDistOptions,
    trace_name: &str,
) -> Result<(), WriteError> {
    let dir_name = super::file_name(dir);
    let (index, files) = block_dists(stats, opt, trace_name, &dir_name);
    outs.dir(dir, |tmp| {
        put(&tmp.join("index.json"), &index)?;
        for b in &files {
            put(&tmp.join(format!("block_{}.json", b.block)), b)?;
        }
        Ok::<(), io::Error>(())
    })
}

/// Writes `v` as pretty JSON and a newline to a new file at `path`.
fn put(path: &Path, v: &impl Serialize) -> io::Result<()> {
    let mut f = io::BufWriter::new(std::fs::File::create(path)?);
    serde_json::to_writer_pretty(&mut f, v)?;
    f.write_all(b"\n")?;
    f.flush()
}
