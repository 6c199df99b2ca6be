#!/usr/bin/env bash
# Bounded fuzz run of the decoders and the file reader (called by scripts/test.sh).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     default 10 (5 targets, one per core at a time: 30 s on 2 cores)
#
# cargo-fuzz needs nightly-only rustc flags (-Z sanitizer, sancov); the toolchain here is
# stable, so RUSTC_BOOTSTRAP=1 unlocks them. cargo-fuzz is installed once from crates.io
# into ~/.cargo/bin (skipped when `cargo fuzz --version` works); with IKP_NO_SYSTEM_INSTALL=1
# it is not installed, and a machine without it skips the fuzz run, saying why. Each target starts from its committed seed
# corpus (fuzz/corpus/<target>/, read only: new inputs go to target/fuzz-corpus/) and
# fails on a panic, an allocation beyond the bound of fuzz/src/lib.rs, a run over
# -timeout seconds (a hang) or over -rss_limit_mb. A crash input is saved under
# fuzz/artifacts/<target>/ (git-ignored) and printed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
secs=${1:-${IKP_FUZZ_SECONDS:-10}}
export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
    case "${IKP_NO_SYSTEM_INSTALL:-}" in
    ""|0) cargo install cargo-fuzz --locked --version 0.13.2 ;;
    *)
        echo "fuzz: SKIPPED: cargo-fuzz is not installed, and IKP_NO_SYSTEM_INSTALL=$IKP_NO_SYSTEM_INSTALL" \
            "forbids installing it into ~/.cargo/bin (cargo install cargo-fuzz --locked --version 0.13.2" \
            "provides it)"
        exit 0
        ;;
    esac
fi
# Its own target dir: fuzz builds use different rustc flags than the test build.
export CARGO_TARGET_DIR="${IKP_FUZZ_TARGET_DIR:-$root/target/fuzz}"
targets=(decode_native decode_tvm decode_yaojz decode_proton read_file)
# No sanitizer: the decoders are safe Rust (the findings sought are panics, allocation and
# hangs), and an ASan build of the whole dependency tree triples the build time.
cargo fuzz build --sanitizer none --release
# The targets run side by side, one per core (each run is one process on one core; its
# -max_total_time is wall time, so each target gets the same seconds as run alone), from
# the binaries cargo fuzz built, with the flags `cargo fuzz run` would give them.
bin="$CARGO_TARGET_DIR/$(rustc -vV | sed -n 's/^host: //p')/release"
# Each run leaves its log and its exit status next to its scratch corpus.
fuzz_one() {
    local t=$1 scratch="$root/target/fuzz-corpus/$1" rc=0
    mkdir -p "$scratch" "$root/fuzz/artifacts/$t"
    rm -f "$scratch.rc"
    "$bin/$t" -artifact_prefix="$root/fuzz/artifacts/$t/" "$scratch" "fuzz/corpus/$t" \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -seed=1 \
        -print_final_stats=1 >"$scratch.log" 2>&1 || rc=$?
    echo "$rc" >"$scratch.rc"
}
jobs=$(nproc 2>/dev/null || echo 1)
for t in "${targets[@]}"; do
    while [ "$(jobs -pr | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    echo "fuzz: $t for ${secs}s"
    fuzz_one "$t" &
done
wait
failed=0
for t in "${targets[@]}"; do
    log="$root/target/fuzz-corpus/$t.log"
    if [ "$(cat "$root/target/fuzz-corpus/$t.rc" 2>/dev/null)" != 0 ]; then
        tail -n 40 "$log"
        echo "fuzz: $t FAILED (full log: $log)"
        failed=1
        continue
    fi
    echo "fuzz: $t:"
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|Done)' "$log" || true
done
[ "$failed" = 0 ] || exit 1
echo "fuzz: all targets clean"
