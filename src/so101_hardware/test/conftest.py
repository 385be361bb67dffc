"""Fixtures of the hardware tests: a pty servo emulator, a bus on it, a realistic LeRobot calibration."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from so101_hardware.calibration import ArmCalibration, load_calibration
from so101_hardware.example_calibration import EXAMPLE_FOLLOWER_CALIBRATION
from so101_hardware.feetech import protocol as p
from so101_hardware.feetech.bus import BusConfig, FeetechBus
from so101_hardware.feetech.emulator import FeetechEmulator

IDS = (1, 2, 3, 4, 5, 6)
# Timeout generous enough for a loaded 2-core CI host (the emulator is a thread of the test process: at 60 ms a
# first ping read a truncated reply twice in CI); fault tests pay it (retries + 1) times.
TEST_TIMEOUT_MS = 150.0

LEROBOT_CALIBRATION = EXAMPLE_FOLLOWER_CALIBRATION


@pytest.fixture
def emulator() -> Iterator[FeetechEmulator]:
    with FeetechEmulator(IDS, seed=1234) as emu:
        yield emu


@pytest.fixture
def bus_config(emulator: FeetechEmulator) -> BusConfig:
    return BusConfig(emulator.port, timeout_ms=TEST_TIMEOUT_MS, retries=1)


@pytest.fixture
def bus(bus_config: BusConfig) -> Iterator[FeetechBus]:
    with FeetechBus(bus_config, IDS) as b:
        yield b


@pytest.fixture
def calibration_file(tmp_path: Path) -> Path:
    path = tmp_path / "calibration" / "robots" / "so_follower" / "lab_arm.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(LEROBOT_CALIBRATION, indent=4))
    return path


@pytest.fixture
def calibration(calibration_file: Path) -> ArmCalibration:
    return load_calibration(calibration_file)


def _place_at_mid(emu: FeetechEmulator, cal: ArmCalibration) -> None:
    """Give the emulated servos the calibration's EEPROM values and park each joint at its range middle."""
    for name, m in cal.motors.items():
        emu.write_register(m.id, p.HOMING_OFFSET, m.homing_offset)
        emu.write_register(m.id, p.MIN_POSITION_LIMIT, m.range_min)
        emu.write_register(m.id, p.MAX_POSITION_LIMIT, m.range_max)
        emu.set_present_position(m.id, round(m.mid))
        assert name


def _wait_until(predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Poll ``predicate`` until true; fails only if it never becomes true (no timing assertion)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.01)


@pytest.fixture
def wait_until() -> Callable[..., None]:
    return _wait_until


@pytest.fixture
def place_at_mid() -> Callable[[FeetechEmulator, ArmCalibration], None]:
    return _place_at_mid


@pytest.fixture
def lerobot_calibration() -> dict[str, dict[str, int]]:
    """A fresh copy of the realistic calibration dict (tests may mutate it)."""
    return json.loads(json.dumps(LEROBOT_CALIBRATION))
