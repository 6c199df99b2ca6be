//! The terminal table of `ikp summary`: where the time went, at a glance.
//!
//! # Format
//!
//! Plain text, fixed-width columns. One row per region, by self time (largest first, ties
//! by region id), then the row `(outside any region)`:
//! ```text
//! region                   count        self  self %   cum %       incl.        mean         p50         p99
//! softmax                    575   12.83 us    19.0    19.0   342.57 us      596 ns      598 ns      659 ns
//! (outside any region)               1.20 us     1.8   100.0
//! ```
//! `self` is the region's self time, `incl.` its inclusive time, `self %` the self time's
//! share of the lane time and `cum %` the running sum of `self %`, reaching 100 on the
//! last row; `mean`, `p50` and `p99` are of whole-span durations. These terms are defined
//! in [`crate::definitions`]. Times are shown in ns, us, ms or s with three significant
//! decimals. Two lines under the rows say what the columns are and give the lane time. A
//! final block reports lanes, spans, unmatched begins / ends, records after finalize,
//! unfinalized lanes, unknown records, backward steps of the timer and dropped records,
//! and, for a clock-mode buffer, the cycles-to-ns calibration:
//! ```text
//! clock 1500.00 MHz pooled over 4 lanes (3000 ns / 4500 cycles); 1 lanes on their own ratio, 3 on the pooled one
//! ```
//! A buffer recorded with a host clock sync ([`crate::clock_sync`]) adds where the launch
//! started on the host's clocks and the mapping's error bound:
//! ```text
//! host clock sync: started at host realtime 1700000000000007900 ns, monotonic 9000007900 ns, within 1500 ns (16 samples)
//! ```
//! For ring lanes that wrapped, a line gives the records overwritten and the ends whose
//! begins were overwritten; for a launch of a buffer of several, which one and how many
//! ran; with the overhead correction, what it removed:
//! ```text
//! ring: 12 records overwritten in 1 lanes (the oldest are lost); 2 ends whose begins were overwritten (not spans)
//! launch 2 (from 0) of a buffer of 3 launches; 4 launches ran, the buffer holds 3: the last 1 were not recorded
//! overhead correction: 4.000 ns per record (median), 2 lanes corrected, 1 not measured; 5 span ends moved, 73 ns removed
//! ```
//! Lines on unmatched records by region and on drops follow; then, for a buffer with async
//! ranges (or unmatched async records), a line counting them and one per async region
//! (durations of whole ranges; they are in none of the rows above):
//! ```text
//! 4 async ranges; 1 async begin never ended, 1 async end without a begin
//!   async tma: 4 ranges, total 170 ns, mean 42 ns, max 60 ns
//! ```
//! Last, when lanes were set
//! aside (their stamps cannot belong to this launch, in any format; see
//! [`crate::decode::set_aside`], `# Lanes set aside`), a line counts them, then the first few, one line each, with the
//! rule that set them aside:
//! ```text
//! 1 lane set aside, not decoded: its stamps cannot belong to this launch
//!   block 5 · group 1 (warp 4, SM 10): its end stamp is implausibly far from its start
//! ```

use super::summary::summarize;
use super::{TraceWriteOptions, WriteError};
use crate::model::Trace;
use crate::stats::{Shares, OUTSIDE};
use crate::time::{format_duration, scaled};
use std::io::{self, Write};

/// Set-aside lanes the table names, one line each.
const SET_ASIDE_LISTED: usize = 8;

/// Writes the table of `trace` to `out`.
pub fn write_table<W: Write>(
    mut out: W,
    trace: &Trace,
    opt: &TraceWriteOptions,
) -> Result<(), WriteError> {
    write_rows(&mut out, trace, opt)?;
    out.flush()?;
    Ok(())
}

