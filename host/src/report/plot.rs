//! `ikp plot`: standalone SVG charts of duration distributions, the pictures the plot
//! script of yao-jz/intra-kernel-profiler draws (its trace format, docs/references.md): one
//! histogram per region, and per region an overlay of the per-block distributions (top
//! blocks by occurrences) to spot outlier blocks.
//!
//! # Format
//! Files in the output directory, each a standalone SVG 1.1 document:
//! - `region_<id>_<name>.svg`: histogram of the region's durations (probability per bin);
//! - `blocks_region_<id>_<name>.svg`: the region's per-block histograms over one common
//!   range, drawn as overlaid step lines, one colour per block, with a legend.
//!
//! `<name>` keeps ASCII letters, digits, `-` and `_`; other characters become `_`.

use super::svg::{esc, histogram, share_axes, AXIS_W};
use crate::stats::{self, TraceStats};
use crate::time::format_duration;
use std::fmt::Write;

const PALETTE: [&str; 8] = [
    "#4c78a8", "#e45756", "#f58518", "#54a24b", "#b279a2", "#9d755d", "#17becf", "#bcbd22",
];

/// One chart: a file name and its SVG text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plot {
    /// File name inside the output directory.
    pub file: String,
    /// The SVG document.
    pub svg: String,
}

fn safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn document(title: &str, body: &str, w: u32, h: u32) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\">\
<rect width=\"100%\" height=\"100%\" fill=\"white\"/><text x=\"10\" y=\"18\" font-size=\"14\">{}</text><g transform=\"translate(10,28)\">{body}</g></svg>\n",
        esc(title)
    )
}

/// The charts of the trace of `stats`: per-region histograms with `bins` bins, and
/// per-block overlays of the `top_blocks` blocks with the most occurrences of each region.
pub fn plots(stats: &TraceStats, bins: u32, top_blocks: usize) -> Vec<Plot> {
    let mut out = Vec::new();
    let by_block = stats.by_block();
    for region in &stats.all.regions {
        let (r, st) = (region.region, &region.stats);
        let name = stats.trace.names.region(r);
        let h = stats::histogram(&region.durations, bins);
        out.push(Plot {
            file: format!("region_{r}_{}.svg", safe(&name)),
            svg: document(
                &format!(
                    "{name}: {} occurrences, mean {}, p50 {}, p99 {}",
                    st.count,
                    format_duration(st.mean),
                    format_duration(st.percentiles[3]),
                    format_duration(st.percentiles[7])
                ),
                &histogram(&h, 600, 240, PALETTE[0]),
                640,
                300,
            ),
        });
        // Per block, over the region's own range so the curves share an x axis.
        let mut blocks: Vec<(u32, &Vec<u64>)> = (by_block.iter())
            .filter_map(|(b, set)| Some((*b, &set.region(r)?.durations)))
            .collect();
        blocks.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        blocks.truncate(top_blocks.max(1));
        out.push(Plot {
            file: format!("blocks_region_{r}_{}.svg", safe(&name)),
            svg: document(
                &format!(
                    "{name}: durations per block, {} blocks with the most occurrences (ties: by block id)",
                    blocks.len()
                ),
                &overlay(&blocks, h.min, h.max, bins),
                640,
                330,
            ),
        });
    }
    out
}

fn overlay(blocks: &[(u32, &Vec<u64>)], lo: u64, hi: u64, bins: u32) -> String {
    let (w, h) = (600.0, 240.0);
    let bins = bins.max(1) as usize;
    let span = (hi - lo).max(1) as f64;
    let curves: Vec<Vec<f64>> = blocks
        .iter()
        .map(|(_, d)| {
            let mut c = vec![0f64; bins];
            for &x in d.iter() {
                let b = (((x - lo) as f64 / span) * bins as f64) as usize;
                c[b.min(bins - 1)] += 1.0 / d.len() as f64;
            }
            c
        })
        .collect();
    let peak = (curves.iter().flatten()).fold(f64::MIN_POSITIVE, |m, &p| m.max(p));
    // The curves are drawn right of a y axis (share of each block's occurrences per bin).
    let x0 = AXIS_W as f64;
    let bw = (w - x0) / bins as f64;
    let mut s = String::new();
    let _ = write!(
        s,
        "<rect x=\"{x0}\" y=\"0\" width=\"{}\" height=\"{h}\" fill=\"none\" stroke=\"#ccc\"/>",
        w - x0
    );
    share_axes(&mut s, w, h, peak, (lo, hi));
    for (k, c) in curves.iter().enumerate() {
        let mut pts = String::new();
        for (i, &p) in c.iter().enumerate() {
            let y = h - p / peak * h;
            let _ = write!(
                pts,
                "{:.1},{y:.1} {:.1},{y:.1} ",
                x0 + i as f64 * bw,
                x0 + (i + 1) as f64 * bw
            );
        }
        let _ = write!(
            s,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>",
            PALETTE[k % PALETTE.len()],
            pts.trim_end()
        );
    }
    for (k, (b, d)) in blocks.iter().enumerate() {
        let x = (k % 6) as f64 * 100.0;
        let y = h + 28.0 + (k / 6) as f64 * 14.0;
        let _ = write!(
            s,
            "<rect x=\"{x}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{y}\" font-size=\"10\">block {b} ({})</text>",
            y - 9.0,
            PALETTE[k % PALETTE.len()],
            x + 14.0,
            d.len()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{lane, trace};

    #[test]
    fn one_histogram_and_one_overlay_per_region() {
        let t = trace(
            &["mma/qk", "load"],
            vec![
                lane(0, 0, 0, 100, &[(0, 0, 10), (0, 10, 30), (1, 30, 35)]),
                lane(1, 1, 0, 100, &[(0, 0, 20)]),
                lane(2, 2, 0, 100, &[(0, 0, 20)]),
            ],
        );
        let p = plots(&crate::stats::TraceStats::of(&t), 4, 2);
        let files: Vec<&str> = p.iter().map(|x| x.file.as_str()).collect();
        assert_eq!(
            files,
            vec![
                "region_0_mma_qk.svg",
                "blocks_region_0_mma_qk.svg",
                "region_1_load.svg",
                "blocks_region_1_load.svg"
            ]
        );
        // mma: durations 10, 20, 20, 20 over [10, 20] in 4 bins: 25% in bin 0, 75% in bin 3.
        assert!(p[0].svg.contains("4 occurrences"));
        assert!(
            p[0].svg.contains(": 25.0% of occurrences</title>")
                && p[0].svg.contains(": 75.0% of occurrences</title>"),
            "{}",
            p[0].svg
        );
        // Overlay: top 2 blocks by occurrences: block 0 (2) then block 1 (1).
        assert_eq!(p[1].svg.matches("<polyline").count(), 2);
        assert!(
            p[1].svg.contains("block 0 (2)")
                && p[1].svg.contains("block 1 (1)")
                && !p[1].svg.contains("block 2")
        );
        assert!(p
            .iter()
            .all(|x| x.svg.starts_with("<?xml") && x.svg.trim_end().ends_with("</svg>")));
    }
}
