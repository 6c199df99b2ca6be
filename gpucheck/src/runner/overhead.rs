//! The overhead bench (`benches/gpu_overhead.rs`, bundled as `bin/gpu_overhead`): run with
//! `--bench`, `IKP_OVERHEAD_JSON` set and its criterion phase left out
//! (`IKP_OVERHEAD_CRITERION=0`: the paired repetitions are the figures), its JSON becomes a
//! check per kernel and one for all kernels pooled. The bench rewrites the JSON after each
//! kernel, so a bench that fails or is stopped later still gives the kernels it finished,
//! beside the check that says how it ended.
//!
//! Judged, per kernel: every build computed the baseline's output (the bench fails
//! otherwise); the compiled-out build is equivalent to the baseline: the 95 % confidence
//! interval of its mean paired slowdown lies within ±[`COMPILED_OUT_MAX_PCT`] (an
//! interval, not a bare mean or median, so that noise alone neither passes a real cost nor
//! fails an exact build: 30 repetitions of an H100 launch give intervals about ±0.1 %
//! wide); and ikp's targets against the peers' record sequence (the `tvm style` build), on
//! median slowdowns ([`targets`]): unfenced zones at most half the TVM-style slowdown
//! where that is at least [`SMALL_PCT`] (at most [`SMALL_PCT`] elsewhere), fenced zones at
//! most the TVM-style slowdown, counters only at most [`COUNTERS_MAX_PCT`], the null-Arg
//! build (the runtime off switch) at most [`NULL_ARG_MAX_PCT`]. A missed target fails the
//! kernel's check and names the target and both figures. Everything else is a figure:
//! slowdowns (mean / std / median / interval of 30 paired repetitions), registers, blocks
//! per SM, the ratio of ikp's overhead to the peers', and the clock builds beside the
//! globaltimer ones (the SM clock becomes the default only on a run where it costs less on
//! every kernel and the timing checks pass: `clock_vs_globaltimer`), and the two designs of
//! the off switch side by side (`off_branch_vs_predicated`): the default build, whose warps
//! without a writing leader branch around each record (a longer record on the leader's
//! warp), against `IKP_OFF_BRANCH=0`, every record predicated on every warp (the `unfenced
//! zones predicated` and `null arg predicated` builds); the targets stay judged on the
//! default build. An instrumented build
//! with fewer resident blocks per SM than the baseline is named an occupancy cliff: its
//! slowdown is the cliff's, not the records'.

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
/// Slowdown, %, below which a TVM-style cost counts as small: there unfenced zones must stay
/// at or below this bound instead of at half the TVM-style slowdown.
pub const SMALL_PCT: f64 = 1.0;
/// Bound, %, on the median slowdown of the counters-only build.
pub const COUNTERS_MAX_PCT: f64 = 0.5;
/// Bound, %, on the median slowdown of the null-Arg build (the runtime off switch).
pub const NULL_ARG_MAX_PCT: f64 = 1.0;
/// The builds of the other design of the off switch (`IKP_OFF_BRANCH=0`: every record
/// predicated on every warp, no branch on the warp vote), each beside the default build it
/// is compared with: (default, predicated).
pub const PREDICATED: [(&str, &str); 2] = [
    ("unfenced zones", "unfenced zones predicated"),
    ("null arg", "null arg predicated"),
];
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

/// One of ikp's targets on one kernel: its text and whether it held (None: a build it
/// needs is missing from the bench's output, which fails as a miss does).
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// The target with the figures it was judged on.
    pub what: String,
    /// Whether it held; None where a build it needs has no median.
    pub held: Option<bool>,
}

