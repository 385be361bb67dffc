"""The excitation stays safe: inside the limits less the margin, under the command filter's step limit, the jaw
open, the arm clear of the mat; a base pose that cannot be excited safely is refused, saying why."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from so101_core.joints import twin_ranges
from so101_core.robot_spec import JOINT_NAMES
from so101_core.sim.config import load_sim_config
from so101_core.sysid.config import ExcitationConfig, load_sysid_config
from so101_core.sysid.errors import ExcitationError
from so101_core.sysid.excitation import Clearance, plan_excitation, transit_segment

SPEED = 5.0  # rad/s: robot.yaml's 0.05 rad per 10 ms cycle


@pytest.fixture(scope="module")
def clearance() -> Clearance:
    return Clearance(load_sim_config())


def test_plan_is_inside_limits_under_the_step_limit_jaw_open_and_clear_of_the_mat(clearance: Clearance) -> None:
    cfg = load_sysid_config().excitation
    ranges = twin_ranges()
    lower, upper = np.array(ranges.lower), np.array(ranges.upper)
    lower[2], upper[2] = -0.8, 0.0  # a calibration narrower than the twin's range on elbow_flex
    plan = plan_excitation(cfg, lower, upper, SPEED, clearance)
    assert [(s.joint, s.kind) for s in plan] == [(j, k) for j in cfg.joints for k in ("steps", "chirp")]
    base = np.array(cfg.base_pose)
    for seg in plan:
        j = JOINT_NAMES.index(seg.joint)
        q = seg.positions
        assert np.all(q >= lower + cfg.limit_margin - 1e-9) and np.all(q <= upper - cfg.limit_margin + 1e-9)
        assert np.allclose(np.delete(q, j, axis=1), np.delete(base, j))  # one joint at a time
        assert np.allclose(q[0], base) and np.allclose(q[-1], base, atol=1e-6)
        speed = np.abs(np.diff(q[:, j])) / np.diff(seg.times)
        assert speed.max() <= cfg.speed_fraction * SPEED + 1e-6
        assert q[:, 5].min() >= cfg.gripper_min - 1e-9  # the jaw stays open
        assert min(clearance.height(row) for row in q[::10]) >= cfg.clearance
        assert np.ptp(q[:, j]) > 0.1  # it does move
    steps = plan[0]
    assert np.isclose(speed_of(steps, 0), cfg.speed_fraction * SPEED)  # steps ramp at the (fractional) step limit


def speed_of(seg: object, j: int) -> float:
    q, t = seg.positions[:, j], seg.times  # type: ignore[attr-defined]
    return float(np.max(np.abs(np.diff(q)) / np.diff(t)))


def test_an_unsafe_base_pose_is_refused_naming_the_joint(clearance: Clearance) -> None:
    ranges = twin_ranges()
    cfg = ExcitationConfig()
    at_limit = replace(cfg, base_pose=(ranges.upper[0] - 0.05, *cfg.base_pose[1:]))
    with pytest.raises(ExcitationError, match="shoulder_pan: the base pose"):
        plan_excitation(at_limit, ranges.lower, ranges.upper, SPEED, clearance)
    low = replace(cfg, base_pose=(0.0, 0.6, 1.2, 0.6, 0.0, 1.2))  # the hand near the mat
    with pytest.raises(ExcitationError, match=r"within 0\.06 m of the mat"):
        plan_excitation(low, ranges.lower, ranges.upper, SPEED, clearance)


def test_transit_runs_at_its_speed_and_holds() -> None:
    seg = transit_segment(np.zeros(6), np.array([0.0, 0.5, -1.0, 0.0, 0.0, 0.0]), 0.5)
    assert seg.times.tolist() == pytest.approx([0.0, 2.0, 2.5])
    assert seg.kind == "transit" and not seg.joint
