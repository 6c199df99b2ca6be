"""Times warpscope's Python decoder on a TVM-format buffer, for the side-by-side in
BENCHMARKS.md (ikp's figure comes from `hyperfine` on `ikp decode` of the same file).

    .venv/bin/pip install warpscope==0.1.0
    .venv/bin/python benches/warpscope_decode.py BUF NAMES OUT.json [REPEATS]

BUF is a raw little-endian u64 buffer (`ikp sample BUF --tvm-blocks 1024 --tiles 204`),
NAMES one region name per line. Each repetition runs the whole job ikp's command does:
read the file, decode (`warpscope.decode`), write the Chrome trace
(`TraceResult.to_chrome_trace`). Prints the wall time of each phase per repetition and the
mean and minimum of the totals.
"""

import statistics
import sys
import time

import numpy as np
import warpscope


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    buf_path, names_path, out_path = argv[1:4]
    repeats = int(argv[4]) if len(argv) > 4 else 3
    with open(names_path, encoding="utf-8") as f:
        names = {i: n.strip() for i, n in enumerate(f) if n.strip()}
    totals = []
    for r in range(repeats):
        t0 = time.perf_counter()
        buf = np.fromfile(buf_path, dtype="<u8")
        t1 = time.perf_counter()
        result = warpscope.decode(buf, event_names=names)
        t2 = time.perf_counter()
        result.to_chrome_trace(out_path)
        t3 = time.perf_counter()
        totals.append(t3 - t0)
        print(
            f"rep {r}: read {t1 - t0:.3f} s, decode {t2 - t1:.3f} s "
            f"({len(result.spans)} spans, {len(result.instants)} instants), "
            f"chrome {t3 - t2:.3f} s, total {t3 - t0:.3f} s"
        )
    print(
        f"warpscope {warpscope.__version__} (Python {sys.version.split()[0]}): "
        f"mean {statistics.mean(totals):.3f} s, min {min(totals):.3f} s over {repeats} runs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
