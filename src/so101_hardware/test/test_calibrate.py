"""The calibration procedure over the emulator's real protocol: offsets from the middle pose, recorded ranges,
and a LeRobot-format file that the arm then reads back as the same joint angles."""

from __future__ import annotations

from pathlib import Path

import pytest
from so101_core.joints import DEFAULT_SERVO_IDS
from so101_hardware.calibrate import calibrate_arm
from so101_hardware.calibration import load_calibration, save_calibration
from so101_hardware.errors import CalibrationError
from so101_hardware.feetech import protocol as p
from so101_hardware.feetech.bus import BusConfig, FeetechBus
from so101_hardware.feetech.emulator import FeetechEmulator

MIDDLE = {1: 2000, 2: 2100, 3: 1900, 4: 2050, 5: 1000, 6: 2500}
SWEEP = {1: (800, 3200), 2: (900, 3300), 3: (700, 3000), 4: (1000, 3100), 6: (2000, 3500)}


def test_calibrate_arm_records_offsets_and_ranges(emulator: FeetechEmulator, bus_config: BusConfig,
                                                  tmp_path: Path) -> None:  # fmt: skip
    sweeps = iter(range(4))

    def middle_pose() -> None:
        for servo_id, counts in MIDDLE.items():
            emulator.set_present_position(servo_id, counts)

    def range_done() -> bool:
        step = next(sweeps, None)
        if step is None:
            return True
        for servo_id, (low, high) in SWEEP.items():  # the user moves each joint to both ends (read offset-free)
            raw = low if step % 2 == 0 else high
            emulator.set_present_position(servo_id, raw - (MIDDLE[servo_id] - 2047))
        return False

    with FeetechBus(bus_config, DEFAULT_SERVO_IDS.values()) as bus:
        calibration = calibrate_arm(bus, DEFAULT_SERVO_IDS, wait_for_middle_pose=middle_pose,
                                    range_done=range_done, poll_s=0.0)  # fmt: skip
        offsets = {i: bus.read(i, p.HOMING_OFFSET) for i in MIDDLE}
        assert not any(bus.read(i, p.TORQUE_ENABLE) for i in MIDDLE)
    for servo_id, counts in MIDDLE.items():
        assert offsets[servo_id] == counts - 2047
    motors = calibration.motors
    assert motors["wrist_roll"].range_min == 0 and motors["wrist_roll"].range_max == 4095
    for name, servo_id in DEFAULT_SERVO_IDS.items():
        if servo_id in SWEEP:
            low, high = SWEEP[servo_id]
            assert (motors[name].range_min, motors[name].range_max) == (low - (MIDDLE[servo_id] - 2047),
                                                                        high - (MIDDLE[servo_id] - 2047))  # fmt: skip
    path = save_calibration(calibration, tmp_path / "my_arm.json")
    assert load_calibration(path) == calibration


def test_calibrate_arm_writes_the_position_limits_like_lerobot(
    emulator: FeetechEmulator, bus_config: BusConfig
) -> None:
    for servo_id in MIDDLE:  # stale limits of an earlier calibration
        emulator.write_register(servo_id, p.MIN_POSITION_LIMIT, 1500)
        emulator.write_register(servo_id, p.MAX_POSITION_LIMIT, 2600)
    seen: list[tuple[int, int]] = []
    sweeps = iter(range(2))

    def middle_pose() -> None:
        seen.extend((bus.read(i, p.MIN_POSITION_LIMIT), bus.read(i, p.MAX_POSITION_LIMIT)) for i in MIDDLE)
        for servo_id, counts in MIDDLE.items():
            emulator.set_present_position(servo_id, counts)

    def range_done() -> bool:
        step = next(sweeps, None)
        for servo_id, (low, high) in SWEEP.items():
            emulator.set_present_position(servo_id, (low if step == 0 else high) - (MIDDLE[servo_id] - 2047))
        return step is None

    with FeetechBus(bus_config, DEFAULT_SERVO_IDS.values()) as bus:
        calibration = calibrate_arm(
            bus, DEFAULT_SERVO_IDS, wait_for_middle_pose=middle_pose, range_done=range_done, poll_s=0.0
        )
        written = {
            name: (bus.read(i, p.HOMING_OFFSET), bus.read(i, p.MIN_POSITION_LIMIT), bus.read(i, p.MAX_POSITION_LIMIT))
            for name, i in DEFAULT_SERVO_IDS.items()
        }
    assert set(seen) == {(0, 4095)}  # reset before recording, so the old limits clip nothing
    for name, m in calibration.motors.items():
        assert written[name] == (m.homing_offset, m.range_min, m.range_max)


def test_calibration_fails_clearly_when_a_joint_never_moved(emulator: FeetechEmulator, bus_config: BusConfig) -> None:
    with (
        FeetechBus(bus_config, DEFAULT_SERVO_IDS.values()) as bus,
        pytest.raises(CalibrationError, match="did not move"),
    ):
        calibrate_arm(bus, DEFAULT_SERVO_IDS, wait_for_middle_pose=lambda: None, range_done=lambda: True, poll_s=0.0)
