#!/usr/bin/env bash
# The Python package's tests (docs/python.md): builds the abi3 wheel of python/ with
# maturin (dev profile, in the workspace's target directory, so a warm run rebuilds
# nothing), installs it into a fresh venv (target/py-venv) with the pinned test
# requirements (python/requirements-test.txt, and Triton for ikp.triton's tests:
# python/requirements-triton.txt; from pip's cache once downloaded), and runs
# pytest there on the shipped samples. Run by scripts/test.sh after provision.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
venv="$root/.venv"
wheels="$root/target/py-wheels"
rm -rf "$wheels"
"$venv/bin/maturin" build --quiet --profile dev --locked -m python/Cargo.toml \
  --interpreter "$venv/bin/python" --out "$wheels"
wheel=$(ls "$wheels"/ikp-*.whl)
pyvenv="$root/target/py-venv"
rm -rf "$pyvenv"
"$venv/bin/python" -m venv "$pyvenv"
"$pyvenv/bin/pip" install --quiet --disable-pip-version-check -r python/requirements-test.txt \
  -r python/requirements-triton.txt
"$pyvenv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$wheel"
# Run from outside the source tree: the tests import the installed package, not python/ikp.
cd "$pyvenv"
"$pyvenv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests"
# The GPU bundle's Python clients (gpucheck/python/gpu_clients.py), without pytest: their
# verifiers must accept correct runs and reject damaged ones (a synthetic Proton trace
# decoded by the installed ikp included); then the script as the bundle runs it, here
# without CuPy, torch or a GPU: the wheel installs and imports, the GPU checks skip.
clients="$root/gpucheck/python/gpu_clients.py"
"$pyvenv/bin/python" "$clients" --self-check
work="$root/target/py-clients"
rm -rf "$work"
"$pyvenv/bin/python" "$clients" --wheel "$wheel" --ikp /nonexistent/ikp --include /nonexistent \
  --work "$work" >"$work.json"
"$pyvenv/bin/python" - "$work.json" <<'PY'
import json, sys
checks = {c["name"]: c for c in json.load(open(sys.argv[1]))}
status = {n: c["status"] for n, c in checks.items()}
want = {"python/wheel": "pass", "python/native": "skip", "python/stream": "skip",
        "python/proton": "skip", "python/triton-probes": "skip"}
if status != want:
    sys.exit(f"gpu_clients.py without a GPU: {status}, expected {want}: {list(checks.values())}")
print("gpu_clients.py without a GPU: " + "; ".join(f"{n} {c['status']} ({c['detail']})" for n, c in checks.items()))
PY
