#!/usr/bin/env bash
# The Rust side of the stream race check (called by scripts/test.sh): ikp-host's drain
# against ikp.cuh's emulated stream lanes, both built with ThreadSanitizer, in one process
# (tsan/). The C++ side, ikp_host.hpp's drain with the same lanes, runs in ikp-host's tests.
#
# ThreadSanitizer for Rust needs nightly-only flags (-Zsanitizer=thread, and -Zbuild-std so
# that std is instrumented too); the toolchain here is stable, so RUSTC_BOOTSTRAP=1 unlocks
# them, and -Zbuild-std needs the rust-src component, added with rustup when missing
# (skipped, saying why, with IKP_NO_SYSTEM_INSTALL=1). A data race fails the run
# (halt_on_error), as does a wrong count of what arrived.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export RUSTC_BOOTSTRAP=1
if [ ! -d "$(rustc --print sysroot)/lib/rustlib/src/rust/library" ]; then
    case "${IKP_NO_SYSTEM_INSTALL:-}" in
    ""|0) rustup component add rust-src ;;
    *)
        echo "tsan: SKIPPED: the rust-src component is missing, and IKP_NO_SYSTEM_INSTALL=$IKP_NO_SYSTEM_INSTALL" \
            "forbids adding it (rustup component add rust-src provides it)"
        exit 0
        ;;
    esac
fi
target=$(rustc -vV | sed -n 's/^host: //p')
export CARGO_TARGET_DIR="${IKP_TSAN_TARGET_DIR:-$root/target/tsan}"
export RUSTFLAGS="-Zsanitizer=thread"
export TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}"
cargo test --manifest-path tsan/Cargo.toml --locked -Zbuild-std --target "$target" --tests
