#!/usr/bin/env bash
# build-wheel.sh PROFILE OUTDIR: the Python package's wheel (python/), as users get it: abi3
# (one wheel for CPython >= 3.9), manylinux_2_28 (glibc 2.28: RHEL 8, Ubuntu 20.04 and
# newer, wherever Triton's own wheels install), with the `ikp` command as a console script.
# No container: maturin links with zig (PyPI ziglang, in .venv from scripts/provision.sh)
# against glibc 2.28's symbols, in the workspace's target directory, so a warm build
# rebuilds nothing. Then scripts/check-wheel.py reads the wheel back: its tags, the native
# module's glibc symbol versions and libraries, the console script; any problem fails.
# PROFILE: dev (the test command's) or release (the GPU bundle's). Prints the wheel's path.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 PROFILE OUTDIR" >&2; exit 2; }
profile=$1
out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
max_glibc=2.28
# maturin finds zig as `python3 -m ziglang`, with the venv's python3.
export PATH="$venv/bin:$PATH"
rm -rf "$out"
"$venv/bin/maturin" build --quiet --profile "$profile" --locked -m "$root/python/Cargo.toml" \
  --interpreter "$venv/bin/python" --zig --compatibility "manylinux_${max_glibc/./_}" \
  --out "$out" >&2
wheel=$(ls "$out"/ikp-*.whl)
"$venv/bin/python" "$root/scripts/check-wheel.py" "$wheel" --max-glibc "$max_glibc" >&2
echo "$wheel"
