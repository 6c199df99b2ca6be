//! `ikp instrument` on real compiler output: Triton's and CuTe DSL's PTX (fixtures in
//! host/tests/ptx, made by scripts/triton-ptx-fixtures.py and cute-ptx-fixtures.py) and
//! nvcc's (the repository's example kernels, compiled here for sm_80, sm_90 and sm_100).
//!
//! Each instrumented module must assemble with ptxas for its own target, keep every
//! kernel's parameter list byte for byte, find the loops the fixture says it has, and
//! carry in its SASS exactly the timer reads and global stores its probes account for.
//! Its loops must keep the code ptxas gives them plain (global loads per loop body, the
//! innermost bodies' size: `loops_keep_their_code_in_sass`, also over nvcc's PTX of
//! host/tests/kernels/unrolled_loops.cu), and its entry probes add no global load and
//! read their epoch claim's result only after the kernel's first load
//! (`the_epoch_claim_waits_behind_the_kernels_first_loads`, with nvcc's PTX of
//! host/tests/kernels/row_wise.cu).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use ikp_host::instrument::{instrument, kernel_params, report, target_of, ProbeKind, ProbeSet};
use ikp_host::sass::{CudaTools, Sass};

fn tools() -> CudaTools {
    CudaTools::discover().unwrap_or_else(|e| panic!("{e}"))
}

/// `report::assemble` of `ptx` for `arch`, once for the whole test binary: the SASS
/// comparisons assemble the same plain and instrumented modules (every fixture, plain and
/// with the default probes, in three tests), and ptxas and the disassembler are most of
/// their time. Two tests asking for one module at once wait for one assembly.
fn assembled(ptx: &str, arch: &str) -> Result<Arc<report::Assembled>, String> {
    type Slot = Arc<OnceLock<Result<Arc<report::Assembled>, String>>>;
    static CACHE: OnceLock<Mutex<HashMap<(String, String), Slot>>> = OnceLock::new();
    let slot = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry((ptx.to_string(), arch.to_string()))
        .or_default()
        .clone();
    slot.get_or_init(|| {
        report::assemble(&tools(), ptx, arch)
            .map(Arc::new)
            .map_err(|e| e.to_string())
    })
    .clone()
}

fn fixture_dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("host/tests/ptx")
        .join(kind)
}

struct Fixture {
    name: String,
    ptx: String,
    /// Loops per the fixture's generator.
    loops: Option<usize>,
}