fn write_rows(w: &mut impl Write, trace: &Trace, opt: &TraceWriteOptions) -> io::Result<()> {
    let opt = TraceWriteOptions {
        summary_dump_by_block_warp: false,
        summary_hist_bins: 1,
        ..opt.clone()
    };
    let s = summarize(trace, &opt, "");
    let shares = Shares::of(trace, &trace.lanes);
    let k = opt.scale;
    let rows = shares.rows();
    let width = s
        .regions
        .iter()
        .map(|r| r.name.chars().count())
        .chain([OUTSIDE.chars().count()])
        .max()
        .unwrap_or(6)
        .clamp(6, 40);
    writeln!(
        w,
        "{:<width$} {:>9} {:>11} {:>7} {:>7} {:>11} {:>11} {:>11} {:>11}",
        "region", "count", "self", "self %", "cum %", "incl.", "mean", "p50", "p99"
    )?;
    for row in &rows {
        let pct = format!("{:.1}", 100.0 * row.share);
        let cum = format!("{:.1}", 100.0 * row.cumulative);
        let self_time = format_duration(scaled(row.self_time, k));
        match row.region {
            Some(t) => {
                let r = s
                    .regions
                    .iter()
                    .find(|e| e.region == t.region)
                    .expect("every region with spans has a summary entry");
                let name: String = r.name.chars().take(width).collect();
                writeln!(
                    w,
                    "{:<width$} {:>9} {:>11} {:>7} {:>7} {:>11} {:>11} {:>11} {:>11}",
                    name,
                    r.stats.count,
                    self_time,
                    pct,
                    cum,
                    format_duration(r.stats.total_dur),
                    format_duration(r.stats.mean_dur),
                    format_duration(r.stats.percentiles.0[3]),
                    format_duration(r.stats.percentiles.0[7]),
                )?;
            }
            None => writeln!(
                w,
                "{:<width$} {:>9} {:>11} {:>7} {:>7}",
                OUTSIDE, "", self_time, pct, cum
            )?,
        }
    }
    if s.regions.is_empty() {
        writeln!(w, "(no paired regions)")?;
    }
    writeln!(
        w,
        "self: time in the region itself, nested regions excluded; incl., mean, p50, p99: whole spans, nested regions included"
    )?;
    writeln!(
        w,
        "self %: share of the lane time, {} ({} lanes, each first to last stamp); the rows sum to 100",
        format_duration(shares.lane_time as f64 * k),
        shares.lanes
    )?;
    let lanes = trace.lanes.len();
    let spans: u64 = s.regions.iter().map(|r| r.stats.count).sum();
    writeln!(w)?;
    writeln!(
        w,
        "{lanes} lanes, {spans} spans ({} format, {} blocks x {} groups)",
        s.format.name(),
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
    if s.overwritten > 0 || s.ends_of_overwritten_begins > 0 {
        writeln!(
            w,
            "ring: {} records overwritten in {} lanes (the oldest are lost); {} ends whose begins were overwritten (not spans)",
            s.overwritten,
            s.overwritten_by_lane.len(),
            s.ends_of_overwritten_begins
        )?;
    }
    if let Some(e) = &s.epoch {
        write!(
            w,
            "launch {} (from 0) of a buffer of {} launches; {} launches ran",
            e.index, e.epochs, e.launches
        )?;
        if e.not_recorded > 0 {
            write!(
                w,
                ", the buffer holds {}: the last {} were not recorded",
                e.epochs, e.not_recorded
            )?;
        }
        writeln!(w)?;
    }
    if let Some(c) = &s.overhead_correction {
        writeln!(
            w,
            "overhead correction: {:.3} ns per record (median), {} lanes corrected, {} not measured; {} span ends moved, {} ns removed",
            c.per_record_ns_median,
            c.lanes_corrected,
            c.lanes_unmeasured,
            c.spans_corrected,
            c.total_ns_removed
        )?;
    }
    if let Some(c) = &trace.source.assumed_clock {
        writeln!(
            w,
            "cycles converted to ns at {}: durations scale with the ratio of the real clock to it",
            c.describe()
        )?;
    }
    if let Some(c) = &s.clock_sync {
        writeln!(
            w,
            "host clock sync: started at host realtime {} ns, monotonic {} ns, within {} ns ({} samples)",
            c.time_base_realtime_ns, c.time_base_monotonic_ns, c.error_bound_ns, c.samples
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
    if let Some(a) = &s.async_ranges {
        writeln!(
            w,
            "{} async ranges; {} async begin never ended, {} async end without a begin",
            a.count, a.unmatched_begin, a.unmatched_end
        )?;
        let t = |x: f64| format_duration(x / k);
        for r in &a.regions {
            writeln!(
                w,
                "  async {}: {} ranges, total {}, mean {}, max {}",
                r.name,
                r.count,
                t(r.total_dur),
                t(r.mean_dur),
                t(r.max_dur)
            )?;
        }
    }
    if !trace.diagnostics.set_aside.is_empty() {
        let all = &trace.diagnostics.set_aside;
        let (lanes, their) = if all.len() == 1 {
            ("lane", "its")
        } else {
            ("lanes", "their")
        };
        use crate::model::SetAsideReason::UnorderedRing;
        if all.iter().any(|l| l.reason == UnorderedRing) {
            writeln!(w, "{} {lanes} set aside, not decoded:", all.len())?;
        } else {
            writeln!(
                w,
                "{} {lanes} set aside, not decoded: {their} stamps cannot belong to this launch",
                all.len()
            )?;
        }
        for l in all.iter().take(SET_ASIDE_LISTED) {
            writeln!(w, "  {}: {}", l.track.name(), l.reason.describe())?;
        }
        if all.len() > SET_ASIDE_LISTED {
            writeln!(w, "  and {} more", all.len() - SET_ASIDE_LISTED)?;
        }
    }
    Ok(())
}
