//! Every build the GPU overhead bench (`benches/gpu_overhead.rs`) times compiles with NVRTC,
//! and each build is what its name says: the baseline has no profiler state and no
//! `ikp::Arg`, fenced zones fence, unfenced zones do not, counters only keeps the wait
//! counters and no timed record, compiled out is the baseline's code, the peers' build
//! stamps `%globaltimer_lo` records behind block fences with no wait counter and no
//! 64-bit lane stamps, the null-Arg build is the fenced build's code (only its argument
//! differs), the clock builds time their records with `%clock` instead of
//! `%globaltimer_lo`, and the predicated builds (`IKP_OFF_BRANCH=0`) take no warp vote at
//! init, where every other build with a lane takes one (the branch around the records).
//! No GPU needed; the bench itself only runs on one.
//!
//! The bench times the default builds, whose lanes also time their record cost at init
//! (a `%globaltimer_lo` / `%clock` sequence with volatile stores) and carry the epoch code
//! (a 64-bit atomic add); the claims about records and wait counters are checked on the
//! same builds without those two init parts (`IKP_CALIBRATE=0`, `IKP_EPOCHS=0`), and their
//! presence in the default builds is checked on its own.
use crate::support;
#[path = "../benches/gpu_overhead/variants.rs"]
mod variants;

use ikp::host::{cuda::nvrtc, sass::occupancy, Arch};
use std::collections::BTreeMap;
use variants::{Variant, KERNELS, SOURCE};

const ARCHS: [Arch; 2] = [Arch::new(8, 0), Arch::new(9, 0)];

/// PTX of every kernel of `variant` for `arch`: name -> (parameter list, body). `lean`
/// leaves out the lanes' init-time calibration and epoch code.
fn ptx(variant: Variant, arch: Arch, lean: bool) -> BTreeMap<String, (String, String)> {
    if let Err(e) = nvrtc::probe() {
        panic!("{e}");
    }
    let mut compiler = variant.compiler(arch);
    if lean {
        compiler = compiler
            .define("IKP_CALIBRATE", Some("0"))
            .define("IKP_EPOCHS", Some("0"));
    }
    let compiled = compiler
        .ptx("gpu_overhead.cu", SOURCE)
        .unwrap_or_else(|e| panic!("{} for {arch}: {e}", variant.name()));
    let text = compiled.ptx().expect("PTX text").to_owned();
    text.split(".entry ")
        .skip(1)
        .map(|entry| {
            let name = entry.split('(').next().unwrap().trim().to_owned();
            let (params, body) = entry.split_once('{').expect("entry has a body");
            // The next entry's preamble (if any) is not part of this one.
            (name, (params.to_owned(), body.to_owned()))
        })
        .collect()
}

