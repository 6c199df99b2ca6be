//! The text of `ikp analyze`: every figure of [`KernelAnalysis`] with one short line saying
//! what it means, tracks named `block B · group G (warp W, SM S)`, figures the input
//! cannot support shown as "n/a (why)".
use ikp_host::analysis::blocks::Distribution;
use ikp_host::analysis::critical::{PathStep, LONGEST_WAITS};
use ikp_host::analysis::imbalance::sm_figures_unavailable;
use ikp_host::analysis::kernel::KernelAnalysis;
use ikp_host::analysis::roofline::GpuPreset;
use ikp_host::model::Trace;
use std::io::{self, Write};

fn pct(part: u64, total: u64) -> f64 {
    100.0 * part as f64 / total.max(1) as f64
}

fn spread(d: &Distribution) -> String {
    format!("{} / {} / {} / {}", d.min, d.median, d.p90, d.max)
}

/// Writes the report of `a` (computed from `trace`); `path_steps` critical-path steps at
/// most.
pub fn write(
    o: &mut impl Write,
    trace: &Trace,
    a: &KernelAnalysis,
    gpu: &GpuPreset,
    path_steps: usize,
) -> io::Result<()> {
    let bt = a.block_time_ns;
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
    critical_path(o, a, path_steps)?;
    for r in &a.roofline {
        if r.impossible {
            writeln!(
                o,
                "warning: roofline {}: the measured rate is {:.1} % of the {} roof, which no kernel reaches: check the annotation or the GPU preset (--gpu)",
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
        "compute isolation, per block then summed: block length - union of its groups' waits (reference 004):"
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
        let iso = a
            .compute_isolation
            .per_block
            .iter()
            .find(|x| x.block == *blk);
        match iso {
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
    by_len.sort_by(|&a, &b| {
        (steps[b].longest_wait, steps[b].dur_ns)
            .cmp(&(steps[a].longest_wait, steps[a].dur_ns))
            .then(a.cmp(&b))
    });
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
    let track_w = shown
        .iter()
        .map(|&k| cp.steps[k].track.chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    let region_w = shown
        .iter()
        .map(|&k| cp.steps[k].region.chars().count())
        .max()
        .unwrap_or(6)
        .max(6);
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
        writeln!(o, "  … {rest} more steps (every step is in --json)")?;
    }
    Ok(())
}
