//! The bundled examples, end to end as a user runs them: the launcher writes its raw
//! buffer, Chrome trace and summary; the buffer must decode clean and ordered
//! ([`crate::verify`]); and the bundled `ikp` CLI must decode it to Perfetto and analyze it.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

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

/// The C++ launcher of `persistent_stream` (`ikp_host.hpp`'s `StreamDrain`), which the
/// runner compiles with the GPU machine's nvcc, as a C++ user does, then checks as the others.
pub const CPP_EXAMPLE: &str = "persistent_stream_cpp";
/// Its sources in the bundle: the launcher, and the kernel it includes.
pub const CPP_SOURCES: [&str; 2] = [
    "cpp/persistent_stream/launcher.cu",
    "cpp/persistent_stream/kernel.cu",
];
/// Time limit of its compilation.
const NVCC_LIMIT: Duration = Duration::from_secs(120);

/// Runs example `name` from the bundle and checks what it wrote.
pub fn run(bundle: &Path, name: &str, plan: &Plan) -> Check {
    if let Some(why) = plan.skip_all() {
        return Check::skip(format!("example/{name}"), why);
    }
    check_launcher(
        bundle,
        name,
        Command::new(bundle.join("examples").join(name)),
        plan,
    )
}

/// Compiles the C++ launcher ([`CPP_EXAMPLE`]) with this machine's nvcc (`IKP_NVCC`, `PATH`,
/// `/usr/local/cuda/bin`) for its GPU, against the bundle's headers, and checks it as the
/// other examples.
pub fn run_cpp(bundle: &Path, plan: &Plan) -> Check {
    let check = format!("example/{CPP_EXAMPLE}");
    if let Some(why) = plan.skip_all() {
        return Check::skip(check, why);
    }
    let Some(nvcc) = super::find_cuda_tool("IKP_NVCC", "nvcc") else {
        return Check::skip(
            check,
            "no nvcc on this machine (IKP_NVCC, PATH, /usr/local/cuda/bin): the C++ launcher is \
             compiled where it runs",
        );
    };
    let build = plan.files.join("build");
    if let Err(e) = std::fs::create_dir_all(&build) {
        return Check::fail(check, format!("creating {}: {e}", build.display()));
    }
    let exe = build.join(CPP_EXAMPLE);
    let mut cc = Command::new(&nvcc);
    cc.args(["-std=c++17", "-O2", "-arch=native", "-I"])
        .arg(bundle.join("include"))
        .arg(bundle.join(CPP_SOURCES[0]))
        .arg("-o")
        .arg(&exe);
    let log = format!("nvcc-{CPP_EXAMPLE}");
    match child::run(cc, &log, &plan.logs, plan.limit(NVCC_LIMIT)) {
        Ok(f) if f.ok() => {}
        Ok(f) => return Check::fail(check, format!("{} {}", nvcc.display(), f.failure())),
        Err(e) => return Check::fail(check, format!("could not start {}: {e}", nvcc.display())),
    }
    let c = check_launcher(bundle, CPP_EXAMPLE, Command::new(&exe), plan);
    // The executable is not a result: keep it out of the archive.
    let _ = std::fs::remove_dir_all(&build);
    c
}

/// Runs the launcher `cmd` of example `name` (its output folder the one argument) and checks
/// what it wrote.
fn check_launcher(bundle: &Path, name: &str, mut cmd: Command, plan: &Plan) -> Check {
    let check = format!("example/{name}");
    let out = plan.files.join("examples");
    if let Err(e) = std::fs::create_dir_all(&out) {
        return Check::fail(check, format!("creating {}: {e}", out.display()));
    }
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
