#!/usr/bin/env bash
# One command for a lent GPU machine (docs/gpu-bundle.md), within the 10 minutes a command
# may run: the open issues' experiments, then the bundle's stream and overhead steps (ncu
# profiles included) in the time left.
#
#   scripts/gpu-session.sh OUT          (OUT: the device's $OUT; carry out/gpu-bundle)
#
# 1. the bundle's wheel into a temporary directory;
# 2. gpucheck/python/stream_experiment.py (issue #35; CuPy), JSON to OUT/stream.json;
# 3. gpucheck/python/probe_experiment.py on the row-wise fixtures and the while loop
#    (issue #34; torch and Triton), JSON to OUT/probes.json;
# 4. gpucheck/python/overhead_experiment.py (issue #36: what a lane's init and finalize
#    cost the persistent and load / compute / store kernels; CuPy), JSON to
#    OUT/overhead-experiment.json;
# 5. the bundle with IKP_GPU_ONLY=stream,overhead (issues #35, #36) into OUT/bundle, its
#    budget what is left of SESSION_S.
# The experiments' output goes to OUT/session.log. A step that fails is logged and the next
# one runs; the exit status is the bundle's. What comes back stays within the device's 8
# files: session.log, the three experiments' JSON and the bundle's four.
# IKP_BUNDLE names another bundle (the tests run this script on their skip-mode bundle).
set -u
out=${1:?usage: scripts/gpu-session.sh OUT}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bundle=${IKP_BUNDLE:-$root/out/gpu-bundle}
python=${IKP_PYTHON:-python3}
SESSION_S=${SESSION_S:-570}
start=$SECONDS
mkdir -p "$out"
log=$out/session.log
: >"$log"
step() { echo "== $* ($((SECONDS - start)) s)" >>"$log"; }

wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
step "wheel"
"$python" -m pip install -q --no-index --no-deps --target "$wheels" "$bundle"/python/ikp-*.whl >>"$log" 2>&1 ||
  echo "the wheel did not install" >>"$log"

step "stream_experiment.py"
timeout 120 "$python" "$root/gpucheck/python/stream_experiment.py" --wheel-dir "$wheels" \
  --include "$bundle/include" --out "$out/stream.json" >>"$log" 2>&1 ||
  echo "stream_experiment.py: exit $?" >>"$log"

step "probe_experiment.py"
timeout 210 "$python" "$root/gpucheck/python/probe_experiment.py" --wheel-dir "$wheels" \
  --kernels softmax_kernel,layer_norm_fwd_kernel,while_loop_kernel,add_kernel \
  --out "$out/probes.json" >>"$log" 2>&1 ||
  echo "probe_experiment.py: exit $?" >>"$log"

step "overhead_experiment.py"
timeout 60 "$python" "$root/gpucheck/python/overhead_experiment.py" --wheel-dir "$wheels" \
  --include "$bundle/include" --out "$out/overhead-experiment.json" >>"$log" 2>&1 ||
  echo "overhead_experiment.py: exit $?" >>"$log"

left=$((SESSION_S - (SECONDS - start)))
step "bundle: stream, overhead, ${left} s"
IKP_GPU_BUDGET_S=$((left > 30 ? left : 30)) IKP_GPU_ONLY=stream,overhead \
  "$bundle/run.sh" "$out/bundle"
status=$?
step "done, bundle exit $status"
exit $status
