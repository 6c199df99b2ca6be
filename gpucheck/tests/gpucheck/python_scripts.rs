//! The bundle's Python checks without a GPU: `triton_probes.py` (the `python/triton-probes`
//! check) imports with the standard library alone and its verifiers accept correct runs and
//! reject damaged ones (`self_check`: trip counts, extents past a launch's GPU duration,
//! slowdowns over the targets); the fixture script it loads compiles.

use std::path::Path;
use std::process::Command;

fn python() -> String {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    if venv.is_file() {
        venv.display().to_string()
    } else {
        "python3".into()
    }
}

#[test]
fn triton_probes_script_imports_and_its_verifiers_judge() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(python())
        .current_dir(&root)
        .args([
            "-c",
            "import sys\n\
             path = 'scripts/triton-ptx-fixtures.py'\n\
             compile(open(path).read(), path, 'exec')\n\
             sys.path.insert(0, 'gpucheck/python')\n\
             import triton_probes\n\
             fails = triton_probes.self_check()\n\
             print('\\n'.join(fails))\n\
             sys.exit(1 if fails else 0)",
        ])
        .output()
        .expect("run the provisioned python (scripts/provision.sh)");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
