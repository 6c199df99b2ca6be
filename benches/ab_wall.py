"""Whole-process A/B of two builds of a command, run in turn (A B A B ...), for the A/B
rows of BENCHMARKS.md on a machine shared with other work.

    python3 benches/ab_wall.py PAIRS OLD_BIN NEW_BIN -- ARGS...

Runs `OLD_BIN ARGS` and `NEW_BIN ARGS` alternately PAIRS times (after one warm-up run of
each), and prints, per build, the median wall time and the median peak RSS (from
`wait4`'s `ru_maxrss`), and the median and range of the per-pair ratios new / old. A pair
is measured back to back, so its ratio sees the same load on both sides; the median of
the ratios is the figure to quote.
"""

import os
import statistics
import subprocess
import sys
import time


def run(argv):
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv[0]} exited with {os.waitstatus_to_exitcode(status)}")
    return wall, ru.ru_maxrss / 1024  # MiB


def main(argv):
    if len(argv) < 5 or argv[4] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    pairs, old, new, args = int(argv[1]), argv[2], argv[3], argv[5:]
    run([old, *args]), run([new, *args])
    rows = {"old": [], "new": []}
    for _ in range(pairs):
        rows["old"].append(run([old, *args]))
        rows["new"].append(run([new, *args]))
    ratios = [n[0] / o[0] for o, n in zip(rows["old"], rows["new"])]
    for k, v in rows.items():
        print(
            f"{k}: median {statistics.median(w for w, _ in v):.3f} s "
            f"(min {min(w for w, _ in v):.3f}), peak RSS {statistics.median(m for _, m in v):.1f} MiB"
        )
    print(
        f"new / old: median {statistics.median(ratios):.3f} "
        f"({min(ratios):.3f}-{max(ratios):.3f}, {pairs} pairs)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
