//! Renders the report page (see the module `# Format` in [`super`]).

use super::regions::region_table;
use super::svg::{bars, esc, heat_map, histogram, stacked_bar};
use super::ReportLaunch;
use crate::analysis::blocks::{distribution, gpu_wall, Block, BlockView};
use crate::analysis::breakdown::{block_breakdowns, TimeBreakdown};
use crate::analysis::categories::{Category, CategoryTable};
use crate::analysis::gaps::gaps;
use crate::analysis::imbalance::{imbalance, sm_figures_unavailable};
use crate::analysis::isolation::isolate_compute;
use crate::analysis::roofline::{self, roofline, GpuPreset, Work};
use crate::analysis::steps::step_stats;
use crate::model::Trace;
use crate::stats::{self, AsyncStats, RegionStats, TraceStats};
use crate::time::{format_duration, Timestamp};
use crate::write::WriteError;
use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

/// What goes into the report beyond the traces. The defaults are `ikp report`'s.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Region categories (defaults from names when empty).
    pub categories: CategoryTable,
    /// Work per region for the roofline; no roofline section when empty.
    pub work: HashMap<String, Work>,
    /// GPU whose peaks the roofline uses (default [`roofline::DEFAULT_GPU`]).
    pub gpu: Option<&'static GpuPreset>,
    /// Histogram bins (default 40).
    pub hist_bins: usize,
    /// Time columns of the heat map (default 200).
    pub heat_columns: usize,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            categories: CategoryTable::default(),
            work: HashMap::new(),
            gpu: Some(roofline::default_preset()),
            hist_bins: 40,
            heat_columns: 200,
        }
    }
}

