//! `ikp report`: one self-contained HTML page per run that answers "where did the time go".
//!
//! # Format
//! A single HTML5 file, UTF-8, with inline CSS and inline SVG charts, no JavaScript and no
//! external resources (it opens from disk, attaches to a bug report, renders offline). Per
//! launch it has: a header line (format, grid, lanes, GPU wall time, drops, unmatched), the
//! timeline breakdown per block summed over blocks (block-time, as `ikp analyze` reports
//! it) as a stacked bar and a table with each part's spread across blocks, the
//! compute-isolation figures (per block, summed), a region table
//! (category, count, self time, self % of the lane time, cumulative %, inclusive time,
//! mean, p50, p99; by self time, then a row `(outside any region)`, so `self %` sums to
//! 100; terms in [`crate::definitions`]) with a note on its columns, a histogram per
//! region in the table's order, a
//! per-SM (per-block without SM ids) heat map of busy lanes over time, the block-duration
//! imbalance chart with its median and the SM figures ("n/a (why)" without SM ids), the
//! largest gaps, and, given annotations, the roofline (a rate above the roof is a flagged
//! row, not figures).
//! With several launches, an `across` section first compares regions over all of them.
//! Element ids are stable (`launch-N`, `breakdown-N`, `breakdown-table-N`, `regions-N`,
//! `heatmap-N`, ...) for scripted checks.
//!
//! The page and the workbook format what [`prepare`] computes once per launch: its
//! statistics ([`TraceStats`]) and its blocks with their region categories ([`BlockView`]).

mod html;
pub mod plot;
mod regions;
mod svg;
#[cfg(feature = "xlsx")]
pub mod xlsx;

pub use html::{write_html, ReportOptions};
pub use plot::{plots, Plot};
#[cfg(feature = "xlsx")]
pub use xlsx::write_xlsx;

use crate::analysis::blocks::BlockView;
use crate::stats::TraceStats;
use crate::write::Launch;

/// One launch as the report reads it.
#[derive(Clone, Debug)]
pub struct ReportLaunch<'a> {
    /// Shown in the launch's heading.
    pub label: &'a str,
    /// Its statistics.
    pub stats: TraceStats<'a>,
    /// Its blocks and region categories (by [`ReportOptions::categories`]).
    pub view: BlockView<'a>,
}

/// Computes, once, what the page and the workbook of `launches` show.
pub fn prepare<'a>(launches: &[Launch<'a>], opts: &ReportOptions) -> Vec<ReportLaunch<'a>> {
    (launches.iter())
        .map(|l| ReportLaunch {
            label: l.label,
            stats: TraceStats::of(l.trace),
            view: BlockView::new(l.trace, &opts.categories),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{lane, trace};
    use crate::write::Launch;

    #[test]
    fn report_has_every_section_and_escapes_names() {
        let t = trace(
            &["load<q>", "mma", "wait.kv"],
            vec![
                lane(0, 0, 0, 100, &[(0, 0, 20), (1, 20, 90)]),
                lane(1, 1, 0, 160, &[(2, 0, 30), (1, 30, 150)]),
            ],
        );
        let mut opts = ReportOptions {
            hist_bins: 16,
            heat_columns: 50,
            ..Default::default()
        };
        opts.work =
            crate::analysis::roofline::parse_annotations(r#"{"mma": {"flops": 1e4}}"#).unwrap();
        opts.gpu = crate::analysis::roofline::preset("h100");
        let mut out = Vec::new();
        let one = prepare(&[Launch::new("run & co", &t)], &opts);
        write_html(&mut out, &one, &opts).unwrap();
        let html = String::from_utf8(out).unwrap();
        for id in [
            "launch-0",
            "breakdown-0",
            "regions-0",
            "hists-0",
            "heatmap-0",
            "imbalance-0",
            "gaps-0",
            "roofline-0",
        ] {
            assert!(html.contains(&format!("id=\"{id}\"")), "missing {id}");
        }
        assert!(html.contains("load&lt;q&gt;") && !html.contains("load<q>"));
        // The format in words, not a debug-quoted string.
        assert!(
            html.contains("<p class=\"meta\">ikp format v"),
            "format line"
        );
        assert!(html.contains("run &amp; co"));
        assert!(!html.contains("<script"), "the report needs no JavaScript");
        // Lane time 100 + 160 = 260 ns. mma: 2 occurrences, self and inclusive 70 + 120 =
        // 190 ns (73.1 %), the largest, listed first; outside any region: 10 + 10 ns (7.7 %),
        // listed last, where the cumulative share reaches 100 %.
        let regions = &html[html.find("id=\"regions-0\"").unwrap()..];
        let regions = &regions[..regions.find("</table>").unwrap()];
        let first_row = &regions[regions.find("<tr><td>").unwrap()..];
        assert!(
            first_row.starts_with("<tr><td>mma</td><td class=\"l\">compute</td><td>2</td><td>190 ns</td><td>73.1%</td><td>73.1%</td><td>190 ns</td>"),
            "{}",
            &first_row[..160]
        );
        let last_row = &regions[regions.rfind("<tr").unwrap()..];
        assert!(
            last_row.contains("<td>(outside any region)</td><td></td><td></td><td>20 ns</td><td>7.7%</td><td>100.0%</td>"),
            "{last_row}"
        );
        assert!(
            html.contains("260 ns over 2 lanes"),
            "the note gives the lane time"
        );
        assert_eq!(html.matches("<svg").count(), 1 + 3 + 1 + 1);
        assert!(!html.contains("id=\"across\""));
        let mut two = Vec::new();
        let launches = prepare(&[Launch::new("a", &t), Launch::new("b", &t)], &opts);
        write_html(&mut two, &launches, &opts).unwrap();
        let two = String::from_utf8(two).unwrap();
        let across = &two[two.find("id=\"across\"").expect("across section")
            ..two.find("id=\"launch-0\"").unwrap()];
        // mma: 2 per launch, 4 in all, mean 95 ns in both launches.
        assert!(
            across.contains("<tr><td>mma</td><td>4</td><td>380 ns</td><td>95 ns</td>"),
            "{across}"
        );
        assert!(
            across.contains("<td>95 ns (2×)</td><td>95 ns (2×)</td>"),
            "{across}"
        );
    }
}
