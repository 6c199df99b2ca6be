//! Roofline per region: achieved FLOP/s and bytes/s against a GPU's peaks.
//!
//! Work per occurrence comes from an annotation (`flops`, `bytes`, optionally scaled by the
//! payload, e.g. payload = number of k-tiles). A region runs on many SMs at once, so its
//! rate is measured in SM-time: on each SM the union of the region's intervals (lanes of one
//! SM running the region together count once), summed over SMs; the rate per SM is then
//! scaled by the preset's SM count into a whole-GPU equivalent comparable with datasheet
//! peaks. Without SM ids (TVM-format buffers) blocks stand in for SMs.
//!
//! # Format (annotation file, JSON)
//! ```json
//! { "mma": { "flops": 4194304, "bytes": 0, "dtype": "bf16" },
//!   "load.kv": { "bytes": 32768, "per_payload": true } }
//! ```
//! Keys are region names; `flops` and `bytes` default to 0, `dtype` to `bf16`,
//! `per_payload` (multiply by each occurrence's payload) to false.

use super::intervals::IntervalSet;
use crate::model::Trace;
use crate::time::{DurationNs, Timestamp};
use std::collections::{BTreeMap, HashMap};

/// Numeric type of a region's math, selecting the peak to compare with.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    /// FP64.
    Fp64,
    /// FP32 (non-tensor-core).
    Fp32,
    /// TF32 tensor cores.
    Tf32,
    /// FP16 tensor cores.
    Fp16,
    /// BF16 tensor cores.
    #[default]
    Bf16,
    /// FP8 tensor cores.
    Fp8,
}

/// Datasheet peaks of one GPU (dense, no sparsity).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GpuPreset {
    /// Short name (`h100`).
    pub name: &'static str,
    /// Number of SMs.
    pub sms: u32,
    /// Memory bandwidth, TB/s.
    pub tb_per_s: f64,
    /// Peak TFLOP/s per dtype: fp64, fp32, tf32, fp16, bf16, fp8 (0 = unsupported).
    pub tflops: [f64; 6],
}

impl GpuPreset {
    /// Peak TFLOP/s for `d`.
    pub fn peak(&self, d: Dtype) -> f64 {
        self.tflops[d as usize]
    }
}

const fn gpu(name: &'static str, sms: u32, tb_per_s: f64, tflops: [f64; 6]) -> GpuPreset {
    GpuPreset {
        name,
        sms,
        tb_per_s,
        tflops,
    }
}

/// Hopper's dense tensor-core peaks (the H100 and H200 share them).
const HOPPER_TFLOPS: [f64; 6] = [67.0, 67.0, 494.7, 989.4, 989.4, 1978.9];

/// Presets from vendor datasheets (SXM parts, dense tensor-core figures).
pub const PRESETS: &[GpuPreset] = &[
    gpu("a100", 108, 2.039, [19.5, 19.5, 156.0, 312.0, 312.0, 0.0]),
    gpu("h100", 132, 3.35, HOPPER_TFLOPS),
    gpu("h200", 132, 4.8, HOPPER_TFLOPS),
    gpu(
        "b200",
        148,
        8.0,
        [40.0, 80.0, 1100.0, 2250.0, 2250.0, 4500.0],
    ),
];

/// The preset called `name` (case-insensitive).
pub fn preset(name: &str) -> Option<&'static GpuPreset> {
    PRESETS.iter().find(|p| p.name.eq_ignore_ascii_case(name))
}

/// The preset the analyses and the report use unless told otherwise (`ikp --gpu`'s
/// default too).
pub const DEFAULT_GPU: &str = "h100";

/// The [`DEFAULT_GPU`] preset.
pub fn default_preset() -> &'static GpuPreset {
    preset(DEFAULT_GPU).expect("the default GPU is a preset")
}

/// Work of one occurrence of a region.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Work {
    /// Floating-point operations.
    #[serde(default)]
    pub flops: f64,
    /// Bytes moved to or from device memory.
    #[serde(default)]
    pub bytes: f64,
    /// Math type.
    #[serde(default)]
    pub dtype: Dtype,
    /// Multiply `flops` and `bytes` by the occurrence's payload.
    #[serde(default)]
    pub per_payload: bool,
}

