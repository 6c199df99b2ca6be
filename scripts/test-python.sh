#!/usr/bin/env bash
# The Python package's tests (docs/python.md): builds the manylinux_2_28 abi3 wheel
# of python/ and checks its tags and glibc symbol versions (scripts/build-wheel.sh: maturin
# with zig, dev profile, in the workspace's target directory, so a warm run rebuilds
# nothing), installs it into a fresh venv (target/py-venv) with the pinned test
# requirements (python/requirements-test.txt, and Triton for ikp.triton's tests:
# python/requirements-triton.txt; from pip's cache once downloaded), and runs pytest there,
# from outside the source tree and with no cargo or rustc on PATH, on the shipped samples:
# the wheel's `ikp` console script is compared with the cargo-built CLI (IKP_CARGO_CLI:
# scripts/test.sh passes the binary its cargo test built; unset, it is built here).
# Run by scripts/test.sh after provision.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
venv="$root/.venv"
t0=$SECONDS
wheel=$(bash scripts/build-wheel.sh dev "$root/target/py-wheels")
echo "test-python.sh: wheel built and checked in $((SECONDS - t0)) s" >&2
# The CLI built by cargo, which the installed `ikp` must match (python/tests/test_cli.py).
cli=${IKP_CARGO_CLI:-}
if [ -z "$cli" ]; then
  cargo build -p ikp-cli --bin ikp --locked --quiet
  cli="$root/target/debug/ikp"
fi
cli=$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")
pyvenv="$root/target/py-venv"
rm -rf "$pyvenv"
"$venv/bin/python" -m venv "$pyvenv"
"$pyvenv/bin/pip" install --quiet --disable-pip-version-check -r python/requirements-test.txt \
  -r python/requirements-triton.txt
"$pyvenv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$wheel"
# Run from outside the source tree: the tests import the installed package, not python/ikp,
# and run the installed `ikp`, with neither cargo nor rustc on PATH.
path="$pyvenv/bin"
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -n "$d" ] && [ ! -e "$d/cargo" ] && [ ! -e "$d/rustc" ] && path="$path:$d"
done
cd "$pyvenv"
PATH="$path" IKP_CARGO_CLI="$cli" IKP_WHEEL="$wheel" \
  "$pyvenv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests"
# The GPU bundle's Python clients (gpucheck/python/gpu_clients.py), without pytest: their
# verifiers must accept correct runs and reject damaged ones (a synthetic Proton trace
# decoded by the installed ikp included); then the script as the bundle runs it, here
# without CuPy, torch or a GPU: the wheel installs and imports, the GPU checks skip.
clients="$root/gpucheck/python/gpu_clients.py"
"$pyvenv/bin/python" "$clients" --self-check
work="$root/target/py-clients"
rm -rf "$work"
# Every check; then two selected (--only), the second with no time left (--seconds 0).
"$pyvenv/bin/python" "$clients" --wheel "$wheel" --ikp /nonexistent/ikp --include /nonexistent \
  --work "$work" >"$work.all.jsonl"
"$pyvenv/bin/python" "$clients" --wheel "$wheel" --ikp /nonexistent/ikp --include /nonexistent \
  --work "$work" --only python/native,python/triton-probes >"$work.only.jsonl"
"$pyvenv/bin/python" "$clients" --wheel "$wheel" --ikp /nonexistent/ikp --include /nonexistent \
  --work "$work" --only python/native,python/triton-probes --seconds 0 >"$work.late.jsonl"
"$pyvenv/bin/python" - "$work" <<'PY'
import json, sys
def statuses(run):
    # One check a line, as the runner reads them.
    checks = [json.loads(line) for line in open(f"{sys.argv[1]}.{run}.jsonl") if line.strip()]
    return {c["name"]: (c["status"], c["detail"]) for c in checks}
