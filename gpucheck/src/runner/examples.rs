//! The bundled examples, end to end as a user runs them: the launcher writes its raw
//! buffer, Chrome trace and summary; the buffer must decode clean and ordered
//! ([`crate::verify`]); and the bundled `ikp` CLI must decode it to Perfetto and analyze it.

use std::path::Path;
use std::process::Command;

use ikp_host::analysis::blocks::gpu_wall;
use ikp_host::decode::{load, DecodeOptions};
use ikp_host::Trace;
use serde_json::{json, Value};

use super::{Plan, EXAMPLE_LIMIT};
use crate::child;
use crate::results::{Check, Status};
use crate::verify::clean_and_ordered;

/// The example launchers the bundle carries.
pub const EXAMPLES: [&str; 4] = [
    "load_compute_store",
    "warp_specialized",
    "persistent",
    "persistent_stream",
];

/// Runs example `name` from the bundle and checks what it wrote.
pub fn run(bundle: &Path, name: &str, plan: &Plan) -> Check {
    let check = format!("example/{name}");
    if let Some(why) = plan.skip_all() {
        return Check::skip(check, why);
    }
    let out = plan.files.join("examples");
    let mut cmd = Command::new(bundle.join("examples").join(name));
    cmd.arg(&out);
    plan.gpu_env(&mut cmd);
    let fail = |detail: String| Check::fail(&check, detail);
    let run = |cmd, log: String| child::run(cmd, &log, &plan.logs, plan.limit(EXAMPLE_LIMIT));
    let f = match run(cmd, format!("example-{name}")) {
        Ok(f) => f,
        Err(e) => return fail(format!("could not start: {e}")),
    };
    if !f.ok() {
        return fail(format!("the launcher {}", f.failure()));
    }
    // A stream launch's launcher writes its stream file; the others their buffer.
    let raw = match out.join(format!("{name}.ikps")) {
        p if p.exists() => p,
        _ => out.join(format!("{name}.ikp")),
    };
    let trace = match load(&raw, &DecodeOptions::default()) {
        Ok(t) => t,
        Err(e) => return fail(format!("decoding its buffer: {e}")),
    };
    if let Err(e) = clean_and_ordered(&trace) {
        return fail(e);
    }
    // The CLI on the same buffer, as a user would.
    let cli = bundle.join("bin").join("ikp");
    let pftrace = out.join(format!("{name}.pftrace"));
    for (what, args) in [
        (
            "decode",
            vec![raw.as_os_str(), "--perfetto".as_ref(), pftrace.as_os_str()],
        ),
        ("analyze", vec![raw.as_os_str()]),
    ] {
        let mut c = Command::new(&cli);
        c.arg(what).args(args);
        match run(c, format!("ikp-{what}-{name}")) {
            Ok(f) if f.ok() => {}
            Ok(f) => return fail(format!("`ikp {what}` on its buffer {}", f.failure())),
            Err(e) => return fail(format!("could not start `ikp {what}`: {e}")),
        }
    }
    let trace_bytes = std::fs::metadata(&pftrace).map_or(0, |m| m.len());
    if trace_bytes == 0 {
        return fail("`ikp decode --perfetto` wrote no trace".into());
    }
    Check::new(
        check,
        Status::Pass,
        true,
        format!(
            "{} lanes, {} spans: all finalized, nothing dropped or unpaired, spans ordered; \
             the CLI decoded and analyzed it",
            trace.lanes.len(),
            trace.spans.len()
        ),
    )
    .figure("lanes", trace.lanes.len())
    .figure("spans", trace.spans.len())
    .figure("gpu_wall_us", gpu_wall(&trace) as f64 / 1e3)
    .figure("region_total_us", region_totals(&trace))
    .figure("perfetto_bytes", trace_bytes)
}

/// Summed span time per region, us.
fn region_totals(trace: &Trace) -> Value {
    let mut us = vec![0u64; trace.names.regions.len()];
    for i in 0..trace.spans.len() {
        if let Some(t) = us.get_mut(trace.spans.region[i] as usize) {
            *t += trace.spans.dur(i);
        }
    }
    let us = |id: usize| json!((us[id] as f64 / 1e3 * 10.0).round() / 10.0);
    let named = trace.names.regions.iter().enumerate();
    Value::Object(named.map(|(id, name)| (name.clone(), us(id))).collect())
}
