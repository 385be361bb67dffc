"""The project's one alias for float arrays (shapes and units are given where each is used)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
"""A float64 array."""
F32 = npt.NDArray[np.float32]
"""A float32 array."""
