"""Helpers of the node tests that drive arms: a LeRobot calibration on disk, an emulator parked at it, polling."""

from __future__ import annotations

import json
import math
from pathlib import Path

from so101_hardware.calibration import ArmCalibration, load_calibration
from so101_hardware.example_calibration import EXAMPLE_FOLLOWER_CALIBRATION
from so101_hardware.feetech import protocol as p
from so101_hardware.feetech.emulator import FeetechEmulator

CALIBRATION = EXAMPLE_FOLLOWER_CALIBRATION
RAD_PER_COUNT = 2 * math.pi / 4095


def write_calibration(root: Path, robot_id: str, folder: str = "robots/so_follower") -> tuple[Path, ArmCalibration]:
    """Write :data:`CALIBRATION` where LeRobot keeps it under ``root``; returns its path and the parsed file."""
    path = root / "calibration" / folder / f"{robot_id}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(CALIBRATION, indent=4))
    return path, load_calibration(path)


def park_at_middle(emu: FeetechEmulator, cal: ArmCalibration) -> None:
    """Give the emulated servos the calibration's EEPROM values and park each joint at its range middle."""
    for m in cal.motors.values():
        emu.write_register(m.id, p.HOMING_OFFSET, m.homing_offset)
        emu.write_register(m.id, p.MIN_POSITION_LIMIT, m.range_min)
        emu.write_register(m.id, p.MAX_POSITION_LIMIT, m.range_max)
        emu.set_present_position(m.id, round(m.mid))


def joint_position(emu: FeetechEmulator, cal: ArmCalibration, joint: str) -> float:
    """Present position of an arm joint read from the emulator's register, rad."""
    m = cal[joint]
    return (emu.present_position(m.id) - m.mid) * RAD_PER_COUNT


def move_by_hand(emu: FeetechEmulator, cal: ArmCalibration, joint: str, rad: float) -> None:
    """Set an arm joint's present position to ``rad`` as if moved by hand."""
    m = cal[joint]
    emu.set_present_position(m.id, round(m.mid + rad / RAD_PER_COUNT))
