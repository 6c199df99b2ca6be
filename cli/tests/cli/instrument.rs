//! `ikp instrument`: the PTX and its manifest written whole, the manifest readable by the
//! library, refusals with the input's name and line and no output left behind.

use crate::util::{ikp, ikp_ok, repo, text};
use ikp_host::instrument::{kernel_params, LaneUnit, Manifest};

/// `ikp instrument FIXTURE -o DIR/OUT EXTRA...` on the Triton fixture `name` (`.ptx`),
/// in a fresh directory: the directory, the input's path, the output's, what it said.
fn instrument_fixture(
    name: &str,
    out: &str,
    extra: &[&str],
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
    String,
) {
    let dir = tempfile::tempdir().unwrap();
    let input = repo().join(format!("host/tests/ptx/triton/{name}.ptx"));
    let out = dir.path().join(out);
    let mut args = vec![
        "instrument",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let said = ikp_ok(&args);
    (dir, input, out, said)
}

/// `--at ...,lanes=block`: said, and in the manifest, whose layout has a lane a block.
#[test]
fn a_lane_per_block_is_said_and_laid_out() {
    let (dir, _, _, said) = instrument_fixture(
        "layer_norm_fwd_kernel",
        "ln.ptx",
        &["--at", "entry,loops,lanes=block"],
    );
    assert!(
        said.starts_with("layer_norm_fwd_kernel: 3 probes, 3 regions, warps per block 8, a lane per block (its first warp's), buffer symbol"),
        "{said}"
    );
    let manifest =
        Manifest::from_json(&std::fs::read_to_string(dir.path().join("ln.probes.json")).unwrap())
            .unwrap();
    assert_eq!(manifest.probes, "entry,loops,lanes=block");
    let k = &manifest.kernels[0];
    assert_eq!(k.lanes, LaneUnit::Block);
    assert_eq!(k.layout(100, None, 16, 2).groups_per_block, 1);
    assert_eq!(k.layout(100, None, 16, 2).lane_count(), 100);
}

#[test]
fn writes_the_ptx_and_its_manifest_and_says_what_it_did() {
    let (dir, input, out, said) = instrument_fixture("layer_norm_fwd_kernel", "ln.ptx", &[]);
    assert!(said.starts_with("layer_norm_fwd_kernel: 3 probes, 3 regions, warps per block 8, buffer symbol ikp_buf_layer_norm_fwd_kernel\n"), "{said}");
    let ptx = std::fs::read_to_string(&out).unwrap();
    let original = std::fs::read_to_string(&input).unwrap();
    assert_eq!(
        kernel_params(&ptx).unwrap(),
        kernel_params(&original).unwrap()
    );
    let manifest =
        Manifest::from_json(&std::fs::read_to_string(dir.path().join("ln.probes.json")).unwrap())
            .unwrap();
    assert_eq!(manifest.target, "sm_90a");
    assert_eq!(manifest.probes, "entry,loops");
    let k = &manifest.kernels[0];
    assert_eq!(
        (k.regions.len(), k.counters.len(), k.warps_per_block),
        (3, 3, Some(8))
    );
    // A chosen manifest path, and lines.
    let m2 = dir.path().join("m.json");
    ikp_ok(&[
        "instrument",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--at",
        "entry,lines=triton-ptx-fixtures.py:138-139",
        "--manifest",
        m2.to_str().unwrap(),
    ]);
    let m2 = Manifest::from_json(&std::fs::read_to_string(&m2).unwrap()).unwrap();
    assert!(
        m2.kernels[0]
            .regions
            .iter()
            .all(|r| r.starts_with("triton-ptx-fixtures.py:13")),
        "{:?}",
        m2.kernels[0].regions
    );
    assert!(!m2.kernels[0].regions.is_empty());
}

#[test]
fn refuses_bad_input_naming_the_file_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.ptx");
    std::fs::write(&bad, ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r<2>;\nbrx.idx %r1, $T;\nret;\n}\n").unwrap();
    let out = dir.path().join("out.ptx");
    let o = ikp(&[
        "instrument",
        bad.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("bad.ptx") && err.contains("PTX line 7") && err.contains("brx.idx"),
        "{err}"
    );
    assert!(!out.exists() && !dir.path().join("out.probes.json").exists());
    let o = ikp(&[
        "instrument",
        bad.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--at",
        "everything",
    ]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("--at"), "{}", text(&o.stderr));
    let o = ikp(&[
        "instrument",
        "/nonexistent.ptx",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(text(&o.stderr).contains("/nonexistent.ptx"));
}

#[test]
fn the_manifest_is_a_names_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = repo().join("host/tests/ptx/triton/softmax_looped_kernel.ptx");
    let out = dir.path().join("s.ptx");
    ikp_ok(&[
        "instrument",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let names = ikp_host::read_names(&dir.path().join("s.probes.json")).unwrap();
    assert_eq!(names.regions.len(), 2);
    assert!(names.regions.iter().all(|r| r.ends_with(" loop")));
    assert_eq!(
        names.counters,
        names
            .regions
            .iter()
            .map(|r| format!("{r} trips"))
            .collect::<Vec<_>>()
    );
}

/// `--report` as a user reads it: per kernel, registers, blocks per SM at the block size
/// the PTX declares, spills and SASS size, before -> after. The figures are checked
/// against the library's own arithmetic on the registers the table states (not
/// hard-coded), and a kernel keeps its blocks per SM. Needs ptxas and cuobjdump
/// (`scripts/provision.sh`, `source scripts/env.sh`).
#[test]
fn report_shows_what_the_probes_cost_the_kernel_occupancy_included() {
    use ikp_host::{sass::occupancy::blocks_per_sm, Arch};
    let (_dir, _, _, said) = instrument_fixture("softmax_looped_kernel", "s.ptx", &["--report"]);
    let header = said
        .lines()
        .find(|l| l.starts_with("| kernel (sm_90a)"))
        .unwrap_or_else(|| panic!("no report table in:\n{said}"));
    assert_eq!(
        header,
        "| kernel (sm_90a) | registers | blocks per SM | spill stores (B) | spill loads (B) | SASS instructions |"
    );
    let row: Vec<&str> = said
        .lines()
        .find(|l| l.starts_with("| softmax_looped_kernel |"))
        .unwrap_or_else(|| panic!("no row for the kernel in:\n{said}"))
        .trim_matches('|')
        .split('|')
        .map(str::trim)
        .collect();
    let pair = |cell: &str| -> (u32, u32) {
        let mut n = cell
            .split(|c: char| !c.is_ascii_digit())
            .filter(|w| !w.is_empty())
            .map(|w| w.parse::<u32>().unwrap());
        (n.next().unwrap(), n.next().unwrap())
    };
    let (regs_before, regs_after) = pair(row[1]);
    let (blocks_before, blocks_after) = pair(row[2]);
    assert!(row[2].ends_with("(128 threads)"), "{}", row[2]);
    let sm90 = Arch::new(9, 0);
    assert_eq!(
        (Some(blocks_before), Some(blocks_after)),
        (
            blocks_per_sm(sm90, 128, regs_before, 0),
            blocks_per_sm(sm90, 128, regs_after, 0)
        ),
        "{}",
        row[2]
    );
    assert_eq!(
        blocks_after, blocks_before,
        "the probes cost the kernel blocks per SM"
    );
}
