"""The twin's servo loop per arm: latency and dead band stepped physics step by physics step, identified gains and
joint parameters in the model, the per-arm file (load, save, errors that name the field)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from so101_core.sim.config import SimConfig, load_sim_config
from so101_core.sim.dynamics import (
    ArmDynamics,
    arm_dynamics,
    load_arm_dynamics,
    nominal_dynamics,
    save_arm_dynamics,
)
from so101_core.sim.errors import ConfigError
from so101_core.sim.randomization import DRConfig
from so101_core.sim.servo import DelayLine
from so101_core.sim.twin import Twin


@pytest.fixture(scope="module")
def sim_cfg() -> SimConfig:
    return load_sim_config()


@pytest.fixture(scope="module")
def nominal(sim_cfg: SimConfig) -> ArmDynamics:
    return nominal_dynamics(sim_cfg)


def test_delay_line_holds_each_joint_for_its_latency_and_averages_a_switch_inside_a_step() -> None:
    line = DelayLine([0.0, 0.015, 0.03, 0.0, 0.0, 0.0], np.zeros(6))
    line.push(0.0, np.ones(6))
    edges = np.arange(0, 0.05, 0.01)  # steps [0, 0.01], [0.01, 0.02], ...
    mean = line.mean_targets(edges)
    assert mean[:, 0].tolist() == [1.0, 1.0, 1.0, 1.0]  # no latency
    assert mean[:, 1].tolist() == pytest.approx([0.0, 0.5, 1.0, 1.0])  # switches half-way through the 2nd step
    assert mean[:, 2].tolist() == pytest.approx([0.0, 0.0, 0.0, 1.0])
    assert line.at(0.014)[1] == 0.0 and line.at(0.016)[1] == 1.0
    line.push(0.02, 2 * np.ones(6))
    line.prune(0.05)  # both commands have reached every joint: folded into what is held
    assert line.state().times == [] and line.latest().tolist() == [2.0] * 6
    with pytest.raises(ValueError, match="before the previous"):
        line.push(0.01, np.zeros(6))


def test_twin_with_latency_and_dead_band_acts_late_and_stops_pushing_inside_the_band(
    sim_cfg: SimConfig, nominal: ArmDynamics
) -> None:
    band = 0.02
    slow = ArmDynamics(tuple(replace(j, latency_s=0.1, deadband=band) for j in nominal.joints), "slow")
    fast, late = Twin(sim_cfg, DRConfig.disabled()), Twin(sim_cfg, DRConfig.disabled(), dynamics=slow)
    try:
        home = late.joint_positions()
        target = home.copy()
        target[0] += 0.3  # shoulder_pan: gravity does not act on it
        for twin in (fast, late):
            twin.step(target)  # one 33 ms period: the nominal twin moves, the late one has not seen it yet
        assert fast.joint_positions()[0] - home[0] > 0.01
        assert abs(late.joint_positions()[0] - home[0]) < 1e-4
        for _ in range(60):
            late.step(target)
        error = target[0] - late.joint_positions()[0]
        assert 0.0 < error <= band + 1e-3  # settled inside the dead band, short of the target
        assert abs(late.joint_efforts()[0]) < 0.06  # no push inside the band (friction holds it)
        state = late.snapshot()
        for _ in range(3):
            late.step(home)
        late.restore(state)
        late.step(target)  # the command still on its way was restored with the snapshot
        assert abs(target[0] - late.joint_positions()[0]) <= band + 1e-3
    finally:
        fast.close()
        late.close()


def test_twin_loads_the_identified_gains_and_joint_parameters(sim_cfg: SimConfig, nominal: ArmDynamics) -> None:
    arm = nominal.with_joint("elbow_flex", replace(nominal["elbow_flex"], kp=12.5, kv=0.9, armature=0.04,
                                                   damping=0.3, frictionloss=0.11))  # fmt: skip
    with Twin(sim_cfg, DRConfig.disabled(), dynamics=arm) as twin:
        a = twin.index.actuator_ids[2]
        d = twin.index.dof_adr[2]
        m = twin.model
        assert (m.actuator_gainprm[a, 0], m.actuator_biasprm[a, 1], m.actuator_biasprm[a, 2]) == (12.5, -12.5, -0.9)
        assert (m.dof_armature[d], m.dof_damping[d], m.dof_frictionloss[d]) == pytest.approx((0.04, 0.3, 0.11))
        assert m.actuator_gainprm[twin.index.actuator_ids[1], 0] == nominal["shoulder_lift"].kp  # others nominal


def test_per_arm_file_round_trip_keeps_only_what_differs(tmp_path: Path, sim_cfg: SimConfig,
                                                          nominal: ArmDynamics) -> None:  # fmt: skip
    arm = ArmDynamics(nominal.with_joint("wrist_roll", replace(nominal["wrist_roll"], kp=7.0, latency_s=0.03)).joints,
                      "my_arm")  # fmt: skip
    path = save_arm_dynamics(tmp_path / "arms" / "my_arm.yaml", arm, nominal, {"note": "test"}, "header")
    text = path.read_text()
    assert text.startswith("# header") and "shoulder_pan" not in text and "latency_s: 0.03" in text
    loaded = load_arm_dynamics(path, nominal)
    assert loaded == arm
    assert arm_dynamics("my_arm", sim_cfg, path) == arm
    assert arm_dynamics("", sim_cfg) is None  # no arm named: the nominal twin


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("robot_id: a\njoints: {elbow_flex: {kp: -1.0}}\n", "arm.joints.elbow_flex.kp"),
        ("robot_id: a\njoints: {elbow: {kp: 1.0}}\n", "arm.joints.elbow"),
        ("robot_id: a\njoints: {elbow_flex: {gain: 1.0}}\n", "arm.joints.elbow_flex.gain"),
        ("robot_id: a\njoints: {elbow_flex: {latency_s: 2.0}}\n", "arm.joints.elbow_flex.latency_s"),
        ("robot_id: a/b\n", "robot_id"),
    ],
)
def test_a_bad_per_arm_file_names_its_field(tmp_path: Path, nominal: ArmDynamics, text: str, field: str) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_arm_dynamics(path, nominal)
    assert info.value.field == field
    assert str(path) in str(info.value)


def test_a_named_arm_without_its_file_is_an_error_not_the_nominal_twin(tmp_path: Path, sim_cfg: SimConfig) -> None:
    with pytest.raises(ConfigError, match=r"no identified twin for arm 'ghost'.*so101 sysid fit"):
        arm_dynamics("ghost", sim_cfg, tmp_path / "ghost.yaml")
    other = tmp_path / "other.yaml"
    other.write_text("robot_id: other\n")
    with pytest.raises(ConfigError, match="twin of 'other', not of 'ghost'"):
        arm_dynamics("ghost", sim_cfg, other)
