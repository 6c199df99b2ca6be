#!/usr/bin/env python3
"""A timeline of a Chrome trace written by `ikp decode --chrome` as one HTML page (an SVG,
no script), for scripts/docs-images.sh to render in headless Chromium.

    timeline-html.py TRACE.json REPORT.html TITLE > timeline.html

One row per lane (a Chrome thread), nested spans in sub-rows below their parent; each
span coloured by its region's category as `ikp report` classifies it (read from the
report's region table, REPORT.html) in the report's colours. Standard library only.
"""
import html
import json
import re
import sys

# host/src/report/html.rs, COLORS: compute, wait, load, store, comm, other.
COLORS = {"compute": "#4c78a8", "wait": "#e45756", "load": "#f58518", "store": "#72b7b2",
          "comm": "#b279a2", "other": "#9d9d9d"}


def main(trace_path, report_path, title):
    events = json.load(open(trace_path))["traceEvents"]
    report = open(report_path, encoding="utf-8").read()
    category = dict(re.findall(r'<tr><td>([^<]+)</td><td class="l">([a-z]+)</td>', report))
    names, spans = {}, {}
    for e in events:
        key = (e["pid"], e.get("tid"))
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[key] = e["args"]["name"]
        elif e["ph"] == "X" and key[1] is not None:
            spans.setdefault(key, []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
    if not spans:
        sys.exit(f"{trace_path}: no spans")
    end = max(b for lane in spans.values() for _, b, _ in lane)
    label_w, width, sub_h, gap = 150, 1240, 11, 6
    plot_w = width - label_w - 20
    x = lambda t: label_w + t / end * plot_w
    rows, y = [], 40
    for key in sorted(spans, key=lambda k: names.get(k, "")):
        stack, placed = [], []
        for a, b, name in sorted(spans[key], key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= a:
                stack.pop()
            placed.append((len(stack), a, b, name))
            stack.append(b)
        depth = 1 + max(d for d, *_ in placed)
        rows.append(f'<text x="{label_w - 8}" y="{y + depth * sub_h / 2 + 4:.1f}" '
                    f'text-anchor="end">{html.escape(names.get(key, str(key)))}</text>')
        for d, a, b, name in placed:
            color = COLORS.get(category.get(name, "other"), COLORS["other"])
            rows.append(f'<rect x="{x(a):.2f}" y="{y + d * sub_h}" width="{max(x(b) - x(a), 0.5):.2f}" '
                        f'height="{sub_h - 1}" fill="{color}"><title>{html.escape(name)}: '
                        f'{b - a:.3f} us</title></rect>')
        y += depth * sub_h + gap
    axis_y = y + 4
    ticks = []
    # About ten ticks, at 1, 2 or 5 times a power of ten.
    step = min(m * 10.0 ** k for k in range(-3, 9) for m in (1, 2, 5) if end / (m * 10.0 ** k) <= 10)
    t = 0.0
    while t <= end:
        ticks.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="36" y2="{axis_y}" stroke="#ddd"/>'
                     f'<text x="{x(t):.1f}" y="{axis_y + 14}" text-anchor="middle">{t:g} µs</text>')
        t += step
    legend, lx = [], label_w
    for cat in ["compute", "wait", "load", "other"]:
        legend.append(f'<rect x="{lx}" y="{axis_y + 26}" width="10" height="10" fill="{COLORS[cat]}"/>'
                      f'<text x="{lx + 14}" y="{axis_y + 35}">{cat}</text>')
        lx += 90
    height = axis_y + 46
    print(f'''<!doctype html><html><head><meta charset="utf-8"><style>
body {{ margin: 0; background: #fff; font: 11px sans-serif; }} text {{ fill: #333; }}
</style></head><body><svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">
<text x="{label_w}" y="20" font-size="14" font-weight="bold">{html.escape(title)}</text>
{"".join(ticks)}{"".join(rows)}{"".join(legend)}</svg></body></html>''')


if __name__ == "__main__":
    main(*sys.argv[1:4])
