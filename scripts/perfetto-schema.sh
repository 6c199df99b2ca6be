#!/usr/bin/env bash
# Regenerates host/tests/perfetto-schema/src/protos/ (the tests' Perfetto types) from
# host/tests/perfetto-schema/protos/ with protobuf-codegen and the vendored protoc
# (host/tests/perfetto-schema/generate/, its own workspace). Commit the result.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cargo run --quiet --manifest-path "$root/host/tests/perfetto-schema/generate/Cargo.toml" \
    --target-dir "$root/target/perfetto-schema-generate" "$@"
