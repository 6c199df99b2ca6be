//! Proton's intra-kernel Chrome trace writer, re-implemented from triton
//! `third_party/proton/common/lib/TraceDataIO/TraceWriter.cpp`
//! (`StreamChromeTraceWriter::write` / `writeKernel` / `assignLineIds`) and the grouping
//! of `third_party/proton/csrc/lib/Data/TraceData.cpp` (`convertToTimelineTrace`: events
//! sorted by kernel, block, warp, start cycle).
use serde_json::{json, Map, Value};

/// One scope instance: `(scope name, start cycle, end cycle)`.
pub type Scope = (String, u64, u64);

#[derive(Clone, Debug)]
pub struct Warp {
    pub uid: u32,
    pub scopes: Vec<Scope>,
}

#[derive(Clone, Debug)]
pub struct Cta {
    pub block: u32,
    pub proc: u32,
    /// `%globaltimer` at init, and before / after the finalize.
    pub init: u64,
    pub pre_final: u64,
    pub post_final: u64,
    pub warps: Vec<Warp>,
}

#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    pub ctas: Vec<Cta>,
    pub call_stack: Vec<String>,
}

/// Which writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writer {
    /// With triton PR #8870: `double` times, `"Init Time (ns)"` in `args`.
    InitTimes,
    /// Upstream `085a8a5`: `float` times, no init time in `args`.
    Float,
}

/// `assignLineIds`: each scope (by start cycle) on the first row where it overlaps none.
pub fn line_ids(scopes: &[Scope]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scopes.len()).collect();
    order.sort_by_key(|&i| scopes[i].1);
    let mut lines: Vec<Vec<(u64, u64)>> = Vec::new();
    let mut out = vec![0; scopes.len()];
    for i in order {
        let (s, e) = (scopes[i].1, scopes[i].2);
        let k = (0..lines.len())
            .find(|&k| lines[k].iter().all(|&(a, b)| !(s < b && e > a)))
            .unwrap_or_else(|| {
                lines.push(Vec::new());
                lines.len() - 1
            });
        lines[k].push((s, e));
        out[i] = k;
    }
    out
}

/// The Chrome trace text of `kernels` (one stream), with an optional top-level
/// `baseTimeNanoseconds`.
pub fn write(kernels: &[Kernel], writer: Writer, base_time: Option<u64>) -> String {
    let colors = ["thread_state_running", "rail_response", "cq_build_passed"];
    let min_init = (kernels.iter())
        .flat_map(|k| k.ctas.iter().map(|c| c.init))
        .min()
        .unwrap();
    let mut events: Vec<Value> = Vec::new();
    for k in kernels {
        let mut by_proc: std::collections::BTreeMap<u32, Vec<&Cta>> = Default::default();
        let mut ctas: Vec<&Cta> = k.ctas.iter().collect();
        ctas.sort_by_key(|c| c.block);
        for c in ctas {
            by_proc.entry(c.proc).or_default().push(c);
        }
        let mut color: Vec<String> = Vec::new();
        for (proc, ctas) in by_proc {
            for c in ctas {
                let min_cycle = (c.warps.iter())
                    .flat_map(|w| w.scopes.iter().map(|s| s.1))
                    .min()
                    .unwrap_or(u64::MAX);
                let adjust = (c.init - min_init) as i64 - min_cycle as i64;
                let mut warps: Vec<&Warp> = c.warps.iter().collect();
                warps.sort_by_key(|w| w.uid);
                for w in warps {
                    let mut scopes = w.scopes.clone();
                    scopes.sort_by_key(|s| s.1);
                    let lines = line_ids(&scopes);
                    for (s, line) in scopes.iter().zip(lines) {
                        let ci = match color.iter().position(|n| *n == s.0) {
                            Some(i) => i,
                            None => {
                                color.push(s.0.clone());
                                color.len() - 1
                            }
                        } % colors.len();
                        let ts = s.1 as i64 + adjust;
                        let dur = s.2 as i64 - s.1 as i64;
                        let (ts, dur) = match writer {
                            Writer::InitTimes => (ts as f64 / 1000.0, dur as f64 / 1000.0),
                            Writer::Float => (
                                (ts as f32 / 1000.0f32) as f64,
                                (dur as f32 / 1000.0f32) as f64,
                            ),
                        };
                        let mut args = Map::new();
                        if writer == Writer::InitTimes {
                            args.insert("Init Time (ns)".into(), json!(c.init));
                            args.insert("Post Final Time (ns)".into(), json!(c.post_final));
                        }
                        args.insert(
                            "Finalization Time (ns)".into(),
                            json!(c.post_final - c.pre_final),
                        );
                        args.insert("Frequency (MHz)".into(), json!(1000.0));
                        args.insert("call_stack".into(), json!(k.call_stack));
                        events.push(json!({
                            "cname": colors[ci],
                            "name": s.0,
                            "cat": k.name,
                            "ph": "X",
                            "pid": format!("{} Core{} CTA{}", k.name, proc, c.block),
                            "tid": format!("warp {} (line {})", w.uid, line),
                            "ts": ts,
                            "dur": dur,
                            "args": args,
                        }));
                    }
                }
            }
        }
    }
    let mut top = Map::new();
    top.insert("displayTimeUnit".into(), json!("ns"));
    top.insert("traceEvents".into(), Value::Array(events));
    if let Some(b) = base_time {
        top.insert("baseTimeNanoseconds".into(), json!(b));
    }
    format!("{}\n", Value::Object(top))
}
