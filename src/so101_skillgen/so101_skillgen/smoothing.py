"""Savitzky–Golay smoothing of joint trajectories: the arm joints only, the gripper channel never.

A smoothly closing gripper cannot hold a 20 g vial, so column :data:`GRIPPER_INDEX` is copied through
bit-identical. Edges use the polynomial fitted to the first / last full window (no padding artefacts).
"""

from __future__ import annotations

import numpy as np
from so101_core.arrays import F64
from so101_core.robot_spec import GRIPPER_INDEX

from .errors import SkillGenConfigError


def savgol(y: F64, window: int, order: int) -> F64:
    """Smooth each column of ``y`` (T, C) with a least-squares polynomial of ``order`` over ``window`` samples.

    ``window`` must be odd and greater than ``order``; trajectories shorter than the window use the
    largest odd window that fits (returned unchanged if none exceeds ``order``).
    """
    if window % 2 == 0 or window < 1:
        raise SkillGenConfigError("smoothing.window", f"must be a positive odd integer, got {window}")
    if order < 0 or order >= window:
        raise SkillGenConfigError("smoothing.order", f"must be in [0, window), got {order}")
    arr = np.asarray(y, dtype=np.float64)
    flat = arr.reshape(len(arr), -1)
    n = len(flat)
    w = min(window, n if n % 2 == 1 else n - 1)
    if w <= order:
        return arr.copy()
    half = w // 2
    x = np.arange(w, dtype=np.float64) - half
    vander = np.vander(x, order + 1, increasing=True)  # (w, order+1)
    fit = np.linalg.pinv(vander)  # (order+1, w): samples → polynomial coefficients
    centre = fit[0]  # value at x = 0
    out = np.empty_like(flat)
    windows = np.lib.stride_tricks.sliding_window_view(flat, w, axis=0)  # (n-w+1, C, w)
    out[half : n - half] = windows @ centre
    out[:half] = vander[:half] @ (fit @ flat[:w])
    out[n - half :] = vander[w - half :] @ (fit @ flat[n - w :])
    return out.reshape(arr.shape)


def smoothing_windows(window: int, order: int) -> list[int]:
    """Windows to try in turn when a smoothed trajectory fails its replay: ``window``, about half of it
    (odd, above ``order``), then 1 (the commands as executed)."""
    half = (window // 2) | 1
    return [w for w in dict.fromkeys((window, half, 1)) if w == 1 or w > order]


def smooth_joints(q: F64, window: int = 21, order: int = 3) -> F64:
    """Smoothed copy of a joint trajectory (T, 6) rad: arm columns filtered, gripper column bit-identical
    (``window`` 1: an unchanged copy)."""
    arr = np.asarray(q, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] <= GRIPPER_INDEX:
        raise ValueError(f"expected a (T, 6) joint trajectory, got shape {arr.shape}")
    out = arr.copy()
    if window == 1:
        return out
    arm = [i for i in range(arr.shape[1]) if i != GRIPPER_INDEX]
    out[:, arm] = savgol(arr[:, arm], window, order)
    out[:, GRIPPER_INDEX] = arr[:, GRIPPER_INDEX]
    return out