/// `needle` occurs in `ptx` as a whole operand (`%clock` does not match `%clock64`).
fn has(ptx: &str, needle: &str) -> bool {
    ptx.match_indices(needle).any(|(i, _)| {
        !ptx[i + needle.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn params(list: &str) -> usize {
    list.matches(".param ").count()
}

/// Kernels that have no fence of their own (the warp-specialized one fences its hand-off).
const NO_USER_FENCE: [&str; 6] = [
    "load_compute_store",
    "persistent",
    "gemm_half",
    "stream_copy",
    "region_loop",
    "region_loop_dispatch",
];

#[test]
fn every_build_of_every_bench_kernel_compiles_and_is_what_it_claims() {
    for arch in ARCHS {
        let builds: BTreeMap<_, _> = Variant::ALL
            .iter()
            .map(|&v| (v, ptx(v, arch, true)))
            .collect();
        // The default builds: every lane that records times its record cost (records of
        // its own into the CALIB word: more 64-bit stores than the lean build) and can take
        // an epoch; compiled out, nothing of either.
        let stores = |k: &str| k.matches("st.global.u64").count();
        for &v in &Variant::ALL {
            for (name, (_, body)) in ptx(v, arch, false) {
                let lean = &builds[&v][&name].1;
                let lane = v.records() || v.null_arg();
                assert_eq!(
                    stores(&body) > stores(lean) && has(&body, "atom.global.add.u64"),
                    lane,
                    "{arch} {} {name}: calibration and epoch code",
                    v.name()
                );
            }
        }
        // The Hopper GEMM is built for sm_90a only (its own test below).
        for spec in KERNELS.iter().filter(|k| !k.hopper) {
            let name = spec.name;
            for (&v, kernels) in &builds {
                let (list, body) = kernels
                    .get(name)
                    .unwrap_or_else(|| panic!("{arch} {}: no kernel {name}", v.name()));
                let want = spec.params + usize::from(v.takes_prof());
                assert_eq!(params(list), want, "{arch} {} {name}: parameters", v.name());
                let timed = has(body, "%globaltimer_lo");
                assert_eq!(
                    timed,
                    matches!(
                        v,
                        Variant::FencedZones
                            | Variant::UnfencedZones
                            | Variant::TvmStyle
                            | Variant::NullArg
                            | Variant::UnfencedPredicated
                            | Variant::NullArgPredicated
                    ),
                    "{arch} {} {name}: timed records",
                    v.name()
                );
                // The lean builds read %clock only in the clock builds' records.
                assert_eq!(
                    has(body, "%clock"),
                    v.timer() == ikp::device::TimerMode::Clock,
                    "{arch} {} {name}: clock records",
                    v.name()
                );
                // Init / finalize stamps: every build that records (and the null-Arg build,
                // whose code is the fenced build's).
                assert_eq!(
                    has(body, "%globaltimer"),
                    v.records() || v.null_arg(),
                    "{arch} {} {name}: lane stamps",
                    v.name()
                );
                // The off switch's design: a warp vote at init (the branch around every
                // record) in every build with a lane but the predicated ones.
                assert_eq!(
                    body.contains("vote.sync.any.pred"),
                    (v.records() || v.null_arg()) && !v.predicated(),
                    "{arch} {} {name}: the warp vote",
                    v.name()
                );
                if NO_USER_FENCE.contains(&name) {
                    assert_eq!(
                        has(body, "membar.cta"),
                        matches!(
                            v,
                            Variant::FencedZones
                                | Variant::TvmStyle
                                | Variant::NullArg
                                | Variant::NullArgPredicated
                                | Variant::FencedClock
                        ),
                        "{arch} {} {name}: block fences",
                        v.name()
                    );
                }
            }
            // The peers' build counts no wait.
            let tvm = &builds[&Variant::TvmStyle][name].1;
            assert!(
                !has(tvm, "atom.global.add.u64") && !has(tvm, "red.global.add.u64"),
                "{arch} {name}: the tvm style build counts waits"
            );
            // Counters only still counts the waits of the kernel that has some.
            let counters = &builds[&Variant::CountersOnly][name].1;
            let counted =
                has(counters, "atom.global.add.u64") || has(counters, "red.global.add.u64");
            assert_eq!(
                counted,
                !spec.counters.is_empty(),
                "{arch} {name}: wait counters"
            );
            // The null-Arg build is the fenced build, argument and all.
            assert_eq!(
                builds[&Variant::NullArg][name],
                builds[&Variant::FencedZones][name],
                "{arch} {name}: the null-Arg build is not the fenced build"
            );
            // Compiled out is the baseline's code; only the unused parameter differs.
            assert_eq!(
                builds[&Variant::CompiledOut][name].1,
                builds[&Variant::Baseline][name].1,
                "{arch} {name}: IKP_ENABLED=0 differs from the uninstrumented kernel"
            );
        }
    }
}

#[test]
fn kernel_ids_match_the_names_the_bench_gives_the_host() {
    // Region / counter enums of kernels.cu, in KERNELS order, first names upper-cased with
    // the kernel's prefix: the host names must be the enums' order.
    let prefixes = [
        ("LCS_", "load_compute_store"),
        ("WS_", "warp_specialized"),
        ("P_", "persistent"),
        ("G_", "gemm_half"),
        ("SC_", "stream_copy"),
        ("RL_", "region_loop"),
        ("HG_", "hopper_gemm"),
    ];
    let mut seen = 0;
    for items in support::unsigned_enums(SOURCE) {
        let (prefix, kernel) = prefixes
            .iter()
            .find(|(p, _)| items[0].0.starts_with(p))
            .unwrap_or_else(|| panic!("enum with unknown prefix: {items:?}"));
        let spec = KERNELS.iter().find(|k| k.name == *kernel).unwrap();
        let names: Vec<String> = items
            .iter()
            .map(|(n, _)| n[prefix.len()..].to_lowercase())
            .collect();
        let host: &[&str] = if names[0].starts_with("wait_") {
            spec.counters
        } else {
            spec.regions
        };
        assert_eq!(names, host, "{kernel}: enum names vs host names");
        for (i, (_, v)) in items.iter().enumerate() {
            assert_eq!(*v as usize, i, "{kernel}: ids must be 0, 1, ...");
        }
        seen += 1;
    }
    assert_eq!(seen, 9, "seven region enums and two counter enums");
}

/// The Hopper warp-specialized GEMM (`hopper_gemm`, kernels.cu under `BENCH_HOPPER`) is what
/// its name says in every build nvcc makes of it for sm_90a: TMA loads (UTMALDG), wgmma
/// (HGMMA), mbarrier waits and arrivals (SYNCS), setmaxnreg (USETMAXREG); the ikp builds
/// and the peers' build stamp their zones (globaltimer or clock reads), the baseline and
/// compiled-out builds stamp nothing and are the same code. NVRTC compiles it too.
#[test]
fn the_hopper_gemm_builds_with_tma_wgmma_mbarriers_and_zones() {
    let tools = ikp::host::sass::CudaTools::discover().unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ikp.cuh"), ikp::device::cuh::source()).unwrap();
    std::fs::write(
        dir.path().join("tvm_style.cuh"),
        ikp::host::sass::kernels::TVM_STYLE,
    )
    .unwrap();
    let src = dir.path().join("gpu_overhead.cu");
    std::fs::write(&src, SOURCE).unwrap();
    let sass = |defines: &[&str]| -> String {
        let cubin = dir.path().join("k.cubin");
        let mut nvcc = std::process::Command::new(&tools.nvcc);
        nvcc.args(["-cubin", "-arch=sm_90a", "-DBENCH_HOPPER"])
            .arg("-I")
            .arg(dir.path());
        for d in defines {
            nvcc.arg(format!("-D{d}"));
        }
        let out = nvcc.arg("-o").arg(&cubin).arg(&src).output().unwrap();
        assert!(
            out.status.success(),
            "nvcc {defines:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = std::process::Command::new(&tools.cuobjdump)
            .arg("-sass")
            .arg(&cubin)
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let start = text
            .find("Function : hopper_gemm")
            .expect("hopper_gemm in the cubin");
        let body = &text[start..];
        let end = body[1..].find("Function : ").map_or(body.len(), |e| e + 1);
        body[..end].to_owned()
    };
    let builds = [
        ("baseline", vec!["BENCH_BASELINE"]),
        ("fenced zones", vec![]),
        ("unfenced zones", vec!["BENCH_FENCE=None"]),
        (
            "unfenced zones predicated",
            vec!["BENCH_FENCE=None", "IKP_OFF_BRANCH=0"],
        ),
        ("fenced zones clock", vec!["BENCH_TIMER=Clock"]),
        ("tvm style", vec!["BENCH_TVM"]),
        ("compiled out", vec!["IKP_ENABLED=0"]),
    ];
    let mut listings = BTreeMap::new();
    for (name, defines) in &builds {
        let s = sass(defines);
        for op in [
            "HGMMA.64x128x16.F32",
            "UTMALDG.2D",
            "SYNCS.PHASECHK",
            "SYNCS.ARRIVE",
            "USETMAXREG",
        ] {
            assert!(s.contains(op), "{name}: no {op} in hopper_gemm");
        }
        let zones = s.matches("SR_GLOBALTIMERLO").count() + s.matches("SR_CLOCKLO").count();
        let stamps = !matches!(*name, "baseline" | "compiled out");
        assert_eq!(zones > 0, stamps, "{name}: {zones} timer reads");
        listings.insert(*name, s);
    }
    // The clock build's zones read the SM clock; the others' the globaltimer.
    assert!(listings["fenced zones clock"].contains("SR_CLOCKLO"));
    let code = |s: &str| -> Vec<String> {
        s.lines()
            .filter_map(|l| l.trim().strip_prefix("/*"))
            .filter_map(|l| l.split_once("*/"))
            .map(|(_, t)| t.split(';').next().unwrap_or("").trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect()
    };
    assert_eq!(
        code(&listings["compiled out"]),
        code(&listings["baseline"]),
        "IKP_ENABLED=0 changes hopper_gemm"
    );
    // Each role finalizes where its work ends, so the producer's single-thread loop stays
    // in the uniform datapath as without ikp: no more vector-to-uniform moves (`R2UR`,
    // before each TMA issue) than the baseline's. A finalize after the producer's branch
    // took 12 against the baseline's 8 (ptxas wrapped the loop in a reconvergence region).
    let r2ur = |s: &str| code(s).iter().filter(|i| i.contains("R2UR")).count();
    for (name, s) in &listings {
        assert!(
            r2ur(s) <= r2ur(&listings["baseline"]),
            "{name}: {} R2UR in hopper_gemm, the baseline {}",
            r2ur(s),
            r2ur(&listings["baseline"])
        );
    }
    // NVRTC, the bench's compiler, builds it for sm_90a as well.
    if let Err(e) = nvrtc::probe() {
        panic!("{e}");
    }
    for v in [Variant::Baseline, Variant::FencedZones, Variant::TvmStyle] {
        v.compiler(Arch::new(9, 0))
            .define("BENCH_HOPPER", None)
            .option("--gpu-architecture=sm_90a")
            .cubin("gpu_overhead.cu", SOURCE)
            .unwrap_or_else(|e| panic!("NVRTC sm_90a {}: {e}", v.name()));
    }
}

/// What one build of one kernel asks of an SM, read from its cubin
/// (`cuobjdump -res-usage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Resources {
    regs: u32,
    shared: u32,
    local: u32,
}

/// Every kernel's resources in the cubin NVRTC builds of `variant` for `arch`.
fn resources(variant: Variant, arch: Arch, dir: &std::path::Path) -> BTreeMap<String, Resources> {
    let tools = ikp::host::sass::CudaTools::discover().unwrap_or_else(|e| panic!("{e}"));
    let compiled = variant
        .compiler(arch)
        .cubin("gpu_overhead.cu", SOURCE)
        .unwrap_or_else(|e| panic!("{} for {arch}: {e}", variant.name()));
    let cubin = dir.join(format!("{}-{arch}.cubin", variant.name().replace(' ', "_")));
    std::fs::write(&cubin, compiled.cubin().expect("a cubin")).unwrap();
    let out = std::process::Command::new(&tools.cuobjdump)
        .arg("-res-usage")
        .arg(&cubin)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cuobjdump -res-usage {}",
        cubin.display()
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |line: &str, key: &str| -> u32 {
        let at = line
            .find(key)
            .unwrap_or_else(|| panic!("no {key} in `{line}`"))
            + key.len();
        let digits: String = line[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().unwrap()
    };
    let mut found = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(name) = line.trim().strip_prefix("Function ") {
            let usage = lines
                .next()
                .expect("a resource line after the function's name");
            found.insert(
                name.trim_end_matches(':').to_owned(),
                Resources {
                    regs: field(usage, "REG:"),
                    shared: field(usage, "SHARED:"),
                    local: field(usage, "LOCAL:"),
                },
            );
        }
    }
    found
}

/// Blocks of `threads` threads with `r` resident on one SM of `arch`
/// ([`occupancy::blocks_per_sm`]).
fn blocks_per_sm(arch: Arch, threads: u32, r: Resources) -> u32 {
    occupancy::blocks_per_sm(arch, threads, r.regs, r.shared).expect("sm_80 and sm_90 are tabled")
}

/// The builds the bench times that share no code with another (the null-Arg builds are the
/// fenced builds' code, compiled out is the baseline's).
const DISTINCT: [Variant; 8] = [
    Variant::Baseline,
    Variant::FencedZones,
    Variant::UnfencedZones,
    Variant::CountersOnly,
    Variant::FencedClock,
    Variant::UnfencedClock,
    Variant::UnfencedPredicated,
    Variant::TvmStyle,
];

/// A probe that does not disturb what it measures keeps the kernel's occupancy: every ikp
/// build of every bench kernel (the Hopper GEMM aside: its launch bounds fix its
/// registers) holds at least as many blocks per SM as the uninstrumented kernel and spills
/// nothing, with NVRTC (the bench's compiler) for sm_80 and sm_90. Registers are a step
/// function's input: the GEMM takes 56 without ikp (four blocks of 256 threads per SM);
/// with the lane's epoch as a per-thread value its ikp builds took 65 (three blocks).
/// Prints the table kept in BENCHMARKS.md (`-- --nocapture`).
#[test]
fn ikp_builds_keep_the_kernels_occupancy() {
    if let Err(e) = nvrtc::probe() {
        panic!("{e}");
    }
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for arch in ARCHS {
        let builds: Vec<(Variant, BTreeMap<String, Resources>)> = DISTINCT
            .iter()
            .map(|&v| (v, resources(v, arch, dir.path())))
            .collect();
        println!("{arch}: registers (blocks per SM) per build");
        for spec in KERNELS.iter().filter(|k| !k.hopper) {
            let threads = spec.block.0 * spec.block.1 * spec.block.2;
            let of = |kernels: &BTreeMap<String, Resources>| -> Resources {
                *kernels
                    .get(spec.name)
                    .unwrap_or_else(|| panic!("{arch}: no {} in the cubin", spec.name))
            };
            let base = blocks_per_sm(arch, threads, of(&builds[0].1));
            let mut row = format!("  {:<20}", spec.name);
            for (v, kernels) in &builds {
                let r = of(kernels);
                let blocks = blocks_per_sm(arch, threads, r);
                row += &format!(" {}: {} ({blocks})", v.name(), r.regs);
                // The peers' build is the reference the table shows, not ikp's to keep.
                if *v == Variant::TvmStyle {
                    continue;
                }
                if blocks < base {
                    failures.push(format!(
                        "{arch} {} {}: {} registers, {blocks} blocks of {threads} threads per \
                         SM where the kernel without ikp holds {base}",
                        spec.name,
                        v.name(),
                        r.regs
                    ));
                }
                if r.local != 0 {
                    failures.push(format!(
                        "{arch} {} {}: {} bytes of local memory (spills)",
                        spec.name,
                        v.name(),
                        r.local
                    ));
                }
            }
            println!("{row}");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
