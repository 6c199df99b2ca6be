//! The SASS cost of each kind of ikp site, per architecture, and the report `ikp cost`
//! prints.
//!
//! Every figure is a difference of instruction counts between two compilations that
//! differ in one thing, so the constant parts of a kernel (parameter loads, init, exit)
//! cancel out:
//!
//! - **record** (by fence and timer mode): kernel `records` with 1, 1 + [`K`] and 1 + 2[`K`]
//!   `begin` calls (payload from a kernel parameter, so the tag is computed at run time),
//!   difference / [`K`]. The first step also holds a change in `finalize` (its record count
//!   is a constant that passes 1), the second is the steady state.
//! - **record in a runtime loop**: growth of the loop body of `loop_records` when each
//!   iteration records one instant (nothing folds into an immediate offset there).
//! - **wait-loop tick**: growth of a spin loop's body when it is counted with `IKP_WAIT`.
//! - **compiled out**: four example kernels compiled with `-DIKP_ENABLED=0` against the
//!   same kernels written without markers; the difference should be nothing at all.
//! - **TVM-style reference**: the record sequence of TVM's CudaProfiler (a fenced start
//!   with a leader branch, rewritten from its documentation) measured like `record`.

use super::{kernels, SassCompiler, SassError};
use crate::arch::Arch;
use std::fmt::Write as _;

/// Records added per step when measuring a marginal cost.
pub const K: u32 = 8;

/// The fence mode of a lane (`ikp::Fence`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fence {
    /// `Fence::None`: a record is a timer read and a predicated store.
    None,
    /// `Fence::Block`: every thread fences around each record.
    Block,
}

/// The timer of a lane (`ikp::Timer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// `Timer::Global`: `%globaltimer_lo`.
    Global,
    /// `Timer::Clock`: `%clock`.
    Clock,
}

impl Fence {
    /// The enumerator's name in `ikp.cuh`.
    pub fn cuda_name(self) -> &'static str {
        match self {
            Fence::None => "None",
            Fence::Block => "Block",
        }
    }
}

impl Timer {
    /// The enumerator's name in `ikp.cuh`.
    pub fn cuda_name(self) -> &'static str {
        match self {
            Timer::Global => "Global",
            Timer::Clock => "Clock",
        }
    }
}

/// A lane's recording mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mode {
    /// Fence mode.
    pub fence: Fence,
    /// Timer.
    pub timer: Timer,
}

/// Every mode, in report order.
pub const MODES: [Mode; 4] = [
    Mode {
        fence: Fence::None,
        timer: Timer::Global,
    },
    Mode {
        fence: Fence::None,
        timer: Timer::Clock,
    },
    Mode {
        fence: Fence::Block,
        timer: Timer::Global,
    },
    Mode {
        fence: Fence::Block,
        timer: Timer::Clock,
    },
];

impl Mode {
    /// `Fence::None, Timer::Global`, as the report labels rows.
    pub fn label(self) -> String {
        format!(
            "Fence::{}, Timer::{}",
            self.fence.cuda_name(),
            self.timer.cuda_name()
        )
    }

    fn kernel(self, kind: &str, extra: u32) -> String {
        format!(
            "{kind}_{}_{}_{extra}",
            self.fence.cuda_name(),
            self.timer.cuda_name()
        )
    }
}

/// Marginal instructions per straight-line record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecordCost {
    /// The mode measured.
    pub mode: Mode,
    /// From 1 to 1 + K records, per record.
    pub first: f64,
    /// From 1 + K to 1 + 2K records, per record (steady state).
    pub steady: f64,
}

/// Growth of a runtime loop's body when each iteration records once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopCost {
    /// The mode measured.
    pub mode: Mode,
    /// Instructions added to the loop body.
    pub growth: i64,
}

/// One example kernel in its three builds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExampleSass {
    /// Kernel name.
    pub name: String,
    /// Instrumented source compiled with `IKP_ENABLED=0`.
    pub compiled_out: Vec<String>,
    /// The same kernel written without markers.
    pub baseline: Vec<String>,
    /// Instrumented, profiling on.
    pub instrumented: Vec<String>,
}

/// Every measurement for one architecture.
#[derive(Clone, Debug, PartialEq)]
pub struct ArchCost {
    /// The architecture compiled for.
    pub arch: Arch,
    /// Straight-line records, one entry per mode of [`MODES`].
    pub records: Vec<RecordCost>,
    /// Records in a runtime loop, one entry per mode of [`MODES`].
    pub loop_records: Vec<LoopCost>,
    /// The spin loop's body without the counter.
    pub spin_plain: Vec<String>,
    /// The spin loop's body counted with `IKP_WAIT`.
    pub spin_counted: Vec<String>,
    /// The TVM-style record, (first, steady) as for [`RecordCost`].
    pub tvm: (f64, f64),
    /// The example kernels, by name.
    pub examples: Vec<ExampleSass>,
}

