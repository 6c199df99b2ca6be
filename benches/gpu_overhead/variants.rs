//! The builds the GPU overhead bench compares, and its kernels. Shared (through `#[path]`)
//! by the bench and by `tests/gpu_overhead_nvrtc.rs`, which compiles every build with NVRTC
//! so the GPU path is checked on machines without a GPU.
#![allow(dead_code)]

use ikp::device::{Layout, TimerMode};
use ikp::host::{cuda::nvrtc::Compiler, Arch};

/// Source of every bench kernel (`kernels.cu`), with the instrumentation switches.
pub const SOURCE: &str = include_str!("kernels.cu");

/// One build of a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Variant {
    /// No ikp at all: no include, no marker, no `ikp::Arg` parameter.
    Baseline,
    /// Regions with `Fence::Block` lanes, and counted waits.
    FencedZones,
    /// Regions with `Fence::None` lanes, and counted waits.
    UnfencedZones,
    /// Only the wait counters (`IKP_WAIT`) and the lane's init / finalize stamps.
    CountersOnly,
    /// The fenced build compiled with `IKP_ENABLED=0`.
    CompiledOut,
    /// The fenced build launched with a null `ikp::Arg` (all zero: no lane, no buffer), the
    /// runtime off switch: nothing may be read, written or fenced, and it must cost what
    /// the compiled-out build costs.
    NullArg,
    /// Fenced zones whose records read the SM clock (`Timer::Clock`), converted to ns by
    /// each lane's start / end (clock, globaltimer) pairs.
    FencedClock,
    /// Unfenced zones on the SM clock.
    UnfencedClock,
    /// Unfenced zones built with `IKP_OFF_BRANCH=0`: the other design of the off switch, no
    /// branch on a warp vote, every warp issues each record predicated on the leader (a
    /// shorter record for the leader's warp, a longer one for the others).
    UnfencedPredicated,
    /// The null-Arg build (the fenced build, all-zero `ikp::Arg`) with `IKP_OFF_BRANCH=0`:
    /// what the runtime off switch costs in the predicated design.
    NullArgPredicated,
    /// The same regions recorded the peers' way: the TVM / FlashInfer CudaProfiler record
    /// sequence (`ikp_host::sass::kernels::TVM_STYLE`: per-thread offset and tag,
    /// leader-only store, a block fence after a start and before an end), no counters.
    TvmStyle,
}

impl Variant {
    /// Every build, baseline first.
    pub const ALL: [Variant; 11] = [
        Variant::Baseline,
        Variant::FencedZones,
        Variant::UnfencedZones,
        Variant::CountersOnly,
        Variant::CompiledOut,
        Variant::TvmStyle,
        Variant::NullArg,
        Variant::FencedClock,
        Variant::UnfencedClock,
        Variant::UnfencedPredicated,
        Variant::NullArgPredicated,
    ];

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Baseline => "baseline",
            Variant::FencedZones => "fenced zones",
            Variant::UnfencedZones => "unfenced zones",
            Variant::CountersOnly => "counters only",
            Variant::CompiledOut => "compiled out",
            Variant::TvmStyle => "tvm style",
            Variant::NullArg => "null arg",
            Variant::FencedClock => "fenced zones clock",
            Variant::UnfencedClock => "unfenced zones clock",
            Variant::UnfencedPredicated => "unfenced zones predicated",
            Variant::NullArgPredicated => "null arg predicated",
        }
    }

    /// Whether the kernel takes a profiler parameter (last): `ikp::Arg`, or `TvmArg` for
    /// the peers' build.
    pub fn takes_prof(self) -> bool {
        self != Variant::Baseline
    }

    /// Whether the kernel records with ikp (needs a session buffer).
    pub fn records(self) -> bool {
        matches!(
            self,
            Variant::FencedZones
                | Variant::UnfencedZones
                | Variant::CountersOnly
                | Variant::FencedClock
                | Variant::UnfencedClock
                | Variant::UnfencedPredicated
        )
    }

    /// Whether the build launches with an all-zero `ikp::Arg` (the runtime off switch).
    pub fn null_arg(self) -> bool {
        matches!(self, Variant::NullArg | Variant::NullArgPredicated)
    }

    /// Whether the build's lanes are compiled with `IKP_OFF_BRANCH=0` (records predicated
    /// on every warp, no branch on the warp vote).
    pub fn predicated(self) -> bool {
        matches!(
            self,
            Variant::UnfencedPredicated | Variant::NullArgPredicated
        )
    }

    /// The timer the build's records read (the session's layout must say the same).
    pub fn timer(self) -> TimerMode {
        match self {
            Variant::FencedClock | Variant::UnfencedClock => TimerMode::Clock,
            _ => TimerMode::Globaltimer,
        }
    }

    /// The NVRTC compiler for this build.
    pub fn compiler(self, arch: Arch) -> Compiler {
        let c = Compiler::new(arch);
        match self {
            Variant::Baseline => c.define("BENCH_BASELINE", None),
            // The null-Arg build is the fenced build's code; only its argument differs.
            Variant::FencedZones | Variant::NullArg => c.define("BENCH_FENCE", Some("Block")),
            Variant::UnfencedZones => c.define("BENCH_FENCE", Some("None")),
            Variant::UnfencedPredicated => c
                .define("BENCH_FENCE", Some("None"))
                .define("IKP_OFF_BRANCH", Some("0")),
            Variant::NullArgPredicated => c
                .define("BENCH_FENCE", Some("Block"))
                .define("IKP_OFF_BRANCH", Some("0")),
            Variant::FencedClock => c
                .define("BENCH_FENCE", Some("Block"))
                .define("BENCH_TIMER", Some("Clock")),
            Variant::UnfencedClock => c
                .define("BENCH_FENCE", Some("None"))
                .define("BENCH_TIMER", Some("Clock")),
            Variant::CountersOnly => c
                .define("BENCH_FENCE", Some("None"))
                .define("BENCH_ZONES", Some("0")),
            Variant::CompiledOut => c.profiling(false),
            Variant::TvmStyle => c
                .define("BENCH_TVM", None)
                .header("tvm_style.cuh", ikp::host::sass::kernels::TVM_STYLE),
        }
    }
}

