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
//! then when the lanes ran ([`crate::stats::LaneWaves`]: from the first start to the last
//! end, since the trace's earliest stamp; the waves, the most lanes running at once, and
//! the tail when fewer ran), with one line per wave when there are several (the first 8):
//! ```text
//! lanes over time (init to finalize): 4 lanes from 0 ns to 1.20 us, in 2 waves, at most 2 running at once; tail: the last 300 ns (25.0 %) with fewer running
//!   wave 0: 2 lanes, 0 ns to 600 ns
//!   wave 1: 2 lanes, 500 ns to 1.20 us
//! ```
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

use super::summary::ClockSyncSummary;
use super::WriteError;
use crate::stats::{LaneWaves, TraceStats, OUTSIDE};
use crate::time::{format_duration, scaled};
use std::io::Write;

/// Set-aside lanes the table names, one line each.
const SET_ASIDE_LISTED: usize = 8;

/// Waves the table lists, one line each.
const WAVES_LISTED: usize = 8;

/// Options of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct TableOptions {
    /// Multiplier from ns to the unit the region rows and the lane time are shown in.
    /// Default 1.0.
    pub scale: f64,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions { scale: 1.0 }
    }
}

/// Writes the table of the trace of `stats` to `out`.
pub fn write_table<W: Write>(
    mut out: W,
    stats: &TraceStats,
    opt: &TableOptions,
) -> Result<(), WriteError> {
    let (w, k) = (&mut out, opt.scale);
    let (trace, shares) = (stats.trace, &stats.all.shares);
    let names = &trace.names;
    let width = (stats.all.regions.iter())
        .map(|r| names.region(r.region).chars().count())
        .chain([OUTSIDE.chars().count()])
        .max()
        .unwrap_or(6)
        .clamp(6, 40);
    writeln!(
        w,
        "{:<width$} {:>9} {:>11} {:>7} {:>7} {:>11} {:>11} {:>11} {:>11}",
        "region", "count", "self", "self %", "cum %", "incl.", "mean", "p50", "p99"
    )?;
    for row in &shares.rows() {
        let pct = format!("{:.1}", 100.0 * row.share);
        let cum = format!("{:.1}", 100.0 * row.cumulative);
        let self_time = format_duration(scaled(row.self_time, k));
        match row.region {
            Some(t) => {
                let st = &(stats.all.region(t.region))
                    .expect("every region with spans has statistics")
                    .stats;
                let name: String = names.region(t.region).chars().take(width).collect();
                writeln!(
                    w,
                    "{:<width$} {:>9} {:>11} {:>7} {:>7} {:>11} {:>11} {:>11} {:>11}",
                    name,
                    st.count,
                    self_time,
                    pct,
                    cum,
                    format_duration(scaled(st.total, k)),
                    format_duration(st.mean * k),
                    format_duration(st.percentiles[3] * k),
                    format_duration(st.percentiles[7] * k),
                )?;
            }
            None => writeln!(
                w,
                "{:<width$} {:>9} {:>11} {:>7} {:>7}",
                OUTSIDE, "", self_time, pct, cum
            )?,
        }
    }
    if stats.all.regions.is_empty() {
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
    let (src, d) = (&trace.source, &trace.diagnostics);
    let spans: u64 = stats.all.regions.iter().map(|r| r.stats.count).sum();
    writeln!(w)?;
    writeln!(
        w,
        "{} lanes, {spans} spans ({} format, {} blocks x {} groups)",
        trace.lanes.len(),
        src.format.name(),
        src.grid.iter().map(|&g| g as u64).product::<u64>(),
        src.groups_per_block
    )?;
    writeln!(
        w,
        "unmatched begin {}, unmatched end {}, after finalize {}, unfinalized lanes {}, unknown records {}, backward steps {}, dropped {}",
        d.unmatched_begin.len(), d.unmatched_end.len(), d.after_finalize, d.unfinalized_lanes, d.unknown_records, d.backward_steps, trace.dropped()
    )?;
    if let Some(l) = &stats.lanes {
        lanes_over_time(w, l, src.time_base, k)?;
    }
    if let Some(c) = &src.clock {
        writeln!(
            w,
            "clock {:.2} MHz pooled over {} lanes ({} ns / {} cycles); {} lanes on their own ratio, {} on the pooled one",
            c.pooled_mhz(),
            c.pool_lanes,
            c.pooled_ns,
            c.pooled_cycles,
            c.own_ratio_lanes,
            c.pooled_ratio_lanes
        )?;
    }
    if trace.overwritten() > 0 || d.ends_of_overwritten_begins > 0 {
        writeln!(
            w,
            "ring: {} records overwritten in {} lanes (the oldest are lost); {} ends whose begins were overwritten (not spans)",
            trace.overwritten(),
            trace.lanes.iter().filter(|l| l.overwritten > 0).count(),
            d.ends_of_overwritten_begins
        )?;
    }
    if let Some(e) = &src.epoch {
        write!(
            w,
            "launch {} (from 0) of a buffer of {} launches; {} launches ran",
            e.index, e.epochs, e.launches
        )?;
        if e.not_recorded() > 0 {
            write!(
                w,
                ", the buffer holds {}: the last {} were not recorded",
                e.epochs,
                e.not_recorded()
            )?;
        }
        writeln!(w)?;
    }
    if let Some(c) = &src.overhead_correction {
        writeln!(
            w,
            "overhead correction: {:.3} ns per record (median), {} lanes corrected, {} not measured; {} span ends moved, {} ns removed",
            c.per_record_ns_median(),
            c.lanes_corrected,
            c.lanes_unmeasured,
            c.spans_corrected,
            c.total_ns_removed
        )?;
    }
    if let Some(c) = &src.assumed_clock {
        writeln!(
            w,
            "cycles converted to ns at {}: durations scale with the ratio of the real clock to it",
            c.describe()
        )?;
    }
    if let Some(c) = &src.clock_sync {
        let c = ClockSyncSummary::new(c, src.time_base);
        writeln!(
            w,
            "host clock sync: started at host realtime {} ns, monotonic {} ns, within {} ns ({} samples)",
            c.time_base_realtime_ns, c.time_base_monotonic_ns, c.error_bound_ns, c.samples
        )?;
    }
    for u in &stats.unmatched {
        writeln!(
            w,
            "  unmatched {}: {} begin, {} end",
            u.name, u.begin, u.end
        )?;
    }
    let dropping = || trace.lanes.iter().filter(|l| l.dropped > 0);
    if let Some(worst) = dropping().max_by_key(|l| l.dropped) {
        let remedy = match src.stream {
            Some(_) => "the drain fell behind: a larger ring, or Overflow::StreamWait",
            None => "raise records_per_lane",
        };
        writeln!(
            w,
            "  {} lanes dropped records (most: lane {} block {} group {}: {}); {remedy}",
            dropping().count(),
            worst.id,
            worst.block,
            worst.group,
            worst.dropped
        )?;
    }
    if let Some(s) = &src.stream {
        writeln!(
            w,
            "stream launch: rings of {} records, {} when full; the drain copied {} records in {} passes, at most {} waiting in one ring",
            s.ring_records,
            if s.wait { "waiting" } else { "dropping" },
            s.drained_records,
            s.drain_polls,
            s.drain_max_backlog
        )?;
    }
    if let Some(a) = &stats.async_ranges {
        writeln!(
            w,
            "{} async ranges; {} async begin never ended, {} async end without a begin",
            a.count, a.unmatched_begin, a.unmatched_end
        )?;
        for r in &a.regions {
            writeln!(
                w,
                "  async {}: {} ranges, total {}, mean {}, max {}",
                r.name,
                r.count,
                format_duration(r.total_dur),
                format_duration(r.mean_dur),
                format_duration(r.max_dur)
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
    out.flush()?;
    Ok(())
}

/// The lanes-over-time line, and one line per wave (the first [`WAVES_LISTED`]) when there
/// are several.
fn lanes_over_time<W: Write>(
    w: &mut W,
    l: &LaneWaves,
    time_base: u64,
    k: f64,
) -> std::io::Result<()> {
    let dur = |ns: u64| format_duration(ns as f64 * k);
    let at = |t: u64| dur(t.saturating_sub(time_base));
    let bounds = if l.init_finalize {
        "init to finalize"
    } else {
        "first to last record"
    };
    let (len, n) = (l.end - l.start, l.wave_of.len());
    let share = if len == 0 {
        0.0
    } else {
        100.0 * l.tail() as f64 / len as f64
    };
    writeln!(
        w,
        "lanes over time ({bounds}): {n} lanes from {} to {}, in {} wave{}, at most {} running at once; tail: the last {} ({share:.1} %) with fewer running",
        at(l.start),
        at(l.end),
        l.waves.len(),
        if l.waves.len() == 1 { "" } else { "s" },
        l.peak,
        dur(l.tail()),
    )?;
    if l.waves.len() > 1 {
        for (i, v) in l.waves.iter().enumerate().take(WAVES_LISTED) {
            writeln!(
                w,
                "  wave {i}: {} lanes, {} to {}",
                v.lanes,
                at(v.start),
                at(v.end)
            )?;
        }
        if l.waves.len() > WAVES_LISTED {
            writeln!(w, "  ({} more waves)", l.waves.len() - WAVES_LISTED)?;
        }
    }
    Ok(())
}
