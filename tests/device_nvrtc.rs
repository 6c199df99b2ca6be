//! Compiles the generated `ikp.cuh` with NVRTC (through `ikp::host::cuda::nvrtc`, the path ikp
//! takes at run time) together with the example kernels of the SASS fixtures
//! (`ikp::host::sass::kernels::EXAMPLES`), for sm_80 and sm_90, and checks the PTX reads
//! the special registers and uses the instructions the header promises, kernel by kernel.
//! No GPU is needed; libnvrtc is (`scripts/provision.sh`, `source scripts/env.sh`).
use ikp::host::sass::kernels::EXAMPLES;
use ikp::host::{
    cuda::nvrtc::{self, Compiler},
    Arch,
};

const ARCHS: [Arch; 2] = [Arch::new(8, 0), Arch::new(9, 0)];

/// PTX of the examples for `arch`, instrumented or compiled out, split by kernel.
fn examples_ptx(arch: Arch, profiling: bool) -> Vec<(String, String)> {
    examples_ptx_with(arch, profiling, &[])
}

/// The same, with `-D` switches (`("IKP_CALIBRATE", "0")`).
fn examples_ptx_with(
    arch: Arch,
    profiling: bool,
    defines: &[(&str, &str)],
) -> Vec<(String, String)> {
    if let Err(e) = nvrtc::probe() {
        panic!("{e}");
    }
    let mut compiler = Compiler::new(arch).profiling(profiling);
    for (name, value) in defines {
        compiler = compiler.define(*name, Some(value));
    }
    let ptx = compiler
        .ptx("examples.cu", EXAMPLES)
        .unwrap_or_else(|e| panic!("NVRTC failed on examples.cu for {arch}: {e}"));
    let ptx = ptx
        .ptx()
        .unwrap_or_else(|| panic!("{arch}: NVRTC produced no PTX text"));
    ptx.split(".entry ")
        .skip(1)
        .map(|body| {
            let name = body
                .split(|c: char| c == '(' || c.is_whitespace())
                .next()
                .unwrap();
            (name.to_owned(), body.to_owned())
        })
        .collect()
}

fn kernel<'a>(ptx: &'a [(String, String)], name: &str) -> &'a str {
    &ptx.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("kernel {name} missing from the PTX"))
        .1
}

/// `needle` occurs in `ptx` as a whole operand (so `%clock` does not match `%clock64`).
fn has(ptx: &str, needle: &str) -> bool {
    ptx.match_indices(needle).any(|(i, _)| {
        !ptx[i + needle.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    })
}

#[test]
fn nvrtc_compiles_the_examples_with_the_expected_special_registers() {
    for arch in ARCHS {
        let ptx = examples_ptx(arch, true);
        assert_eq!(ptx.len(), 4, "{arch}: four kernels");
        for (name, body) in &ptx {
            // init: 64-bit start stamps and the SM id; finalize: 64-bit end stamps.
            for reg in ["%globaltimer", "%clock64", "%smid"] {
                assert!(has(body, reg), "{arch} {name}: no {reg}");
            }
            // Records: one wide multiply-add and one 64-bit global store each.
            assert!(has(body, "mad.wide.u32"), "{arch} {name}: no mad.wide.u32");
            assert!(
                has(body, "st.global.u64"),
                "{arch} {name}: no st.global.u64"
            );
        }
        // Globaltimer lanes stamp records with %globaltimer_lo, the clock lane with %clock.
        // Every lane also reads %clock at init, to time its record cost (records made with
        // the record path's own store), and takes its epoch with a 64-bit atomic add.
        let uncalibrated = examples_ptx_with(arch, true, &[("IKP_CALIBRATE", "0")]);
        for name in ["lcs_fence", "lcs_plain", "producer_consumer"] {
            let k = kernel(&ptx, name);
            assert!(has(k, "%globaltimer_lo"), "{arch} {name}");
            assert!(has(k, "%clock"), "{arch} {name}: no calibration");
            assert!(
                !has(kernel(&uncalibrated, name), "%clock"),
                "{arch} {name}: %clock outside the calibration"
            );
        }
        let stores = |k: &str| k.matches("st.global.u64").count();
        for (name, body) in &ptx {
            assert!(!has(body, "st.volatile.global.u64"), "{arch} {name}");
            assert!(
                stores(body) > stores(kernel(&uncalibrated, name)),
                "{arch} {name}: no calibration records"
            );
            assert!(has(body, "atom.global.add.u64"), "{arch} {name}: no epoch");
        }
        let p = kernel(&ptx, "persistent");
        assert!(
            has(p, "%clock") && !has(p, "%globaltimer_lo"),
            "{arch} persistent"
        );
        // Without the epoch code the only atomics left are the wait counters'.
        let no_epochs = examples_ptx_with(arch, true, &[("IKP_EPOCHS", "0")]);
        assert!(!has(kernel(&no_epochs, "lcs_plain"), "atom.global.add.u64"));
        // Fence::Block fences, Fence::None does not.
        assert!(has(kernel(&ptx, "lcs_fence"), "membar.cta"), "{arch}");
        assert!(!has(kernel(&ptx, "lcs_plain"), "membar.cta"), "{arch}");
        // Wait counters: one 64-bit atomic add into the trailer per wait.
        let pc = kernel(&ptx, "producer_consumer");
        assert!(
            has(pc, "atom.global.add.u64") || has(pc, "red.global.add.u64"),
            "{arch}: no 64-bit global atomic add for the wait counters"
        );
    }
}

#[test]
fn nvrtc_compiled_out_kernels_touch_no_profiler_state() {
    for arch in ARCHS {
        let ptx = examples_ptx(arch, false);
        assert_eq!(ptx.len(), 4);
        for (name, body) in &ptx {
            for needle in [
                "%globaltimer",
                "%globaltimer_lo",
                "%clock",
                "%clock64",
                "%smid",
                "st.global.u64",
                "mad.wide.u32",
                "atom.global.add.u64",
            ] {
                assert!(
                    !has(body, needle),
                    "{arch} {name}: {needle} with IKP_ENABLED=0"
                );
            }
        }
    }
}
