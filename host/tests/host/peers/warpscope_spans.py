"""Decodes a TVM-format buffer with warpscope's own decoder (PyPI `warpscope`) and prints
its spans and instants as JSON, for host/tests/peer_decoders.rs to compare with ikp's.

Usage: python warpscope_spans.py BUFFER
"""
import json
import sys

import numpy as np
import warpscope

words = np.fromfile(sys.argv[1], dtype="<u8")
result = warpscope.decode(words)
json.dump(
    {
        "spans": [[s.block, s.group, s.event_id, s.begin_ns, s.dur_ns] for s in result.spans],
        "instants": [[i.block, i.group, i.event_id, i.ts_ns] for i in result.instants],
    },
    sys.stdout,
)