/// The fixtures of one generator, with their loop counts from its fixtures.json.
fn fixtures(kind: &str) -> Vec<Fixture> {
    let dir = fixture_dir(kind);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("fixtures.json")).unwrap()).unwrap();
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "ptx") {
            let file = path.file_name().unwrap().to_str().unwrap().to_string();
            let loops = meta["files"][&file]["loops"].as_array().map(Vec::len);
            out.push(Fixture {
                name: file,
                ptx: std::fs::read_to_string(&path).unwrap(),
                loops,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(!out.is_empty(), "no fixtures in {}", dir.display());
    out
}

/// Opcode counts of the SASS instructions that read the global timer and that write global
/// memory (stores, atomics, reductions).
#[derive(Debug, Default, PartialEq, Eq, Clone, Copy)]
struct ProbeOps {
    timer_reads: usize,
    stores: usize,
    atomics: usize,
}

fn probe_ops(sass: &Sass, kernel: &str) -> ProbeOps {
    let mut ops = ProbeOps::default();
    for ins in sass.kernel(kernel).unwrap() {
        if ins.contains("SR_GLOBALTIMER") {
            ops.timer_reads += 1;
        }
        let op = ikp_host::sass::parse::opcode(&ins);
        if op.starts_with("STG") {
            ops.stores += 1;
        }
        if op.starts_with("ATOMG")
            || op.starts_with("REDG")
            || op.starts_with("RED.")
            || op == "RED"
        {
            ops.atomics += 1;
        }
    }
    ops
}

fn arch_of(target: &str) -> String {
    target.to_string()
}

/// Instruments `ptx` with `probes`, assembles both for the module's target, and checks
/// what every test here holds to. Returns the manifest's kernels and each kernel's probe
/// operations (after minus before).
fn check(
    name: &str,
    ptx: &str,
    probes: &ProbeSet,
    arch: Option<&str>,
) -> Vec<(
    ikp_host::instrument::KernelProbes,
    ProbeOps,
    ProbeOps,
    usize,
)> {
    let out = instrument(ptx, probes).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        kernel_params(ptx).unwrap(),
        kernel_params(&out.ptx).unwrap(),
        "{name}: parameters changed"
    );
    let arch = arch
        .map(str::to_string)
        .unwrap_or_else(|| arch_of(&target_of(ptx).unwrap()));
    let before = assembled(ptx, &arch).unwrap_or_else(|e| panic!("{name} (input) for {arch}: {e}"));
    let after = assembled(&out.ptx, &arch)
        .unwrap_or_else(|e| panic!("{name} instrumented, for {arch}: {e}"));
    out.manifest
        .kernels
        .iter()
        .map(|k| {
            let (b, a) = (
                probe_ops(&before.sass, &k.name),
                probe_ops(&after.sass, &k.name),
            );
            (k.clone(), b, a, deferred_loops(&out.ptx, &k.name))
        })
        .collect()
}

/// Loops of `kernel` recorded whole at their end (`loop_begin_deferred`): the distinct
/// `%ikp_t<k>` its begins set.
fn deferred_loops(ptx: &str, kernel: &str) -> usize {
    let start = ptx.find(&format!(".entry {kernel}(")).unwrap();
    let body = &ptx[start + 1..];
    let body = &body[..body.find(".entry ").unwrap_or(body.len())];
    let mut seen: Vec<&str> = body
        .split("mov.u32 %ikp_t")
        .skip(1)
        .filter_map(|rest| rest.split_once(", %globaltimer_lo;").map(|(k, _)| k))
        .filter(|k| k.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    seen.sort();
    seen.dedup();
    seen.len()
}

/// What the probes of kernel `k` put in SASS. The init: one 64-bit timer read, three
/// stores (start stamps and ids), the epoch atomic (run only with epochs > 1). A begin or
/// a line's instant: one 32-bit timer read, one store, the slot atomic and the drop
/// reduction. A loop's end: one timer read, two stores (the end and the trip-count sample),
/// the slot atomic, the drop reduction and the counter total. A loop with no record inside
/// (`deferred` of them): the begin a timer read, the end a timer read, the slot atomic for
/// its three records, three stores, the drop reduction and the counter total. Each
/// exit: one 64-bit timer read, the end timer's max reduction and the end clock's store.
fn expected(k: &ikp_host::instrument::KernelProbes, exits: usize, deferred: usize) -> ProbeOps {
    let (loops, lines) = k.probes.iter().fold((0, 0), |(l, n), p| match p.kind {
        ProbeKind::Loop => (l + 1, n),
        ProbeKind::Line => (l, n + 1),
    });
    ProbeOps {
        timer_reads: 1 + 2 * loops + lines + exits,
        stores: 3 + 3 * loops + lines + exits,
        atomics: 1 + 5 * (loops - deferred) + 3 * deferred + 2 * lines + exits,
    }
}

fn exits(ptx: &str, kernel: &str) -> usize {
    // Every fixture kernel has one `ret` per exit; count them in its body.
    let start = ptx.find(&format!(".entry {kernel}(")).unwrap();
    let body = &ptx[start..];
    let end = body.find("\n}").unwrap();
    body[..end].matches("\tret;").count()
}

#[test]
fn triton_kernels_assemble_keep_parameters_and_carry_their_probes() {
    let probes = ProbeSet::default();
    for f in fixtures("triton") {
        for (k, before, after, deferred) in check(&f.name, &f.ptx, &probes, None) {
            if let Some(loops) = f.loops {
                assert_eq!(
                    k.probes.len(),
                    loops,
                    "{}: loops found {:?}",
                    f.name,
                    k.regions
                );
            }
            let want = expected(&k, exits(&f.ptx, &k.name), deferred);
            let got = ProbeOps {
                timer_reads: after.timer_reads - before.timer_reads,
                stores: after.stores - before.stores,
                atomics: after.atomics - before.atomics,
            };
            assert_eq!(
                got, want,
                "{}: probe operations in SASS (before {before:?}, after {after:?})",
                f.name
            );
        }
    }
}

/// `nvcc --ptx -lineinfo -arch=<arch> <defines>` on the CUDA source file `src`.
fn nvcc_ptx_of(src: &Path, arch: &str, defines: &[&str]) -> String {
    let tools = tools();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.ptx");
    let status = Command::new(&tools.nvcc)
        .args(["--ptx", "-lineinfo", &format!("-arch={arch}")])
        .args(defines)
        .arg("-o")
        .arg(&out)
        .arg(src)
        .status()
        .unwrap();
    assert!(status.success(), "nvcc --ptx {} for {arch}", src.display());
    std::fs::read_to_string(out).unwrap()
}

/// A CUDA source of `host/tests/kernels/`.
fn test_kernel(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("host/tests/kernels")
        .join(name)
}

/// nvcc's PTX of the repository's example kernels (their uninstrumented build), for each
/// architecture ikp supports.
fn nvcc_ptx(arch: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("examples.cu");
    std::fs::write(&src, ikp_host::sass::kernels::EXAMPLES).unwrap();
    nvcc_ptx_of(&src, arch, &["-DIKP_BASELINE"])
}

#[test]
fn nvcc_kernels_assemble_for_sm80_sm90_and_sm100_with_their_probes() {
    let probes: ProbeSet = "entry,loops,lines=examples.cu:1-400".parse().unwrap();
    for arch in ["sm_80", "sm_90", "sm_100"] {
        let ptx = nvcc_ptx(arch);
        let kernels = check(arch, &ptx, &probes, None);
        assert!(kernels.len() >= 4, "{arch}: kernels {}", kernels.len());
        let count = |kind: ProbeKind| {
            kernels
                .iter()
                .flat_map(|(k, _, _, _)| &k.probes)
                .filter(|p| p.kind == kind)
                .count()
        };
        let (loops, lines) = (count(ProbeKind::Loop), count(ProbeKind::Line));
        assert!(
            loops >= 3 && lines >= 4,
            "{arch}: {loops} loops, {lines} line probes"
        );
        for (k, before, after, deferred) in kernels {
            let want = expected(&k, exits(&ptx, &k.name), deferred);
            let got = ProbeOps {
                timer_reads: after.timer_reads - before.timer_reads,
                stores: after.stores - before.stores,
                atomics: after.atomics - before.atomics,
            };
            assert_eq!(got, want, "{arch} {}: probe operations in SASS", k.name);
        }
    }
}

#[test]
fn cute_dsl_kernel_assembles_and_names_its_loop_by_source_line() {
    for f in fixtures("cute") {
        let kernels = check(&f.name, &f.ptx, &ProbeSet::default(), None);
        assert_eq!(kernels.len(), 1);
        let (k, before, after, deferred) = &kernels[0];
        assert_eq!(Some(k.probes.len()), f.loops);
        assert!(
            k.regions[0].starts_with("cute-ptx-fixtures.py:") && k.regions[0].ends_with(" loop"),
            "{:?}",
            k.regions
        );
        assert_eq!(k.warps_per_block, Some(4));
        let want = expected(k, exits(&f.ptx, &k.name), *deferred);
        assert_eq!(after.timer_reads - before.timer_reads, want.timer_reads);
        assert_eq!(after.stores - before.stores, want.stores);
    }
}

/// The kernel the GPU test runs (host/tests/host/session_gpu.rs), compiled here by NVRTC as
/// the GPU test compiles it: its three loops are found, named by their source lines in
/// source order (the GPU test relies on the order), and the module assembles.
#[test]
fn nvrtc_ptx_of_the_gpu_test_kernel_has_its_three_loops_in_source_order() {
    use ikp_host::cuda::nvrtc::Compiler;
    let src = include_str!("../host/tests/kernels/plain_loops.cu");
    for arch in [ikp_host::Arch::new(8, 0), ikp_host::Arch::new(9, 0)] {
        let ptx = Compiler::new(arch)
            .line_info(true)
            .ptx("plain_loops.cu", src)
            .unwrap_or_else(|e| panic!("{e}"));
        let ptx = ptx.ptx().unwrap();
        let kernels = check("plain_loops", ptx, &ProbeSet::default(), None);
        let k = &kernels[0].0;
        let line = |needle: &str| src.lines().position(|l| l.contains(needle)).unwrap() + 1;
        let want: Vec<String> = ["o < outer", "j < inner;", "j < inner +"]
            .iter()
            .map(|n| format!("plain_loops.cu:{} loop", line(n)))
            .collect();
        assert_eq!(k.regions, want, "{arch}");
        assert_eq!(k.warps_per_block, Some(4));
    }
}

/// A kernel with one loop whose body is on source line 20, for the probe costs.
fn one_loop(arch: &str) -> String {
    format!(
        ".version 8.0\n.target {arch}\n.address_size 64\n\
         .visible .entry one_loop(.param .u64 p, .param .u32 n)\n.reqntid 128\n{{\n\
         .reg .pred %p<2>;\n.reg .b32 %r<4>;\n.reg .b64 %rd<3>;\n\
         .loc 1 10 1\nld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\nmov.u32 %r2, 0;\n\
         $L1:\n.loc 1 20 1\nadd.s32 %r2, %r2, 1;\nsetp.lt.s32 %p1, %r2, %r1;\n@%p1 bra $L1;\n\
         .loc 1 30 1\nst.global.u32 [%rd1], %r2;\nret;\n}}\n.file 1 \"k.py\"\n"
    )
}

/// SASS instructions (static count, `cuobjdump -sass`, NOPs left out) of `ptx`'s kernel,
/// and of its one loop's body.
fn sass_count(ptx: &str, arch: &str) -> (usize, usize) {
    let a = assembled(ptx, arch).unwrap();
    let real = |v: Vec<String>| {
        v.iter()
            .filter(|i| ikp_host::sass::parse::opcode(i) != "NOP")
            .count()
    };
    (
        real(a.sass.kernel("one_loop").unwrap()),
        real(a.sass.single_loop("one_loop").unwrap()),
    )
}

/// What each probe kind costs in SASS (BENCHMARKS.md section 1, "PTX probes"), held to
/// budgets: a warp's init and finalize once, a loop's probes (begin, end with its trip-count
/// sample, the trip add), an instant at a line inside the loop (per iteration: the loop's
/// body grows by it). `-- --nocapture` prints the table.
#[test]
fn probe_costs_in_sass() {
    let mut table = String::from("| probe | sm_80 | sm_90 |\n|---|---|---|\n");
    let mut rows: Vec<(&str, Vec<usize>)> = vec![
        ("lane init + finalize (once per warp)", vec![]),
        (
            "loop: begin, end + trip-count sample, trip add (per loop entry)",
            vec![],
        ),
        ("instant at a line (per execution)", vec![]),
    ];
    for arch in ["sm_80", "sm_90"] {
        let base = one_loop(arch);
        let at = |s: &str| instrument(&base, &s.parse().unwrap()).unwrap().ptx;
        let (b, e, l, i) = (
            sass_count(&base, arch),
            sass_count(&at("entry"), arch),
            sass_count(&at("entry,loops"), arch),
            sass_count(&at("entry,lines=k.py:20"), arch),
        );
        rows[0].1.push(e.0 - b.0);
        rows[1].1.push(l.0 - e.0);
        // Per iteration: the loop body's growth.
        rows[2].1.push(i.1 - e.1);
    }
    for (name, v) in &rows {
        table += &format!("| {name} | {} | {} |\n", v[0], v[1]);
    }
    println!("{table}");
    // Measured with the pinned toolchain: 63 / 66, 59 / 58, 29 / 25 since the init tests
    // the block's x index alone before the whole index (a warp of a block past the lanes
    // leaves 4 to 6 instructions sooner, a recording warp pays the first test's 4); 59 /
    // 62, 59 / 58, 29 / 25 since warps without a
    // lane branch past a loop's begin and end and a line's instant too (the branch, and on
    // sm_90 the loop end's lane index that keeps ptxas from aggregating its atomics behind
    // it); 59 / 62, 57 / 52, 23 / 22 since they branch past the init, the placement and
    // the finalize (the branches, the votes
    // that make `%ikp_on` warp-uniform; the loop row holds the placement's own branch and
    // vote, which the finalize takes in where nothing comes between); 54 / 57, 52 / 47,
    // 23 / 22 since the buffer symbol holds the lane addresses worked out (66 / 72, 57 /
    // 57, 23 / 23 while the probes added the header's offsets themselves and found the
    // recording thread in the active mask on sm_90 too; 67 / 73 while the init found its
    // leader in the active mask; 57 / 62 while the trip count's add to its total was
    // warp-aggregated by ptxas on sm_90).
    let budget = [66, 59, 29];
    for ((name, v), max) in rows.iter().zip(budget) {
        assert!(
            v.iter().all(|&n| n <= max && n > 0),
            "{name}: {v:?} over the budget {max}"
        );
    }
}

/// A loop of a kernel's SASS: its global loads (`LDG`, `LDGSTS`, TMA's `UBLKCP` /
/// `UTMALDG`), its instructions (NOPs left out), whether it holds no other loop.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SassLoop {
    loads: usize,
    size: usize,
    innermost: bool,
}

fn is_global_load(op: &str) -> bool {
    (op.starts_with("LDG") && !op.starts_with("LDGDEPBAR"))
        || op.starts_with("UBLKCP")
        || op.starts_with("UTMALDG")
}

/// Every loop of `kernel` (`Sass::loops`: a backward branch's target to the branch),
/// but the spans that hold an unconditional `EXIT`: those are an out-of-line path (a
/// `BRA.DIV` fallback, say) branching back into the body after the kernel's exit, no loop.
fn sass_loops(sass: &Sass, kernel: &str) -> Vec<SassLoop> {
    use ikp_host::sass::parse::opcode;
    let bodies: Vec<Vec<String>> = sass
        .loops(kernel)
        .unwrap()
        .into_iter()
        .filter(|b| !b.iter().any(|i| i.trim() == "EXIT"))
        .map(|b| b.into_iter().filter(|i| opcode(i) != "NOP").collect())
        .collect();
    bodies
        .iter()
        .map(|b| SassLoop {
            loads: b.iter().filter(|i| is_global_load(opcode(i))).count(),
            size: b.len(),
            innermost: !bodies
                .iter()
                .any(|o| o.len() < b.len() && b.windows(o.len()).any(|w| w == o.as_slice())),
        })
        .collect()
}

/// How many instructions an innermost loop's body may grow by: the trip count's add.
const INNERMOST_GROWTH: usize = 3;

/// Compares the loops of a kernel plain and instrumented; returns what is wrong. Loops are
/// matched by their loads: every loop of either side has a loop with as many global loads
/// on the other (ptxas may version a loop, so the counts may differ), and every innermost
/// loop of the plain kernel an innermost loop of its own with as many loads and at most
/// `INNERMOST_GROWTH` more instructions.
fn loop_mismatch(plain: &[SassLoop], probed: &[SassLoop]) -> Option<String> {
    let has = |side: &[SassLoop], loads: usize| side.iter().any(|l| l.loads == loads);
    if plain.iter().any(|l| !has(probed, l.loads)) || probed.iter().any(|l| !has(plain, l.loads)) {
        return Some("global loads per loop differ".into());
    }
    let mut free: Vec<&SassLoop> = probed.iter().filter(|l| l.innermost).collect();
    for p in plain.iter().filter(|l| l.innermost) {
        let Some(i) = free
            .iter()
            .position(|q| q.loads == p.loads && q.size <= p.size + INNERMOST_GROWTH)
        else {
            return Some(format!(
                "no innermost loop with {} loads within {INNERMOST_GROWTH} instructions of {}",
                p.loads, p.size
            ));
        };
        free.remove(i);
    }
    None
}

/// The PTX of `host/tests/kernels/unrolled_loops.cu` (triangular, nested, data-dependent
/// and TMA loops) by nvcc for `arch`, each loop left to ptxas as Triton leaves them (its
/// `.pragma "nounroll"` taken out).
fn unrolled_loops_ptx(arch: &str) -> String {
    let ptx = nvcc_ptx_of(&test_kernel("unrolled_loops.cu"), arch, &[]);
    assert!(ptx.contains(".pragma \"nounroll\";"));
    ptx.replace("\t.pragma \"nounroll\";\n", "")
}

/// Every module the SASS comparisons run on: the Triton and CuTe fixtures, nvcc's
/// example kernels and `unrolled_loops.cu`, with the architecture to assemble them for
/// (made once for the test binary).
fn all_modules() -> &'static [(String, String, String)] {
    static MODULES: OnceLock<Vec<(String, String, String)>> = OnceLock::new();
    MODULES.get_or_init(modules)
}

