#!/usr/bin/env bash
# The test command: provisions the CUDA wheels, libcuda and chromium (idempotent;
# docs/install.md), then runs the whole test suite. CI (.ci/run) calls
# exactly this. IKP_NO_SYSTEM_INSTALL=1: install nothing outside the checkout (provision.sh
# stops, naming what is missing; fuzz.sh skips without cargo-fuzz, tsan.sh without rust-src).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Each phase's wall time goes to stderr, so a slow CI run says where the minutes went.
phase_start=$SECONDS
phase() {
    echo "test.sh: $1 took $((SECONDS - phase_start)) s" >&2
    phase_start=$SECONDS
}
bash scripts/provision.sh
phase provision
# shellcheck source=env.sh
source scripts/env.sh
# The log feeds the count of skipped GPU tests printed last.
mkdir -p target
log=target/test-log.txt
cargo test --workspace --all-targets --locked "$@" 2>&1 | tee "$log"
phase "cargo test"
cargo test --workspace --doc --locked
phase doctests
# The Python package (docs/python.md): its wheel, built in target/ with the dev
# profile, installed into a fresh venv, tested with pytest on the samples.
# Its `ikp` console script is compared with the CLI binary the cargo tests just built.
IKP_CARGO_CLI=target/debug/ikp bash scripts/test-python.sh
phase python
# The formats are specified in rustdoc: broken links there fail the run.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet
phase "cargo doc"
# The decode / write / analysis build of the library (docs/rust.md, "The library"): without its
# default features it must link neither cudarc, the xlsx writer nor the Parquet writer,
# and compile with its tests.
if cargo tree -p ikp-host --no-default-features -e normal --locked --prefix none |
  grep -E '^(cudarc|rust_xlsxwriter|libloading|parquet) '; then
  echo "ikp-host --no-default-features still depends on the crates above" >&2
  exit 1
fi
cargo check -p ikp-host --no-default-features --all-targets --locked --quiet
phase "no-default-features build"
# Bounded fuzz run of the decoders and the file reader over the committed seed corpus
# (half a minute on two cores after the first build); IKP_SKIP_FUZZ=1 skips it.
[ -n "${IKP_SKIP_FUZZ:-}" ] || bash scripts/fuzz.sh
phase fuzz
# The stream drain in Rust against the emulated lanes, both under ThreadSanitizer (the C++
# drain's run is in the cargo tests above); a build of its own, std included.
bash scripts/tsan.sh
phase "thread sanitizer"
# The GPU bundle (docs/gpu-bundle.md): built and run on every run so it cannot rot. Here,
# without a GPU, every check is skipped with its reason and the run exits 0; a required
# GPU (IKP_GPU_TESTS=1) must turn that into a failure. Built with the dev profile from the
# test build's artifacts (IKP_BUNDLE_PROFILE=release, the GPU machine's build, takes
# minutes more); IKP_SKIP_GPU_BUNDLE=1 skips this.
if [ -z "${IKP_SKIP_GPU_BUNDLE:-}" ]; then
  IKP_BUNDLE_PROFILE=${IKP_BUNDLE_PROFILE:-dev} bash scripts/gpu-bundle.sh target/gpu-bundle
  target/gpu-bundle/run.sh target/gpu-results
  if IKP_GPU_TESTS=1 target/gpu-bundle/run.sh target/gpu-results-required >/dev/null; then
    echo "gpu bundle: IKP_GPU_TESTS=1 did not make a run without a GPU fail" >&2
    exit 1
  fi
  # The one-command GPU session (scripts/gpu-session.sh) on the same bundle: without a GPU
  # its experiments fail and say so in its log, the bundle skips, and what it leaves fits
  # the 8 files a device command hands back.
  rm -rf target/gpu-session
  IKP_BUNDLE=target/gpu-bundle bash scripts/gpu-session.sh target/gpu-session >/dev/null
  n=$(find target/gpu-session -type f | wc -l)
  if [ ! -s target/gpu-session/session.log ] || [ ! -f target/gpu-session/bundle/gpu-results.json ] || [ "$n" -gt 8 ]; then
    echo "gpu-session.sh: expected session.log, bundle/gpu-results.json and at most 8 files, got $n" >&2
    exit 1
  fi
  phase "gpu bundle"
fi
echo "test.sh: total $SECONDS s" >&2
# Last line: the tests that skipped (libtest counts them as passed), and why.
skips=$(grep -o 'SKIPPED [A-Za-z0-9_:]*: .*' "$log" || true)
if [ -z "$skips" ]; then
  echo "skipped tests: 0"
else
  why=$(printf '%s\n' "$skips" | sed 's/^SKIPPED [^ ]*: //' | sort | uniq -c | sort -rn |
    sed 's/^ *\([0-9]*\) /\1 x /' | paste -sd '|' - | sed 's/|/; /g')
  echo "skipped tests: $(printf '%s\n' "$skips" | wc -l) ($why)"
fi