/// The peers' profiler argument (`TvmArg` in kernels.cu): the buffer, the record stride
/// (= lanes: the TVM format interleaves the lanes' records) and the groups per block.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TvmArg {
    /// Device address of the buffer's word 0.
    pub buf: u64,
    /// Lanes of the launch.
    pub stride: u32,
    /// Lanes per block.
    pub groups: u32,
}

impl TvmArg {
    /// Words the TVM-format buffer needs for `lanes` lanes of `records` records each, plus
    /// the finalize record (the format has no capacity check: it must never run out).
    pub fn words(lanes: u32, records: u32) -> usize {
        1 + lanes as usize * (records as usize + 1)
    }
}

/// A bench kernel: its name in `kernels.cu` and its names for the host.
#[derive(Clone, Copy, Debug)]
pub struct KernelSpec {
    /// Kernel name (`extern "C"`).
    pub name: &'static str,
    /// Region names, by the kernel's region ids.
    pub regions: &'static [&'static str],
    /// Wait-counter names, by the kernel's counter ids.
    pub counters: &'static [&'static str],
    /// Lanes per block.
    pub groups_per_block: u32,
    /// Parameters before `ikp::Arg`.
    pub params: usize,
    /// Threads per block (x, y, z), as the bench launches it: with the registers and shared
    /// memory of a build, what decides how many blocks an SM holds.
    pub block: (u32, u32, u32),
    /// A Hopper kernel (wgmma, TMA): compiled for sm_90a with `BENCH_HOPPER`, run on sm_90
    /// devices only.
    pub hopper: bool,
}

/// A region per loop iteration (kernels.cu: `region_loop`).
const REGION_LOOP: KernelSpec = KernelSpec {
    name: "region_loop",
    regions: &["step"],
    counters: &[],
    groups_per_block: 1,
    params: 3,
    block: (128, 1, 1),
    hopper: false,
};

/// The kernels, in report order: the three examples, a compute-bound GEMM, a memory-bound
/// copy, a region per loop iteration (issue #36's kernel for the off switch), the same
/// loop through `Lane::dispatch`, and a Hopper warp-specialized GEMM (TMA, wgmma,
/// mbarriers; sm_90 only).
pub const KERNELS: [KernelSpec; 8] = [
    KernelSpec {
        name: "load_compute_store",
        regions: &["load", "compute", "store"],
        counters: &[],
        groups_per_block: 1,
        params: 4,
        block: (256, 1, 1),
        hopper: false,
    },
    KernelSpec {
        name: "warp_specialized",
        regions: &["produce", "consume"],
        counters: &["wait_full", "wait_empty"],
        groups_per_block: 2,
        params: 4,
        block: (64, 1, 1),
        hopper: false,
    },
    KernelSpec {
        name: "persistent",
        regions: &["tile", "load", "compute", "store"],
        counters: &[],
        groups_per_block: 1,
        params: 4,
        block: (256, 1, 1),
        hopper: false,
    },
    KernelSpec {
        name: "gemm_half",
        regions: &["load", "mma", "store"],
        counters: &[],
        groups_per_block: 1,
        params: 6,
        block: (16, 16, 1),
        hopper: false,
    },
    KernelSpec {
        name: "stream_copy",
        regions: &["load", "store"],
        counters: &[],
        groups_per_block: 1,
        params: 3,
        block: (256, 1, 1),
        hopper: false,
    },
    REGION_LOOP,
    KernelSpec {
        name: "region_loop_dispatch",
        ..REGION_LOOP
    },
    KernelSpec {
        name: "hopper_gemm",
        regions: &["load", "mma"],
        counters: &["wait_full", "wait_empty"],
        groups_per_block: 3,
        params: 6,
        block: (384, 1, 1),
        hopper: true,
    },
];

impl KernelSpec {
    /// The NVRTC compiler for build `v` of this kernel on `arch`.
    pub fn compiler(&self, v: Variant, arch: Arch) -> Compiler {
        let c = v.compiler(arch);
        if self.hopper {
            // The last --gpu-architecture NVRTC receives is the one it uses.
            c.define("BENCH_HOPPER", None)
                .option("--gpu-architecture=sm_90a")
        } else {
            c
        }
    }

    /// Whether the kernel runs on a device of `arch` (why not, if not).
    pub fn runs_on(&self, arch: Arch) -> Result<(), String> {
        if self.hopper && arch != Arch::new(9, 0) {
            return Err(format!(
                "{} needs sm_90 (wgmma, TMA), the device is {arch}",
                self.name
            ));
        }
        Ok(())
    }

    /// The session layout for a launch on `grid` with `records` records per lane, whose
    /// lanes read `timer`.
    pub fn layout(&self, grid: [u32; 3], records: u32, timer: TimerMode) -> Layout {
        Layout {
            grid,
            groups_per_block: self.groups_per_block,
            records_per_lane: records,
            timer,
            regions: self.regions.iter().map(|s| s.to_string()).collect(),
            counters: self.counters.iter().map(|s| s.to_string()).collect(),
            ..Layout::default()
        }
    }
}