/// Histograms shown: the regions with the most self time.
const HISTOGRAMS: usize = 12;

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1180px}\
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:36px}\
h3{font-size:15px;margin-top:22px}table{border-collapse:collapse;font-size:13px}\
td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:right}th{background:#f4f4f8}\
td:first-child,th:first-child,td.l,th.l{text-align:left}td{font-variant-numeric:tabular-nums}\
tr.outside td{color:#555;font-style:italic}.meta{color:#555;font-size:13px}\
.hists{display:flex;flex-wrap:wrap;gap:18px}.hist{font-size:12px}";

/// One colour per part of the breakdown, in [`TimeBreakdown::parts`] order: the first six
/// are also the region categories, in [`Category::ALL`] order, so a region's histogram has
/// the colour of its category in the breakdown.
const COLORS: [&str; 7] = [
    "#4c78a8", "#e45756", "#f58518", "#72b7b2", "#b279a2", "#9d9d9d", "#eeeeee",
];

/// The colour of category `c`, as in the breakdown's legend.
fn category_color(c: Category) -> &'static str {
    COLORS[c as usize]
}

/// Writes the report of `launches` (see [`super::prepare`]) to `out`.
pub fn write_html<W: Write>(
    mut out: W,
    launches: &[ReportLaunch<'_>],
    opts: &ReportOptions,
) -> Result<(), WriteError> {
    let title = launches
        .iter()
        .map(|l| l.label)
        .collect::<Vec<_>>()
        .join(", ");
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ikp report: {}</title><style>{CSS}</style></head><body>\n<h1>ikp report</h1>\n",
        esc(&title)
    )?;
    if launches.len() > 1 {
        across(&mut out, launches)?;
    }
    for (n, l) in launches.iter().enumerate() {
        launch(&mut out, n, l, opts)?;
    }
    writeln!(out, "</body></html>")?;
    out.flush()?;
    Ok(())
}

/// Per-region statistics over all launches (the step statistics of the dPRO trace format,
/// docs/references.md).
fn across<W: Write>(out: &mut W, launches: &[ReportLaunch<'_>]) -> io::Result<()> {
    let traces: Vec<&TraceStats> = launches.iter().map(|l| &l.stats).collect();
    let mut rows: Vec<_> = step_stats(&traces).into_iter().collect();
    rows.sort_by(|a, b| b.1.time.cmp(&a.1.time).then(a.0.cmp(&b.0)));
    write!(out, "<section id=\"across\"><h2>Across {} launches</h2><table><tr><th>region</th><th>count</th><th>total</th><th>mean</th><th>min</th><th>max</th>", launches.len())?;
    for l in launches {
        write!(out, "<th>{}</th>", esc(l.label))?;
    }
    writeln!(out, "</tr>")?;
    for (name, st) in rows {
        write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            esc(&name),
            st.cnt,
            format_duration(st.time as f64),
            format_duration(st.avg),
            format_duration(st.min_t as f64),
            format_duration(st.max_t as f64)
        )?;
        for k in 0..launches.len() {
            match st.per_step.iter().find(|p| p.0 == k) {
                Some(&(_, cnt, time)) => write!(
                    out,
                    "<td>{} ({cnt}×)</td>",
                    format_duration(time as f64 / cnt as f64)
                )?,
                None => write!(out, "<td>–</td>")?,
            }
        }
        writeln!(out, "</tr>")?;
    }
    writeln!(
        out,
        "</table><p class=\"meta\">Per launch: mean duration (occurrences).</p></section>"
    )
}

fn launch<W: Write>(
    out: &mut W,
    n: usize,
    l: &ReportLaunch<'_>,
    opts: &ReportOptions,
) -> io::Result<()> {
    let (label, st, view) = (l.label, &l.stats, &l.view);
    let t = st.trace;
    let start = t.lanes.iter().map(|l| l.start).min().unwrap_or(0);
    let end = t.lanes.iter().map(|l| l.end).max().unwrap_or(start);
    let src = &t.source;
    // A stream launch says so, with its rings' policy: its drops are a drain that fell
    // behind, not a full buffer.
    let kind = match &src.stream {
        Some(s) => format!(
            "stream file · rings of {} records, {} when full · ",
            s.ring_records,
            if s.wait { "waiting" } else { "dropping" }
        ),
        None => String::new(),
    };
    writeln!(
        out,
        "<section id=\"launch-{n}\"><h2>{}</h2><p class=\"meta\">{kind}{} format v{} · grid {}×{}×{} · {} groups/block · {} lanes · GPU wall time {} · {} spans · dropped {} · unmatched begin {} / end {}</p>",
        esc(label),
        src.format,
        src.version,
        src.grid[0],
        src.grid[1],
        src.grid[2],
        src.groups_per_block,
        t.lanes.len(),
        format_duration(gpu_wall(t) as f64),
        t.spans.len(),
        t.dropped(),
        t.diagnostics.unmatched_begin.len(),
        t.diagnostics.unmatched_end.len()
    )?;
    let counts = t.diagnostic_counts();
    if counts.set_aside > 0 {
        writeln!(
            out,
            "<p class=\"meta\" id=\"set-aside-{n}\"><strong>{}</strong>: not decoded, in none of the figures below.</p>",
            esc(&counts.set_aside_phrase())
        )?;
    }

    if counts.overwritten > 0 || counts.ends_of_overwritten_begins > 0 {
        writeln!(
            out,
            "<p class=\"meta\">Ring: <strong>{} records overwritten</strong> (the oldest are lost); {} ends whose begins were overwritten (not spans).</p>",
            counts.overwritten, counts.ends_of_overwritten_begins
        )?;
    }
    if let Some(e) = src.epoch.filter(|e| e.not_recorded() > 0) {
        writeln!(
            out,
            "<p class=\"meta\">{} launches ran, the buffer holds {}: the last {} were not recorded.</p>",
            e.launches,
            e.epochs,
            e.not_recorded()
        )?;
    }
    if let Some(c) = &src.overhead_correction {
        writeln!(
            out,
            "<p class=\"meta\">Overhead correction: {:.3} ns per record (median), {} lanes corrected, {} not measured; {} span ends moved, {} removed.</p>",
            c.per_record_ns_median(),
            c.lanes_corrected,
            c.lanes_unmeasured,
            c.spans_corrected,
            format_duration(c.total_ns_removed as f64)
        )?;
    }
    if let Some(c) = &src.assumed_clock {
        writeln!(
            out,
            "<p class=\"meta\">Cycles converted to ns at <strong>{}</strong>: durations scale with the ratio of the real clock to it.</p>",
            esc(&c.describe())
        )?;
    }

    breakdown_section(out, n, view)?;

    // Regions, by self time; the histograms follow the table's order.
    let cats = &view.categories;
    region_table(out, n, st, cats)?;
    let rows: Vec<&RegionStats> = (st.all.shares.rows().iter())
        .filter_map(|row| st.all.region(row.region?.region))
        .collect();
    let (shown, bins) = (rows.len().min(HISTOGRAMS), opts.hist_bins.max(1));
    writeln!(
        out,
        "<h3>Durations</h3><p class=\"meta\">Span durations of the {shown} regions with the most self time{}, in the table's order: whole spans (nested regions included), {bins} bins over each region's own range; bar height: share of the region's occurrences; colour: the region's category, as in the breakdown above.</p><div class=\"hists\" id=\"hists-{n}\">",
        if rows.len() > shown { format!(" (of {})", rows.len()) } else { String::new() },
    )?;
    for r in &rows[..shown] {
        let (c, d) = (cats[r.region as usize], &r.durations);
        let chart = histogram(
            &stats::histogram(d, bins as u32),
            270,
            80,
            category_color(c),
        );
        writeln!(
            out,
            "<div class=\"hist\"><b>{}</b> ({} occurrences, {})<br>{chart}</div>",
            esc(&t.names.region(r.region)),
            d.len(),
            esc(c.name()),
        )?;
    }
    writeln!(out, "</div>")?;

    // Heat map.
    let cols = opts.heat_columns.max(1);
    let (rows_hm, what) = heat_rows(t, start, end, cols);
    let row_h = if rows_hm.len() > 60 { 4 } else { 10 };
    let share_of = format!("of the {what}'s groups inside some region");
    let map = heat_map(&rows_hm, 1000, row_h, end - start, &share_of);
    writeln!(
        out,
        "<h3>Busy lanes over time per {what}</h3><div id=\"heatmap-{n}\">{map}</div>"
    )?;

    imbalance_section(out, n, view)?;

    // Gaps.
    let g = gaps(t);
    if !g.is_empty() {
        writeln!(out, "<h3>Gaps between regions</h3><table id=\"gaps-{n}\"><tr><th>from → to</th><th>count</th><th>total</th><th>mean</th><th>max</th></tr>")?;
        for x in g.iter().take(10) {
            writeln!(
                out,
                "<tr><td>{} → {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&t.names.region(x.from)),
                esc(&t.names.region(x.to)),
                x.count,
                format_duration(x.total as f64),
                format_duration(x.total as f64 / x.count.max(1) as f64),
                format_duration(x.max as f64)
            )?;
        }
        writeln!(out, "</table>")?;
    }

    if let Some(a) = &st.async_ranges {
        async_section(out, n, a)?;
    }

    // Roofline.
    if let (false, Some(gpu)) = (opts.work.is_empty(), opts.gpu) {
        writeln!(out, "<h3>Roofline ({})</h3><table id=\"roofline-{n}\"><tr><th>region</th><th>count</th><th>TFLOP/s</th><th>TB/s</th><th>FLOP/B</th><th>bound</th><th>% of roof</th></tr>", gpu.name)?;
        for r in roofline(t, &opts.work, gpu) {
            if r.impossible {
                writeln!(
                    out,
                    "<tr class=\"impossible\"><td>{}</td><td>{}</td><td colspan=\"5\">impossible: {:.1}% of the {} roof, which no kernel reaches; check the annotation or the GPU preset</td></tr>",
                    esc(&r.name),
                    r.count,
                    r.percent_of_roof,
                    gpu.name
                )?;
                continue;
            }
            writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.3}</td><td>{:.1}</td><td>{}</td><td>{:.1}%</td></tr>",
                esc(&r.name),
                r.count,
                r.tflops,
                r.tb_per_s,
                r.intensity,
                if r.memory_bound { "memory" } else { "compute" },
                r.percent_of_roof
            )?;
        }
        writeln!(out, "</table>")?;
    }
    writeln!(out, "</section>")
}

