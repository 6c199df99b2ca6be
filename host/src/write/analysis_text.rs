//! Analyses as text: `ikp analyze`'s report of a [`KernelAnalysis`] and `ikp diff`'s table
//! of a [`RunDiff`].
//!
//! # Format
//!
//! Plain text, one figure per line with a short clause saying what it means (block-time
//! and its shares, the timeline breakdown with each part's spread across blocks, compute
//! isolation, imbalance, the largest gaps, the number of signal / wait links, the critical
//! path of the slowest block as a table of its longest steps, the roofline per annotated
//! region). Tracks are named `block B · group G (warp W, SM S)`; a figure the input cannot
//! support is shown as "n/a (why)". Times are integer ns. The JSON of the same analysis is
//! [`crate::analysis::kernel`]'s `# Format`.
//!
//! The diff table has a line `kernel: A ns -> B ns (+x%)`, then a row per region (count,
//! mean of A and B, change of the mean and of the median in percent, a flag), the regions
//! only one run has, and the number of regressions.
use crate::analysis::blocks::Distribution;
use crate::analysis::critical::{PathStep, LONGEST_WAITS};
use crate::analysis::diff::RunDiff;
use crate::analysis::imbalance::sm_figures_unavailable;
use crate::analysis::kernel::KernelAnalysis;
use crate::analysis::roofline::GpuPreset;
use crate::model::Trace;
use crate::write::WriteError;
use std::cmp::Reverse;
use std::io::{self, Write};

/// Options of [`write_analysis`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnalysisTextOptions {
    /// Critical-path steps shown: the longest ones, in path order (the longest waits always
    /// among them). Default 15.
    pub path_steps: usize,
}

impl Default for AnalysisTextOptions {
    fn default() -> Self {
        AnalysisTextOptions { path_steps: 15 }
    }
}

fn pct(part: u64, total: u64) -> f64 {
    100.0 * part as f64 / total.max(1) as f64
}

fn spread(d: &Distribution) -> String {
    format!("{} / {} / {} / {}", d.min, d.median, d.p90, d.max)
}

/// Writes the text of the analysis `a` of `trace` (made with the roofline peaks of `gpu`)
/// to `out`.
pub fn write_analysis<W: Write>(
    mut out: W,
    trace: &Trace,
    a: &KernelAnalysis,
    gpu: &GpuPreset,
    opts: &AnalysisTextOptions,
) -> Result<(), WriteError> {
    let o = &mut out;
    let bt = a.block_time_ns;
    if let Some(c) = &trace.source.assumed_clock {
        writeln!(
            o,
            "cycles converted to ns at {}: durations scale with the ratio of the real clock to it",
            c.describe()
        )?;
    }
    writeln!(
        o,
        "GPU wall time {} ns: first to last stamp of any block ({} blocks)",
        a.gpu_wall_ns, a.blocks
    )?;
    writeln!(
        o,
        "block-time {bt} ns: sum over {} blocks of each block's first-to-last stamp; shares below are of it",
        a.blocks
    )?;
    breakdown(o, a)?;
    isolation(o, a)?;
    imbalance(o, a)?;
    if !a.gaps.is_empty() {
        writeln!(
            o,
            "largest gaps (idle time between consecutive top-level regions of a group):"
        )?;
        for x in a.gaps.iter().take(5) {
            writeln!(
                o,
                "  {} -> {}: {} x, total {} ns, max {} ns",
                trace.names.region(x.from),
                trace.names.region(x.to),
                x.count,
                x.total,
                x.max
            )?;
        }
    }
    writeln!(o, "signal/wait links: {}", a.links.len())?;
    critical_path(o, a, opts.path_steps)?;
    for r in &a.roofline {
        if r.impossible {
            writeln!(
                o,
                "warning: roofline {}: the measured rate is {:.1} % of the {} roof, which no kernel reaches: check the annotation or the GPU preset",
                r.name, r.percent_of_roof, gpu.name
            )?;
            continue;
        }
        writeln!(
            o,
            "roofline {}: {:.2} TFLOP/s, {:.3} TB/s, {:.1} FLOP/B, {}-bound, {:.1}% of roof ({})",
            r.name,
            r.tflops,
            r.tb_per_s,
            r.intensity,
            if r.memory_bound { "memory" } else { "compute" },
            r.percent_of_roof,
            gpu.name
        )?;
    }
    out.flush()?;
    Ok(())
}

