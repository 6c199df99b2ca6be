"""The part of CuPy's `cupyx` the GPU experiments use, for the CuPy stand-in beside it
(gpucheck/python/testing/cupy): pinned host arrays are plain NumPy arrays here."""

from typing import Any

import numpy as np


def zeros_pinned(shape: Any, dtype: Any = np.float64) -> np.ndarray:
    return np.zeros(shape, dtype=dtype)
