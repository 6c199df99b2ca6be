//! CSV of spans, one row per paired region, for pandas / DuckDB / spreadsheets.
//!
//! # Format
//!
//! RFC 4180 CSV, `\n` line ends, a header row then one row per span (lanes ascending,
//! spans in begin order within a lane):
//! ```text
//! lane,block,group,warp,sm,region,name,begin_ns,end_ns,dur_ns,payload,depth
//! 4,1,1,5,17,2,mma,1250,2000,750,3,1
//! ```
//! - `begin_ns` / `end_ns`: integer ns relative to the trace's earliest stamp (the same
//!   origin as the Chrome trace); `dur_ns = end_ns - begin_ns`. Scale is not applied.
//! - `warp`, `sm`: empty where the format does not record them (no warp in the TVM
//!   family; no SM in the TVM and Mirage formats); `payload` is 0 in the TVM and FlashInfer
//!   formats, the event number in Mirage's.
//! - `depth`: nesting depth within the lane: 0 for a span begun with no region open, else
//!   one more than the innermost region open at its begin (regions may overlap: see
//!   [`crate::model`], `# Ordering invariants`).
//! - `name` is quoted (with doubled quotes) only if it contains a comma, quote or newline.
//!
//! Async ranges ([`Trace::async_ranges`]) are not in this table: they belong to no one
//! lane and have no depth, so rows of them would break the one-row-per-span meaning every
//! column has. The Chrome trace, the summary JSON and the Perfetto trace hold them.

use super::json::push_u64;
use super::WriteError;
use crate::model::Trace;
use std::io::Write;

/// The header row.
pub const HEADER: &str =
    "lane,block,group,warp,sm,region,name,begin_ns,end_ns,dur_ns,payload,depth\n";

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// Writes the span CSV of `trace` to `out`.
pub fn write_csv<W: Write>(mut out: W, trace: &Trace) -> Result<(), WriteError> {
    let w = &mut out;
    w.write_all(HEADER.as_bytes())?;
    let (names, _) = super::name_tables(trace, csv_field);
    let s = &trace.spans;
    let base = trace.source.time_base;
    let mut b = Vec::with_capacity(1 << 20);
    for l in &trace.lanes {
        let opt = |v: Option<u32>| v.map_or(String::new(), |v| v.to_string());
        let (warp, sm) = (opt(l.warp), opt(l.sm));
        let prefix = format!("{},{},{},{warp},{sm},", l.id, l.block, l.group).into_bytes();
        for i in l.spans.clone() {
            b.extend_from_slice(&prefix);
            push_u64(&mut b, s.region[i] as u64);
            b.push(b',');
            b.extend_from_slice(names[s.region[i] as usize].as_bytes());
            for v in [
                s.begin[i] - base,
                s.end[i] - base,
                s.end[i] - s.begin[i],
                s.payload[i] as u64,
                s.depth[i] as u64,
            ] {
                b.push(b',');
                push_u64(&mut b, v);
            }
            b.push(b'\n');
            if b.len() >= 1 << 20 {
                w.write_all(&b)?;
                b.clear();
            }
        }
    }
    w.write_all(&b)?;
    w.flush()?;
    Ok(())
}
