//! The runner on a machine without a GPU, as CI runs it: every check is reported as
//! skipped with its reason, the test binaries are listed (so they are known to start),
//! both results files are complete, the exit status is 0, and `IKP_GPU_TESTS=1` turns the
//! skips into a failing run. The bundle here is made of stand-ins: in skip mode nothing
//! but `--list` may run, and the stand-ins fail if anything else does.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};

use ikp_gpucheck::{gpu, machine, runner};
use serde_json::Value;

/// Held while this binary writes the bundle's executables and while it starts a child.
///
/// The tests run in parallel threads of one process. A child started while another
/// thread has a stand-in open for writing inherits that descriptor and holds it until
/// its own exec closes it (`O_CLOEXEC`, which std sets, closes it at the exec, not at
/// the fork); executing the stand-in in that window fails with `ETXTBSY` ("Text file
/// busy"), which failed about 1 run in 10. With the lock no child is ever started while
/// an executable is open for writing: `Command::spawn` returns only once the child has
/// exec'd (or failed to), so its inherited descriptors are closed by then.
static WRITING_OR_SPAWNING: Mutex<()> = Mutex::new(());

fn exclusive() -> MutexGuard<'static, ()> {
    // A test that panicked while holding it left nothing half-done that matters here.
    WRITING_OR_SPAWNING
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

