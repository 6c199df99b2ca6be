#!/usr/bin/env bash
# The GPU bundle's runner (scripts/gpu-bundle.sh copies it into the bundle as run.sh).
#
#   run.sh RESULTS_DIR
#
# Runs every GPU check of the bundle (GPU tests, examples end to end, the Python clients
# with this machine's python3 or $IKP_PYTHON, timing truth, one time axis, device-side
# overflow, overhead) within 10 minutes and writes
# RESULTS_DIR/gpu-results.json and RESULTS_DIR/gpu-results.md, children's logs under
# RESULTS_DIR/logs. Exit 0 when nothing failed; 1 when a check failed, or when a GPU check
# was skipped although a GPU was required (IKP_GPU_TESTS=1, or the machine has one).
# Without a GPU every check is skipped with the reason, in seconds. Needs no Rust: the
# binaries use this machine's driver (libcuda) and NVRTC; the results name the files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 1 ]; then
  echo "usage: $0 RESULTS_DIR" >&2
  exit 2
fi
exec "$here/bin/ikp-gpucheck" run "$1" --bundle "$here"
