//! The overhead bench (`benches/gpu_overhead.rs`, bundled as `bin/gpu_overhead`): run with
//! `--bench` (without it criterion runs one test iteration) and `IKP_OVERHEAD_JSON` set,
//! its JSON becomes a check per kernel and one for all kernels pooled.
//!
//! Judged: the bench ran and every build computed the baseline's output (it fails
//! otherwise), and the compiled-out build is indistinguishable from the baseline: its
//! median slowdown within [`COMPILED_OUT_MAX_PCT`]. Everything else is a figure: slowdowns
//! (mean / std / median of 30 paired repetitions), registers, blocks per SM, and the
//! ratio of ikp's overhead to the peers' record sequence (the `tvm style` build).
//! An instrumented build with fewer resident blocks per SM than the baseline is named an
//! occupancy cliff: its slowdown is the cliff's, not the records'.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use super::{Plan, OVERHEAD_LIMIT};
use crate::child;
use crate::results::{Check, Status, Table};

/// Largest |median slowdown| of the compiled-out build, %, that still counts as the
/// baseline's speed.
pub const COMPILED_OUT_MAX_PCT: f64 = 1.0;
/// The build whose overhead is compared with the peers'.
const IKP_BUILD: &str = "fenced zones";
/// The peers' record sequence.
const PEER_BUILD: &str = "tvm style";

/// Criterion's own statistics after the paired repetitions, kept short: the paired
/// repetitions are the figures.
const CRITERION_ARGS: [&str; 6] = [
    "--bench",
    "--noplot",
    "--warm-up-time",
    "0.5",
    "--measurement-time",
    "1",
];

/// Runs the bench and judges its output.
pub fn run(bundle: &Path, plan: &Plan) -> Vec<Check> {
    if let Some(why) = plan.skip_all() {
        return vec![Check::skip("overhead", why)];
    }
    let json_path = plan.results.join("overhead.json");
    let mut cmd = Command::new(bundle.join("bin").join("gpu_overhead"));
    cmd.args(CRITERION_ARGS)
        .env("IKP_OVERHEAD_JSON", &json_path);
    plan.gpu_env(&mut cmd);
    let fail = |d: String| vec![Check::new("overhead", Status::Fail, true, d)];
    let f = match child::run(cmd, "gpu_overhead", &plan.logs, plan.limit(OVERHEAD_LIMIT)) {
        Ok(f) => f,
        Err(e) => return fail(format!("could not start: {e}")),
    };
    if !f.ok() {
        return fail(format!("the bench {}", f.failure()));
    }
    let json: Value = match std::fs::read(&json_path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => return fail(format!("reading {}: {e}", json_path.display())),
    };
    judge(&json)
}

fn slowdown(b: &Value, what: &str) -> Option<f64> {
    b["slowdown"][what].as_f64()
}

fn build<'a>(k: &'a Value, name: &str) -> Option<&'a Value> {
    k["builds"].as_array()?.iter().find(|b| b["build"] == name)
}