fn breakdown(o: &mut impl Write, a: &KernelAnalysis) -> io::Result<()> {
    let b = &a.breakdown;
    writeln!(
        o,
        "timeline breakdown, per block then summed (in a block, a part is time some group spends in it and no earlier part covers):"
    )?;
    writeln!(
        o,
        "  {:<14} {:>14} {:>7}   per block ns: min / median / p90 / max",
        "part", "block-time ns", "share"
    )?;
    for (key, v) in b.parts() {
        let d = a.breakdown_spread.get(key).copied().unwrap_or_default();
        writeln!(
            o,
            "  {:<14} {v:>14} {:>6.1}%   {}",
            key.replace('_', " "),
            pct(v, b.total),
            spread(&d)
        )?;
    }
    Ok(())
}

fn isolation(o: &mut impl Write, a: &KernelAnalysis) -> io::Result<()> {
    let iso = &a.compute_isolation;
    writeln!(
        o,
        "compute isolation, per block then summed: block length - union of its groups' waits:"
    )?;
    writeln!(
        o,
        "  block-time {} - blocked {} = compute {} ns ({:.1}% of block-time); summing waits instead of uniting them would give {} ns blocked",
        iso.length_ns,
        iso.blocked_ns,
        iso.compute_ns,
        pct(iso.compute_ns, iso.length_ns),
        iso.wait_sum_ns
    )?;
    writeln!(
        o,
        "  of the blocked time, {} ns ({:.1}%) had another group of the block computing: waits hidden behind the block's own math",
        iso.overlap_ns,
        pct(iso.overlap_ns, iso.blocked_ns)
    )?;
    writeln!(
        o,
        "  per block ns, min / median / p90 / max: compute {}; blocked {}",
        spread(&iso.compute_spread),
        spread(&iso.blocked_spread)
    )?;
    if let (Some(bc), Some(r)) = (iso.blocked_from_counters_ns, iso.ns_per_iteration) {
        writeln!(
            o,
            "  from wait counters at {r:.3} ns/iteration: blocked {bc} ns (sum over blocks)"
        )?;
    }
    Ok(())
}

fn imbalance(o: &mut impl Write, a: &KernelAnalysis) -> io::Result<()> {
    let im = &a.imbalance;
    let b = &im.blocks;
    writeln!(
        o,
        "imbalance (block length: first to last stamp of its groups):"
    )?;
    writeln!(
        o,
        "  block length ns, min / median / p90 / max: {} / {} / {} / {}; slowest / median {:.2}",
        b.min, b.median, b.p90, b.max, b.max_over_median
    )?;
    let na = sm_figures_unavailable(a.format);
    match &im.sms {
        Some(s) => writeln!(
            o,
            "  SM busy time (union of its groups' lifetimes), slowest / median: {:.2} ({} / {} ns)",
            s.max_over_median, s.max, s.median
        )?,
        None => writeln!(o, "  SM busy time, slowest / median: {na}")?,
    }
    match im.tail {
        Some(t) => writeln!(
            o,
            "  last-wave tail {t} ns: from the last time at least half the peak SMs were busy to the end"
        )?,
        None => writeln!(o, "  last-wave tail: {na}")?,
    }
    writeln!(o, "  slowest blocks:")?;
    for (blk, d) in &b.slowest {
        match (a.compute_isolation.per_block.iter()).find(|x| x.block == *blk) {
            Some(x) => writeln!(
                o,
                "    block {blk:>6}: {d} ns (compute {} ns, blocked {} ns)",
                x.compute_ns, x.blocked_ns
            )?,
            None => writeln!(o, "    block {blk:>6}: {d} ns")?,
        }
    }
    Ok(())
}

