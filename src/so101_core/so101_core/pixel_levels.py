"""Per-channel statistics of uint8 pixels from their level counts.

Counting each channel's 256 levels (one ``np.bincount``) is far cheaper than a float pass over the pixels, and the
exact mean, standard deviation and range follow from the counts: the v3.0 writer's image statistics
(``so101_dataset.image_stats``) and training's normalisation (``so101_policy.training_data``) both derive theirs so.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

LEVELS = 256
"""Levels of a uint8 channel."""


def level_moments(counts: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.float64], ...]:
    """(mean, std, min, max), each (C,) float64 in levels 0..255, of (C, 256) per-channel level counts (every
    channel with at least one pixel); std is the population's (ddof 0)."""
    levels = np.arange(LEVELS, dtype=np.float64)
    n = counts.sum(axis=1)
    mean = counts @ levels / n
    std = np.sqrt(np.maximum(counts @ levels**2 / n - mean**2, 0.0))
    present = counts > 0
    lo = np.array([levels[row.argmax()] for row in present])
    hi = np.array([levels[LEVELS - 1 - row[::-1].argmax()] for row in present])
    return mean, std, lo, hi
