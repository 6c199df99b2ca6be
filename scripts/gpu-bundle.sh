#!/usr/bin/env bash
# Builds the GPU bundle: every executable the GPU checks need, in release mode and
# stripped, plus the runner run.sh, into OUT_DIR. Needs no GPU and no CUDA (the binaries
# load libcuda and NVRTC at run time, from the GPU machine), and the bundle needs nothing
# from this repository when it runs.
#
#   bash scripts/gpu-bundle.sh OUT_DIR      then, on the GPU machine:  OUT_DIR/run.sh RESULTS
#
# Layout: bin/ (ikp-gpucheck = the runner, ikp = the CLI, gpu_overhead = the overhead
# bench), examples/ (the example launchers the runner runs), tests/ (the test binaries whose modules
# launch kernels or compile them with NVRTC: ikp-host's `host`, the root's `integration`;
# the runner runs the modules named in gpucheck/src/runner/tests.rs, SUITES), python/ (the Python package's abi3 wheel, release
# build, and gpu_clients.py, the Python clients' checks), include/ (ikp.cuh and
# ikp_host.hpp, as `ikp header` writes them), cpp/ (the C++ launcher's sources, compiled on
# the GPU machine), run.sh, bundle.json (commit, build, files).
# At most 60 MiB (the GPU machine takes 64 MiB per call). CI builds it and runs it in skip
# mode. The wheel needs maturin from .venv (scripts/provision.sh).
#
# IKP_BUNDLE_PROFILE=dev (scripts/test.sh): the same bundle built with the dev profile in
# the workspace's own target directory, from the test build's artifacts, so only what the
# tests did not link is built. For the skip-mode run only (proving the bundle builds, starts
# and lists its tests): unoptimized code must not time anything on a GPU, and its size is
# not held to the limit. bundle.json names the profile.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: bash scripts/gpu-bundle.sh OUT_DIR}
cd "$root"

profile=${IKP_BUNDLE_PROFILE:-release}
case "$profile" in
release)
  # Release code without debug info, symbols stripped by rustc; its own target directory,
  # so these settings never invalidate the developer's release builds.
  export CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=symbols
  export CARGO_TARGET_DIR="${IKP_BUNDLE_TARGET_DIR:-$root/target/gpu-bundle-build}"
  described="release, no debug info, stripped"
  packages=(-p ikp-cli -p ikp-gpucheck -p ikp-host -p ikp)
  ;;
dev)
  described="dev (unoptimized, for the skip-mode run only)"
  # The whole workspace, as `cargo test --workspace` selects it: the same feature
  # resolution, hence the same artifacts.
  packages=(--workspace)
  ;;
*)
  echo "gpu bundle: IKP_BUNDLE_PROFILE=$profile: release (the default) or dev" >&2
  exit 2
  ;;
esac
# The example launchers (gpucheck/src/runner/examples.rs, EXAMPLES; not every example of
# the workspace), and the test binaries (one per crate) that hold the runner's suites.
examples=(load_compute_store persistent persistent_stream warp_specialized)
tests=(host integration)

msgs=$(mktemp)
trap 'rm -f "$msgs"' EXIT
# One cargo invocation: the selected packages share one feature resolution, so every
# dependency is compiled once.
cargo build --profile "$profile" --locked --message-format=json-render-diagnostics \
  "${packages[@]}" --bin ikp --bin ikp-gpucheck "${examples[@]/#/--example=}" --bench gpu_overhead \
  "${tests[@]/#/--test=}" >"$msgs"

rm -rf "$out"
mkdir -p "$out/bin" "$out/examples" "$out/tests"
# Each artifact's executable, by target kind and name (cargo's JSON messages).
python3 - "$msgs" "$out" <<'PY'
import json, shutil, sys, os
msgs, out = sys.argv[1], sys.argv[2]
placed = {}
for line in open(msgs):
    m = json.loads(line)
    exe = m.get("executable") if m.get("reason") == "compiler-artifact" else None
    if not exe:
        continue
    kind, name = m["target"]["kind"][0], m["target"]["name"]
    folder = {"bin": "bin", "bench": "bin", "example": "examples", "test": "tests"}[kind]
    dest = os.path.join(out, folder, name)
    shutil.copy2(exe, dest)
    placed[f"{folder}/{name}"] = exe
for k in sorted(placed):
    print(f"  {k}")
PY
cp scripts/gpu-run.sh "$out/run.sh"
chmod +x "$out/run.sh"
# The header the Python clients compile their kernel with, from the CLI just built.
"$out/bin/ikp" header -o "$out/include" >/dev/null
# The Python package: its manylinux_2_28 wheel, checked (scripts/build-wheel.sh), built in
# the same target directory with the same profile (with the dev profile, the same build as
# scripts/test-python.sh's: a warm one rebuilds nothing).
if [ ! -x "$root/.venv/bin/maturin" ]; then
  echo "gpu bundle: $root/.venv/bin/maturin is missing: run bash scripts/provision.sh first" >&2
  exit 1
fi
bash scripts/build-wheel.sh "$profile" "$out/python" >/dev/null
cp gpucheck/python/gpu_clients.py gpucheck/python/triton_probes.py gpucheck/python/triton_compile.py \
  scripts/triton-ptx-fixtures.py "$out/python/"
# The C++ launcher the runner compiles with the GPU machine's nvcc (runner/examples.rs).
mkdir -p "$out/cpp/persistent_stream"
cp examples/persistent_stream/launcher.cu examples/persistent_stream/kernel.cu "$out/cpp/persistent_stream/"
# The README, whose CUDA C++ path the runner follows (runner/readme.rs).
mkdir -p "$out/docs"
cp README.md "$out/docs/README.md"

# bundle.json: what was built, from which commit.
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
dirty=false; git diff --quiet HEAD 2>/dev/null || dirty=true
python3 - "$out" "$commit" "$dirty" "$(rustc -V)" "$(uname -srm)" "$described" <<'PY'
import json, os, sys, datetime
out, commit, dirty, rustc, host, profile = sys.argv[1:7]
files = []
for d, _, names in os.walk(out):
    for n in sorted(names):
        p = os.path.join(d, n)
        files.append({"path": os.path.relpath(p, out), "bytes": os.path.getsize(p)})
info = {
    "commit": commit, "dirty": dirty == "true",
    "built_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "rustc": rustc, "built_on": host, "profile": profile,
    "files": sorted(files, key=lambda f: f["path"]),
}
json.dump(info, open(os.path.join(out, "bundle.json"), "w"), indent=2)
PY

bytes=$(du -sb "$out" | cut -f1)
limit=$((60 * 1024 * 1024))
echo "gpu bundle: $out, $((bytes / 1024 / 1024)) MiB in $(find "$out" -type f | wc -l) files (limit 60 MiB)"
if [ "$profile" = release ] && [ "$bytes" -gt "$limit" ]; then
  echo "gpu bundle: $bytes bytes is over the 60 MiB limit" >&2
  exit 1
fi
