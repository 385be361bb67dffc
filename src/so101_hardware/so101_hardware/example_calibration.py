"""A realistic SO-101 follower calibration in LeRobot's JSON layout (as ``lerobot-calibrate`` writes it: ids 1..6,
drive_mode 0, wrist_roll a full turn, homing offsets = middle pose − 2047). The servo emulator, the driver
benchmark and the tests use it so that conversions run as on a real arm."""

from __future__ import annotations

from typing import Final

EXAMPLE_FOLLOWER_CALIBRATION: Final[dict[str, dict[str, int]]] = {
    "shoulder_pan": {"id": 1, "drive_mode": 0, "homing_offset": -1470, "range_min": 758, "range_max": 3292},
    "shoulder_lift": {"id": 2, "drive_mode": 0, "homing_offset": 158, "range_min": 858, "range_max": 3250},
    "elbow_flex": {"id": 3, "drive_mode": 0, "homing_offset": 1106, "range_min": 898, "range_max": 3093},
    "wrist_flex": {"id": 4, "drive_mode": 0, "homing_offset": -1155, "range_min": 873, "range_max": 3205},
    "wrist_roll": {"id": 5, "drive_mode": 0, "homing_offset": -1491, "range_min": 0, "range_max": 4095},
    "gripper": {"id": 6, "drive_mode": 0, "homing_offset": -1209, "range_min": 2031, "range_max": 3486},
}