impl ArchCost {
    /// Instructions one spin of a counted wait adds.
    pub fn tick(&self) -> i64 {
        self.spin_counted.len() as i64 - self.spin_plain.len() as i64
    }

    /// Compiled out against uninstrumented: (kernels whose SASS differs, total instruction
    /// difference). (0, 0) means every kernel is identical.
    pub fn compiled_out_difference(&self) -> (usize, i64) {
        let differing = self
            .examples
            .iter()
            .filter(|e| e.compiled_out != e.baseline)
            .count();
        let extra = self
            .examples
            .iter()
            .map(|e| e.compiled_out.len() as i64 - e.baseline.len() as i64)
            .sum();
        (differing, extra)
    }
}

/// Source of the cost kernels with every variant [`measure`] needs.
fn cost_source() -> String {
    let mut s = String::from(kernels::COST);
    for m in MODES {
        for extra in [0, K, 2 * K] {
            let _ = writeln!(
                s,
                "IKP_COST_KERNELS({}, {}, {extra})",
                m.fence.cuda_name(),
                m.timer.cuda_name()
            );
        }
    }
    s
}

fn tvm_source() -> String {
    let mut s = String::from(kernels::TVM_STYLE);
    for extra in [0, K, 2 * K] {
        let _ = writeln!(s, "IKP_TVM_RECORDS({extra})");
    }
    s
}

/// Takes every measurement for `arch` (five nvcc compilations).
pub fn measure(c: &SassCompiler, arch: Arch) -> Result<ArchCost, SassError> {
    let cost = c.sass("cost", &cost_source(), arch, &[])?;
    let per_record = |a: usize, b: usize| (b as f64 - a as f64) / K as f64;
    let mut records = Vec::new();
    let mut loop_records = Vec::new();
    for m in MODES {
        let n = |extra| cost.kernel(&m.kernel("records", extra)).map(|k| k.len());
        let (one, many, more) = (n(0)?, n(K)?, n(2 * K)?);
        records.push(RecordCost {
            mode: m,
            first: per_record(one, many),
            steady: per_record(many, more),
        });
        let body = |extra| {
            cost.single_loop(&m.kernel("loop_records", extra))
                .map(|l| l.len() as i64)
        };
        loop_records.push(LoopCost {
            mode: m,
            growth: body(K)? - body(0)?,
        });
    }
    let spin_plain = cost.single_loop("spin_plain")?;
    let spin_counted = cost.single_loop("spin_counted")?;

    let tvm = c.sass("tvm_style", &tvm_source(), arch, &[])?;
    let t = |extra: u32| tvm.kernel(&format!("tvm_records_{extra}")).map(|k| k.len());
    let (t0, t1, t2) = (t(0)?, t(K)?, t(2 * K)?);

    let off = c.sass("examples", kernels::EXAMPLES, arch, &["IKP_ENABLED=0"])?;
    let base = c.sass("examples", kernels::EXAMPLES, arch, &["IKP_BASELINE"])?;
    let on = c.sass("examples", kernels::EXAMPLES, arch, &[])?;
    let examples = base
        .kernels
        .keys()
        .map(|k| {
            Ok(ExampleSass {
                name: k.clone(),
                compiled_out: off.kernel(k)?,
                baseline: base.kernel(k)?,
                instrumented: on.kernel(k)?,
            })
        })
        .collect::<Result<_, SassError>>()?;
    Ok(ArchCost {
        arch,
        records,
        loop_records,
        spin_plain,
        spin_counted,
        tvm: (per_record(t0, t1), per_record(t1, t2)),
        examples,
    })
}

/// The measurements of several architectures and the compiler that produced them.
#[derive(Clone, Debug, PartialEq)]
pub struct CostReport {
    /// nvcc's version line.
    pub nvcc: String,
    /// One entry per architecture, in the order asked for.
    pub archs: Vec<ArchCost>,
}

impl CostReport {
    /// Measures every architecture in `archs`, each on its own thread (nvcc is
    /// single-threaded, so this scales with cores).
    pub fn measure(c: &SassCompiler, archs: &[Arch]) -> Result<CostReport, SassError> {
        let nvcc = c.tools().nvcc_version()?;
        let archs = std::thread::scope(|s| {
            let handles: Vec<_> = archs
                .iter()
                .map(|&a| s.spawn(move || measure(c, a)))
                .collect();
            handles
                .into_iter()
                .map(|h| match h.join() {
                    Ok(r) => r,
                    Err(p) => std::panic::resume_unwind(p),
                })
                .collect::<Result<Vec<_>, _>>()
        })?;
        Ok(CostReport { nvcc, archs })
    }

