"""Fixtures of the hardware tests: a pty servo emulator, a bus on it, a realistic LeRobot calibration."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from so101_hardware.calibration import ArmCalibration, load_calibration
from so101_hardware.example_calibration import EXAMPLE_FOLLOWER_CALIBRATION
from so101_hardware.feetech.bus import BusConfig, FeetechBus
from so101_hardware.feetech.emulator import FeetechEmulator
from so101_hardware.feetech.testing import park_at_middle

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


@pytest.fixture
def place_at_mid() -> Callable[[FeetechEmulator, ArmCalibration], None]:
    return park_at_middle


@pytest.fixture
def lerobot_calibration() -> dict[str, dict[str, int]]:
    """A fresh copy of the realistic calibration dict (tests may mutate it)."""
    return json.loads(json.dumps(LEROBOT_CALIBRATION))
