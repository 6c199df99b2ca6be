#!/usr/bin/env bash
# Compares ikp's decode of a yao-jz ring dump with yao-jz/intra-kernel-profiler's own
# host code, on a CPU: check.cpp fills one launch's buffers as the tool's recorder does
# (rings of 8 that wrap, a warp that never flushes, regions left open), then writes them
# through the tool's HostSession::write_trace (its Chrome trace) and as the dump file
# documented in ikp_host::decode::yaojz (its C++ snippet). stub/cuda_runtime.h stands in
# for the CUDA runtime (device memory is host memory, never cleared). The spans, marks
# and unmatched counts of both must be equal.
#
#   scripts/peers/yaojz/run.sh PEER_CHECKOUT     (a checkout of yao-jz/intra-kernel-profiler)
set -euo pipefail
peer=${1:?usage: run.sh PEER_CHECKOUT}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -std=c++17 -O1 -I "$here/stub" -I "$peer/include" "$here/check.cpp" -o "$work/check"
(cd "$work" && ./check their.json dump.yjz) 2>"$work/their.err" >/dev/null
printf 'kernel\ntile\nmma\nmark\n' >"$work/names.txt"
cargo run -q --manifest-path "$root/Cargo.toml" -p ikp-cli -- decode "$work/dump.yjz" \
    --names "$work/names.txt" --csv "$work/ikp.csv" --chrome "$work/ikp.json" -q 2>"$work/ikp.err"
python3 - "$work" <<'PY'
import csv, json, re, sys
w = sys.argv[1]
their = json.load(open(f"{w}/their.json"))["traceEvents"]
spans = sorted((e["args"]["block"], e["args"]["warp"], e["name"], round(e["ts"]), round(e["dur"]))
               for e in their if e["ph"] == "X")
marks = sorted((e["args"]["block"], e["args"]["warp"], e["name"], round(e["ts"]))
               for e in their if e["ph"] == "i")
rows = list(csv.DictReader(open(f"{w}/ikp.csv")))
ikp_spans = sorted((int(r["block"]), int(r["warp"]), r["name"], int(r["begin_ns"]), int(r["dur_ns"]))
                   for r in rows)
ikp_marks = sorted((e["args"]["block"], e["args"]["warp"], e["name"], round(e["ts"] * 1000))
                   for e in json.load(open(f"{w}/ikp.json"))["traceEvents"] if e["ph"] == "i")
def count(text, what):
    m = re.search(r"(\d+) unmatched " + what, text)
    return int(m.group(1)) if m else 0
err, ikp_err = open(f"{w}/their.err").read(), open(f"{w}/ikp.err").read()
checks = [
    ("spans", spans, ikp_spans),
    ("marks", marks, ikp_marks),
    ("unmatched begins", count(err, "begin"), count(ikp_err, "begin")),
    ("unmatched ends", count(err, "end"), count(ikp_err, "end")),
]
bad = [(n, a, b) for n, a, b in checks if a != b]
for n, a, b in checks:
    print(f"{n}: yao-jz {len(a) if isinstance(a, list) else a}, ikp {len(b) if isinstance(b, list) else b}")
if bad:
    for n, a, b in bad:
        print(f"MISMATCH {n}:\n  yao-jz {a}\n  ikp    {b}")
    sys.exit(1)
print("yao-jz and ikp agree")
PY