    /// The table's rows: a label and one cell per architecture.
    pub fn rows(&self) -> Vec<(String, Vec<String>)> {
        let cells = |f: &dyn Fn(&ArchCost) -> String| self.archs.iter().map(f).collect();
        let steps = format!("first {K} added / next {K} added");
        let mut rows = Vec::new();
        for (i, m) in MODES.iter().enumerate() {
            rows.push((
                format!("record ({}), per record: {steps}", m.label()),
                cells(&|a| format!("{} / {}", a.records[i].first, a.records[i].steady)),
            ));
        }
        for (i, m) in MODES.iter().enumerate() {
            rows.push((
                format!("record in a runtime loop ({}), per iteration", m.label()),
                cells(&|a| a.loop_records[i].growth.to_string()),
            ));
        }
        rows.push((
            "wait-loop tick (IKP_WAIT)".into(),
            cells(&|a| a.tick().to_string()),
        ));
        let n_examples = self.archs.first().map_or(0, |a| a.examples.len());
        rows.push((
            format!("compiled out (IKP_ENABLED=0), {n_examples} example kernels"),
            cells(&|a| match a.compiled_out_difference() {
                (0, _) => "0 (identical SASS)".to_owned(),
                (differing, extra) => format!("{extra:+} ({differing} kernels differ)"),
            }),
        ));
        rows.push((
            format!("TVM-style record (fence, leader branch), per record: {steps}"),
            cells(&|a| format!("{} / {}", a.tvm.0, a.tvm.1)),
        ));
        rows
    }

    /// The report as a Markdown table (instructions per site), preceded by the nvcc line.
    pub fn markdown(&self) -> String {
        let mut s = format!("nvcc: {}\n", self.nvcc);
        let archs: Vec<String> = self.archs.iter().map(|a| a.arch.sm()).collect();
        let heads: Vec<String> = archs
            .iter()
            .map(|a| format!("{a} SASS instructions"))
            .collect();
        let _ = writeln!(s, "| site | {} |", heads.join(" | "));
        let _ = writeln!(s, "|---|{}", "---|".repeat(archs.len()));
        for (label, cells) in self.rows() {
            let _ = writeln!(s, "| {label} | {} |", cells.join(" | "));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(arch: Arch, scale: f64) -> ArchCost {
        let ins = |n: usize| (0..n).map(|i| format!("I{i}")).collect::<Vec<_>>();
        ArchCost {
            arch,
            records: MODES
                .iter()
                .map(|&mode| RecordCost {
                    mode,
                    first: 3.0 * scale,
                    steady: 4.0,
                })
                .collect(),
            loop_records: MODES
                .iter()
                .map(|&mode| LoopCost { mode, growth: 7 })
                .collect(),
            spin_plain: ins(3),
            spin_counted: ins(4),
            tvm: (6.5, 7.0),
            examples: vec![ExampleSass {
                name: "k".into(),
                compiled_out: ins(5),
                baseline: ins(5),
                instrumented: ins(9),
            }],
        }
    }

    #[test]
    fn variant_sources_instantiate_every_kernel_the_measurement_reads() {
        let s = cost_source();
        for m in MODES {
            for extra in [0, K, 2 * K] {
                let line = format!(
                    "IKP_COST_KERNELS({}, {}, {extra})",
                    m.fence.cuda_name(),
                    m.timer.cuda_name()
                );
                assert!(s.contains(&line), "{line}");
            }
        }
        assert!(tvm_source().ends_with(&format!("IKP_TVM_RECORDS({})\n", 2 * K)));
        assert_eq!(MODES[2].kernel("records", 8), "records_Block_Global_8");
    }

    #[test]
    fn table_has_a_column_per_arch_and_reports_differences() {
        let mut b = fake(Arch::new(9, 0), 1.5);
        b.examples[0].compiled_out.push("NOP".into());
        let r = CostReport {
            nvcc: "release 13.5".into(),
            archs: vec![fake(Arch::new(8, 0), 1.0), b],
        };
        let md = r.markdown();
        assert!(md.starts_with(
            "nvcc: release 13.5\n| site | sm_80 SASS instructions | sm_90 SASS instructions |\n|---|---|---|\n"
        ));
        assert!(
            md.contains(
                "| record (Fence::None, Timer::Global), per record: first 8 added / next 8 added | 3 / 4 | 4.5 / 4 |"
            ),
            "{md}"
        );
        assert!(md.contains("| wait-loop tick (IKP_WAIT) | 1 | 1 |"), "{md}");
        assert!(
            md.contains("| compiled out (IKP_ENABLED=0), 1 example kernels | 0 (identical SASS) | +1 (1 kernels differ) |"),
            "{md}"
        );
        assert_eq!(r.rows().len(), 2 * MODES.len() + 3);
    }
}
