//! The overhead bench (`benches/gpu_overhead.rs`, bundled as `bin/gpu_overhead`): run with
//! `--bench`, `IKP_OVERHEAD_JSON` set and its criterion phase left out
//! (`IKP_OVERHEAD_CRITERION=0`: the paired repetitions are the figures), its JSON becomes a
//! check per kernel and one for all kernels pooled. The bench rewrites the JSON after each
//! kernel, so a bench that fails or is stopped later still gives the kernels it finished,
//! beside the check that says how it ended.
//!
//! Judged: every build computed the baseline's output (the bench fails otherwise), and the
//! compiled-out build is equivalent to the baseline: the 95 % confidence interval of its
//! mean paired slowdown lies within ±[`COMPILED_OUT_MAX_PCT`]. An interval, not a bare
//! mean or median, so that noise alone neither passes a real cost (a wide interval that
//! crosses the bound fails: measure again) nor fails an exact build (30 repetitions of an
//! H100 launch give intervals about ±0.1 % wide). Everything else is a figure: slowdowns
//! (mean / std / median / interval of 30 paired repetitions), registers, blocks per SM,
//! and the ratio of ikp's overhead to the peers' record sequence (the `tvm style` build).
//! An instrumented build with fewer resident blocks per SM than the baseline is named an
//! occupancy cliff: its slowdown is the cliff's, not the records'.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use super::{Plan, OVERHEAD_LIMIT};
use crate::child;
use crate::results::{Check, Status, Table};

/// Bound, %, that the 95 % confidence interval of the compiled-out build's mean slowdown
/// must lie within: a compiled-out build emits the baseline's instructions (SASS-identical,
/// tested without a GPU), so anything beyond is noise or a broken switch.
pub const COMPILED_OUT_MAX_PCT: f64 = 1.0;
/// The build whose overhead is compared with the peers'.
const IKP_BUILD: &str = "fenced zones";
/// The peers' record sequence.
const PEER_BUILD: &str = "tvm style";

/// Runs the bench and judges its output.
pub fn run(bundle: &Path, plan: &Plan) -> Vec<Check> {
    if let Some(why) = plan.skip_all() {
        return vec![Check::skip("overhead", why)];
    }
    let json_path = plan.results.join("overhead.json");
    let mut cmd = Command::new(bundle.join("bin").join("gpu_overhead"));
    cmd.arg("--bench")
        .env("IKP_OVERHEAD_JSON", &json_path)
        .env("IKP_OVERHEAD_CRITERION", "0");
    plan.gpu_env(&mut cmd);
    let fail = |d: String| Check::fail("overhead", d);
    let ended = match child::run(cmd, "gpu_overhead", &plan.logs, plan.limit(OVERHEAD_LIMIT)) {
        Ok(f) if f.ok() => None,
        Ok(f) => Some(fail(format!("the bench {}", f.failure()))),
        Err(e) => return vec![fail(format!("could not start: {e}"))],
    };
    // What the bench wrote is kept whatever its end.
    let json = std::fs::read(&json_path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()));
    let mut checks = match (&json, &ended) {
        (Ok(v), _) => judge(v),
        (Err(e), None) => vec![fail(format!("reading {}: {e}", json_path.display()))],
        (Err(_), Some(_)) => Vec::new(),
    };
    if let (Ok(v), None) = (&json, &ended) {
        if v["complete"] == false {
            checks.push(fail(
                "the bench exited 0 with its figures incomplete".into(),
            ));
        }
    }
    checks.extend(ended);
    checks
}

fn slowdown(b: &Value, what: &str) -> Option<f64> {
    b["slowdown"][what].as_f64()
}

/// `(low, high)` of a build's 95 % interval.
fn ci95(b: &Value) -> Option<(f64, f64)> {
    let ci = b["slowdown"]["ci95"].as_array()?;
    Some((ci.first()?.as_f64()?, ci.get(1)?.as_f64()?))
}

/// `low..high` of a build's 95 % interval, for tables.
fn interval(b: &Value) -> Option<String> {
    ci95(b).map(|(lo, hi)| format!("{lo:+.3}..{hi:+.3}"))
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
            "95 % interval of the mean %",
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
                json!(interval(b)),
                json!(if cliff { "occupancy cliff" } else { "" }),
            ]);
        }
        let compiled_out =
            build(k, "compiled out").and_then(|b| Some((slowdown(b, "mean")?, ci95(b)?)));
        let ikp = build(k, IKP_BUILD).and_then(|b| slowdown(b, "median"));
        let peer = build(k, PEER_BUILD).and_then(|b| slowdown(b, "median"));
        let ratio = match (ikp, peer) {
            (Some(i), Some(p)) if p > 0.0 => Some((i / p * 100.0).round() / 100.0),
            _ => None,
        };
        ratios.push(json!({"kernel": kernel, "ikp_median_pct": ikp, "tvm_style_median_pct": peer, "ratio": ratio}));
        let holds = compiled_out
            .is_some_and(|(_, (lo, hi))| -COMPILED_OUT_MAX_PCT <= lo && hi <= COMPILED_OUT_MAX_PCT);
        let status = Status::of(holds);
        let mut detail = match compiled_out {
            Some((m, (lo, hi))) if holds => format!(
                "compiled out {m:+.2} % (95 % interval {lo:+.2}..{hi:+.2} %, within \
                 ±{COMPILED_OUT_MAX_PCT} %)"
            ),
            Some((m, (lo, hi))) => format!(
                "compiled out {m:+.2} % from the baseline: its 95 % interval \
                 {lo:+.2}..{hi:+.2} % is not within ±{COMPILED_OUT_MAX_PCT} %"
            ),
            None => "no compiled-out build with a mean and interval in the bench output".into(),
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
        return vec![Check::fail("overhead", "the bench output lists no kernel")];
    }
    let mut t = Table::new(&[
        "build",
        "slowdown mean %",
        "std %",
        "median %",
        "95 % interval of the mean %",
        "repetitions",
    ]);
    for p in json["pooled"].as_array().into_iter().flatten() {
        t.row(vec![
            p["build"].clone(),
            json!(slowdown(p, "mean")),
            json!(slowdown(p, "std")),
            json!(slowdown(p, "median")),
            json!(interval(p)),
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
        let s = |m: f64| json!({"mean": m, "std": 0.2, "median": m, "n": 30, "ci95": [m - 0.1, m + 0.1]});
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
        assert!(
            c[0].detail.contains("+1.80 %") && c[0].detail.contains("+1.70..+1.90 %"),
            "{}",
            c[0].detail
        );
        assert!(
            c[0].detail
                .contains("occupancy cliff: fenced zones (8 -> 6"),
            "{}",
            c[0].detail
        );
        // A mean inside the bound whose interval crosses it is not shown to be equivalent.
        let c = judge(&bench(0.95, 8));
        assert_eq!(c[0].status, Status::Fail, "{}", c[0].detail);
        let c = judge(&bench(-0.85, 8));
        assert_eq!(c[0].status, Status::Pass, "{}", c[0].detail);
        assert_eq!(judge(&json!({"kernels": []}))[0].status, Status::Fail);
    }
}