/// The targets of one kernel's builds, from their median slowdowns.
pub fn targets(k: &Value) -> Vec<Target> {
    let median = |name: &str| build(k, name).and_then(|b| slowdown(b, "median"));
    let tvm = median(PEER_BUILD);
    let mut t = Vec::new();
    let mut bound = |name: &str, limit: Option<f64>, rule: String| {
        let got = median(name);
        let held = got.zip(limit).map(|(g, l)| g <= l);
        let what = match (got, limit) {
            (Some(g), Some(l)) => format!("{name} {g:+.2} % <= {l:+.2} % ({rule})"),
            _ => format!("{name}: no median slowdown ({rule})"),
        };
        t.push(Target { what, held });
    };
    let (unfenced_limit, rule) = match tvm {
        Some(p) if p >= SMALL_PCT => (Some(p / 2.0), "half the tvm style slowdown".to_string()),
        Some(_) => (Some(SMALL_PCT), format!("tvm style below {SMALL_PCT} %")),
        None => (None, "needs tvm style".to_string()),
    };
    bound("unfenced zones", unfenced_limit, rule);
    bound("fenced zones", tvm, "the tvm style slowdown".into());
    bound(
        "counters only",
        Some(COUNTERS_MAX_PCT),
        "counters only".into(),
    );
    bound(
        "null arg",
        Some(NULL_ARG_MAX_PCT),
        "the runtime off switch".into(),
    );
    t
}

/// Each default build beside its predicated twin ([`PREDICATED`]), median slowdowns:
/// `{"unfenced zones": {"branch_median_pct", "predicated_median_pct", "predicated_cheaper"},
/// "null arg": {...}}` (null where a build has no median). The figure that chooses the
/// default design: the branch stays where it is cheaper with the leader's warp recording
/// (unfenced zones) and with every warp off (null arg).
pub fn off_branch_vs_predicated(k: &Value) -> Value {
    let m = |n: &str| build(k, n).and_then(|b| slowdown(b, "median"));
    let pairs = PREDICATED.iter().map(|&(branch, predicated)| {
        let figure = m(branch).zip(m(predicated)).map(|(b, p)| {
            json!({"branch_median_pct": b, "predicated_median_pct": p, "predicated_cheaper": p < b})
        });
        (branch.to_string(), json!(figure))
    });
    Value::Object(pairs.collect())
}

