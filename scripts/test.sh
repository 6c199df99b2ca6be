#!/usr/bin/env bash
# The test command: provisions the CUDA wheels and libcuda (idempotent, ~10 s cold), then
# runs the whole test suite. CI (.ci/run) calls exactly this.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/provision.sh
# shellcheck source=env.sh
source scripts/env.sh
cargo test --workspace --all-targets --locked "$@"
cargo test --workspace --doc --locked
# The formats are specified in rustdoc: broken links there fail the run.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet
# Bounded fuzz run of the decoders and the file reader over the committed seed corpus
# (about a minute after the first build); IKP_SKIP_FUZZ=1 skips it.
[ -n "${IKP_SKIP_FUZZ:-}" ] || bash scripts/fuzz.sh
