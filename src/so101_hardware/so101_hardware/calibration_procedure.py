"""Pure logic of the SO-101 calibration procedure (for a later ``so101 calibrate``), as LeRobot runs it.

1. Torque off, homing offsets reset to 0, the user puts every joint in the middle of its range.
2. :func:`half_turn_homing_offsets` from that pose: ``offset = present - 2047``, so the pose reads 2047
   once the offset is written (Feetech: ``Present_Position = Actual_Position - Homing_Offset``).
3. The user moves each joint through its whole range while :class:`RangeRecorder` keeps min/max of the
   (offset-corrected) positions; ``wrist_roll`` turns fully and gets 0..4095.
4. :func:`build_calibration` assembles the LeRobot-format :class:`ArmCalibration` to save and write back.
No I/O here: the caller feeds readings, so every step is testable without hardware.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from so101_core.robot_spec import JOINT_NAMES

from .calibration import HOMING_OFFSET_LIMIT, ArmCalibration, MotorCalibration
from .errors import CalibrationError
from .feetech import protocol as p

FULL_TURN_JOINTS = ("wrist_roll",)
HALF_TURN = p.MAX_POSITION // 2  # 2047, LeRobot's int(4095 / 2)


def half_turn_homing_offsets(present: Mapping[str, int]) -> dict[str, int]:
    """Offsets (counts) making the current pose read :data:`HALF_TURN`; read with offsets at 0."""
    offsets: dict[str, int] = {}
    for name, value in present.items():
        if name not in JOINT_NAMES:
            raise CalibrationError(f"unknown motor name {name!r}", field=name)
        if not 0 <= value <= p.MAX_POSITION:
            raise CalibrationError(f"{name}: position {value} out of 0..{p.MAX_POSITION}", field=name)
        offset = value - HALF_TURN
        if abs(offset) > HOMING_OFFSET_LIMIT:  # only value 4095 -> 2048: one count off, harmless
            offset = HOMING_OFFSET_LIMIT if offset > 0 else -HOMING_OFFSET_LIMIT
        offsets[name] = offset
    return offsets


class RangeRecorder:
    """Tracks min/max Present_Position of each joint while the user moves the arm.

    Args:
        names: joints to record (default: all but the full-turn ones).
    """

    def __init__(self, names: Iterable[str] | None = None) -> None:
        self.names = tuple(n for n in JOINT_NAMES if n not in FULL_TURN_JOINTS) if names is None else tuple(names)
        for name in self.names:
            if name not in JOINT_NAMES:
                raise CalibrationError(f"unknown motor name {name!r}", field=name)
        self._min: dict[str, int] = {}
        self._max: dict[str, int] = {}
        self.samples = 0

    def update(self, positions: Mapping[str, int]) -> None:
        """Feed one reading ``{joint: counts}``; joints not being recorded are ignored."""
        for name in self.names:
            if name not in positions:
                raise CalibrationError(f"reading lacks joint {name!r}", field=name)
            value = int(positions[name])
            self._min[name] = min(value, self._min.get(name, value))
            self._max[name] = max(value, self._max.get(name, value))
        self.samples += 1

    @property
    def mins(self) -> dict[str, int]:
        return dict(self._min)

    @property
    def maxes(self) -> dict[str, int]:
        return dict(self._max)

    def result(self) -> tuple[dict[str, int], dict[str, int]]:
        """``(mins, maxes)`` including full-turn joints (0, 4095); raise if a joint never moved."""
        if not self.samples:
            raise CalibrationError("no positions recorded")
        still = [n for n in self.names if self._min[n] == self._max[n]]
        if still:
            raise CalibrationError(f"joint(s) {still} did not move: min == max", field=still[0])
        mins, maxes = self.mins, self.maxes
        for name in FULL_TURN_JOINTS:
            if name not in self.names:
                mins[name], maxes[name] = 0, p.MAX_POSITION
        return mins, maxes


def build_calibration(
    ids: Mapping[str, int],
    homing_offsets: Mapping[str, int],
    mins: Mapping[str, int],
    maxes: Mapping[str, int],
) -> ArmCalibration:
    """Assemble (and validate) the calibration; ``drive_mode`` is 0 as LeRobot writes for the SO-101."""
    motors = {}
    for name in JOINT_NAMES:
        for label, table in (
            ("id", ids),
            ("homing_offset", homing_offsets),
            ("range_min", mins),
            ("range_max", maxes),
        ):
            if name not in table:
                raise CalibrationError(f"{label} missing for {name}", field=f"{name}.{label}")
        motors[name] = MotorCalibration(
            id=int(ids[name]),
            drive_mode=0,
            homing_offset=int(homing_offsets[name]),
            range_min=int(mins[name]),
            range_max=int(maxes[name]),
        )
    return ArmCalibration(motors)
