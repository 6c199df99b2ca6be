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
//! - **ring record** (by fence and timer mode): the same two measurements for a lane with
//!   `Overflow::Ring` (stores at `cursor & (capacity - 1)`, no capacity compare).
//! - **async-range record**: `range_begin` / `range_end` measured like `record`
//!   (`Fence::None, Timer::Global`).
//! - **lane setup**: kernel `lane_setup` (a lane's init and finalize, no record) against
//!   the same kernel compiled out; then the same kernel without the record-cost
//!   calibration (`-DIKP_CALIBRATE=0`) and without the epoch code (`-DIKP_EPOCHS=0`):
//!   the differences are the calibration's and the epoch code's share. These are static
//!   counts: the epoch code only runs when the buffer holds several epochs.
//! - **wait-loop tick**: growth of a spin loop's body when it is counted with `IKP_WAIT`.
//! - **counted wait**: what a wait whose first try passes adds to an iteration of a loop
//!   around it (`waits_counted` against `waits_plain`, one pass each, the spin loop left at
//!   its first test: [`super::Sass::first_passes`]); and what a wait that spun runs once
//!   besides its spins, the count's reset before the spin loop and its add after
//!   (`spin_counted`: [`super::Sass::loop_entry_exit`]).
//! - **dispatch**: a record loop through `Lane::dispatch`: the growth of each of its two
//!   copies (the writer's warp's, every other warp's) over the loop without a record.
//! - **compiled out**: four example kernels compiled with `-DIKP_ENABLED=0` against the
//!   same kernels written without markers; the difference should be nothing at all.
//! - **TVM-style reference**: the record sequence of TVM's CudaProfiler (a fenced start
//!   with a leader branch, rewritten from its documentation) measured like `record`.
//!
//! [`fixed_records`] measures the drop-newest and ring records alone in another build of the
//! header (`IKP_OFF_BRANCH=0`: the predicated record, the other design of the off switch).

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
pub const MODES: [Mode; 4] = {
    use {Fence::*, Timer::*};
    const fn m(fence: Fence, timer: Timer) -> Mode {
        Mode { fence, timer }
    }
    [
        m(None, Global),
        m(None, Clock),
        m(Block, Global),
        m(Block, Clock),
    ]
};

impl Mode {
    /// `Fence::None, Timer::Global`, as the report labels rows.
    pub fn label(self) -> String {
        let (f, t) = (self.fence.cuda_name(), self.timer.cuda_name());
        format!("Fence::{f}, Timer::{t}")
    }

    fn kernel(self, kind: &str, extra: u32) -> String {
        let (f, t) = (self.fence.cuda_name(), self.timer.cuda_name());
        format!("{kind}_{f}_{t}_{extra}")
    }
}

/// What a lane costs without recording anything: static instruction counts of the
/// `lane_setup` kernel against builds that leave a part out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneSetup {
    /// Init and finalize together (against `IKP_ENABLED=0`).
    pub total: i64,
    /// Of which the record-cost calibration (against `IKP_CALIBRATE=0`).
    pub calibration: i64,
    /// Of which the epoch code: the branch on `epochs > 1` and the launch-counter atomic
    /// (against `IKP_EPOCHS=0`, which keeps a compare of its own).
    pub epochs: i64,
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

/// Bodies of the one-record-per-iteration loop kernels (Fence::None, Timer::Global), so a
/// test can say which instructions a stream record's fast path adds beyond the fixed
/// buffer's record, and that none of them is a system-scope access or a call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopBodies {
    /// The loop without a record.
    pub bare: Vec<String>,
    /// With a fixed-buffer (drop-newest) record.
    pub fixed: Vec<String>,
    /// With a stream record, without the out-of-line slow path's call block: what an
    /// iteration runs while the ring has room.
    pub stream_fast: Vec<String>,
    /// The stream loop's whole kernel: its slow path's call and the callee included.
    pub stream_kernel: Vec<String>,
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

/// A wait per iteration of a runtime loop, counted (`IKP_WAIT`, a constant counter id) and
/// not: the cost kernels `waits_counted` and `waits_plain`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waits {
    /// Instructions a counted wait whose first try passes adds to an iteration of the loop
    /// around it (it has no tick then): counted first pass less plain first pass.
    pub added: i64,
    /// The counted kernel.
    pub counted: WaitKernel,
    /// The uncounted kernel.
    pub plain: WaitKernel,
}

