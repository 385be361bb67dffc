"""The twin as the physics behind the servo emulator: goals act after the hidden latency, positions, speeds and
loads come back through the bus in the servos' units, torque off leaves the joint to gravity."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from nodegraph.testing import wait_until
from so101_core.sim.config import load_sim_config
from so101_core.sim.dynamics import ArmDynamics, nominal_dynamics
from so101_hardware.calibration import ArmCalibration
from so101_hardware.example_calibration import EXAMPLE_FOLLOWER_CALIBRATION
from so101_hardware.feetech import protocol as p
from so101_hardware.feetech.bus import BusConfig, FeetechBus
from so101_hardware.feetech.emulator import FeetechEmulator
from so101_hardware.feetech.twin_plant import TwinPlant

Q0 = np.array([0.0, -0.2, -0.4, 0.0, 0.0, 1.2])


@pytest.fixture(scope="module")
def late_arm() -> ArmDynamics:
    nominal = nominal_dynamics(load_sim_config())
    return ArmDynamics(tuple(replace(j, latency_s=0.05) for j in nominal.joints), "late")


def test_a_goal_acts_after_the_latency_and_reads_back_in_counts(late_arm: ArmDynamics) -> None:
    cal = ArmCalibration.from_dict(EXAMPLE_FOLLOWER_CALIBRATION)
    plant = TwinPlant(late_arm, cal, q0=Q0)
    pan = cal["shoulder_pan"]
    raw0, _, _ = plant.reading(pan.id)
    assert raw0 - pan.homing_offset == pytest.approx(pan.mid, abs=0.5)  # q = 0 reads the range's middle
    plant.advance(0.0)
    plant.set_goal(pan.id, raw0 + 200, 0.0)  # about 0.3 rad ahead
    plant.advance(0.04)  # within the latency: the servo has not seen it
    assert plant.reading(pan.id)[0] == pytest.approx(raw0, abs=0.5)
    plant.advance(0.3)
    raw, speed, load = plant.reading(pan.id)
    assert raw - raw0 > 150
    _, qd, force = plant.arm.reading(0)
    conv = plant.converter.joints[0]
    assert speed == pytest.approx(qd / conv.rad_per_count)
    assert load == pytest.approx(force / conv.torque_per_load(3.35))


def test_emulated_servos_report_the_twin_and_go_limp_without_torque(late_arm: ArmDynamics) -> None:
    cal = ArmCalibration.from_dict(EXAMPLE_FOLLOWER_CALIBRATION)
    plant = TwinPlant(late_arm, cal, q0=Q0)
    lift = cal["shoulder_lift"]
    with (
        FeetechEmulator(plant=plant) as emu,
        FeetechBus(BusConfig(emu.port, timeout_ms=60.0), cal.ids.values()) as bus,
    ):
        for m in cal.motors.values():
            emu.write_register(m.id, p.HOMING_OFFSET, m.homing_offset)
        start = bus.read(lift.id, p.PRESENT_POSITION)
        expected = plant.converter.joints[1].linear_counts(Q0[1])
        assert start == pytest.approx(expected, abs=1.0)
        wait_until(lambda: bus.read(lift.id, p.PRESENT_LOAD) < -50)  # holding the arm up against gravity
        bus.set_torque(False, [lift.id])
        wait_until(lambda: abs(bus.read(lift.id, p.PRESENT_POSITION) - start) > 100)  # it falls
