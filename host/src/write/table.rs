//! The terminal table of `ikp summary`: where the time went, at a glance.
//!
//! # Format
//!
//! Plain text, fixed-width columns, one row per region sorted by total time (largest
//! first, ties by region id):
//! ```text
//! region          count      total      %   cum %       mean        p50        p99
//! mma              1536    2.95 ms   41.2    41.2    1.92 us    1.91 us    2.20 us
//! ```
//! `%` is the region's share of the summed time of all regions (nested regions count in
//! their parent and in themselves, so this is a share of recorded region time, not of the
//! kernel); times are shown in ns, us, ms or s with three significant decimals. A final
//! block reports lanes, spans, unmatched begins / ends, records after finalize,
//! unfinalized lanes, unknown records, backward steps of the timer and dropped records,
//! and, for a clock-mode buffer, the cycles-to-ns calibration:
//! ```text
//! clock 1500.00 MHz pooled over 4 lanes (3000 ns / 4500 cycles); 1 lanes on their own ratio, 3 on the pooled one
//! ```

use super::summary::summarize;
use super::TraceWriteOptions;
use crate::model::Trace;
use std::io::{self, Write};

/// A duration in ns as a short human string.
pub fn human_ns(ns: f64) -> String {
    let a = ns.abs();
    if a < 1e3 {
        format!("{ns:.0} ns")
    } else if a < 1e6 {
        format!("{:.2} us", ns / 1e3)
    } else if a < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// Writes the table of `trace` to `w`.
pub fn write_table<W: Write>(trace: &Trace, opt: &TraceWriteOptions, w: &mut W) -> io::Result<()> {
    let opt = TraceWriteOptions {
        summary_dump_by_block_warp: false,
        summary_hist_bins: 1,
        ..opt.clone()
    };
    let s = summarize(trace, &opt, "");
    let mut regions: Vec<_> = s.regions.iter().collect();
    regions.sort_by(|a, b| {
        b.stats
            .total_dur
            .total_cmp(&a.stats.total_dur)
            .then(a.region.cmp(&b.region))
    });
    let all: f64 = regions.iter().map(|r| r.stats.total_dur).sum();
    let width = regions
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(6)
        .clamp(6, 40);
    writeln!(
        w,
        "{:<width$} {:>9} {:>11} {:>6} {:>7} {:>11} {:>11} {:>11}",
        "region", "count", "total", "%", "cum %", "mean", "p50", "p99"
    )?;
    let mut cum = 0.0;
    for r in &regions {
        let pct = if all > 0.0 {
            100.0 * r.stats.total_dur / all
        } else {
            0.0
        };
        cum += pct;
        let name: String = r.name.chars().take(width).collect();
        writeln!(
            w,
            "{:<width$} {:>9} {:>11} {:>6.1} {:>7.1} {:>11} {:>11} {:>11}",
            name,
            r.stats.count,
            human_ns(r.stats.total_dur),
            pct,
            cum,
            human_ns(r.stats.mean_dur),
            human_ns(r.stats.percentiles.0[3]),
            human_ns(r.stats.percentiles.0[7]),
        )?;
    }
    if regions.is_empty() {
        writeln!(w, "(no paired regions)")?;
    }
    let lanes = opt.block_filter.lanes(trace).count();
    let spans: u64 = regions.iter().map(|r| r.stats.count).sum();
    writeln!(w)?;
    writeln!(
        w,
        "{lanes} lanes, {spans} spans ({} format, {} blocks x {} groups)",
        match s.format {
            crate::model::WireFormat::Ikp => "ikp",
            crate::model::WireFormat::Tvm => "tvm",
        },
        s.blocks,
        s.warps_per_block
    )?;
    writeln!(
        w,
        "unmatched begin {}, unmatched end {}, after finalize {}, unfinalized lanes {}, unknown records {}, backward steps {}, dropped {}",
        s.unmatched_begin, s.unmatched_end, s.after_finalize, s.unfinalized_lanes, s.unknown_records, s.backward_steps, s.dropped
    )?;
    if let Some(c) = &s.clock {
        writeln!(
            w,
            "clock {:.2} MHz pooled over {} lanes ({} ns / {} cycles); {} lanes on their own ratio, {} on the pooled one",
            c.pooled_mhz,
            c.pool_lanes,
            c.pooled_ns,
            c.pooled_cycles,
            c.own_ratio_lanes,
            c.pooled_ratio_lanes
        )?;
    }
    for u in &s.unmatched_by_region {
        writeln!(
            w,
            "  unmatched {}: {} begin, {} end",
            u.name, u.begin, u.end
        )?;
    }
    if !s.dropped_by_lane.is_empty() {
        let worst = s
            .dropped_by_lane
            .iter()
            .max_by_key(|l| l.dropped)
            .expect("non-empty");
        writeln!(
            w,
            "  {} lanes dropped records (most: lane {} block {} group {}: {}); raise records_per_lane",
            s.dropped_by_lane.len(),
            worst.lane,
            worst.block,
            worst.group,
            worst.dropped
        )?;
    }
    Ok(())
}
