//! The report's region table: self time and its share of the lane time, inclusive time
//! and span statistics per region, then the time outside any region (columns defined in
//! [`crate::definitions`]).

use super::svg::esc;
use crate::analysis::categories::Category;
use crate::stats::{TraceStats, OUTSIDE};
use crate::time::format_duration;
use std::io::{self, Write};

/// Writes the table `regions-{n}` of the trace of `stats`: one row per row of its shares
/// (in their order), then a note on the columns.
pub(super) fn region_table<W: Write>(
    out: &mut W,
    n: usize,
    stats: &TraceStats,
    cats: &[Category],
) -> io::Result<()> {
    let shares = &stats.all.shares;
    writeln!(
        out,
        "<h3>Regions</h3><table id=\"regions-{n}\"><tr><th>region</th><th class=\"l\">category</th><th>count</th><th>self</th><th>self %</th><th>cum %</th><th>incl.</th><th>mean</th><th>p50</th><th>p99</th></tr>"
    )?;
    for row in shares.rows() {
        let (pct, cum) = (100.0 * row.share, 100.0 * row.cumulative);
        let self_time = format_duration(row.self_time as f64);
        match row.region {
            Some(r) => {
                let st = &stats.all.region(r.region).expect("a row has spans").stats;
                writeln!(
                    out,
                    "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{self_time}</td><td>{pct:.1}%</td><td>{cum:.1}%</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&stats.trace.names.region(r.region)),
                    cats[r.region as usize].name(),
                    r.count,
                    format_duration(r.inclusive as f64),
                    format_duration(st.mean),
                    format_duration(st.percentiles[3]),
                    format_duration(st.percentiles[7])
                )?;
            }
            None => writeln!(
                out,
                "<tr class=\"outside\"><td>{OUTSIDE}</td><td></td><td></td><td>{self_time}</td><td>{pct:.1}%</td><td>{cum:.1}%</td><td></td><td></td><td></td><td></td></tr>"
            )?,
        }
    }
    writeln!(
        out,
        "</table><p class=\"meta\">self: time in the region itself, nested regions excluded. self %: its share of the lane time, {} over {} lanes (each from its first to its last stamp), so the column sums to 100 %; cum %: running sum. incl., mean, p50, p99: whole spans, nested regions included. (The breakdown above is another figure: block-time, each block's groups merged.)</p>",
        format_duration(shares.lane_time as f64),
        shares.lanes
    )
}
