//! The GPU checks' kernels compile with NVRTC for Ampere and Hopper and are what the host
//! side launches: the entry points exist with the parameter counts the checks pass, the
//! timing kernels stamp with the timer their mode names, and the rendezvous counts its
//! arrivals with a 32-bit atomic (ikp's own atomics are 64-bit). No GPU needed: a mistake here shows up before a GPU is lent.

use ikp_gpucheck::gpu::SOURCE;
use ikp_host::{
    cuda::nvrtc::{self, Compiler},
    Arch,
};

/// (entry point, parameters) as the checks launch them.
const ENTRIES: [(&str, usize); 15] = [
    ("gt_resolution", 4),
    ("timing_globaltimer", 5),
    ("timing_clock", 5),
    ("rendezvous", 4),
    ("overflow", 2),
    ("host_clock_stamp", 2),
    ("ring_wrap", 2),
    ("epoch_replay", 2),
    ("async_ranges", 2),
    ("correction_probe", 2),
    ("warm_up", 3),
    ("persistent_off", 4),
    ("persistent_fixed", 4),
    ("persistent_stream", 4),
    ("persistent_stream_wait", 4),
];

fn entry<'a>(ptx: &'a str, name: &str) -> &'a str {
    let at = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("no entry {name}"));
    let rest = &ptx[at..];
    let end = rest[1..].find(".entry ").map_or(rest.len(), |e| e + 1);
    &rest[..end]
}

#[test]
fn the_checks_kernels_compile_and_match_their_launches() {
    nvrtc::probe().unwrap_or_else(|e| panic!("{e}"));
    for arch in [Arch::new(8, 0), Arch::new(9, 0)] {
        let cubin = Compiler::new(arch)
            .cubin("gpucheck.cu", SOURCE)
            .unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert!(!cubin.bytes().is_empty());
        let ptx = Compiler::new(arch).ptx("gpucheck.cu", SOURCE).unwrap();
        let ptx = ptx.ptx().unwrap();
        assert_eq!(
            ptx.matches(".entry ").count(),
            ENTRIES.len(),
            "{arch}: entry points"
        );
        for (name, params) in ENTRIES {
            let body = entry(ptx, name);
            let head = &body[..body.find('{').unwrap()];
            assert_eq!(
                head.matches(".param ").count(),
                params,
                "{arch} {name}: parameters"
            );
        }
        let global = entry(ptx, "timing_globaltimer");
        let clock = entry(ptx, "timing_clock");
        assert!(
            global.contains("%globaltimer_lo;"),
            "{arch}: globaltimer mode stamps"
        );
        assert!(
            clock.contains("%clock;"),
            "{arch}: clock mode stamps %clock"
        );
        assert!(
            !clock.contains("%globaltimer_lo;"),
            "{arch}: clock mode reads globaltimer_lo"
        );
        assert!(
            entry(ptx, "rendezvous").contains("atom.global.add.u32"),
            "{arch}"
        );
        // The stream kernels call their out-of-line slow path, which publishes HEAD with a
        // release store and reads TAIL with an acquire load, both at system scope; the
        // uninstrumented one records nothing.
        for name in ["persistent_stream", "persistent_stream_wait"] {
            assert!(
                entry(ptx, name).contains("call"),
                "{arch} {name}: no slow-path call"
            );
        }
        assert!(
            ptx.contains("st.release.sys.global.u64"),
            "{arch}: no HEAD publication"
        );
        assert!(
            ptx.contains("ld.acquire.sys.global.u64"),
            "{arch}: no TAIL read"
        );
        assert!(ptx.contains("nanosleep"), "{arch}: the wait mode sleeps");
        assert!(
            !entry(ptx, "persistent_off").contains("st.global.u64"),
            "{arch}: the uninstrumented kernel stores"
        );
    }
}