/// The launch's async ranges, per async region: the summary JSON's `async_ranges` figures
/// and the summary table's words (shown only with async ranges or unmatched records).
fn async_section<W: Write>(out: &mut W, n: usize, a: &AsyncStats) -> io::Result<()> {
    writeln!(
        out,
        "<h3>Async ranges</h3><p class=\"meta\">Begun in one lane and ended in any lane, paired by token: {} ranges; {} begins never ended, {} ends without a begin (counted, never paired). Durations are of whole ranges, which may overlap: they are in none of the figures above.</p><table id=\"async-{n}\"><tr><th>region</th><th>ranges</th><th>total</th><th>mean</th><th>min</th><th>max</th><th>never ended</th><th>no begin</th></tr>",
        a.count, a.unmatched_begin, a.unmatched_end
    )?;
    for r in &a.regions {
        writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.name),
            r.count,
            format_duration(r.total_dur),
            format_duration(r.mean_dur),
            format_duration(r.min_dur),
            format_duration(r.max_dur),
            r.unmatched_begin,
            r.unmatched_end
        )?;
    }
    writeln!(out, "</table>")
}

/// The breakdown per block, summed (block-time), with compute isolation: the same figures
/// and words as `ikp analyze`.
fn breakdown_section<W: Write>(out: &mut W, n: usize, view: &BlockView) -> io::Result<()> {
    let bbs = block_breakdowns(view);
    let b: TimeBreakdown = bbs.iter().map(|x| x.time).sum();
    let parts = b.parts();
    let bar: Vec<(String, u64, &str)> = parts
        .iter()
        .zip(COLORS)
        .map(|(&(k, v), c)| (k.replace('_', " "), v, c))
        .collect();
    let bar: Vec<(&str, u64, &str)> = bar.iter().map(|(k, v, c)| (k.as_str(), *v, *c)).collect();
    writeln!(
        out,
        "<h3>Where the time goes</h3><p class=\"meta\">Block-time {}: the sum over {} blocks of each block's first-to-last stamp; shares are of it. GPU wall time (first to last stamp of any block): {}.</p><div id=\"breakdown-{n}\">{}</div>",
        format_duration(b.total as f64),
        bbs.len(),
        format_duration(gpu_wall(view.trace) as f64),
        stacked_bar(&bar, 1000)
    )?;
    writeln!(
        out,
        "<table id=\"breakdown-table-{n}\"><tr><th>part</th><th>block-time</th><th>share</th><th>per block: min</th><th>median</th><th>p90</th><th>max</th></tr>"
    )?;
    for (k, &(name, v)) in parts.iter().enumerate() {
        let d = distribution(bbs.iter().map(|x| x.time.parts()[k].1));
        writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{:.1}%</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            name.replace('_', " "),
            format_duration(v as f64),
            100.0 * v as f64 / b.total.max(1) as f64,
            format_duration(d.min as f64),
            format_duration(d.median as f64),
            format_duration(d.p90 as f64),
            format_duration(d.max as f64)
        )?;
    }
    let iso = isolate_compute(view, None);
    writeln!(
        out,
        "</table><p class=\"meta\">In a block, a part is time some group spends in it and no earlier part covers. Compute isolation, per block then summed (block length − union of its groups' waits): block-time {} − blocked {} = compute {} ({:.1}% of block-time); summing waits instead of uniting them would give {} blocked. Of the blocked time, {} ({:.1}%) had another group of the block computing: waits hidden behind the block's own math. Per block compute, min / median / p90 / max: {} / {} / {} / {}.</p>",
        format_duration(iso.length_ns as f64),
        format_duration(iso.blocked_ns as f64),
        format_duration(iso.compute_ns as f64),
        100.0 * iso.compute_ns as f64 / iso.length_ns.max(1) as f64,
        format_duration(iso.wait_sum_ns as f64),
        format_duration(iso.overlap_ns as f64),
        100.0 * iso.overlap_ns as f64 / iso.blocked_ns.max(1) as f64,
        format_duration(iso.compute_spread.min as f64),
        format_duration(iso.compute_spread.median as f64),
        format_duration(iso.compute_spread.p90 as f64),
        format_duration(iso.compute_spread.max as f64)
    )
}

