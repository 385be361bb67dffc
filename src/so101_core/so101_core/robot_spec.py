"""Canonical names of the SO-101 shared by sim, real and every consumer (SPEC "Standard interfaces")."""

from __future__ import annotations

from typing import Final

JOINT_NAMES: Final = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")
"""Joint names, in order; the gripper is index 5."""
ARM_JOINTS: Final = JOINT_NAMES[:5]
GRIPPER: Final = "gripper"
GRIPPER_INDEX: Final = 5
CAMERA_NAMES: Final = ("ego", "side", "top")
"""Camera names: ``ego`` on the wrist, ``side`` and ``top`` fixed."""


def optical_frame(camera: str) -> str:
    """Frame id of a camera's images: ``<name>_camera_optical_frame`` (z forward, x right, y down, REP 103)."""
    return f"{camera}_camera_optical_frame"
