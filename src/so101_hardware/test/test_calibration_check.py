"""``so101 calibrate --check`` logic on the emulated bus: a calibration that still fits the arm passes; servo
EEPROM that disagrees with the file, a joint reading outside its range, and (probing under a torque limit) a
mechanical stop met inside the calibrated range all say to recalibrate."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
from so101_core.joints import FALLBACK_RANGES, JointRanges
from so101_core.sim.config import load_sim_config
from so101_core.sim.dynamics import nominal_dynamics
from so101_hardware.calibration import ArmCalibration, ArmConverter
from so101_hardware.calibration_check import ProbeSettings, check_calibration, drifted_joints
from so101_hardware.feetech import protocol as p
from so101_hardware.feetech.bus import BusConfig, FeetechBus
from so101_hardware.feetech.emulator import FeetechEmulator
from so101_hardware.feetech.twin_plant import TwinPlant

Place = Callable[[FeetechEmulator, ArmCalibration], None]


def test_a_matching_arm_passes_and_a_changed_eeprom_or_reading_fails(
    emulator: FeetechEmulator, bus: FeetechBus, calibration: ArmCalibration, place_at_mid: Place
) -> None:
    place_at_mid(emulator, calibration)
    ok = check_calibration(bus, calibration)
    assert not ok.recalibrate and "matches" in ok.verdict()
    elbow = calibration["elbow_flex"]
    emulator.write_register(elbow.id, p.HOMING_OFFSET, elbow.homing_offset + 90)  # someone recalibrated it
    emulator.set_present_position(calibration["gripper"].id, calibration["gripper"].range_max + 80)
    result = check_calibration(bus, calibration)
    assert result.recalibrate
    bad = {(f.joint, f.what): f.detail for f in result.findings if not f.ok}
    assert set(bad) == {("elbow_flex", "eeprom"), ("gripper", "position")}
    assert f"homing_offset: file {elbow.homing_offset}, servo {elbow.homing_offset + 90}" in bad["elbow_flex", "eeprom"]
    assert "80 counts above" in bad["gripper", "position"]
    assert "recalibrate: elbow_flex, gripper" in result.verdict()


def test_drifted_joints_beyond_the_margin(calibration: ArmCalibration) -> None:
    conv = ArmConverter.build(calibration, JointRanges.from_mapping(FALLBACK_RANGES))
    counts = np.array([c.motor.mid for c in conv.joints])
    counts[1] = calibration["shoulder_lift"].range_min - 20  # 0.03 rad out: inside a 0.05 rad margin
    counts[3] = calibration["wrist_flex"].range_max + 100  # 0.15 rad out
    drift = drifted_joints(conv, counts, 0.05)
    assert list(drift) == ["wrist_flex"] and drift["wrist_flex"] > 0.14


def _probe(calibration: ArmCalibration, truth: ArmCalibration) -> list[str]:
    """Probe the gripper's closed stop on an arm whose true zero is ``truth``'s; the findings' details."""
    plant = TwinPlant(nominal_dynamics(load_sim_config()), truth, q0=np.array([0.0, -0.2, -0.4, 0.0, 0.0, 1.0]))
    with (
        FeetechEmulator(plant=plant) as emu,
        FeetechBus(BusConfig(emu.port, timeout_ms=60.0), calibration.ids.values()) as bus,
    ):
        for m in calibration.motors.values():
            emu.write_register(m.id, p.HOMING_OFFSET, m.homing_offset)
            emu.write_register(m.id, p.MIN_POSITION_LIMIT, m.range_min)
            emu.write_register(m.id, p.MAX_POSITION_LIMIT, m.range_max)
        settings = ProbeSettings(joints=("gripper",), speed_counts_s=2500.0, stall_s=0.2)
        result = check_calibration(bus, calibration, probe=True, settings=settings)
        assert bus.read(calibration["gripper"].id, p.TORQUE_ENABLE) == 0  # as it was before the probe
    probe = [f for f in result.findings if f.what.startswith("probe")]
    assert [f.joint for f in probe] == ["gripper"]
    return [f"{'ok' if f.ok else 'bad'}: {f.detail}" for f in probe]


def test_probe_finds_the_closed_gripper_where_the_calibration_says_and_a_slipped_horn_inside(
    calibration: ArmCalibration,
) -> None:
    assert _probe(calibration, calibration)[0].startswith("ok")
    slipped = dict(calibration.motors)
    g = slipped["gripper"]
    slipped["gripper"] = replace(g, homing_offset=g.homing_offset + 150)  # the horn sits 150 counts further round
    (detail,) = _probe(calibration, ArmCalibration(slipped))
    assert detail.startswith("bad: closed end: a stop at")
    inside = int(detail.split(", ")[1].split(" counts")[0])
    assert 120 <= inside <= 180