/// Block lengths, slowest first, with the SM figures or why there are none.
fn imbalance_section<W: Write>(out: &mut W, n: usize, view: &BlockView) -> io::Result<()> {
    let im = imbalance(view);
    let mut blocks: Vec<&Block> = view.blocks.iter().collect();
    // Slowest first; ties by block id, so the order is the same on every run.
    blocks.sort_by_key(|b| (Reverse(b.length()), b.id));
    let bd: Vec<(String, u64)> = (blocks.iter())
        .map(|b| (format!("block {}", b.id), b.length()))
        .collect();
    let what = "block length, one bar per block, slowest first (ties by block id)";
    let median = ("median", im.blocks.median);
    let chart = bars(&bd, median, 1000, 120, COLORS[0], what);
    let na = sm_figures_unavailable(view.trace.source.format);
    let sms = (im.sms.as_ref()).map_or(na.to_string(), |s| format!("{:.2}", s.max_over_median));
    let tail = (im.tail).map_or(na.to_string(), |x| format_duration(x as f64));
    writeln!(
        out,
        "<h3>Imbalance</h3><div id=\"imbalance-{n}\">{chart}</div><p class=\"meta\">Block lengths (first to last stamp of its groups), slowest first; dashed line: median {}. Slowest block / median = {:.2}. SMs: slowest / median busy = {}. Last-wave tail: {}.</p>",
        format_duration(im.blocks.median as f64),
        im.blocks.max_over_median,
        esc(&sms),
        esc(&tail)
    )
}