/// The steps the text shows: the marked longest waits, then the longest others, up to
/// `n`, in path order.
fn shown_steps(steps: &[PathStep], n: usize) -> Vec<usize> {
    let mut by_len: Vec<usize> = (0..steps.len()).collect();
    by_len.sort_by_key(|&k| (Reverse((steps[k].longest_wait, steps[k].dur_ns)), k));
    by_len.truncate(n);
    by_len.sort_unstable();
    by_len
}

fn critical_path(o: &mut impl Write, a: &KernelAnalysis, n: usize) -> io::Result<()> {
    let cp = &a.critical_path;
    let (Some(blk), false) = (cp.block, cp.steps.is_empty()) else {
        return Ok(());
    };
    let shown = shown_steps(&cp.steps, n);
    writeln!(
        o,
        "critical path of block {blk} (the slowest, {} ns): {} steps, each waiting on the one before; the {} longest shown, in order",
        cp.length_ns,
        cp.steps.len(),
        shown.len()
    )?;
    writeln!(
        o,
        "  start: ns after the block's first stamp; <<: one of the {LONGEST_WAITS} longest waits"
    )?;
    // Column widths: the longest value shown, at least the heading's.
    let width = |field: fn(&PathStep) -> &String, heading: &str| {
        (shown.iter().map(|&k| field(&cp.steps[k]).chars().count())).fold(heading.len(), usize::max)
    };
    let (track_w, region_w) = (width(|s| &s.track, "track"), width(|s| &s.region, "region"));
    writeln!(
        o,
        "  {:>4}  {:<track_w$}  {:<region_w$}  {:>8}  {:>8}  waited on",
        "step", "track", "region", "start", "dur ns"
    )?;
    for &k in &shown {
        let st = &cp.steps[k];
        let waited = match &st.waited_on {
            Some(w) => format!(
                "{} from group {} at +{}",
                w.region,
                w.at.group,
                w.signal_ns.saturating_sub(st.start_ns - st.offset_ns)
            ),
            None => "-".to_string(),
        };
        writeln!(
            o,
            "  {:>4}  {:<track_w$}  {:<region_w$}  {:>8}  {:>8}  {waited}{}",
            k + 1,
            st.track,
            st.region,
            st.offset_ns,
            st.dur_ns,
            if st.longest_wait { "  <<" } else { "" }
        )?;
    }
    let rest = cp.steps.len() - shown.len();
    if rest > 0 {
        // No summed duration: a wait overlaps the steps it waits on, so the steps' sum is
        // not a time of the path (it can exceed the block's length).
        writeln!(o, "  … {rest} more steps (every step is in the JSON)")?;
    }
    Ok(())
}

/// Writes the table of `d` (run A against run B) to `out`.
pub fn write_diff<W: Write>(mut out: W, d: &RunDiff) -> Result<(), WriteError> {
    let o = &mut out;
    writeln!(
        o,
        "kernel: {} ns -> {} ns ({:+.1}%)",
        d.kernel.0, d.kernel.1, d.kernel_change_pct
    )?;
    writeln!(
        o,
        "{:<24} {:>8} {:>8} {:>12} {:>12} {:>8} {:>8}  flag",
        "region", "count A", "count B", "mean A", "mean B", "mean %", "p50 %"
    )?;
    for r in &d.regions {
        let flag = match (r.regression, r.improvement) {
            (true, _) => "REGRESSION",
            (false, true) => "improved",
            (false, false) => "",
        };
        writeln!(
            o,
            "{:<24} {:>8} {:>8} {:>12.1} {:>12.1} {:>+8.1} {:>+8.1}  {flag}",
            r.name, r.count.0, r.count.1, r.mean.0, r.mean.1, r.mean_change_pct, r.p50_change_pct
        )?;
    }
    for n in &d.added {
        writeln!(o, "added:   {n}")?;
    }
    for n in &d.removed {
        writeln!(o, "removed: {n}")?;
    }
    writeln!(
        o,
        "{} regression(s) beyond {}%",
        d.regressions().count(),
        d.threshold_pct
    )?;
    o.flush()?;
    Ok(())
}
