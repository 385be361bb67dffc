"""Per-channel statistics of an RGB video from 256-level pixel counts (the v3.0 writer's ``image_stats: exact``).

lerobot's streaming encoder feeds every frame's pixels (downsampled by ``auto_downsample_height_width``) to a
``RunningQuantileStats``: a float32 copy, ``np.histogram`` over 5,000 float bins (a sort per channel per frame)
and a re-binning loop whenever the running range grows — ≈ 1.7 ms of CPU per camera frame, more than libx264
needs at 160×120. Pixels are uint8, so :class:`PixelCounts` keeps one 256-bin count per channel instead (one
``np.bincount``, ≈ 0.1 ms) and derives the statistics once per episode, as
``lerobot.datasets.compute_stats.get_feature_stats`` would from **all** those pixels in one batch: the same
min/max, the same 5,000 histogram bins between them and the same interpolated quantiles; mean and std computed
exactly (float64) instead of by float32 running sums. Same pixels as the streaming encoder (every frame, its
downsampling), so ``count`` is its count too (pixels per channel). Units: pixel levels 0..255 (lerobot's writer
divides by 255).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from so101_core.pixel_levels import LEVELS, level_moments

QUANTILE_BINS = 5000  # RunningQuantileStats' default num_quantile_bins
EDGE_PAD = 1e-10  # RunningQuantileStats pads the first range by this much (pixel levels)


class PixelCounts:
    """Running per-channel counts of the levels of (H, W, C) uint8 frames."""

    def __init__(self, channels: int = 3) -> None:
        self.counts = np.zeros((channels, LEVELS), dtype=np.int64)
        self.frames = 0

    def update(self, frame: npt.NDArray[np.uint8]) -> None:
        """Count one (H, W, C) uint8 frame's pixels, downsampled as lerobot's streaming encoder does."""
        from lerobot.datasets.compute_stats import auto_downsample_height_width

        if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != self.counts.shape[0]:
            raise ValueError(f"expected (H, W, {self.counts.shape[0]}) uint8, got {frame.shape} {frame.dtype}")
        chw = auto_downsample_height_width(frame.transpose(2, 0, 1))
        for c in range(self.counts.shape[0]):
            self.counts[c] += np.bincount(chw[c].ravel(), minlength=LEVELS)
        self.frames += 1

    def statistics(self, quantiles: Sequence[float] | None = None) -> dict[str, npt.NDArray[np.generic]]:
        """min, max, mean, std (float32), count (1,), q01..q99 (float64) per channel, in levels."""
        return count_statistics(self.counts, quantiles)


def count_statistics(
    counts: npt.NDArray[np.int64], quantiles: Sequence[float] | None = None
) -> dict[str, npt.NDArray[np.generic]]:
    """Statistics of (C, 256) level counts, with the keys and dtypes of ``RunningQuantileStats.get_statistics``."""
    from lerobot.datasets.compute_stats import DEFAULT_QUANTILES

    qs = list(DEFAULT_QUANTILES if quantiles is None else quantiles)
    n = int(counts[0].sum())
    if n < 2 or (counts.sum(axis=1) != n).any():
        raise ValueError(f"need >= 2 pixels, the same number per channel; got {counts.sum(axis=1).tolist()}")
    levels = np.arange(LEVELS, dtype=np.float64)
    mean, std, lo, hi = level_moments(counts)
    out: dict[str, npt.NDArray[np.generic]] = {
        "min": lo.astype(np.float32),
        "max": hi.astype(np.float32),
        "mean": mean.astype(np.float32),
        "std": std.astype(np.float32),
        "count": np.array([n]),
    }
    cum = []
    edges = []
    for c in range(counts.shape[0]):
        # float32 ends, as RunningQuantileStats has them (its min/max are float32 scalars): the same edges
        e = np.linspace(out["min"][c] - EDGE_PAD, out["max"][c] + EDGE_PAD, QUANTILE_BINS + 1)
        hist, _ = np.histogram(levels, bins=e, weights=counts[c].astype(np.float64))
        cum.append(np.cumsum(hist))
        edges.append(e)
    for q in qs:
        out[f"q{int(q * 100):02d}"] = np.array([_quantile(cs, e, q * n) for cs, e in zip(cum, edges, strict=True)])
    return out


def _quantile(cum: npt.NDArray[np.float64], edges: npt.NDArray[np.float64], target: float) -> float:
    """The level at which the cumulative histogram reaches ``target`` pixels, linear within its bin."""
    i = int(np.searchsorted(cum, target))
    if i == 0:
        return float(edges[0])
    if i >= len(cum):
        return float(edges[-1])
    below = cum[i - 1]
    inside = cum[i] - below
    if inside == 0:
        return float(edges[i])
    return float(edges[i] + (target - below) / inside * (edges[i + 1] - edges[i]))
