"""SO101Arm / SO101Leader against the emulator: calibration sync, read in rad, write, health, faults."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from nodegraph.testing import wait_until
from so101_core.robot_spec import JOINT_NAMES
from so101_hardware.calibration import ArmCalibration
from so101_hardware.errors import NoAnswerError, NotConnectedError, SafetyError, ServoFault
from so101_hardware.feetech import protocol as p
from so101_hardware.feetech.bus import BusConfig
from so101_hardware.feetech.emulator import FeetechEmulator
from so101_hardware.robot import ArmConfig, SO101Arm, SO101Leader

STEP = 2 * np.pi / 4095


def test_connect_writes_calibration_and_holds_pose(
    emulator: FeetechEmulator, bus_config: BusConfig, calibration: ArmCalibration
) -> None:
    for m in calibration.motors.values():  # joints parked mid-range before the offsets are written
        emulator.set_present_position(m.id, (round(m.mid) + m.homing_offset) % 4096)
    with SO101Arm(ArmConfig(bus_config), calibration) as arm:
        for m in calibration.motors.values():
            assert emulator.read_register(m.id, p.HOMING_OFFSET) == m.homing_offset
            assert emulator.read_register(m.id, p.MIN_POSITION_LIMIT) == m.range_min
            assert emulator.read_register(m.id, p.TORQUE_ENABLE) == 1
            assert emulator.read_register(m.id, p.GOAL_POSITION) == emulator.present_position(m.id)
        state = arm.read()
        assert state.positions[:5] == pytest.approx(np.zeros(5), abs=STEP)
    assert all(emulator.read_register(sid, p.TORQUE_ENABLE) == 0 for sid in range(1, 7))


def test_write_then_read_round_trip(
    emulator: FeetechEmulator,
    bus_config: BusConfig,
    calibration: ArmCalibration,
    place_at_mid: Callable[..., None],
) -> None:
    place_at_mid(emulator, calibration)
    target = np.array([0.4, -0.3, 0.6, -0.5, 1.2, 0.8])
    with SO101Arm(ArmConfig(bus_config), calibration) as arm:
        sent = arm.write(target)
        wait_until(lambda: [emulator.read_register(i + 1, p.GOAL_POSITION) for i in range(6)] == sent.tolist())
        wait_until(lambda: arm.read().counts.tolist() == sent.tolist())  # the servos reach the goal exactly
        state = arm.read()
        assert np.allclose(state.positions, target, atol=3 * STEP)
        assert [h.joint for h in state.health] == list(JOINT_NAMES)
        assert all(h.ok and h.voltage_v == pytest.approx(12.0) for h in state.health)
        assert state.faults() == {}


def test_health_reports_overload_and_overheat_then_recovers(
    emulator: FeetechEmulator,
    bus_config: BusConfig,
    calibration: ArmCalibration,
    place_at_mid: Callable[..., None],
) -> None:
    place_at_mid(emulator, calibration)
    with SO101Arm(ArmConfig(bus_config), calibration) as arm:
        emulator.set_error_bits(3, 0x20)
        emulator.set_error_bits(6, 0x04)
        emulator.set_temperature(6, 78)
        emulator.set_load(3, 1000)
        state = arm.read()
        assert state.faults() == {"elbow_flex": ServoFault.OVERLOAD, "gripper": ServoFault.OVERHEAT}
        assert state.health[5].temperature_c == 78 and state.health[2].load == pytest.approx(1.0)
        emulator.clear_faults()
        assert arm.read().faults() == {}


def test_one_servo_gone_leaves_only_its_joint_out_and_a_silent_bus_blames_no_servo(
    emulator: FeetechEmulator,
    bus_config: BusConfig,
    calibration: ArmCalibration,
    place_at_mid: Callable[..., None],
) -> None:
    place_at_mid(emulator, calibration)
    with SO101Arm(ArmConfig(bus_config), calibration) as arm:
        emulator.set_gone(4)
        state = arm.read()  # the other five are still read
        assert state.missing == ("wrist_flex",) and arm.silent_servos() == (4,)
        assert np.isnan(state.positions[3]) and np.all(np.isfinite(np.delete(state.positions, 3)))
        assert [h.servo_id for h in state.health] == [1, 2, 3, 5, 6]
        assert all(h.torque_enabled for h in state.health)
        emulator.set_gone(4, False)
        wait_until(lambda: arm.read().missing == (), what="servo 4 probed (after SILENT_PROBE_S) and read again")
        for sid in range(1, 7):  # power lost: every servo silent -> the bus is blamed, not servo 1
            emulator.set_gone(sid)
        with pytest.raises(NoAnswerError, match="no servo answered") as exc:
            arm.read()
        assert exc.value.servo_id is None
        for sid in range(1, 7):
            emulator.set_gone(sid, False)


def test_leader_is_read_only_with_torque_off(
    emulator: FeetechEmulator,
    bus_config: BusConfig,
    calibration: ArmCalibration,
    place_at_mid: Callable[..., None],
) -> None:
    place_at_mid(emulator, calibration)
    emulator.write_register(1, p.TORQUE_ENABLE, 1)
    leader = SO101Leader(ArmConfig(bus_config), calibration)
    with pytest.raises(NotConnectedError):
        leader.read()
    with leader:
        assert all(emulator.read_register(sid, p.TORQUE_ENABLE) == 0 for sid in range(1, 7))
        pan = calibration["shoulder_pan"]
        emulator.set_present_position(1, round(pan.mid) + 512)  # the operator moves the leader by hand
        assert leader.read().positions[0] == pytest.approx(512 * STEP, abs=STEP)
        with pytest.raises(SafetyError):
            leader.write(np.zeros(6))
        with pytest.raises(SafetyError):
            leader.set_torque(True)
