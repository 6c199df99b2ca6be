//! `ikp report --xlsx`: the spreadsheet TraceLens users know (the TraceLens report column
//! definitions, docs/references.md), inside one kernel, written with `rust_xlsxwriter`.
//!
//! # Format
//! An .xlsx workbook, one set of sheets per launch (suffix `_N` when there are several):
//! - `gpu_timeline`: `type`, `time ms`, `percent`: `computation_time`, `exposed_wait_time`,
//!   `exposed_load_time`, `exposed_store_time`, `exposed_comm_time`, `exposed_other_time`,
//!   `busy_time`, `idle_time`, `total_time`, then `total_<category>_time` (per block, the
//!   union of that category before exposure). All in block-time: each figure is the sum
//!   over blocks of that figure for the block (see [`crate::analysis::blocks`]), and
//!   `total_time` the sum of the block lengths, so `percent` is a share of block-time.
//!   computation + exposed_* + idle = total, exactly.
//! - `regions`: one row per span (up to the sheet's row limit): `lane`, `block`, `group`,
//!   `sm`, `warp`, `name`, `category`, `payload`, `begin us` (from the launch start),
//!   `dur us`, `self us`.
//! - `regions_summary_by_category`: `category`, `Count`, `self_time_ms`, `Percentage (%)`,
//!   `Cumulative Percentage (%)`: per category, largest self time first, then the row
//!   `(outside any region)` (no count).
//! - `regions_summary`: `name`, `category`, `Count`, `self_time_sum us`, `self_time_ms`,
//!   `inclusive_time_ms`, `Percentage (%)`, `Cumulative Percentage (%)`: per region,
//!   largest self time first, then the row `(outside any region)` (only its self time and
//!   percentages).
//! - `regions_unique_args`: by name and payload: `name`, `payload`, `operation_count`, then
//!   `dur_sum`, `dur_mean`, `dur_median`, `dur_std`, `dur_min`, `dur_max` in us.
//! - `roofline` (with annotations): `name`, `count`, `GFLOPS`, `Data Moved MB`,
//!   `FLOPS/Byte`, `TFLOPS/s`, `TB/s`, `bound`, `% of roof`.
//!
//! In both summaries `Percentage (%)` is self time as a share of the lane time and
//! `Cumulative Percentage (%)` its running sum, which reaches 100 on the last row: the
//! definitions of [`crate::definitions`], the same figures as every other output.

use super::{ReportLaunch, ReportOptions};
use crate::analysis::breakdown::{block_time_breakdown, block_time_by_category};
use crate::analysis::categories::Category;
use crate::analysis::roofline::roofline;
use crate::stats::{dur_stats, OUTSIDE};
use crate::time;
use crate::write::WriteError;
use rust_xlsxwriter::{Format, Workbook, Worksheet, XlsxError};
use std::collections::BTreeMap;
use std::io::Write;

/// Rows an xlsx sheet holds.
const MAX_ROWS: usize = 1_048_576;

/// Writes the header row, the column names `cols` separated by commas.
fn header(ws: &mut Worksheet, cols: &str) -> Result<(), XlsxError> {
    let bold = Format::new().set_bold();
    for (c, name) in cols.split(',').enumerate() {
        ws.write_string_with_format(0, c as u16, name, &bold)?;
        ws.set_column_width(c as u16, (name.len() as f64 + 4.0).max(10.0))?;
    }
    ws.set_freeze_panes(1, 0)?;
    Ok(())
}

/// Writes `vals` into row `r`, from column `c0` on.
fn numbers(ws: &mut Worksheet, r: u32, c0: u16, vals: &[f64]) -> Result<(), XlsxError> {
    for (c, &v) in (c0..).zip(vals) {
        ws.write_number(r, c, v)?;
    }
    Ok(())
}

