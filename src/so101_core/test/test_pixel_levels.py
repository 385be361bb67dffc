"""Statistics from per-channel level counts equal those of the pixels themselves."""

from __future__ import annotations

import numpy as np
from so101_core.pixel_levels import LEVELS, level_moments


def test_moments_of_the_counts_are_the_pixels_moments() -> None:
    rng = np.random.default_rng(3)
    pixels = rng.integers(7, 201, (5000, 3), dtype=np.uint8)  # (N, C): no channel spans every level
    pixels[:, 2] = 42  # one constant channel: std 0, min = max
    counts = np.stack([np.bincount(pixels[:, c], minlength=LEVELS) for c in range(3)])
    mean, std, lo, hi = level_moments(counts)
    x = pixels.astype(np.float64)
    np.testing.assert_allclose(mean, x.mean(0), rtol=0, atol=1e-9)
    np.testing.assert_allclose(std, x.std(0), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(lo, x.min(0))
    np.testing.assert_array_equal(hi, x.max(0))
    assert std[2] == 0.0 and lo[2] == hi[2] == 42.0