skip = "skip"
want = {
    "all": {"python/wheel": "pass", "python/native": skip, "python/stream": skip,
            "python/proton": skip, "python/triton-probes": skip, "python/torch-compile": skip,
            "python/triton-autotune": skip},
    "only": {"python/wheel": "pass", "python/native": skip, "python/triton-probes": skip},
    "late": {"python/wheel": "pass", "python/native": skip, "python/triton-probes": skip},
}
for run, w in want.items():
    got = statuses(run)
    if {n: s for n, (s, _) in got.items()} != w:
        sys.exit(f"gpu_clients.py without a GPU ({run}): {got}, expected {w}")
    if run == "late" and not all("0 s were spent" in d for n, (_, d) in got.items() if n != "python/wheel"):
        sys.exit(f"gpu_clients.py --seconds 0: the skips do not say the time was spent: {got}")
    print(f"gpu_clients.py without a GPU ({run}): " + "; ".join(f"{n} {s} ({d})" for n, (s, d) in got.items()))
PY
# The stream experiment (issue #35, run by hand on a GPU machine) patches ikp.cuh per
# variant: each patch must still apply to the header as it is, and its kernels compile.
"$pyvenv/bin/python" "$root/gpucheck/python/stream_experiment.py" --check-variants --include "$root/device/include" \
  --nvcc "${IKP_CUDA_BIN:?source scripts/env.sh}/nvcc"
# The probes' cost experiment (issue #34, run by hand on a GPU machine): its breakdown's
# arithmetic.
"$pyvenv/bin/python" "$root/gpucheck/python/probe_experiment.py" --self-check
# The lane init / finalize experiment (issue #36, by hand on a GPU machine): its kernels
# compile against the header with each variant's defines, and each is what its variant
# says (read from its SASS: the lane's code in it or not).
"$pyvenv/bin/python" "$root/gpucheck/python/overhead_experiment.py" --check --include "$root/device/include" \
  --nvcc "${IKP_CUDA_BIN:?source scripts/env.sh}/nvcc"
# The launch paths of both CuPy experiments, with the CuPy stand-in of gpucheck/python/testing
# (no GPU: each launch checked against its kernel's parameters and timed by a rule, 300 us,
# 1 % more for a kernel with a lane) and no nvcc on PATH: every launch they name timed, the
# figures as the rule says.
mkdir -p "$root/target/experiments/wheel-dir"
for exp in overhead stream; do
  rm -f "$root/target/experiments/$exp.json"
  PATH=/usr/bin:/bin PYTHONPATH="$root/gpucheck/python/testing" "$pyvenv/bin/python" \
    "$root/gpucheck/python/${exp}_experiment.py" --wheel-dir "$root/target/experiments/wheel-dir" \
    --include "$root/device/include" --out "$root/target/experiments/$exp.json" >/dev/null
done
"$pyvenv/bin/python" - "$root/target/experiments" "$root/gpucheck/python" <<'PY'
import json, os, sys
sys.path.insert(0, sys.argv[2])
import overhead_experiment as o
import stream_experiment as s
d = json.load(open(os.path.join(sys.argv[1], "overhead.json")))
shapes = d["shapes"]
assert sorted(shapes) == sorted(x[0] for x in o.SHAPES), shapes.keys()
for shape, f in shapes.items():
    assert sorted(f["us_per_launch"]) == sorted(v[0] for v in o.VARIANTS), (shape, f["us_per_launch"].keys())
    assert all(len(t) == o.ROUNDS for t in f["us_per_launch"].values()), shape
    med = f["median_us"]
    assert med["off"] == med["bare"] == 300.0 and med["init+finalize"] == 303.0, (shape, med)
assert d["sass"] == {}, "no nvcc on PATH: no SASS facts"
sec = json.load(open(os.path.join(sys.argv[1], "stream.json")))["seconds"]
assert sec["off"] == 300e-6 and sec["fixed/device"] == 303e-6, sec
assert all(name in sec for name, _ in s.VARIANTS) and len(sec) == 10 + len(s.VARIANTS), sorted(sec)
print("overhead_experiment.py and stream_experiment.py with the CuPy stand-in: every launch timed")
PY
