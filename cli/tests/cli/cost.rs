//! `ikp cost` end to end: the table it prints holds the library's own measurement (taken
//! again here, not hard-coded), and a missing toolkit or a bad architecture is a clear
//! error. Needs nvcc and cuobjdump (`scripts/provision.sh`, `source scripts/env.sh`).
use crate::util::ikp_command;
use ikp_host::sass::cost::MODES;
use ikp_host::sass::{CostReport, CudaTools, SassCompiler};
use ikp_host::Arch;
use std::collections::BTreeMap;
use std::process::{Command, Output};

fn run(mut c: Command) -> Output {
    c.output().expect("run ikp")
}

/// Rows of the Markdown table in `text`: label -> cells.
fn table(text: &str) -> (Vec<String>, BTreeMap<String, Vec<String>>) {
    let mut header = Vec::new();
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<String> = line
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_owned())
            .collect();
        if cells[0] == "site" {
            header = cells[1..].to_vec();
        } else if !cells[0].starts_with("---") {
            rows.insert(cells[0].clone(), cells[1..].to_vec());
        }
    }
    (header, rows)
}

/// `"3.125 / 4"` -> `[3.125, 4.0]`; `"0 (identical SASS)"` -> `[0.0]`.
fn numbers(cell: &str) -> Vec<f64> {
    cell.split('/')
        .map(|p| {
            let first = p.split_whitespace().next().unwrap_or("");
            first
                .parse()
                .unwrap_or_else(|_| panic!("not a number: {p:?}"))
        })
        .collect()
}

#[test]
fn cost_table_matches_the_library_measurement() {
    let out = run(ikp_command(&["cost", "--arch", "sm_80"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "ikp cost failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (header, rows) = table(&stdout);
    assert_eq!(header, ["sm_80 SASS instructions"]);

    let tools = CudaTools::discover().unwrap_or_else(|e| panic!("{e}"));
    let c = SassCompiler::new(tools.clone()).unwrap();
    let lib = CostReport::measure(&c, &[Arch::new(8, 0)]).unwrap();
    assert!(stdout.starts_with(&format!("nvcc: {}\n", tools.nvcc_version().unwrap())));
    let a = &lib.archs[0];
    let cell = |label: &str| -> Vec<f64> {
        let cells = rows
            .get(label)
            .unwrap_or_else(|| panic!("no row {label:?} in:\n{stdout}"));
        numbers(&cells[0])
    };
    for (i, m) in MODES.iter().enumerate() {
        let r = a.records[i];
        assert_eq!(
            cell(&format!(
                "record ({}), per record: first 8 added / next 8 added",
                m.label()
            )),
            [r.first, r.steady]
        );
        assert_eq!(
            cell(&format!(
                "record in a runtime loop ({}), per iteration",
                m.label()
            )),
            [a.loop_records[i].growth as f64]
        );
    }
    for (i, m) in MODES.iter().enumerate() {
        let r = a.ring_records[i];
        assert_eq!(
            cell(&format!(
                "ring record ({}), per record: first 8 added / next 8 added",
                m.label()
            )),
            [r.first, r.steady]
        );
        assert_eq!(
            cell(&format!(
                "ring record in a runtime loop ({}), per iteration",
                m.label()
            )),
            [a.ring_loop_records[i].growth as f64]
        );
    }
    assert_eq!(
        cell("async-range record (range_begin / range_end), per record: first 8 added / next 8 added"),
        [a.ranges.0, a.ranges.1]
    );
    assert_eq!(
        cell("lane init + finalize, no record (static count)"),
        [a.setup.total as f64]
    );
    assert_eq!(
        cell("of which record-cost calibration (IKP_CALIBRATE=0 saves)"),
        [a.setup.calibration as f64]
    );
    assert_eq!(
        cell("of which epoch code, run only with epochs > 1 (IKP_EPOCHS=0 saves)"),
        [a.setup.epochs as f64]
    );
    assert_eq!(
        cell("wait-loop tick (IKP_WAIT), per spin"),
        [a.tick() as f64]
    );
    assert_eq!(
        cell("counted wait, per wait that passes at its first try (IKP_WAIT, constant id)"),
        [a.waits.added as f64]
    );
    assert_eq!(
        cell("compiled out (IKP_ENABLED=0), 4 example kernels"),
        [a.compiled_out_difference().1 as f64]
    );
    assert_eq!(
        cell("TVM-style record (fence, leader branch), per record: first 8 added / next 8 added"),
        [a.tvm.0, a.tvm.1]
    );
    assert_eq!(rows.len(), lib.rows().len());
}

#[test]
fn missing_toolkit_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ikp_command(&["cost", "--arch", "sm_80"]);
    c.env("IKP_CUDA_BIN", dir.path());
    let out = run(c);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nvcc not found"), "{err}");
    assert!(err.contains("scripts/provision.sh"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_architecture_is_rejected_by_the_parser() {
    let out = run(ikp_command(&["cost", "--arch", "sm_8x"]));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sm_8x"), "{err}");
}