/// Checks from the bench's JSON (format `ikp-gpu-overhead`, see the bench's docs).
pub fn judge(json: &Value) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut ratios = Vec::new();
    for k in json["kernels"].as_array().into_iter().flatten() {
        let kernel = k["kernel"].as_str().unwrap_or("?");
        let base_blocks = build(k, "baseline").and_then(|b| b["blocks_per_sm"].as_u64());
        let mut t = Table::new(&[
            "build",
            "regs",
            "blocks/SM",
            "median ms",
            "slowdown mean %",
            "std %",
            "median %",
            "note",
        ]);
        let mut cliffs = Vec::new();
        for b in k["builds"].as_array().into_iter().flatten() {
            let name = b["build"].as_str().unwrap_or("?");
            let blocks = b["blocks_per_sm"].as_u64();
            let cliff = matches!((blocks, base_blocks), (Some(x), Some(y)) if x < y);
            if cliff {
                cliffs.push(format!(
                    "{name} ({} -> {} blocks/SM)",
                    base_blocks.unwrap_or(0),
                    blocks.unwrap_or(0)
                ));
            }
            t.row(vec![
                json!(name),
                b["regs"].clone(),
                b["blocks_per_sm"].clone(),
                b["median_ms"].clone(),
                json!(slowdown(b, "mean")),
                json!(slowdown(b, "std")),
                json!(slowdown(b, "median")),
                json!(if cliff { "occupancy cliff" } else { "" }),
            ]);
        }
        let compiled_out = build(k, "compiled out").and_then(|b| slowdown(b, "median"));
        let ikp = build(k, IKP_BUILD).and_then(|b| slowdown(b, "median"));
        let peer = build(k, PEER_BUILD).and_then(|b| slowdown(b, "median"));
        let ratio = match (ikp, peer) {
            (Some(i), Some(p)) if p > 0.0 => Some((i / p * 100.0).round() / 100.0),
            _ => None,
        };
        ratios.push(json!({"kernel": kernel, "ikp_median_pct": ikp, "tvm_style_median_pct": peer, "ratio": ratio}));
        let (status, mut detail) = match compiled_out {
            Some(c) if c.abs() <= COMPILED_OUT_MAX_PCT => (
                Status::Pass,
                format!("compiled out {c:+.2} % (within ±{COMPILED_OUT_MAX_PCT} %)"),
            ),
            Some(c) => (
                Status::Fail,
                format!(
                    "compiled out is {c:+.2} % from the baseline, beyond ±{COMPILED_OUT_MAX_PCT} %"
                ),
            ),
            None => (
                Status::Fail,
                "no compiled-out build in the bench output".into(),
            ),
        };
        if let (Some(i), Some(p)) = (ikp, peer) {
            detail.push_str(&format!(
                "; {IKP_BUILD} {i:+.2} %, {PEER_BUILD} {p:+.2} % (median)"
            ));
        }
        if !cliffs.is_empty() {
            detail.push_str(&format!("; occupancy cliff: {}", cliffs.join(", ")));
        }
        checks.push(
            Check::new(format!("overhead/{kernel}"), status, true, detail)
                .figure(
                    "baseline_median_ms",
                    build(k, "baseline").map_or(Value::Null, |b| b["median_ms"].clone()),
                )
                .figure("ikp_vs_tvm_style", ratio)
                .table(t),
        );
    }
    if checks.is_empty() {
        return vec![Check::new(
            "overhead",
            Status::Fail,
            true,
            "the bench output lists no kernel",
        )];
    }
    let mut t = Table::new(&[
        "build",
        "slowdown mean %",
        "std %",
        "median %",
        "repetitions",
    ]);
    for p in json["pooled"].as_array().into_iter().flatten() {
        t.row(vec![
            p["build"].clone(),
            json!(slowdown(p, "mean")),
            json!(slowdown(p, "std")),
            json!(slowdown(p, "median")),
            p["slowdown"]["n"].clone(),
        ]);
    }
    let pooled = |b: &str| {
        json["pooled"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["build"] == b)
            .and_then(|p| slowdown(p, "median"))
    };
    let detail = match (pooled(IKP_BUILD), pooled(PEER_BUILD), pooled("unfenced zones")) {
        (Some(f), Some(p), Some(u)) => format!(
            "all kernels pooled: fenced zones {f:+.2} %, unfenced {u:+.2} %, tvm style {p:+.2} % (median slowdowns)"
        ),
        _ => "all kernels pooled".into(),
    };
    checks.push(
        Check::new("overhead/pooled", Status::Pass, true, detail)
            .figure("gpu", json["gpu"].clone())
            .figure("repetitions", json["reps"].clone())
            .figure("launches_per_timing", json["launches_per_timing"].clone())
            .figure("ikp_vs_tvm_style", json!(ratios))
            .table(t),
    );
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(compiled_out: f64, fenced_blocks: u64) -> Value {
        let s = |m: f64| json!({"mean": m, "std": 0.2, "median": m, "n": 30});
        json!({
            "format": "ikp-gpu-overhead", "version": 1, "gpu": "test", "reps": 30,
            "launches_per_timing": 5,
            "kernels": [{"kernel": "k", "builds": [
                {"build": "baseline", "regs": 20, "blocks_per_sm": 8, "median_ms": 1.0, "slowdown": null},
                {"build": "fenced zones", "regs": 24, "blocks_per_sm": fenced_blocks, "median_ms": 1.02, "slowdown": s(2.0)},
                {"build": "compiled out", "regs": 20, "blocks_per_sm": 8, "median_ms": 1.0, "slowdown": s(compiled_out)},
                {"build": "tvm style", "regs": 26, "blocks_per_sm": 8, "median_ms": 1.04, "slowdown": s(4.0)},
            ]}],
            "pooled": [{"build": "fenced zones", "slowdown": s(2.0)}, {"build": "tvm style", "slowdown": s(4.0)},
                       {"build": "unfenced zones", "slowdown": s(1.0)}],
        })
    }

    #[test]
    fn compiled_out_must_match_the_baseline_and_cliffs_are_named() {
        let c = judge(&bench(0.3, 8));
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].name, "overhead/k");
        assert_eq!(c[0].status, Status::Pass, "{}", c[0].detail);
        assert_eq!(c[0].figures["ikp_vs_tvm_style"], 0.5);
        assert!(!c[0].detail.contains("cliff"));
        assert!(
            c[1].detail.contains("fenced zones +2.00 %"),
            "{}",
            c[1].detail
        );
        let c = judge(&bench(1.8, 6));
        assert_eq!(c[0].status, Status::Fail);
        assert!(c[0].detail.contains("+1.80 %"), "{}", c[0].detail);
        assert!(
            c[0].detail
                .contains("occupancy cliff: fenced zones (8 -> 6"),
            "{}",
            c[0].detail
        );
        assert_eq!(judge(&json!({"kernels": []}))[0].status, Status::Fail);
    }
}
