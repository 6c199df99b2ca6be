//! Writers over `io::Write`: one module per output format.
//!
//! - [`chrome`]: Chrome Trace Event JSON (chrome://tracing, Perfetto UI);
//! - [`summary`]: summary JSON of region statistics, and the per-block distribution
//!   directory;
//! - [`csv`]: one row per span, for pandas / DuckDB;
//! - [`table`]: the terminal table of `ikp summary`;
//! - [`perfetto`]: native Perfetto protobuf;
//! - [`atomic`]: all-or-nothing files and directories, used by every file output.
//!
//! [`TraceWriteOptions`] carries every option of the JSON writers, with the defaults of
//! the in-kernel profiler this layout comes from, except where noted on the field.
pub mod atomic;
pub mod chrome;
pub mod csv;
pub mod json;
pub mod perfetto;
pub mod summary;
pub mod table;

use crate::model::{Lane, Trace};
use std::path::Path;

/// Which blocks a writer includes; empty means all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockFilter(Vec<u32>);

impl BlockFilter {
    /// A filter of these blocks (sorted and deduplicated); empty = all.
    pub fn new(mut blocks: Vec<u32>) -> BlockFilter {
        blocks.sort_unstable();
        blocks.dedup();
        BlockFilter(blocks)
    }

    /// Parses `"0,1,4-7"` (ids and inclusive ranges, comma-separated).
    pub fn parse(s: &str) -> Result<BlockFilter, String> {
        let mut v = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let num = |x: &str| {
                x.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("{x:?} is not a block id (in block filter {s:?})"))
            };
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (num(a)?, num(b)?);
                    if a > b || b - a >= 1 << 24 {
                        return Err(format!("bad block range {part:?}"));
                    }
                    v.extend(a..=b);
                }
                None => v.push(num(part)?),
            }
        }
        Ok(BlockFilter::new(v))
    }

    /// The blocks, ascending (empty = all).
    pub fn blocks(&self) -> &[u32] {
        &self.0
    }

    /// Whether `block` is included.
    pub fn contains(&self, block: u32) -> bool {
        self.0.is_empty() || self.0.binary_search(&block).is_ok()
    }

    /// The lanes of `trace` this filter includes.
    pub fn lanes<'a>(&'a self, trace: &'a Trace) -> impl Iterator<Item = &'a Lane> + 'a {
        trace.lanes.iter().filter(move |l| self.contains(l.block))
    }
}

/// Options of the Chrome trace and summary writers.
///
/// Field names and defaults follow the in-kernel profiler whose output layout these
/// writers reproduce (reference 001).
#[derive(Clone, Debug, PartialEq)]
pub struct TraceWriteOptions {
    /// Multiplier from ns to the reported unit (times in the Chrome trace, durations in the
    /// summary). Default 1.0.
    pub scale: f64,
    /// Pair each span into one `X` (complete) event (default `true`): a fifth smaller and
    /// faster to load than the `B`/`E` pairs written when `false`.
    pub emit_complete_events: bool,
    /// `pid` = SM and `tid` = `block << 6 | warp` (true, default), or `pid` = block and
    /// `tid` = `warp * 32` (false). TVM-format lanes have no SM: `pid` is the block.
    pub group_by_smid: bool,
    /// Whether [`write_trace`] writes the summary JSON beside the trace. Default true.
    pub emit_summary_json: bool,
    /// Histogram bins of each region in the summary. Default 128.
    pub summary_hist_bins: u32,
    /// Include per-(block, warp) statistics of every region. Default true.
    pub summary_dump_by_block_warp: bool,
    /// Write the per-block region distribution directory. Default false.
    pub emit_block_region_distributions: bool,
    /// Histogram bins of the per-block distributions. Default 128.
    pub block_region_hist_bins: u32,
    /// Keep only the K (block, warp) entries with the largest total time per region
    /// (0 = all). Default 0.
    pub summary_topk_block_warp_per_region: u32,
    /// Write distributions of only the K blocks with the largest total span time (0 = all).
    pub block_region_topk_blocks: u32,
    /// Keep only the K regions with the largest total time per block file (0 = all).
    pub block_region_topk_regions_per_block: u32,
    /// Blocks to include in every output (empty = all).
    pub block_filter: BlockFilter,
}

impl Default for TraceWriteOptions {
    fn default() -> Self {
        TraceWriteOptions {
            scale: 1.0,
            emit_complete_events: true,
            group_by_smid: true,
            emit_summary_json: true,
            summary_hist_bins: 128,
            summary_dump_by_block_warp: true,
            emit_block_region_distributions: false,
            block_region_hist_bins: 128,
            summary_topk_block_warp_per_region: 0,
            block_region_topk_blocks: 0,
            block_region_topk_regions_per_block: 0,
            block_filter: BlockFilter::default(),
        }
    }
}

/// `foo.json` → `foo_summary.json`, the summary's path beside a trace.
pub fn summary_path(trace_path: &Path) -> std::path::PathBuf {
    sibling(trace_path, "_summary.json")
}

/// `foo.json` → `foo_block_region_dists`, the distribution directory beside a trace.
pub fn dists_path(trace_path: &Path) -> std::path::PathBuf {
    sibling(trace_path, "_block_region_dists")
}

fn sibling(p: &Path, suffix: &str) -> std::path::PathBuf {
    let stem = p
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    p.with_file_name(format!("{stem}{suffix}"))
}

/// Writes the Chrome trace at `path` and, as the options ask, the summary JSON at
/// [`summary_path`] and the distribution directory at [`dists_path`]; each atomically.
pub fn write_trace(
    trace: &Trace,
    path: &Path,
    opt: &TraceWriteOptions,
) -> Result<(), atomic::WriteError> {
    atomic::write_file(path, |w| chrome::write_chrome(trace, opt, w))?;
    let name = file_name(path);
    if opt.emit_summary_json {
        atomic::write_file(&summary_path(path), |w| {
            summary::write_summary(trace, opt, &name, w)
        })?;
        if opt.emit_block_region_distributions {
            summary::write_block_dists(trace, opt, &name, &dists_path(path))?;
        }
    }
    Ok(())
}

/// The file name of `p` as a string (for the `trace` fields of the JSON outputs).
pub fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::BlockFilter;

    #[test]
    fn block_filter_parses_ids_and_ranges() {
        let f = BlockFilter::parse("7, 0-2,1").unwrap();
        assert_eq!(f.blocks(), [0, 1, 2, 7]);
        assert!(f.contains(2) && !f.contains(3));
        assert!(BlockFilter::parse("").unwrap().contains(12345));
        assert!(BlockFilter::parse("3-1").is_err());
        assert!(BlockFilter::parse("x")
            .unwrap_err()
            .contains("not a block id"));
    }
}
