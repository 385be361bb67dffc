"""Signal helpers of identification: resampling, zero-order-hold lookup, Savitzky-Golay derivatives, AR(1)
effective sample size. Arrays: times (N,) s, values (N,) or (N, k)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from so101_core.arrays import F64


def savgol(x: npt.ArrayLike, window: int, order: int, deriv: int, dt: float) -> F64:
    """Savitzky-Golay smoothing (``deriv`` 0) or derivative (1, 2) of uniformly sampled ``x`` (N,) with period
    ``dt``; the ends are padded with their edge values."""
    values = np.asarray(x, dtype=np.float64)
    half = window // 2
    offsets = np.arange(-half, half + 1, dtype=np.float64)
    vander = np.vander(offsets, order + 1, increasing=True)  # (window, order+1)
    coeffs = np.linalg.pinv(vander)[deriv] * math.factorial(deriv) / dt**deriv
    padded = np.pad(values, half, mode="edge")
    return np.convolve(padded, coeffs[::-1], mode="valid")


def zoh(times: F64, values: F64, at: npt.ArrayLike) -> F64:
    """Zero-order hold: the row of ``values`` (K, ...) last set at or before each of ``at`` (the first row
    before ``times[0]``)."""
    k = np.searchsorted(times, np.asarray(at, dtype=np.float64), side="right") - 1
    return values[np.clip(k, 0, len(times) - 1)]


def resample(times: F64, values: F64, grid: F64) -> F64:
    """Linear interpolation of ``values`` (N, k) onto ``grid`` (M,), column by column."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 1:
        return np.interp(grid, times, v)
    return np.column_stack([np.interp(grid, times, v[:, i]) for i in range(v.shape[1])])


def effective_samples(residual: npt.ArrayLike) -> float:
    """Samples worth of independent information in a residual series, from its lag-1 autocorrelation ρ:
    ``n (1 - ρ) / (1 + ρ)`` (AR(1)); at least 1."""
    r = np.asarray(residual, dtype=np.float64)
    n = r.size
    if n < 3:
        return float(max(n, 1))
    r = r - r.mean()
    denom = float(r @ r)
    rho = float(r[1:] @ r[:-1]) / denom if denom > 0 else 0.0
    rho = min(max(rho, 0.0), 0.999)
    return max(1.0, n * (1.0 - rho) / (1.0 + rho))
