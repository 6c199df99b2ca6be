#!/usr/bin/env bash
# Renders the front page's pictures from the shipped sample in headless Chromium (Debian's
# `chromium`, installed by scripts/provision.sh) and writes them to docs/images/:
#   report.png    the top of `ikp report samples/attention.ikp`
#   timeline.png  blocks 0-3 of the same buffer as a timeline (scripts/timeline-html.py
#                 draws `ikp decode --chrome`'s spans, coloured as the report colours them)
# IKP=PATH names the ikp binary (default: target/release/ikp, built if missing).
# Look at both before committing them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
ikp=${IKP:-$root/target/release/ikp}
[ -x "$ikp" ] || cargo build --release -p ikp-cli --locked
chromium=$(command -v chromium || echo /usr/bin/chromium)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp samples/attention.ikp "$tmp/"
(
  cd "$tmp"
  "$ikp" report attention.ikp -o report >/dev/null
  "$ikp" decode attention.ikp --chrome timeline.json --block-filter 0-3 -q
)
python3 scripts/timeline-html.py "$tmp/timeline.json" "$tmp/report/report.html" \
  "samples/attention.ikp, blocks 0-3: a row per lane (warp group), nested regions below their parent" \
  >"$tmp/timeline.html"
shot() { # URL WIDTHxHEIGHT OUT
  "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --user-data-dir="$tmp/profile" --window-size="$2" \
    --screenshot="$3" "$1" 2>/dev/null
}
mkdir -p docs/images
shot "file://$tmp/report/report.html" 1280,1290 docs/images/report.png
# The timeline page's height: its SVG's.
h=$(grep -o 'height="[0-9]*"' "$tmp/timeline.html" | head -1 | tr -dc 0-9)
shot "file://$tmp/timeline.html" "1240,$h" docs/images/timeline.png
ls -l docs/images/report.png docs/images/timeline.png
