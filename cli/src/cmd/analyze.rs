//! `ikp analyze BUF`: the answers behind the timeline, as text (or JSON with `--json`):
//! timeline breakdown, compute isolation, imbalance, gaps, links and the critical path of
//! the slowest block.
use super::analysis_opts::AnalysisOpts;
use super::decode::Input;
use ikp_host::analysis::{breakdown, gaps, imbalance, isolation, links, roofline};
use ikp_host::model::Trace;
use ikp_host::write::atomic;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `ikp analyze`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub analysis: AnalysisOpts,
    /// Also write everything as JSON to this file.
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
    /// ns per spin iteration for counter-based blocked time (default: fitted).
    #[arg(long)]
    pub ns_per_iteration: Option<f64>,
}

fn pct(part: u64, total: u64) -> f64 {
    100.0 * part as f64 / total.max(1) as f64
}

/// Runs `ikp analyze`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let trace = args.input.load()?;
    let table = args.analysis.categories()?;
    let work = args.analysis.work()?;
    let gpu = args.analysis.gpu()?;
    let b = breakdown::kernel_breakdown(&trace, &table);
    let iso = isolation::isolate_compute(&trace, &table, args.ns_per_iteration);
    let im = imbalance::imbalance(&trace);
    let g = gaps::gaps(&trace);
    let l = links::links(&trace);
    let slowest_block = im.blocks.slowest.first().map(|x| x.0);
    let path = slowest_block
        .map(|blk| links::critical_path(&trace, blk, &l))
        .unwrap_or_default();
    let roof = if work.is_empty() {
        vec![]
    } else {
        roofline::roofline(&trace, &work, gpu)
    };

    let mut o = std::io::stdout().lock();
    writeln!(o, "timeline breakdown (kernel {} ns):", b.total)?;
    for (name, v) in [
        ("compute", b.compute),
        ("exposed wait", b.exposed_wait),
        ("exposed load", b.exposed_load),
        ("exposed store", b.exposed_store),
        ("exposed comm", b.exposed_comm),
        ("exposed other", b.exposed_other),
        ("idle", b.idle),
    ] {
        writeln!(o, "  {name:<14} {v:>14} ns {:>6.1}%", pct(v, b.total))?;
    }
    writeln!(
        o,
        "compute isolation: kernel {} - blocked {} (union; sum {}) = compute {} ns",
        iso.kernel_length, iso.blocked, iso.blocked_sum, iso.compute
    )?;
    if let (Some(bc), Some(r)) = (iso.blocked_from_counters, iso.ns_per_iteration) {
        writeln!(
            o,
            "  from wait counters at {r:.3} ns/iteration: blocked {bc} ns"
        )?;
    }
    writeln!(
        o,
        "imbalance: block max/median {:.2} ({} / {} ns), SM max/median {:.2}, last-wave tail {} ns",
        im.blocks.max_over_median, im.blocks.max, im.blocks.median, im.sms.max_over_median, im.tail
    )?;
    for (blk, d) in &im.blocks.slowest {
        writeln!(o, "  block {blk:>6}: {d} ns")?;
    }
    if !g.is_empty() {
        writeln!(o, "largest gaps:")?;
        for x in g.iter().take(5) {
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
    writeln!(o, "signal/wait links: {}", l.len())?;
    if let (Some(blk), false) = (slowest_block, path.is_empty()) {
        writeln!(
            o,
            "critical path of block {blk}: {}",
            describe_path(&trace, &path)
        )?;
    }
    for r in &roof {
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
    if let Some(out) = &args.json {
        let v = serde_json::json!({
            "breakdown": b,
            "block_breakdowns": breakdown::block_breakdowns(&trace, &table),
            "compute_isolation": iso,
            "imbalance": im,
            "gaps": g,
            "links": l,
            "critical_path": { "block": slowest_block, "spans": path },
            "roofline": roof,
        });
        atomic::write_file(out, |w| {
            serde_json::to_writer_pretty(&mut *w, &v).map_err(std::io::Error::other)
        })?;
    }
    Ok(())
}

fn describe_path(t: &Trace, path: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for &i in path {
        let name = t.names.region(t.spans.region[i]);
        parts.push(format!(
            "{name}@lane{}({} ns)",
            t.spans.lane[i],
            t.spans.dur(i)
        ));
    }
    parts.join(" -> ")
}