fn modules() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for kind in ["triton", "cute"] {
        for f in fixtures(kind) {
            let arch = target_of(&f.ptx).unwrap();
            out.push((format!("{kind}/{}", f.name), f.ptx, arch));
        }
    }
    for arch in ["sm_80", "sm_90"] {
        out.push((
            format!("nvcc examples.cu {arch}"),
            nvcc_ptx(arch),
            arch.into(),
        ));
        out.push((
            format!("nvcc unrolled_loops.cu {arch}"),
            unrolled_loops_ptx(arch),
            arch.into(),
        ));
    }
    out
}

/// Loops keep their code: for every loop of every kernel, the instrumented SASS
/// (`entry,loops`) has the global loads per loop body that the plain SASS has, and each
/// innermost loop's body stays within `INNERMOST_GROWTH` instructions of the plain one,
/// on loops ptxas unrolls (the triangular and nested loops, Triton's layer norm), pipelines
/// (cp.async + wgmma: Triton's matmul and attention; TMA) and leaves alone. `-- --nocapture`
/// prints the table (BENCHMARKS.md, "PTX probes and ptxas's loops").
#[test]
fn loops_keep_their_code_in_sass() {
    let probes = ProbeSet::default();
    let mut table = String::from(
        "| module | kernel | loops: global loads / instructions, plain -> instrumented |\n|---|---|---|\n",
    );
    let mut unrolled = 0;
    let mut wrong = Vec::new();
    for (name, ptx, arch) in all_modules() {
        let out = instrument(ptx, &probes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let plain = assembled(ptx, arch).unwrap();
        let probed = assembled(&out.ptx, arch).unwrap();
        for k in &out.manifest.kernels {
            let (b, a) = (
                sass_loops(&plain.sass, &k.name),
                sass_loops(&probed.sass, &k.name),
            );
            if b.is_empty() && a.is_empty() {
                continue;
            }
            unrolled += b.iter().filter(|l| l.innermost && l.loads >= 4).count();
            let show = |v: &[SassLoop]| {
                v.iter()
                    .map(|l| {
                        format!(
                            "{}/{}{}",
                            l.loads,
                            l.size,
                            if l.innermost { "" } else { " (outer)" }
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let short: String = k.name.chars().take(40).collect();
            table += &format!("| {name} | {short} | {} -> {} |\n", show(&b), show(&a));
            if let Some(why) = loop_mismatch(&b, &a) {
                wrong.push(format!(
                    "{name} {}: {why}: plain {b:?}, instrumented {a:?}",
                    k.name
                ));
            }
        }
    }
    println!("{table}");
    assert!(
        unrolled >= 4,
        "the modules must hold loops ptxas unrolls ({unrolled})"
    );
    assert!(
        wrong.is_empty(),
        "loops changed by the probes:\n{}",
        wrong.join("\n")
    );
}

/// Entry without a round trip, in SASS: the probes at `entry` add no global load to any
/// kernel (the init reads its layout from the constant bank), at most one atomic (the
/// epoch claim, run only with epochs > 1) and one reduction per exit (the finalize).
/// The emulated count of what runs is `ptx_emulator::the_lane_init_runs_no_global_load_*`.
#[test]
fn the_entry_probes_add_no_global_load() {
    use ikp_host::sass::parse::opcode;
    let probes: ProbeSet = "entry".parse().unwrap();
    let count = |sass: &Sass, k: &str, f: &dyn Fn(&str) -> bool| {
        sass.kernel(k)
            .unwrap()
            .iter()
            .filter(|i| f(opcode(i)))
            .count()
    };
    let atomic = |op: &str| op.starts_with("ATOMG") || op.starts_with("ATOM.");
    // Reductions to memory (`RED`, `REDG`), not the warp's `REDUX`.
    let red = |op: &str| op.starts_with("RED") && !op.starts_with("REDUX");
    let mut table = String::from(
        "| module | kernel | instructions added | global loads | atomics | reductions |\n|---|---|---|---|---|---|\n",
    );
    let mut wrong = Vec::new();
    for (name, ptx, arch) in all_modules() {
        let out = instrument(ptx, &probes).unwrap();
        let plain = assembled(ptx, arch).unwrap();
        let probed = assembled(&out.ptx, arch).unwrap();
        for k in &out.manifest.kernels {
            let added = |f: &dyn Fn(&str) -> bool| {
                count(&probed.sass, &k.name, f) - count(&plain.sass, &k.name, f)
            };
            let got = (added(&is_global_load), added(&atomic), added(&red));
            let all = added(&|op: &str| op != "NOP");
            let short: String = k.name.chars().take(40).collect();
            table += &format!(
                "| {name} | {short} | {all} | {} | {} | {} |\n",
                got.0, got.1, got.2
            );
            if got != (0, 1, exits(ptx, &k.name)) {
                wrong.push(format!("{name} {}: {got:?}", k.name));
            }
        }
    }
    println!("{table}");
    assert!(
        wrong.is_empty(),
        "global loads, atomics and reductions the entry probes add (want 0, 1, one per exit):\n{}",
        wrong.join("\n")
    );
}

/// Where the epoch claim's round trip is paid in a kernel's SASS: the claim (`ATOMG`, the
/// kernel's first atomic), the first instruction that touches its destination register (a
/// read waits for the atomic's result, and so does a write), and the kernel's first global
/// load (the entry probes add none: `the_entry_probes_add_no_global_load`). Indices into
/// the kernel's instructions, NOPs left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ClaimWait {
    claim: usize,
    first_use: usize,
    first_load: usize,
}

fn claim_wait(sass: &[String]) -> Option<ClaimWait> {
    use ikp_host::sass::parse::opcode;
    let ins: Vec<&String> = sass.iter().filter(|i| opcode(i) != "NOP").collect();
    let registers = |i: &str| -> Vec<String> {
        let ops = i.split_once(opcode(i)).map_or("", |(_, rest)| rest);
        ops.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| {
                w.len() > 1 && w.starts_with('R') && w[1..].bytes().all(|b| b.is_ascii_digit())
            })
            .map(str::to_string)
            .collect()
    };
    let claim = ins.iter().position(|i| opcode(i).starts_with("ATOMG"))?;
    // `ATOMG.E.ADD.64.STRONG.GPU PT, R24, desc[UR6][R2.64], R24`: the destination follows
    // the predicate; a 64-bit one is a register pair.
    let dst = registers(ins[claim]).into_iter().next()?;
    let n: u32 = dst[1..].parse().ok()?;
    let mut dsts = vec![dst];
    if opcode(ins[claim]).contains(".64") {
        dsts.push(format!("R{}", n + 1));
    }
    let first_use = claim
        + 1
        + ins[claim + 1..]
            .iter()
            .position(|i| registers(i).iter().any(|r| dsts.contains(r)))?;
    let first_load = ins.iter().position(|i| is_global_load(opcode(i)))?;
    Some(ClaimWait {
        claim,
        first_use,
        first_load,
    })
}

/// nvcc's PTX of `host/tests/kernels/row_wise.cu` (an RMSNorm laid out as Liger's: a block
/// per row, no loop) for `arch`.
fn row_wise_ptx(arch: &str) -> String {
    nvcc_ptx_of(&test_kernel("row_wise.cu"), arch, &[])
}

/// Entry without a round trip, in SASS: the lane init puts its epoch claim in flight at the
/// kernel's start and reads its result only where the lane is placed, after the entry's
/// own code (`emit::init`, `emit::place`). In row-wise kernels (Triton's vector add and
/// softmax, nvcc's RMSNorm of `row_wise.cu`: no loop) and in loop kernels whose entry loads
/// (Triton's while loop; its attention on sm_90), for sm_80 and sm_90, the first
/// instruction that touches the claim's destination register comes after the kernel's
/// first global load: the kernel's loads go out while the claim's round trip is in flight.
/// `-- --nocapture` prints the table (BENCHMARKS.md, issue #34).
#[test]
fn the_epoch_claim_waits_behind_the_kernels_first_loads() {
    let triton = |name: &str| {
        std::fs::read_to_string(fixture_dir("triton").join(format!("{name}.ptx"))).unwrap()
    };
    let mut modules: Vec<(String, String, String)> = Vec::new();
    for arch in ["sm_80", "sm_90"] {
        modules.push((
            format!("nvcc row_wise.cu {arch}"),
            row_wise_ptx(arch),
            arch.into(),
        ));
    }
    for name in [
        "add_kernel",
        "softmax_kernel",
        "while_loop_kernel",
        "triangular_rows_kernel",
    ] {
        let ptx = triton(name);
        let sm80 = ptx.replace("\n.target sm_90a\n", "\n.target sm_80\n");
        assert_ne!(sm80, ptx, "{name}: its .target");
        modules.push((format!("triton/{name} (retargeted)"), sm80, "sm_80".into()));
        modules.push((format!("triton/{name}"), ptx, "sm_90a".into()));
    }
    modules.push((
        "triton/attn_fwd_kernel".into(),
        triton("attn_fwd_kernel"),
        "sm_90a".into(),
    ));
    let mut table = String::from(
        "| module | arch | kernel | claim (ATOMG) | first global load | first use of the claim |\n|---|---|---|---|---|---|\n",
    );
    let mut wrong = Vec::new();
    for (name, ptx, arch) in &modules {
        let out = instrument(ptx, &ProbeSet::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let probed = assembled(&out.ptx, arch)
            .unwrap_or_else(|e| panic!("{name} instrumented, for {arch}: {e}"));
        for k in &out.manifest.kernels {
            let sass = probed.sass.kernel(&k.name).unwrap();
            let Some(w) = claim_wait(&sass) else {
                wrong.push(format!("{name} {arch} {}: no claim, or no load", k.name));
                continue;
            };
            let short: String = k.name.chars().take(40).collect();
            table += &format!(
                "| {name} | {arch} | {short} | {} | {} | {} |\n",
                w.claim, w.first_load, w.first_use
            );
            if w.first_use <= w.first_load {
                wrong.push(format!("{name} {arch} {}: {w:?}", k.name));
            }
        }
    }
    println!("{table}");
    assert!(
        wrong.is_empty(),
        "the claim's result is waited for before the kernel's first load:\n{}",
        wrong.join("\n")
    );
}

/// Threads per block and dynamic shared memory of each Triton and CuTe fixture's launch
/// (its fixtures.json), by the name `all_modules` gives the module.
fn fixture_launches() -> std::collections::HashMap<String, (u32, u32)> {
    let mut out = std::collections::HashMap::new();
    for kind in ["triton", "cute"] {
        let meta: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(fixture_dir(kind).join("fixtures.json")).unwrap(),
        )
        .unwrap();
        for (file, m) in meta["files"].as_object().unwrap() {
            let threads = m["block_dim"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap() as u32)
                .product();
            let shared = m["shared_bytes"].as_u64().unwrap() as u32;
            out.insert(format!("{kind}/{file}"), (threads, shared));
        }
    }
    out
}

/// Probes keep the kernel's occupancy: for every kernel of every module the SASS comparisons
/// run on and nvcc's `row_wise.cu` (sm_80 and sm_90), assembled plain and instrumented
/// (`entry,loops`) for its target, one SM holds as many of its blocks with the probes as
/// without ([`ikp_host::sass::occupancy`]: registers and shared memory), and the
/// instrumented kernel spills nothing. Blocks are the fixture's launch (threads and dynamic
/// shared memory from its fixtures.json), else every multiple of a warp up to the kernel's
/// `.reqntid` / `.maxntid`, or up to 1024 threads. Registers are a step function's input: at
/// 32 or fewer an SM holds its full 2048 threads, and Triton's looped softmax (128 threads,
/// 32 registers, sixteen blocks) lost a quarter of its warps to probes that held the lane's
/// 64-bit addresses in vector registers across its loops (40 registers, twelve blocks).
/// `-- --nocapture` prints the table (BENCHMARKS.md, issue #34).
#[test]
fn instrumented_kernels_keep_their_occupancy() {
    use ikp_host::instrument::report::Usage;
    use ikp_host::sass::occupancy::blocks_per_sm;
    let launches = fixture_launches();
    let mut modules = all_modules().to_vec();
    for arch in ["sm_80", "sm_90"] {
        modules.push((
            format!("nvcc row_wise.cu {arch}"),
            row_wise_ptx(arch),
            arch.into(),
        ));
    }
    // A lane per warp, and a lane per block (`lanes=block`) on the Triton fixtures.
    let block: ProbeSet = "entry,loops,lanes=block".parse().unwrap();
    let triton: Vec<_> = modules
        .iter()
        .filter(|(name, ..)| name.starts_with("triton/"))
        .map(|(name, ptx, target)| (name.clone(), ptx.clone(), target.clone(), &block))
        .collect();
    let default = ProbeSet::default();
    let builds: Vec<_> = modules
        .into_iter()
        .map(|(name, ptx, target)| (name, ptx, target, &default))
        .chain(triton)
        .collect();
    let mut table = String::from(
        "| module | kernel | threads | registers | blocks per SM |\n|---|---|---|---|---|\n",
    );
    let mut wrong = Vec::new();
    for (name, ptx, target, probes) in builds {
        let arch: ikp_host::Arch = target.parse().unwrap();
        let out = instrument(&ptx, probes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let name = match probes.lanes {
            ikp_host::instrument::LaneUnit::Warp => name,
            ikp_host::instrument::LaneUnit::Block => format!("{name} lanes=block"),
        };
        let plain = assembled(&ptx, &target).unwrap();
        let probed = assembled(&out.ptx, &target).unwrap();
        for k in &out.manifest.kernels {
            let usage = |a: &report::Assembled| -> Usage {
                a.usage.iter().find(|u| u.kernel == k.name).unwrap().clone()
            };
            let (before, after) = (usage(&plain), usage(&probed));
            let (sizes, dynamic): (Vec<u32>, u32) = match launches.get(&name) {
                Some(&(threads, shared)) => (vec![threads], shared),
                None => {
                    let warps = k.warps_per_block.unwrap_or(32);
                    ((1..=warps).map(|w| w * 32).collect(), 0)
                }
            };
            let blocks = |u: &Usage, threads: u32| {
                blocks_per_sm(arch, threads, u.registers, u.shared_bytes + dynamic)
                    .unwrap_or_else(|| panic!("{name}: no SM limits for {arch}"))
            };
            // The block size that loses the most (the largest when none loses).
            let shown = *sizes
                .iter()
                .max_by_key(|&&t| {
                    let (b, a) = (blocks(&before, t), blocks(&after, t));
                    ((b - a.min(b)) * 1024 / b, t)
                })
                .unwrap();
            let short: String = k.name.chars().take(40).collect();
            table += &format!(
                "| {name} | {short} | {} | {} -> {} | {} -> {} |\n",
                if sizes.len() == 1 {
                    sizes[0].to_string()
                } else {
                    format!("{shown} (of 32..{})", sizes.last().unwrap())
                },
                before.registers,
                after.registers,
                blocks(&before, shown),
                blocks(&after, shown)
            );
            for &t in &sizes {
                let (b, a) = (blocks(&before, t), blocks(&after, t));
                if a < b {
                    wrong.push(format!(
                        "{name} {}: {} -> {} registers, {b} -> {a} blocks of {t} threads per SM",
                        k.name, before.registers, after.registers
                    ));
                }
            }
            if after.spill_stores + after.spill_loads > 0 {
                wrong.push(format!(
                    "{name} {}: spills {} bytes stored, {} loaded",
                    k.name, after.spill_stores, after.spill_loads
                ));
            }
        }
    }
    println!("{table}");
    assert!(
        wrong.is_empty(),
        "instrumented kernels that lose blocks per SM or spill:\n{}",
        wrong.join("\n")
    );
}

/// How far into a kernel's SASS a `lanes=block` warp that records nothing takes its branch
/// past the init, at most, besides two instructions a loop (its owner and trip count
/// reset, which every warp runs; softmax, no loop: the 9th instruction of the kernel, 6 of
/// them the probes').
const OFF_WARP_INIT_BRANCH: usize = 12;

/// `lanes=block` on every Triton fixture, in SASS: the init's warp vote (`VOTE.ANY P`)
/// and the branch on it come within the kernel's first [`OFF_WARP_INIT_BRANCH`]
/// instructions (and its loops' resets), so a warp that records nothing runs almost none of the init; and the
/// probes' timer reads, stores and atomics are all behind it or another branch (none runs
/// before the vote's branch).
#[test]
fn a_block_lanes_other_warps_branch_past_the_init_at_once() {
    let block: ProbeSet = "entry,loops,lanes=block".parse().unwrap();
    for f in fixtures("triton") {
        let arch = target_of(&f.ptx).unwrap();
        let out = instrument(&f.ptx, &block).unwrap();
        let a = assembled(&out.ptx, &arch).unwrap();
        for k in &out.manifest.kernels {
            let sass: Vec<String> = a
                .sass
                .kernel(&k.name)
                .unwrap()
                .into_iter()
                .filter(|i| ikp_host::sass::parse::opcode(i) != "NOP")
                .collect();
            // `VOTE.ANY P1, !P2`: a vote into a predicate (the active mask's is into a register).
            let vote_pred = |i: &str| -> Option<String> {
                let rest = i.split_once("VOTE.ANY")?.1.trim_start();
                let dst = rest.split(',').next()?.trim();
                (dst.len() > 1
                    && dst.starts_with('P')
                    && dst[1..].bytes().all(|b| b.is_ascii_digit()))
                .then(|| dst.to_string())
            };
            let (vote, pred) = sass
                .iter()
                .enumerate()
                .find_map(|(n, i)| vote_pred(i).map(|p| (n, p)))
                .unwrap_or_else(|| panic!("{}: no warp vote in\n{}", f.name, sass.join("\n")));
            let branch = sass[vote..]
                .iter()
                .position(|i| i.contains(&format!("@!{pred} BRA")))
                .map(|p| vote + p)
                .unwrap_or_else(|| panic!("{}: no branch on {pred}", f.name));
            assert!(
                branch < OFF_WARP_INIT_BRANCH + 2 * k.counters.len(),
                "{}: the init's branch is instruction {branch}:\n{}",
                f.name,
                sass[..=branch].join("\n")
            );
            let before = &sass[..branch];
            assert!(
                !before.iter().any(|i| i.contains("SR_GLOBALTIMER")
                    || ikp_host::sass::parse::opcode(i).starts_with("ATOMG")
                    || ikp_host::sass::parse::opcode(i).starts_with("REDG")),
                "{}: a probe's timer read or atomic before the init's branch:\n{}",
                f.name,
                before.join("\n")
            );
        }
    }
}

/// The SASS a warp runs along a path through `kernel` (each loop once), as
/// [`Sass::path`] walks it. Not `off`: every predicated branch falls through (a recording
/// warp's path). `off`: what a warp that records nothing runs: it takes the init's branch
/// (the kernel's first predicated branch or exit) and every branch or exit that the
/// recording warp's path guards with a predicate a warp vote gave, negated: the probes'
/// `@!%ikp_on bra` (a `VOTE.ANY` or `VOTEU.ANY` into a predicate, followed through what
/// ptxas does with it: saves to a register, `P2R`, and restores, `ISETP.NE ... R, RZ`;
/// conjunctions, `ISETP.*.AND ..., P`; copies and negations, `PLOP3.LUT P, PT, PT, PT,
/// UP, 0x80 / 0x40`).
fn warp_path(sass: &Sass, kernel: &str, off: bool) -> Vec<String> {
    use ikp_host::sass::parse::opcode;
    use std::collections::{HashMap, HashSet};
    // Predicates and registers holding a vote: true as given, false negated.
    let mut votes: HashMap<String, bool> = HashMap::new();
    let mut skips: HashSet<u64> = HashSet::new();
    let on = sass
        .path(kernel, |addr, i| {
            let op = opcode(i);
            let ops: Vec<&str> = i
                .split_once(op)
                .map_or("", |(_, r)| r)
                .split(',')
                .map(str::trim)
                .collect();
            if let Some(g) = i
                .strip_prefix('@')
                .and_then(|g| g.split_whitespace().next())
            {
                let (p, negated) = g.strip_prefix('!').map_or((g, false), |p| (p, true));
                if (op == "BRA" || op == "EXIT") && votes.get(p) == Some(&negated) {
                    skips.insert(addr);
                }
            }
            let dst = ops[0].to_string();
            let is_pred = |s: &str| s.starts_with('P') || s.starts_with("UP");
            let vote = |s: &&str| votes.get(*s).copied();
            let kept = if op.starts_with("VOTE.ANY") || op.starts_with("VOTEU.ANY") {
                is_pred(&dst).then_some(true)
            } else if op == "P2R" && ops.get(1) == Some(&"PR") {
                let mask = u32::from_str_radix(ops[3].trim_start_matches("0x"), 16).unwrap_or(0);
                votes
                    .iter()
                    .filter(|(_, on)| **on)
                    .filter_map(|(p, _)| p.strip_prefix('P')?.parse::<u32>().ok())
                    .any(|n| mask >> n & 1 == 1)
                    .then_some(true)
            } else if op.starts_with("ISETP.NE") && ops.get(3) == Some(&"RZ") {
                ops.get(2).and_then(vote)
            } else if (op.starts_with("ISETP") || op.starts_with("UISETP")) && op.contains(".AND") {
                ops.last().and_then(vote).filter(|on| *on)
            } else if op == "PLOP3.LUT" && ops[1..4] == ["PT", "PT", "PT"] {
                match ops.get(5) {
                    Some(&"0x80") => ops.get(4).and_then(vote),
                    Some(&"0x40") => ops.get(4).and_then(vote).map(|on| !on),
                    _ => None,
                }
            } else {
                None
            };
            match kept {
                Some(on) => votes.insert(dst, on),
                None => votes.remove(&dst),
            };
            false
        })
        .unwrap();
    if !off {
        return on;
    }
    let mut first = true;
    sass.path(kernel, |addr, i| {
        let op = opcode(i);
        if !i.starts_with('@') || !(op == "BRA" || op == "EXIT") {
            return false;
        }
        std::mem::replace(&mut first, false) || skips.contains(&addr)
    })
    .unwrap()
}

/// What only the lane's init, placement, records and finalize run: atomics, reductions
/// and clock reads (the kernels under test have none of their own).
fn is_probe_op(i: &str) -> bool {
    let op = ikp_host::sass::parse::opcode(i);
    op.starts_with("ATOMG") || op.starts_with("RED") || i.contains("SR_CLOCKLO")
}

/// A `%globaltimer` read: a deferred loop begin's is the one a warp without a lane runs.
fn is_timer_read(i: &str) -> bool {
    i.contains("SR_GLOBALTIMER")
}

/// What a warp that records nothing adds to a kernel's path, at most, in SASS
/// instructions (sm_80 / sm_90a, pinned toolchain): -2 to 14 over the Triton fixtures (the
/// block's x index times the lanes per block, its compare and branch, taken before the
/// rest of the block's index is read; a branch past the finalize). 2 to 20 while the whole
/// block index came first.
const OFF_PATH_GROWTH: usize = 16;

/// And per loop with probes: the branches past its begin and end, a deferred begin (its
/// timer read and owner choice, run predicated), what ptxas if-converted of the rest, and
/// its trip add (about 5 to 14 a loop).
const OFF_PATH_PER_LOOP: usize = 16;

/// A Triton fixture plain and instrumented with one probe set, assembled.
struct TritonBuild {
    fixture: String,
    arch: &'static str,
    at: &'static str,
    plain: Arc<report::Assembled>,
    probed: Arc<report::Assembled>,
    kernels: Vec<ikp_host::instrument::KernelProbes>,
}

/// Every Triton fixture with `ikp.triton`'s default probes, `entry` alone and
/// `lanes=block`, for sm_80 (where it assembles: not the wgmma and TMA kernels) and sm_90a.
fn triton_builds() -> Vec<TritonBuild> {
    let mut out = Vec::new();
    for f in fixtures("triton") {
        for arch in ["sm_80", "sm_90a"] {
            let ptx = f.ptx.replace(".target sm_90a", &format!(".target {arch}"));
            let Ok(plain) = assembled(&ptx, arch) else {
                continue; // wgmma and TMA kernels assemble for sm_90a only
            };
            for at in ["entry", "entry,loops", "entry,loops,lanes=block"] {
                let probed = instrument(&ptx, &at.parse().unwrap()).unwrap();
                out.push(TritonBuild {
                    fixture: f.name.clone(),
                    arch,
                    at,
                    plain: plain.clone(),
                    probed: assembled(&probed.ptx, arch).unwrap(),
                    kernels: probed.manifest.kernels,
                });
            }
        }
    }
    out
}

/// No probe's atomic is warp-aggregated by ptxas (a vote, a leader, a population count
/// and a shuffle around it: some 12 SASS instructions each), on every Triton fixture,
/// sm_80 and sm_90a, with the probe sets of [`warps_without_a_lane_run_past_their_lanes_probes`]:
/// one thread adds, which ptxas takes for a warp's worth of threads where it cannot tell
/// (behind the branch past a loop's end on sm_90, where the recording thread was elected
/// at the kernel's start, it aggregated both of the end's atomics until their operand
/// carried the thread's lane index selected away).
#[test]
fn no_probe_atomic_is_warp_aggregated() {
    use ikp_host::sass::parse::opcode;
    let aggregation = |sass: &[String]| {
        sass.iter()
            .filter(|i| {
                matches!(
                    opcode(i).split('.').next(),
                    Some("FLO" | "UFLO" | "POPC" | "UPOPC")
                )
            })
            .count()
    };
    let mut wrong = Vec::new();
    for b in triton_builds() {
        for k in &b.kernels {
            let (before, after) = (
                aggregation(&b.plain.sass.kernel(&k.name).unwrap()),
                aggregation(&b.probed.sass.kernel(&k.name).unwrap()),
            );
            if after != before {
                wrong.push(format!(
                    "{} {} {}: {before} -> {after} FLO / POPC",
                    b.fixture, b.arch, b.at
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "warp-aggregated probe atomics:\n{}",
        wrong.join("\n")
    );
}

/// Warps without a lane run past their lane's probes: on every Triton fixture, a warp
/// of a block past the buffer's lanes (`entry` and `entry,loops`, `ikp.triton`'s default:
/// it records the first `max_blocks` blocks of a launch) and a block's second warp under
/// `lanes=block` (`entry,loops,lanes=block`) run no probe's atomic or reduction and no
/// timer read but a deferred loop begin's (none unpredicated), and at most
/// [`OFF_PATH_GROWTH`] instructions more than the plain kernel (and [`OFF_PATH_PER_LOOP`]
/// a probed loop), where a recording warp runs the init and finalize (some 50 to 70) and
/// each loop's probes (some 50 more). `-- --nocapture` prints the table (BENCHMARKS.md,
/// "warps without a lane").
#[test]
fn warps_without_a_lane_run_past_their_lanes_probes() {
    let mut table = String::from("| fixture | arch | probes | plain | recording warp | warp without a lane |\n|---|---|---|---|---|---|\n");
    let mut wrong = Vec::new();
    // A probe ptxas if-converted runs predicated off on such a warp: only what runs
    // unpredicated counts.
    let unpredicated = |p: &[String], what: fn(&str) -> bool| {
        p.iter().filter(|i| !i.starts_with('@') && what(i)).count()
    };
    for b in triton_builds() {
        let (name, arch, at) = (&b.fixture, b.arch, b.at);
        for k in &b.kernels {
            let base = warp_path(&b.plain.sass, &k.name, false);
            let (on, off) = (
                warp_path(&b.probed.sass, &k.name, false),
                warp_path(&b.probed.sass, &k.name, true),
            );
            table += &format!(
                "| {name} | {arch} | {at} | {} | +{} | +{} |\n",
                base.len(),
                on.len() as i64 - base.len() as i64,
                off.len() as i64 - base.len() as i64
            );
            let timers = unpredicated(&off, is_timer_read);
            if unpredicated(&off, is_probe_op) != unpredicated(&base, is_probe_op)
                || timers > unpredicated(&base, is_timer_read) + k.counters.len()
            {
                wrong.push(format!(
                    "{name} {arch} {at}: a probe's atomic, or a timer read but a deferred loop begin's, on the path of a warp without a lane:\n{}",
                    off.join("\n")
                ));
            }
            let most = base.len() + OFF_PATH_GROWTH + OFF_PATH_PER_LOOP * k.counters.len();
            if off.len() > most {
                wrong.push(format!(
                    "{name} {arch} {at}: {} instructions on the path of a warp without a lane, the plain kernel's {}, at most {most}",
                    off.len(),
                    base.len()
                ));
            }
        }
    }
    println!("{table}");
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
