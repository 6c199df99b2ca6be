"""Whole-process A/B of two builds of a command, run in turn (A B A B ...), for the A/B
rows of BENCHMARKS.md on a machine shared with other work.

    python3 benches/ab_wall.py PAIRS OLD_BIN NEW_BIN -- ARGS...

Runs `OLD_BIN ARGS` and `NEW_BIN ARGS` alternately PAIRS times (after one warm-up run of
each), and prints, per build, the median wall time, the median CPU time (user + system)
and the median peak RSS (from `wait4`'s rusage), and the median and range of the
per-pair ratios new / old of wall and of CPU time. A pair
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
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv[0]} exited with {os.waitstatus_to_exitcode(status)}")
    return wall, ru.ru_maxrss / 1024, ru.ru_utime + ru.ru_stime  # s, MiB, CPU s


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
    med = statistics.median
    for k, v in rows.items():
        print(
            f"{k}: wall median {med(r[0] for r in v):.3f} s (min {min(r[0] for r in v):.3f}), "
            f"CPU median {med(r[2] for r in v):.3f} s, peak RSS median {med(r[1] for r in v):.1f} MiB"
        )
    for i, what in [(0, "wall"), (2, "CPU")]:
        ratios = [n[i] / o[i] for o, n in zip(rows["old"], rows["new"])]
        print(
            f"new / old {what}: median {med(ratios):.3f} "
            f"({min(ratios):.3f}-{max(ratios):.3f}, {pairs} pairs)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