fn script(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn bundle(root: &Path) {
    let _writing = exclusive();
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_ikp-gpucheck"), bin.join("ikp-gpucheck")).unwrap();
    for f in ["bin/ikp", "bin/gpu_overhead"] {
        script(&root.join(f), "echo must not run in skip mode >&2; exit 99");
    }
    for e in runner::examples::EXAMPLES {
        script(&root.join("examples").join(e), "exit 99");
    }
    for f in runner::examples::CPP_SOURCES {
        script(&root.join(f), "#error must not be compiled in skip mode");
    }
    script(
        &root.join(runner::readme::README),
        "must not be read in skip mode",
    );
    // Each test binary lists two tests of each of its suites and one test of a module the
    // bundle does not run.
    for binary in runner::tests::binaries() {
        let mut list = String::new();
        for s in runner::tests::SUITES.iter().filter(|s| s.binary == binary) {
            list += &format!("{0}::first: test\\n{0}::second: test\\n", s.module);
        }
        list += "not_bundled::cpu_only: test\\n\\n";
        script(
            &root.join("tests").join(binary),
            &format!("if [ \"$1\" = --list ]; then printf '{list}'; exit 0; fi; exit 99"),
        );
    }
    // The real Python clients' script; in skip mode it never opens the wheel.
    std::fs::create_dir_all(root.join("python")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(runner::python::SCRIPT),
        root.join(runner::python::SCRIPT),
    )
    .unwrap();
    std::fs::write(root.join("python/ikp-0.1.0-cp39-abi3-linux_x86_64.whl"), "").unwrap();
    std::fs::write(
        root.join("bundle.json"),
        r#"{"commit": "abc123", "files": []}"#,
    )
    .unwrap();
}

fn run(bundle: &Path, results: &Path, gpu_tests: Option<&str>) -> (i32, Value, String) {
    run_with(bundle, results, gpu_tests, None)
}

fn run_with(
    bundle: &Path,
    results: &Path,
    gpu_tests: Option<&str>,
    python: Option<&str>,
) -> (i32, Value, String) {
    run_only(bundle, results, gpu_tests, python, None)
}

fn run_only(
    bundle: &Path,
    results: &Path,
    gpu_tests: Option<&str>,
    python: Option<&str>,
    only: Option<&str>,
) -> (i32, Value, String) {
    let mut cmd = Command::new(bundle.join("bin/ikp-gpucheck"));
    cmd.arg("run").arg(results).arg("--bundle").arg(bundle);
    cmd.env_remove("IKP_GPU_TESTS")
        .env_remove("IKP_PYTHON")
        .env_remove(runner::ONLY_VAR);
    if let Some(o) = only {
        cmd.env(runner::ONLY_VAR, o);
    }
    if let Some(v) = gpu_tests {
        cmd.env("IKP_GPU_TESTS", v);
    }
    if let Some(p) = python {
        cmd.env("IKP_PYTHON", p);
    }
    let child = {
        let _spawning = exclusive();
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let out = child.wait_with_output().unwrap();
    let json: Value =
        serde_json::from_slice(&std::fs::read(results.join("gpu-results.json")).unwrap()).unwrap();
    let md = std::fs::read_to_string(results.join("gpu-results.md")).unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ikp GPU checks:"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    (out.status.code().unwrap_or(-1), json, md)
}

/// `IKP_GPU_ONLY` runs the steps it names and no other: a short GPU session spends its
/// minutes on the checks it is about.
#[test]
fn only_the_selected_steps_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bundle");
    bundle(&root);
    let (code, json, _) = run_only(
        &root,
        &dir.path().join("r"),
        None,
        None,
        Some("stream, overhead"),
    );
    assert_eq!(code, 0, "{json}");
    let names: Vec<&str> = json["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let mut want = vec!["machine".to_owned()];
    want.extend(
        gpu::CHECKS
            .iter()
            .filter(|c| c.starts_with("stream") || c.starts_with("overhead"))
            .map(|c| c.to_string()),
    );
    want.push("overhead".into());
    want.extend(runner::ncu::KERNELS.map(|k| format!("overhead/ncu/{k}")));
    assert_eq!(names, want);
    assert!(want.len() > 4, "{want:?}");
    assert_eq!(
        json["machine"]["only"],
        serde_json::json!(["stream", "overhead"])
    );
}

#[test]
fn without_a_gpu_every_check_skips_with_its_reason() {
    if !machine::os_sees_gpu().is_empty() {
        eprintln!(
            "SKIPPED without_a_gpu_every_check_skips_with_its_reason: this machine has an NVIDIA \
             GPU, so the runner would run the checks (CI has none)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bundle");
    bundle(&root);
    let (code, json, md) = run(&root, &dir.path().join("r1"), None);
    assert_eq!(code, 0, "{json:#}");
    assert_eq!(json["format"], "ikp-gpu-results");
    assert_eq!(json["complete"], true, "the final files say the run ended");
    assert_eq!(json["gpu_required"], false);
    assert_eq!(json["machine"]["bundle"]["commit"], "abc123");
    // Where an NVRTC loaded, the machine names its builtins library (or null: none).
    let machine = json["machine"].as_object().unwrap();
    if machine["nvrtc_version"].is_string() {
        assert!(machine.contains_key("nvrtc_builtins"), "{json:#}");
    }
    let checks = json["checks"].as_array().unwrap();
    let names: Vec<&str> = checks.iter().map(|c| c["name"].as_str().unwrap()).collect();
    let mut want = vec!["machine".to_owned()];
    want.extend(gpu::CHECKS.iter().map(|c| c.to_string()));
    want.push("overhead".into());
    want.extend(
        runner::examples::EXAMPLES
            .iter()
            .map(|e| format!("example/{e}")),
    );
    want.push(format!("example/{}", runner::examples::CPP_EXAMPLE));
    want.push(runner::readme::CHECK.to_owned());
    want.extend(
        [
            "python/wheel",
            "python/native",
            "python/stream",
            "python/proton",
            "python/triton-probes",
            "python/torch-compile",
            "python/triton-autotune",
        ]
        .map(String::from),
    );
    for suite in &runner::tests::SUITES {
        for t in ["first", "second"] {
            want.push(format!("test/{}/{t}", suite.module));
        }
    }
    for target in runner::examples::EXAMPLES
        .iter()
        .map(|e| format!("example/{e}"))
        .chain(["overflow".to_owned()])
    {
        for tool in runner::sanitizer::TOOLS {
            want.push(format!("sanitizer/{tool}/{target}"));
        }
    }
    want.extend(runner::ncu::KERNELS.map(|k| format!("overhead/ncu/{k}")));
    assert_eq!(names, want);
    // What a GPU machine that hands back eight files at most returns whole: the results,
    // and one archive of the logs.
    let mut top: Vec<String> = std::fs::read_dir(dir.path().join("r1"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(
        top,
        ["gpu-files.tar.gz", "gpu-results.json", "gpu-results.md"]
    );
    let listed = {
        let _spawning = exclusive();
        Command::new("tar")
            .arg("-tzf")
            .arg(dir.path().join("r1").join(runner::ARCHIVE))
            .output()
            .unwrap()
    };
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("files/logs/session_gpu.list.stdout"),
        "{listed}"
    );
    for c in checks {
        assert_eq!(c["status"], "skip", "{c}");
        let why = c["detail"].as_str().unwrap();
        assert!(why.starts_with("no CUDA GPU"), "{c}");
    }
    assert_eq!(json["summary"]["skip"], checks.len());
    assert_eq!(json["summary"]["exit"], 0);
    assert!(md.contains("| overhead | skip | no CUDA GPU"), "{md}");
    assert!(md.contains("| python/proton | skip | no CUDA GPU"), "{md}");
    // The suites of GPU tests are GPU checks, the others are not.
    let gpu_flag = |n: &str| checks.iter().find(|c| c["name"] == n).unwrap()["gpu"].clone();
    assert_eq!(gpu_flag("test/session_gpu/first"), true);
    assert_eq!(gpu_flag("test/examples_gpu/second"), true);
    assert_eq!(gpu_flag("test/nvrtc_compile/first"), false);
    assert_eq!(gpu_flag("test/device_nvrtc/first"), false);
    assert_eq!(gpu_flag("python/native"), true);
    assert_eq!(gpu_flag("python/wheel"), false);

    // A GPU was required: the same run fails, and says why.
    let (code, json, md) = run(&root, &dir.path().join("r2"), Some("1"));
    assert_eq!(code, 1, "{json:#}");
    assert_eq!(json["gpu_required"], true);
    assert_eq!(json["summary"]["exit"], 1);
    assert!(md.contains("skipped although a GPU was required"), "{md}");
}

#[test]
fn a_broken_bundle_fails_before_anything_runs() {
    if !machine::os_sees_gpu().is_empty() {
        return eprintln!("SKIPPED a_broken_bundle_fails_before_anything_runs: machine has a GPU");
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bundle");
    bundle(&root);
    std::fs::remove_file(root.join("bin/gpu_overhead")).unwrap();
    std::fs::remove_file(root.join("tests/host")).unwrap();
    let (code, json, _) = run(&root, &dir.path().join("r"), None);
    assert_eq!(code, 1);
    let bundle_check = json["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "bundle")
        .unwrap();
    assert_eq!(bundle_check["status"], "fail");
    let detail = bundle_check["detail"].as_str().unwrap();
    assert!(
        detail.contains("bin/gpu_overhead") && detail.contains("tests/host"),
        "{detail}"
    );
    // The suites of the missing binary fail, one check each, saying why.
    for suite in runner::tests::SUITES.iter().filter(|s| s.binary == "host") {
        let c = json["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == format!("test/{}", suite.module))
            .unwrap_or_else(|| panic!("no check for {}: {json:#}", suite.module));
        assert_eq!(c["status"], "fail", "{c}");
    }
}

#[test]
fn without_python_the_python_step_is_one_skip_that_says_why() {
    if !machine::os_sees_gpu().is_empty() {
        return eprintln!(
            "SKIPPED without_python_the_python_step_is_one_skip_that_says_why: machine has a GPU"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bundle");
    bundle(&root);
    let (code, json, _) = run_with(
        &root,
        &dir.path().join("r"),
        None,
        Some("/nonexistent/python3"),
    );
    assert_eq!(code, 0, "{json:#}");
    let checks = json["checks"].as_array().unwrap();
    let python: Vec<&Value> = checks
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("python"))
        .collect();
    assert_eq!(python.len(), 1, "{python:?}");
    assert_eq!(python[0]["name"], "python");
    assert_eq!(python[0]["status"], "skip");
    let why = python[0]["detail"].as_str().unwrap();
    assert!(
        why.starts_with("no CUDA GPU") && why.contains("could not start /nonexistent/python3"),
        "{why}"
    );
}

/// The examples' outputs of a GPU run, at the sizes their launchers write on an H100 / H200
/// (132 SMs): `persistent_stream` streams 20,000 tiles x 8 records per SM (21.1 M records,
/// 161 MiB of stream file), and so does its C++ launcher. The sizes of the traces and of
/// the smaller examples' files were not recorded on the GPU (the archive that held them
/// did not come back): they are set here at a third of the stream file and a few MiB, all
/// over the archive's limit together, as the stream files are alone.
const GPU_OUTPUTS: [(&str, u64); 6] = [
    ("persistent_stream.ikps", 161 << 20),
    ("persistent_stream.pftrace", 56 << 20),
    ("persistent_stream_cpp.ikps", 161 << 20),
    ("persistent.ikp", 3 << 20),
    ("persistent.json", 9 << 20),
    ("persistent_summary.json", 20 << 10),
];
/// What a child that fails loudly writes to its log: more than the archive may hold.
const LOUD_LOG: u64 = 24 << 20;

/// Archive members under `files/logs/`.
fn archived_logs(archive: &Path) -> Vec<String> {
    let listed = {
        let _spawning = exclusive();
        Command::new("tar")
            .arg("-tzf")
            .arg(archive)
            .output()
            .unwrap()
    };
    let mut logs: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|l| l.starts_with("files/logs/") && !l.ends_with('/'))
        .map(String::from)
        .collect();
    logs.sort();
    logs
}

/// A skip-mode run whose files are those of a GPU run (the examples' outputs at their GPU
/// sizes, written where the examples write them, in bytes gzip cannot shrink, and one log
/// of 24 MiB) packs an archive the GPU machine hands back (under 16 MiB) that still holds
/// every log the run wrote, the loud one cut to its head and tail, and lists what it left
/// out. The outputs are written by the stand-in test binary's `--list`, the one child a
/// skip-mode run starts.
#[test]
fn the_archive_stays_under_16_mib_with_a_gpu_runs_outputs_and_keeps_every_log() {
    if !machine::os_sees_gpu().is_empty() {
        return eprintln!("SKIPPED the_archive_stays_under_16_mib_...: machine has a GPU");
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("bundle");
    bundle(&root);
    // The logs a skip-mode run writes, from a run without the outputs.
    let (code, json, _) = run(&root, &dir.path().join("plain"), None);
    assert_eq!(code, 0, "{json:#}");
    let want_logs = archived_logs(&dir.path().join("plain").join(runner::ARCHIVE));
    assert!(!want_logs.is_empty());

    let results = dir.path().join("r");
    let examples = results.join(runner::FILES).join("examples");
    // Once, from the first suite's listing (each suite of the binary lists its tests).
    let mut write = format!("if [ ! -d '{0}' ]; then mkdir -p '{0}'", examples.display());
    for (name, bytes) in GPU_OUTPUTS {
        write += &format!(
            "; head -c {bytes} /dev/urandom > '{}'",
            examples.join(name).display()
        );
    }
    write += &format!("; head -c {LOUD_LOG} /dev/urandom >&2; fi");
    let host = root.join("tests/host");
    let stand_in = std::fs::read_to_string(&host).unwrap();
    {
        let _writing = exclusive();
        std::fs::write(
            &host,
            stand_in.replacen("then printf", &format!("then {write}; printf"), 1),
        )
        .unwrap();
    }
    let (code, json, _) = run(&root, &results, None);
    assert_eq!(code, 0, "{json:#}");
    let archive = results.join(runner::ARCHIVE);
    let bytes = std::fs::metadata(&archive).unwrap().len();
    assert!(bytes < runner::archive::LIMIT, "{bytes} bytes: over 16 MiB");
    assert_eq!(archived_logs(&archive), want_logs);
    // What was left out or cut, in the results.
    let trimmed = json["machine"]["archive_trimmed"].as_array().unwrap();
    let entry = |p: &str| {
        trimmed
            .iter()
            .find(|t| t["path"].as_str().unwrap().ends_with(p))
    };
    let first = runner::tests::SUITES
        .iter()
        .find(|s| s.binary == "host")
        .unwrap();
    let loud = entry(&format!("logs/{}.list.stderr", first.module))
        .unwrap_or_else(|| panic!("{trimmed:?}"));
    assert_eq!(loud["bytes"], LOUD_LOG);
    assert!(loud["kept"].as_u64().unwrap() > 0);
    for big in ["persistent_stream.ikps", "persistent_stream_cpp.ikps"] {
        assert_eq!(
            entry(big).unwrap_or_else(|| panic!("{big}: {trimmed:?}"))["kept"],
            0
        );
    }
    // The small per-check data is kept.
    assert!(entry("persistent_summary.json").is_none(), "{trimmed:?}");
}