/// Checks from the bench's JSON (format `ikp-gpu-overhead`, see the bench's docs).
pub fn judge(json: &Value) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut ratios = Vec::new();
    let mut summary = Table::new(&[
        "kernel",
        "tvm style %",
        "unfenced zones %",
        "fenced zones %",
        "counters only %",
        "null arg %",
        "compiled out %",
        "unfenced zones clock %",
        "fenced zones clock %",
        "unfenced zones predicated %",
        "null arg predicated %",
        "targets",
    ]);
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
        let targets = targets(k);
        let missed: Vec<&str> = targets
            .iter()
            .filter(|t| t.held != Some(true))
            .map(|t| t.what.as_str())
            .collect();
        let status = Status::of(holds && missed.is_empty());
        let median = |n: &str| json!(build(k, n).and_then(|b| slowdown(b, "median")));
        summary.row(vec![
            json!(kernel),
            median(PEER_BUILD),
            median("unfenced zones"),
            median("fenced zones"),
            median("counters only"),
            median("null arg"),
            median("compiled out"),
            median("unfenced zones clock"),
            median("fenced zones clock"),
            median(PREDICATED[0].1),
            median(PREDICATED[1].1),
            json!(if missed.is_empty() && holds {
                "all held".to_string()
            } else {
                format!("{} missed", missed.len() + usize::from(!holds))
            }),
        ]);
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
        if missed.is_empty() {
            detail.push_str("; every target held");
        } else {
            detail.push_str(&format!("; MISSED: {}", missed.join("; ")));
        }
        if !cliffs.is_empty() {
            detail.push_str(&format!("; occupancy cliff: {}", cliffs.join(", ")));
        }
        let clock = |timer_build: &str, global_build: &str| {
            let m = |n: &str| build(k, n).and_then(|b| slowdown(b, "median"));
            m(timer_build).zip(m(global_build)).map(|(c, g)| json!({"clock_median_pct": c, "globaltimer_median_pct": g, "clock_cheaper": c < g}))
        };
        checks.push(
            Check::new(format!("overhead/{kernel}"), status, true, detail)
                .figure(
                    "baseline_median_ms",
                    build(k, "baseline").map_or(Value::Null, |b| b["median_ms"].clone()),
                )
                .figure("ikp_vs_tvm_style", ratio)
                .figure(
                    "targets",
                    json!(targets
                        .iter()
                        .map(|t| json!({"target": t.what, "held": t.held}))
                        .collect::<Vec<_>>()),
                )
                .figure(
                    "clock_vs_globaltimer",
                    json!({
                        "fenced": clock("fenced zones clock", "fenced zones"),
                        "unfenced": clock("unfenced zones clock", "unfenced zones"),
                    }),
                )
                .figure("off_branch_vs_predicated", off_branch_vs_predicated(k))
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
        Check::new(
            "overhead/targets",
            Status::of(checks.iter().all(|c| c.status == Status::Pass)),
            true,
            "median slowdowns per kernel against ikp's targets (each kernel's check names \
             what it missed)",
        )
        .table(summary),
    );
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

    fn s(m: f64) -> Value {
        json!({"mean": m, "std": 0.2, "median": m, "n": 30, "ci95": [m - 0.1, m + 0.1]})
    }

    /// A bench output whose builds have these median slowdowns (every target holds with
    /// the defaults of [`bench`]).
    fn bench_with(compiled_out: f64, fenced_blocks: u64, medians: &[(&str, f64)]) -> Value {
        let mut builds = vec![
            json!({"build": "baseline", "regs": 20, "blocks_per_sm": 8, "median_ms": 1.0, "slowdown": null}),
            json!({"build": "compiled out", "regs": 20, "blocks_per_sm": 8, "median_ms": 1.0, "slowdown": s(compiled_out)}),
        ];
        for &(name, m) in medians {
            let blocks = if name == "fenced zones" {
                fenced_blocks
            } else {
                8
            };
            builds.push(json!({"build": name, "regs": 24, "blocks_per_sm": blocks, "median_ms": 1.0 + m / 100.0, "slowdown": s(m)}));
        }
        json!({
            "format": "ikp-gpu-overhead", "version": 1, "gpu": "test", "reps": 30,
            "launches_per_timing": 5,
            "kernels": [{"kernel": "k", "builds": builds}],
            "pooled": [{"build": "fenced zones", "slowdown": s(2.0)}, {"build": "tvm style", "slowdown": s(4.0)},
                       {"build": "unfenced zones", "slowdown": s(1.0)}],
        })
    }

    const HELD: [(&str, f64); 9] = [
        ("fenced zones", 2.0),
        ("unfenced zones", 1.5),
        ("counters only", 0.3),
        ("null arg", 0.2),
        ("tvm style", 4.0),
        ("fenced zones clock", 1.0),
        ("unfenced zones clock", 0.8),
        ("unfenced zones predicated", 1.2),
        ("null arg predicated", 0.9),
    ];

    fn bench(compiled_out: f64, fenced_blocks: u64) -> Value {
        bench_with(compiled_out, fenced_blocks, &HELD)
    }

    #[test]
    fn compiled_out_must_match_the_baseline_and_cliffs_are_named() {
        let c = judge(&bench(0.3, 8));
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].name, "overhead/k");
        assert_eq!(c[0].status, Status::Pass, "{}", c[0].detail);
        assert_eq!(c[0].figures["ikp_vs_tvm_style"], 0.5);
        assert!(!c[0].detail.contains("cliff"));
        assert_eq!(c[1].name, "overhead/targets");
        assert_eq!(c[1].status, Status::Pass);
        assert!(
            c[2].detail.contains("fenced zones +2.00 %"),
            "{}",
            c[2].detail
        );
        let c = judge(&bench(1.8, 6));
        assert_eq!(c[0].status, Status::Fail);
        assert_eq!(c[1].status, Status::Fail);
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

    fn with(name: &str, m: f64) -> Vec<(&str, f64)> {
        HELD.iter()
            .map(|&(n, v)| (n, if n == name { m } else { v }))
            .collect()
    }

    #[test]
    fn every_missed_target_fails_the_kernel_and_is_named() {
        for (name, m, why) in [
            ("unfenced zones", 2.01, "half the tvm style slowdown"),
            ("fenced zones", 4.2, "the tvm style slowdown"),
            ("counters only", 0.6, "counters only"),
            ("null arg", 1.3, "the runtime off switch"),
        ] {
            let c = judge(&bench_with(0.0, 8, &with(name, m)));
            assert_eq!(c[0].status, Status::Fail, "{name}: {}", c[0].detail);
            assert!(
                c[0].detail.contains("MISSED") && c[0].detail.contains(why),
                "{name}: {}",
                c[0].detail
            );
            assert_eq!(c[1].status, Status::Fail);
        }
        // Where the peers' records cost under 1 %, unfenced zones get 1 %, not half.
        let mut small = with("tvm style", 0.8);
        small.retain(|(n, _)| *n != "fenced zones");
        small.push(("fenced zones", 0.7));
        let unfenced = |m: f64| {
            let mut v = small.clone();
            v.retain(|(n, _)| *n != "unfenced zones");
            v.push(("unfenced zones", m));
            judge(&bench_with(0.0, 8, &v))[0].status
        };
        assert_eq!(unfenced(0.9), Status::Pass);
        assert_eq!(unfenced(1.1), Status::Fail);
        // A missing build is a miss, not a pass.
        let mut missing = HELD.to_vec();
        missing.retain(|(n, _)| *n != "null arg");
        let c = judge(&bench_with(0.0, 8, &missing));
        assert_eq!(c[0].status, Status::Fail, "{}", c[0].detail);
        assert!(
            c[0].detail.contains("null arg: no median"),
            "{}",
            c[0].detail
        );
    }

    #[test]
    fn clock_builds_are_compared_with_the_globaltimer_ones() {
        let c = judge(&bench(0.0, 8));
        let f = &c[0].figures["clock_vs_globaltimer"];
        assert_eq!(f["fenced"]["clock_cheaper"], true, "{f}");
        assert_eq!(f["unfenced"]["globaltimer_median_pct"], 1.5, "{f}");
    }

    #[test]
    fn the_predicated_builds_are_set_beside_the_default_ones_and_judge_nothing() {
        let c = judge(&bench(0.0, 8));
        let f = &c[0].figures["off_branch_vs_predicated"];
        assert_eq!(f["unfenced zones"]["predicated_cheaper"], true, "{f}");
        assert_eq!(f["unfenced zones"]["branch_median_pct"], 1.5, "{f}");
        assert_eq!(f["null arg"]["predicated_cheaper"], false, "{f}");
        assert_eq!(f["null arg"]["predicated_median_pct"], 0.9, "{f}");
        // In the summary table, beside the default builds.
        let table = c[1].figures["table"].to_string();
        assert!(
            table.contains("null arg predicated %") && table.contains("0.9"),
            "{table}"
        );
        // The targets are the default build's: a predicated build past a bound misses none.
        let c = judge(&bench_with(0.0, 8, &with("null arg predicated", 5.0)));
        assert_eq!(c[0].status, Status::Pass, "{}", c[0].detail);
        // A build missing from the bench's output is a null figure, not a pass.
        let mut missing = HELD.to_vec();
        missing.retain(|(n, _)| *n != "unfenced zones predicated");
        let c = judge(&bench_with(0.0, 8, &missing));
        assert!(c[0].figures["off_branch_vs_predicated"]["unfenced zones"].is_null());
    }
}