/// Parses an annotation file's JSON (see the module's `# Format`).
pub fn parse_annotations(json: &str) -> Result<HashMap<String, Work>, serde_json::Error> {
    serde_json::from_str(json)
}

/// Roofline figures of one region.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RegionRoofline {
    /// Region id.
    pub region: u16,
    /// Region name.
    pub name: String,
    /// Occurrences.
    pub count: u64,
    /// Total FLOPs.
    pub flops: f64,
    /// Total bytes.
    pub bytes: f64,
    /// SM-time the region ran (ns summed over SMs).
    pub sm_time_ns: DurationNs,
    /// Achieved whole-GPU-equivalent TFLOP/s.
    pub tflops: f64,
    /// Achieved whole-GPU-equivalent TB/s.
    pub tb_per_s: f64,
    /// FLOPs per byte (infinite when no bytes).
    pub intensity: f64,
    /// Whether the region sits left of the ridge point.
    pub memory_bound: bool,
    /// Achieved over attainable (`min(peak, intensity x bandwidth)`), in percent.
    pub percent_of_roof: f64,
    /// Whether the achieved rate is above the roof (`percent_of_roof > 100`). No kernel
    /// beats its GPU's datasheet peak, so such a figure is not a finding but a sign that
    /// the annotation overstates the work or the GPU preset is the wrong one.
    pub impossible: bool,
}

/// Per region while accumulating: count, FLOPs, bytes, and its intervals per SM.
type Acc = (u64, f64, f64, BTreeMap<u32, Vec<(Timestamp, Timestamp)>>);

/// Roofline of every annotated region of `trace` on `gpu`, by region id.
pub fn roofline(
    trace: &Trace,
    work: &HashMap<String, Work>,
    gpu: &GpuPreset,
) -> Vec<RegionRoofline> {
    let s = &trace.spans;
    let mut acc: BTreeMap<u16, Acc> = BTreeMap::new();
    for lane in &trace.lanes {
        let unit = lane.sm.unwrap_or(lane.block);
        for i in lane.spans.clone() {
            let name = trace.names.region(s.region[i]);
            let Some(w) = work.get(name.as_ref()) else {
                continue;
            };
            let k = if w.per_payload {
                s.payload[i] as f64
            } else {
                1.0
            };
            let e = acc.entry(s.region[i]).or_default();
            e.0 += 1;
            e.1 += w.flops * k;
            e.2 += w.bytes * k;
            e.3.entry(unit).or_default().push((s.begin[i], s.end[i]));
        }
    }
    acc.into_iter()
        .map(|(region, (count, flops, bytes, per_unit))| {
            let name = trace.names.region(region).into_owned();
            let dtype = work.get(&name).map(|w| w.dtype).unwrap_or_default();
            let sm_time: DurationNs = per_unit
                .into_values()
                .map(|v| IntervalSet::from_unsorted(v).len())
                .sum();
            // FLOP per SM-ns x SMs = FLOP/ns of the whole GPU; 1 FLOP/ns = 1e-3 TFLOP/s.
            let per_ns = |x: f64| {
                if sm_time == 0 {
                    0.0
                } else {
                    x / sm_time as f64 * gpu.sms as f64
                }
            };
            let tflops = per_ns(flops) * 1e-3;
            let tb_per_s = per_ns(bytes) * 1e-3;
            let intensity = if bytes > 0.0 {
                flops / bytes
            } else {
                f64::INFINITY
            };
            let peak = gpu.peak(dtype);
            let ridge = peak / gpu.tb_per_s;
            let memory_bound = intensity < ridge;
            let attainable = if intensity.is_finite() {
                peak.min(intensity * gpu.tb_per_s)
            } else {
                peak
            };
            let percent_of_roof = if flops > 0.0 && attainable > 0.0 {
                100.0 * tflops / attainable
            } else if bytes > 0.0 {
                100.0 * tb_per_s / gpu.tb_per_s
            } else {
                0.0
            };
            RegionRoofline {
                region,
                name,
                count,
                flops,
                bytes,
                sm_time_ns: sm_time,
                tflops,
                tb_per_s,
                intensity,
                memory_bound,
                percent_of_roof,
                impossible: percent_of_roof > 100.0,
            }
        })
        .collect()
}