/// Fraction of each SM's (or block's) lanes inside some region, per time column.
fn heat_rows(
    t: &Trace,
    start: Timestamp,
    end: Timestamp,
    cols: usize,
) -> (Vec<(String, Vec<f64>)>, &'static str) {
    let by_sm = t.lanes.iter().all(|l| l.sm.is_some()) && !t.lanes.is_empty();
    let key = |l: &crate::model::Lane| if by_sm { l.sm.unwrap_or(0) } else { l.block };
    let what = if by_sm { "SM" } else { "block" };
    let width = (end - start).max(1) as f64 / cols as f64;
    // Per key: its lanes, and their shares of each column inside some region, summed.
    let mut rows: BTreeMap<u32, (u32, Vec<f64>)> = BTreeMap::new();
    for l in &t.lanes {
        let (lanes, busy) = rows.entry(key(l)).or_insert_with(|| (0, vec![0.0; cols]));
        *lanes += 1;
        let mut fill = |(b, e): (Timestamp, Timestamp)| {
            let (b, e) = ((b - start) as f64, (e - start) as f64);
            let (c0, c1) = ((b / width) as usize, ((e / width) as usize).min(cols - 1));
            for (c, cell) in busy.iter_mut().enumerate().take(c1 + 1).skip(c0) {
                let (lo, hi) = (c as f64 * width, (c + 1) as f64 * width);
                *cell += (e.min(hi) - b.max(lo)).max(0.0) / width;
            }
        };
        // The lane's time inside some region: its spans merged (in begin order, a span
        // that begins before the merged stretch ends extends it), so a region outliving
        // the top-level one it began in counts too. Nested spans merge into their
        // top-level span.
        let mut cur: Option<(Timestamp, Timestamp)> = None;
        for i in l.spans.clone() {
            let (b, e) = (t.spans.begin[i], t.spans.end[i]);
            match cur {
                Some((cb, ce)) if b < ce => cur = Some((cb, ce.max(e))),
                _ => {
                    cur.map(&mut fill);
                    cur = Some((b, e));
                }
            }
        }
        cur.map(fill);
    }
    let rows = (rows.into_iter())
        .map(|(k, (n, cells))| {
            (
                format!("{what} {k}"),
                cells.iter().map(|v| v / n as f64).collect(),
            )
        })
        .collect();
    (rows, what)
}

#[cfg(test)]
mod tests {
    use super::heat_rows;
    use crate::testutil::{lane, trace};

    #[test]
    fn a_lane_is_busy_while_any_region_is_open() {
        // SM 0: load [0,10) with a wait [5,30) begun inside it that outlives it, and an
        // mma [20,25) inside the wait; SM 1 idle. Columns of 10 ns.
        let t = trace(
            &["load", "wait", "mma"],
            vec![
                lane(0, 0, 0, 40, &[(0, 0, 10), (1, 5, 30), (2, 20, 25)]),
                lane(1, 1, 0, 40, &[]),
            ],
        );
        let (rows, what) = heat_rows(&t, 0, 40, 4);
        assert_eq!(what, "SM");
        assert_eq!(rows[0], ("SM 0".to_string(), vec![1.0, 1.0, 1.0, 0.0]));
        assert_eq!(rows[1], ("SM 1".to_string(), vec![0.0; 4]));
    }
}