/// One of the [`Waits`] kernels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitKernel {
    /// The whole kernel.
    pub whole: Vec<String>,
    /// One iteration of the loop around the wait when the wait passes at its first try
    /// ([`super::Sass::first_passes`]).
    pub first_pass: Vec<String>,
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
    /// The spin loop's body counted with `IKP_WAIT`, in the warp that holds the lane's
    /// leader (the kernel's longest loop).
    pub spin_counted: Vec<String>,
    /// The same wait's spin loop in any other warp (the kernel's shortest loop): what a
    /// warp whose count never reaches the buffer spins, a null `Arg`'s included.
    pub spin_uncounted: Vec<String>,
    /// What the counted wait runs once when it spun, besides its spins: the instructions
    /// before its spin loop (the count's reset) and after it up to the join (the count's
    /// add to the counter's total).
    pub spun_wait: (Vec<String>, Vec<String>),
    /// A wait per iteration of a runtime loop, counted and not: [`Waits`].
    pub waits: Waits,
    /// The TVM-style record, (first, steady) as for [`RecordCost`].
    pub tvm: (f64, f64),
    /// Straight-line records of ring lanes, one entry per mode of [`MODES`].
    pub ring_records: Vec<RecordCost>,
    /// Ring-lane records in a runtime loop, one entry per mode of [`MODES`].
    pub ring_loop_records: Vec<LoopCost>,
    /// Straight-line records of stream lanes (drop mode), one entry per mode of [`MODES`].
    pub stream_records: Vec<RecordCost>,
    /// Stream-lane records in a runtime loop, one entry per mode of [`MODES`].
    pub stream_loop_records: Vec<LoopCost>,
    /// The same without the out-of-line slow path's call block: what an iteration runs
    /// while the ring has room (the call runs once per publish interval).
    pub stream_loop_fast: Vec<LoopCost>,
    /// The loop bodies that compare a stream record's fast path with the fixed buffer's
    /// record (Fence::None, Timer::Global): [`LoopBodies`].
    pub loop_bodies: LoopBodies,
    /// The same record loop through `Lane::dispatch`, (the writer's warp's copy, every
    /// other warp's copy): each loop body's growth over the loop without a record.
    pub dispatched_loop: (i64, i64),
    /// Async-range records (`range_begin` / `range_end`), (first, steady) as for
    /// [`RecordCost`].
    pub ranges: (f64, f64),
    /// A lane's init and finalize, no record: [`LaneSetup`].
    pub setup: LaneSetup,
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
        let (f, t) = (m.fence.cuda_name(), m.timer.cuda_name());
        for extra in [0, K, 2 * K] {
            for macro_ in ["IKP_COST_KERNELS", "IKP_RING_KERNELS", "IKP_STREAM_KERNELS"] {
                let _ = writeln!(s, "{macro_}({f}, {t}, {extra})");
            }
        }
    }
    for extra in [0, K, 2 * K] {
        let _ = writeln!(s, "IKP_RANGE_KERNELS({extra})");
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

/// Marginal instructions per record, (first, steady), from the instruction counts `n`
/// gives with 0, [`K`] and 2[`K`] extra records.
fn per_record(n: impl Fn(u32) -> Result<usize, SassError>) -> Result<(f64, f64), SassError> {
    let (one, many, more) = (n(0)? as f64, n(K)? as f64, n(2 * K)? as f64);
    Ok(((many - one) / K as f64, (more - many) / K as f64))
}

type LoopBody = fn(&super::Sass, &str) -> Result<Vec<String>, SassError>;

/// Growth of the loop of kernel `kind` per mode, its body as `body` takes it.
fn loop_costs(cost: &super::Sass, kind: &str, body: LoopBody) -> Result<Vec<LoopCost>, SassError> {
    (MODES.iter())
        .map(|&m| {
            let len = |extra| body(cost, &m.kernel(kind, extra)).map(|l| l.len() as i64);
            Ok(LoopCost {
                mode: m,
                growth: len(K)? - len(0)?,
            })
        })
        .collect()
}

/// Records (straight-line and in a loop) of every mode, from the kernels named
/// `<prefix>records_...` and `<prefix>loop_records_...`.
fn mode_costs(
    cost: &super::Sass,
    prefix: &str,
) -> Result<(Vec<RecordCost>, Vec<LoopCost>), SassError> {
    let kind = format!("{prefix}records");
    let records = (MODES.iter())
        .map(|&m| {
            let (first, steady) =
                per_record(|extra| cost.kernel(&m.kernel(&kind, extra)).map(|k| k.len()))?;
            Ok(RecordCost {
                mode: m,
                first,
                steady,
            })
        })
        .collect::<Result<_, SassError>>()?;
    let kind = format!("{prefix}loop_records");
    Ok((records, loop_costs(cost, &kind, super::Sass::single_loop)?))
}

/// The records of the fixed buffer's lanes (drop-newest and ring, straight-line and in a
/// loop, every mode) in one build of the header.
#[derive(Clone, Debug, PartialEq)]
pub struct FixedRecords {
    /// Straight-line drop-newest records, one entry per mode of [`MODES`].
    pub records: Vec<RecordCost>,
    /// Drop-newest records in a runtime loop, one entry per mode of [`MODES`].
    pub loop_records: Vec<LoopCost>,
    /// Straight-line ring records, one entry per mode of [`MODES`].
    pub ring_records: Vec<RecordCost>,
    /// Ring records in a runtime loop, one entry per mode of [`MODES`].
    pub ring_loop_records: Vec<LoopCost>,
}

/// Measures [`FixedRecords`] for `arch` with the header built with `defines` (one nvcc
/// compilation), e.g. `IKP_OFF_BRANCH=0` for the predicated record (the figures of
/// [`measure`] are those of the default build).
pub fn fixed_records(
    c: &SassCompiler,
    arch: Arch,
    defines: &[&str],
) -> Result<FixedRecords, SassError> {
    let mut src = String::from(kernels::COST);
    for m in MODES {
        let (f, t) = (m.fence.cuda_name(), m.timer.cuda_name());
        for extra in [0, K, 2 * K] {
            for macro_ in ["IKP_COST_KERNELS", "IKP_RING_KERNELS"] {
                let _ = writeln!(src, "{macro_}({f}, {t}, {extra})");
            }
        }
    }
    let cost = c.sass("fixed_records", &src, arch, defines)?;
    let (records, loop_records) = mode_costs(&cost, "")?;
    let (ring_records, ring_loop_records) = mode_costs(&cost, "ring_")?;
    Ok(FixedRecords {
        records,
        loop_records,
        ring_records,
        ring_loop_records,
    })
}

/// A `waits_*` kernel: the whole of it and one iteration of its loop around the wait, the
/// wait passing at its first try (every copy ptxas made of that loop alike).
fn wait_kernel(sass: &super::Sass, kernel: &str) -> Result<WaitKernel, SassError> {
    let passes = sass.first_passes(kernel)?;
    let nest = || SassError::LoopNest {
        kernel: kernel.to_owned(),
        found: passes.len(),
    };
    let first_pass = passes.first().ok_or_else(nest)?.clone();
    if !passes.iter().all(|p| p.len() == first_pass.len()) {
        return Err(nest());
    }
    Ok(WaitKernel {
        whole: sass.kernel(kernel)?,
        first_pass,
    })
}

/// Instructions of the `lane_setup` kernel built with `defines`.
fn setup_len(c: &SassCompiler, arch: Arch, defines: &[&str]) -> Result<i64, SassError> {
    let s = c.sass("setup", kernels::SETUP, arch, defines)?;
    Ok(s.kernel("lane_setup")?.len() as i64)
}

/// Takes every measurement for `arch` (nine nvcc compilations).
pub fn measure(c: &SassCompiler, arch: Arch) -> Result<ArchCost, SassError> {
    let cost = c.sass("cost", &cost_source(), arch, &[])?;
    let (records, loop_records) = mode_costs(&cost, "")?;
    let (ring_records, ring_loop_records) = mode_costs(&cost, "ring_")?;
    let (stream_records, stream_loop_records) = mode_costs(&cost, "stream_")?;
    let without_calls = super::Sass::single_loop_without_calls;
    let stream_loop_fast = loop_costs(&cost, "stream_loop_records", without_calls)?;
    let plain = MODES[0];
    let loop_bodies = LoopBodies {
        bare: cost.single_loop(&plain.kernel("loop_records", 0))?,
        fixed: cost.single_loop(&plain.kernel("loop_records", K))?,
        stream_fast: without_calls(&cost, &plain.kernel("stream_loop_records", K))?,
        stream_kernel: cost.kernel(&plain.kernel("stream_loop_records", K))?,
    };
    let (off, on) = cost.two_copies("dispatched_loop_records")?;
    let bare_len = loop_bodies.bare.len() as i64;
    let dispatched_loop = (on.len() as i64 - bare_len, off.len() as i64 - bare_len);
    let ranges = per_record(|extra| cost.kernel(&format!("ranges_{extra}")).map(|k| k.len()))?;
    let full = setup_len(c, arch, &[])?;
    let setup = LaneSetup {
        total: full - setup_len(c, arch, &["IKP_ENABLED=0"])?,
        calibration: full - setup_len(c, arch, &["IKP_CALIBRATE=0"])?,
        epochs: full - setup_len(c, arch, &["IKP_EPOCHS=0"])?,
    };
    let spin_plain = cost.single_loop("spin_plain")?;
    let (spin_uncounted, spin_counted) = cost.two_copies("spin_counted")?;
    let (counted, plain) = (
        wait_kernel(&cost, "waits_counted")?,
        wait_kernel(&cost, "waits_plain")?,
    );
    let waits = Waits {
        added: counted.first_pass.len() as i64 - plain.first_pass.len() as i64,
        counted,
        plain,
    };
    let spun_wait = cost.loop_entry_exit("spin_counted")?;

    let tvm = c.sass("tvm_style", &tvm_source(), arch, &[])?;
    let tvm = per_record(|extra| tvm.kernel(&format!("tvm_records_{extra}")).map(|k| k.len()))?;

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
        spin_uncounted,
        spun_wait,
        waits,
        tvm,
        examples,
        ring_records,
        ring_loop_records,
        stream_records,
        stream_loop_records,
        stream_loop_fast,
        loop_bodies,
        dispatched_loop,
        ranges,
        setup,
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
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect::<Result<Vec<_>, _>>()
        })?;
        Ok(CostReport { nvcc, archs })
    }

    /// The table's rows: a label and one cell per architecture.
    pub fn rows(&self) -> Vec<(String, Vec<String>)> {
        let cells = |f: &dyn Fn(&ArchCost) -> String| self.archs.iter().map(f).collect();
        let steps = format!("first {K} added / next {K} added");
        let mut rows = Vec::new();
        fn pair(first: f64, steady: f64) -> String {
            format!("{first} / {steady}")
        }
        type Cell = fn(&ArchCost, usize) -> String;
        let (per_record, per_iteration) = (format!("per record: {steps}"), "per iteration");
        let per_mode: [(&str, &str, Cell); 7] = [
            ("record", &per_record, |a, i| {
                pair(a.records[i].first, a.records[i].steady)
            }),
            ("record in a runtime loop", per_iteration, |a, i| {
                a.loop_records[i].growth.to_string()
            }),
            ("ring record", &per_record, |a, i| {
                pair(a.ring_records[i].first, a.ring_records[i].steady)
            }),
            ("ring record in a runtime loop", per_iteration, |a, i| {
                a.ring_loop_records[i].growth.to_string()
            }),
            ("stream record", &per_record, |a, i| {
                pair(a.stream_records[i].first, a.stream_records[i].steady)
            }),
            ("stream record in a runtime loop", per_iteration, |a, i| {
                a.stream_loop_records[i].growth.to_string()
            }),
            (
                "stream record in a runtime loop",
                "per iteration while the ring has room",
                |a, i| a.stream_loop_fast[i].growth.to_string(),
            ),
        ];
        for (what, per, cell) in per_mode {
            for (i, m) in MODES.iter().enumerate() {
                rows.push((
                    format!("{what} ({}), {per}", m.label()),
                    cells(&|a| cell(a, i)),
                ));
            }
        }
        rows.push((
            "record in a runtime loop through Lane::dispatch (Fence::None, Timer::Global), \
             per iteration: the writer's warp / every other warp"
                .into(),
            cells(&|a| format!("{} / {}", a.dispatched_loop.0, a.dispatched_loop.1)),
        ));
        rows.push((
            format!("async-range record (range_begin / range_end), per record: {steps}"),
            cells(&|a| pair(a.ranges.0, a.ranges.1)),
        ));
        rows.push((
            "lane init + finalize, no record (static count)".into(),
            cells(&|a| a.setup.total.to_string()),
        ));
        rows.push((
            "of which record-cost calibration (IKP_CALIBRATE=0 saves)".into(),
            cells(&|a| a.setup.calibration.to_string()),
        ));
        rows.push((
            "of which epoch code, run only with epochs > 1 (IKP_EPOCHS=0 saves)".into(),
            cells(&|a| a.setup.epochs.to_string()),
        ));
        rows.push((
            "wait-loop tick (IKP_WAIT), per spin".into(),
            cells(&|a| a.tick().to_string()),
        ));
        rows.push((
            "counted wait, per wait that passes at its first try (IKP_WAIT, constant id)".into(),
            cells(&|a| a.waits.added.to_string()),
        ));
        rows.push((
            "counted wait, once per wait that spun, besides its spins".into(),
            cells(&|a| (a.spun_wait.0.len() + a.spun_wait.1.len()).to_string()),
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
            cells(&|a| pair(a.tvm.0, a.tvm.1)),
        ));
        rows
    }

    /// The report as a Markdown table (instructions per site), preceded by the nvcc line.
    pub fn markdown(&self) -> String {
        let mut s = format!("nvcc: {}\n", self.nvcc);
        let head = |a: &ArchCost| format!("{} SASS instructions", a.arch.sm());
        let heads: Vec<String> = self.archs.iter().map(head).collect();
        let _ = writeln!(s, "| site | {} |", heads.join(" | "));
        let _ = writeln!(s, "|---|{}", "---|".repeat(heads.len()));
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
            spin_uncounted: ins(3),
            spun_wait: (ins(1), ins(2)),
            dispatched_loop: (6, 0),
            waits: Waits {
                added: 3,
                counted: WaitKernel {
                    whole: ins(9),
                    first_pass: ins(7),
                },
                plain: WaitKernel {
                    whole: ins(6),
                    first_pass: ins(4),
                },
            },
            tvm: (6.5, 7.0),
            examples: vec![ExampleSass {
                name: "k".into(),
                compiled_out: ins(5),
                baseline: ins(5),
                instrumented: ins(9),
            }],
            ring_records: MODES
                .iter()
                .map(|&mode| RecordCost {
                    mode,
                    first: 5.0,
                    steady: 6.0,
                })
                .collect(),
            ring_loop_records: MODES
                .iter()
                .map(|&mode| LoopCost { mode, growth: 8 })
                .collect(),
            stream_records: MODES
                .iter()
                .map(|&mode| RecordCost {
                    mode,
                    first: 20.0,
                    steady: 21.0,
                })
                .collect(),
            stream_loop_records: MODES
                .iter()
                .map(|&mode| LoopCost { mode, growth: 17 })
                .collect(),
            stream_loop_fast: MODES
                .iter()
                .map(|&mode| LoopCost { mode, growth: 11 })
                .collect(),
            loop_bodies: LoopBodies::default(),
            ranges: (3.5, 4.0),
            setup: LaneSetup {
                total: 60,
                calibration: 25,
                epochs: 20,
            },
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
        assert!(s.contains("IKP_RING_KERNELS(Block, Clock, 16)"));
        assert!(s.ends_with(&format!("IKP_RANGE_KERNELS({})\n", 2 * K)));
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
        assert!(
            md.contains("| wait-loop tick (IKP_WAIT), per spin | 1 | 1 |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| counted wait, per wait that passes at its first try (IKP_WAIT, constant id) | 3 | 3 |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| counted wait, once per wait that spun, besides its spins | 3 | 3 |"),
            "{md}"
        );
        assert!(
            md.contains("| compiled out (IKP_ENABLED=0), 1 example kernels | 0 (identical SASS) | +1 (1 kernels differ) |"),
            "{md}"
        );
        assert!(
            md.contains("| ring record in a runtime loop (Fence::Block, Timer::Clock), per iteration | 8 | 8 |"),
            "{md}"
        );
        assert!(
            md.contains("| of which record-cost calibration (IKP_CALIBRATE=0 saves) | 25 | 25 |"),
            "{md}"
        );
        assert!(
            md.contains("| stream record in a runtime loop (Fence::None, Timer::Global), per iteration while the ring has room | 11 | 11 |"),
            "{md}"
        );
        assert!(
            md.contains("| record in a runtime loop through Lane::dispatch (Fence::None, Timer::Global), per iteration: the writer's warp / every other warp | 6 / 0 | 6 / 0 |"),
            "{md}"
        );
        assert_eq!(r.rows().len(), 7 * MODES.len() + 10);
    }
}
