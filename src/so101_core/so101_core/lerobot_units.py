"""Joint values in LeRobot's units, as its SO-101 follower records them, and back to our radians.

LeRobot (0.6) reads the arm joints in degrees (``MotorNormMode.DEGREES``: 0 at the calibrated range middle,
``(raw - mid) · 360 / 4095``) and the gripper in ``RANGE_0_100`` (0 = calibrated minimum, 100 = maximum).
Our joint values are radians with the same zero (:mod:`so101_hardware.calibration` maps counts that way), and the
gripper is the twin's gripper range (rad) mapped onto the calibrated servo range; so:

- arm joint ``i < 5``: ``degrees = rad · 180 / π``;
- gripper: ``value = 100 · (rad − lower) / (upper − lower)`` over the twin's gripper range.

This module is the one place that mapping lives; datasets, policies and the policy node all use it.
"""

from __future__ import annotations

from typing import Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from so101_core.joints import twin_ranges
from so101_core.robot_spec import GRIPPER_INDEX, JOINT_NAMES

LEROBOT_JOINT_NAMES: Final = tuple(f"{name}.pos" for name in JOINT_NAMES)
"""Feature names LeRobot's SO-101 follower gives its joints (``shoulder_pan.pos`` … ``gripper.pos``)."""

DEGREES_PER_COUNT: Final = 360.0 / 4095
"""One servo encoder count in LeRobot's arm degrees (its ``360 / 4095``): the finest step the arm can be told."""

GRIPPER_RANGE_RAD: Final[tuple[float, float]] = twin_ranges().of("gripper")
"""The twin's gripper range, rad, mapped onto LeRobot's 0..100."""


def to_lerobot(q_rad: ArrayLike) -> NDArray[np.float64]:
    """``(..., 6)`` joint values in rad → ``(..., 6)``: arm degrees, gripper 0..100 (not clipped)."""
    q = np.asarray(q_rad, dtype=np.float64)
    if q.shape[-1:] != (len(JOINT_NAMES),):
        raise ValueError(f"expected (..., {len(JOINT_NAMES)}) joint values, got shape {q.shape}")
    out = np.degrees(q)
    lower, upper = GRIPPER_RANGE_RAD
    out[..., GRIPPER_INDEX] = 100.0 * (q[..., GRIPPER_INDEX] - lower) / (upper - lower)
    return out


def from_lerobot(values: ArrayLike) -> NDArray[np.float64]:
    """Inverse of :func:`to_lerobot`: ``(..., 6)`` arm degrees + gripper 0..100 → ``(..., 6)`` rad."""
    v = np.asarray(values, dtype=np.float64)
    if v.shape[-1:] != (len(JOINT_NAMES),):
        raise ValueError(f"expected (..., {len(JOINT_NAMES)}) LeRobot joint values, got shape {v.shape}")
    out = np.radians(v)
    lower, upper = GRIPPER_RANGE_RAD
    out[..., GRIPPER_INDEX] = lower + (upper - lower) * v[..., GRIPPER_INDEX] / 100.0
    return out