/// Writes the workbook of `launches` (see [`super::prepare`]) to `out`.
pub fn write_xlsx<W: Write>(
    mut out: W,
    launches: &[ReportLaunch<'_>],
    opts: &ReportOptions,
) -> Result<(), WriteError> {
    let bytes = workbook(launches, opts)?;
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}

/// The workbook's bytes (rust_xlsxwriter builds a whole zip in memory).
fn workbook(launches: &[ReportLaunch<'_>], opts: &ReportOptions) -> Result<Vec<u8>, XlsxError> {
    let mut wb = Workbook::new();
    for (n, l) in launches.iter().enumerate() {
        let suffix = if launches.len() > 1 {
            format!("_{n}")
        } else {
            String::new()
        };
        launch(&mut wb, l, opts, &suffix)?;
    }
    wb.save_to_buffer()
}

fn launch(
    wb: &mut Workbook,
    l: &ReportLaunch,
    opts: &ReportOptions,
    sfx: &str,
) -> Result<(), XlsxError> {
    let (t, cats) = (l.stats.trace, &l.view.categories);
    let b = block_time_breakdown(&l.view);
    let ms = |ns: u64| time::ms(ns as f64);
    let us = |ns: u64| time::us(ns as f64);
    let pct = |ns: u64| {
        if b.total == 0 {
            0.0
        } else {
            100.0 * ns as f64 / b.total as f64
        }
    };

    // gpu_timeline
    let ws = wb.add_worksheet().set_name(format!("gpu_timeline{sfx}"))?;
    header(ws, "type,time ms,percent")?;
    let busy = b.total - b.idle;
    let mut rows = vec![
        ("computation_time".to_string(), b.compute),
        ("exposed_wait_time".into(), b.exposed_wait),
        ("exposed_load_time".into(), b.exposed_load),
        ("exposed_store_time".into(), b.exposed_store),
        ("exposed_comm_time".into(), b.exposed_comm),
        ("exposed_other_time".into(), b.exposed_other),
        ("busy_time".into(), busy),
        ("idle_time".into(), b.idle),
        ("total_time".into(), b.total),
    ];
    let by_cat = block_time_by_category(&l.view);
    for (k, c) in Category::ALL.iter().enumerate().skip(1) {
        rows.push((format!("total_{}_time", c.name()), by_cat[k]));
    }
    for (r, (name, v)) in rows.iter().enumerate() {
        let r = r as u32 + 1;
        ws.write_string(r, 0, name)?;
        numbers(ws, r, 1, &[ms(*v), pct(*v)])?;
    }

    // regions (base rows)
    let selfs = &l.stats.span_self;
    let start = t.lanes.iter().map(|l| l.start).min().unwrap_or(0);
    let ws = wb.add_worksheet().set_name(format!("regions{sfx}"))?;
    header(
        ws,
        "lane,block,group,sm,warp,name,category,payload,begin us,dur us,self us",
    )?;
    let s = &t.spans;
    let mut row = 1u32;
    'lanes: for l in &t.lanes {
        for i in l.spans.clone() {
            if row as usize >= MAX_ROWS {
                break 'lanes;
            }
            numbers(ws, row, 0, &[l.id, l.block, l.group].map(f64::from))?;
            for (c, v) in [(3, l.sm), (4, l.warp)] {
                if let Some(v) = v {
                    ws.write_number(row, c, v as f64)?;
                }
            }
            ws.write_string(row, 5, t.names.region(s.region[i]))?;
            ws.write_string(row, 6, cats[s.region[i] as usize].name())?;
            let (begin, dur) = (us(s.begin[i] - start), us(s.dur(i)));
            numbers(ws, row, 7, &[s.payload[i] as f64, begin, dur, us(selfs[i])])?;
            row += 1;
        }
    }

    // Summaries: shares of the lane time.
    let shares = &l.stats.all.shares;
    let mut by_args: BTreeMap<(u16, u32), Vec<u64>> = BTreeMap::new();
    for i in 0..s.len() {
        by_args
            .entry((s.region[i], s.payload[i]))
            .or_default()
            .push(s.dur(i));
    }
    let mut by_cat: BTreeMap<Category, (u64, u64)> = BTreeMap::new();
    for r in &shares.regions {
        let c = by_cat.entry(cats[r.region as usize]).or_default();
        c.0 += r.count;
        c.1 += r.self_time;
    }
    let ws = wb
        .add_worksheet()
        .set_name(format!("regions_summary_by_category{sfx}"))?;
    header(
        ws,
        "category,Count,self_time_ms,Percentage (%),Cumulative Percentage (%)",
    )?;
    let mut v: Vec<_> = by_cat.into_iter().collect();
    v.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(&b.0)));
    let mut sum = 0;
    let mut r = 1u32;
    for (c, (cnt, tot)) in &v {
        sum += tot;
        ws.write_string(r, 0, c.name())?;
        let (share, cumulative) = (shares.share(*tot), shares.share(sum));
        numbers(
            ws,
            r,
            1,
            &[*cnt as f64, ms(*tot), 100.0 * share, 100.0 * cumulative],
        )?;
        r += 1;
    }
    let out = shares.outside;
    ws.write_string(r, 0, OUTSIDE)?;
    let (share, cumulative) = (shares.share(out), shares.share(sum + out));
    numbers(ws, r, 2, &[ms(out), 100.0 * share, 100.0 * cumulative])?;
    let ws = wb
        .add_worksheet()
        .set_name(format!("regions_summary{sfx}"))?;
    let cols = "name,category,Count,self_time_sum us,self_time_ms,inclusive_time_ms,\
                Percentage (%),Cumulative Percentage (%)";
    header(ws, cols)?;
    for (r, row) in shares.rows().iter().enumerate() {
        let r = r as u32 + 1;
        match row.region {
            Some(x) => {
                ws.write_string(r, 0, t.names.region(x.region))?;
                ws.write_string(r, 1, cats[x.region as usize].name())?;
                ws.write_number(r, 2, x.count as f64)?;
                ws.write_number(r, 5, ms(x.inclusive))?;
            }
            None => _ = ws.write_string(r, 0, OUTSIDE)?,
        }
        numbers(ws, r, 3, &[us(row.self_time), ms(row.self_time)])?;
        numbers(ws, r, 6, &[100.0 * row.share, 100.0 * row.cumulative])?;
    }
    let ws = wb
        .add_worksheet()
        .set_name(format!("regions_unique_args{sfx}"))?;
    let cols = "name,payload,operation_count,dur_sum us,dur_mean us,dur_median us,dur_std us,\
                dur_min us,dur_max us";
    header(ws, cols)?;
    let mut v: Vec<_> = by_args
        .into_iter()
        .map(|(k, mut d)| {
            d.sort_unstable();
            (k, dur_stats(&d))
        })
        .collect();
    v.sort_by(|a, b| b.1.total.cmp(&a.1.total).then(a.0.cmp(&b.0)));
    for (r, ((id, payload), st)) in v.iter().enumerate().take(MAX_ROWS - 1) {
        let r = r as u32 + 1;
        ws.write_string(r, 0, t.names.region(*id))?;
        let [mean, median, std] = [st.mean, st.percentiles[3], st.var_pop.sqrt()].map(time::us);
        let (count, sum, min, max) = (st.count as f64, us(st.total), us(st.min), us(st.max));
        numbers(
            ws,
            r,
            1,
            &[*payload as f64, count, sum, mean, median, std, min, max],
        )?;
    }

    if let (false, Some(gpu)) = (opts.work.is_empty(), opts.gpu) {
        let ws = wb.add_worksheet().set_name(format!("roofline{sfx}"))?;
        header(
            ws,
            "name,count,GFLOPS,Data Moved MB,FLOPS/Byte,TFLOPS/s,TB/s,bound,% of roof",
        )?;
        for (r, x) in roofline(t, &opts.work, gpu).iter().enumerate() {
            let r = r as u32 + 1;
            ws.write_string(r, 0, &x.name)?;
            numbers(ws, r, 1, &[x.count as f64, x.flops / 1e9, x.bytes / 1e6])?;
            if x.intensity.is_finite() {
                ws.write_number(r, 4, x.intensity)?;
            }
            numbers(ws, r, 5, &[x.tflops, x.tb_per_s])?;
            ws.write_string(r, 7, if x.memory_bound { "memory" } else { "compute" })?;
            ws.write_number(r, 8, x.percent_of_roof)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{lane, trace};
    use std::io::Read;

    fn sheet_xml(bytes: &[u8], n: usize) -> String {
        let mut z = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
        let mut s = String::new();
        z.by_name(&format!("xl/worksheets/sheet{n}.xml"))
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        s
    }

    #[test]
    fn workbook_has_the_tracelens_sheets_with_exact_numbers() {
        // loop [0,100) holds mma [10,60); wait [100,120) on a second lane; kernel 0..150.
        let t = trace(
            &["loop", "mma", "wait.kv"],
            vec![
                lane(0, 0, 0, 150, &[(0, 0, 100), (1, 10, 60)]),
                lane(0, 0, 0, 150, &[(2, 100, 120)]),
            ],
        );
        let opts = ReportOptions {
            work: crate::analysis::roofline::parse_annotations(
                r#"{"mma": {"flops": 2e6, "bytes": 1e3}}"#,
            )
            .unwrap(),
            gpu: crate::analysis::roofline::preset("a100"),
            ..Default::default()
        };
        let launches = crate::report::prepare(&[crate::write::Launch::new("k", &t)], &opts);
        let bytes = workbook(&launches, &opts).unwrap();
        let mut z = zip::ZipArchive::new(std::io::Cursor::new(&bytes[..])).unwrap();
        let mut wbx = String::new();
        z.by_name("xl/workbook.xml")
            .unwrap()
            .read_to_string(&mut wbx)
            .unwrap();
        for name in [
            "gpu_timeline",
            "regions",
            "regions_summary_by_category",
            "regions_summary",
            "regions_unique_args",
            "roofline",
        ] {
            assert!(
                wbx.contains(&format!("name=\"{name}\"")),
                "missing sheet {name}"
            );
        }
        // gpu_timeline: compute 50 ns = 5e-5 ms; idle = 150 - 50 - 20 (wait) - 50 (loop self) = 30.
        let tl = sheet_xml(&bytes, 1);
        assert!(
            tl.contains("<v>5E-5</v>") || tl.contains("<v>0.00005</v>"),
            "{tl}"
        );
        assert!(tl.contains("<v>20</v>"), "idle 30 ns is 20% of 150: {tl}");
        // regions: three span rows plus the header.
        assert_eq!(sheet_xml(&bytes, 2).matches("<row ").count(), 4);
        // Shares of the lane time, 150 + 150 = 300 ns. By name: self times 50 (loop), 50
        // (mma), 20 (wait), then 180 outside any region (lane 0: 100..150, lane 1: all but
        // 100..120): 16.67, 16.67, 6.67 and 60 %.
        let sum = sheet_xml(&bytes, 4);
        assert_eq!(sum.matches("<row ").count(), 5);
        let last = &sum[sum.rfind("<row ").unwrap()..];
        assert!(last.contains("<v>60</v>"), "outside 180 of 300 ns: {last}");
        assert!(
            last.contains("<v>100</v>"),
            "cumulative reaches 100: {last}"
        );
        assert!(
            sum.contains("<v>16.666666666666664</v>") || sum.contains("<v>16.666666666666668</v>"),
            "loop 50 of 300 ns: {sum}"
        );
        // Inclusive time beside self time: loop 100 ns = 1E-4 ms.
        assert!(
            sum.contains("<v>1E-4</v>") || sum.contains("<v>0.0001</v>"),
            "{sum}"
        );
        // By category: compute (mma), other (loop), wait, then outside: 5 rows with the header.
        let cat = sheet_xml(&bytes, 3);
        assert_eq!(cat.matches("<row ").count(), 5);
        assert!(
            cat[cat.rfind("<row ").unwrap()..].contains("<v>60</v>"),
            "{cat}"
        );
    }
}
