"""The workshop rule: upright in the footprint, carried there, released, held for 25/60 s at our rate."""

from __future__ import annotations

import numpy as np
import pytest
from so101_core.geometry import quat_from_axis_angle
from so101_core.sim.config import SimConfig
from so101_core.sim.errors import SimError
from so101_core.sim.task import slot_centres
from so101_core.sim.workshop_rule import WorkshopRule, in_workshop_region, steps_at_rate

UPRIGHT = np.array([1.0, 0.0, 0.0, 0.0])
RACK_POS = np.array([0.2, 0.13, 0.0])
RACK_Q = quat_from_axis_angle((0.0, 0.0, 1.0), 0.4)


def _seated(sim: SimConfig) -> np.ndarray:
    slot = slot_centres(RACK_POS, RACK_Q, sim.rack)[0]
    return np.array([*slot, sim.rack.base_height + sim.vial.half_length])


def test_step_counts_keep_the_workshop_time(sim_cfg: SimConfig) -> None:
    assert steps_at_rate(25, 60.0, round_up=True) == 25
    assert steps_at_rate(25, 30.0, round_up=True) == 13  # 0.433 s >= 0.417 s
    assert steps_at_rate(20, 30.0, round_up=False) == 10
    assert steps_at_rate(20, 1.0, round_up=False) == 1
    with pytest.raises(SimError, match="control_hz"):
        WorkshopRule(sim_cfg.rack, 0.0)


def test_region_footprint_height_and_tilt(sim_cfg: SimConfig) -> None:
    r = sim_cfg.rack
    seated = _seated(sim_cfg)
    assert in_workshop_region(seated, UPRIGHT, RACK_POS, RACK_Q, r)
    upside_down = quat_from_axis_angle((1.0, 0.0, 0.0), np.pi)
    assert in_workshop_region(seated, upside_down, RACK_POS, RACK_Q, r)  # |up.z|
    assert not in_workshop_region(seated, quat_from_axis_angle((1.0, 0.0, 0.0), np.radians(46)), RACK_POS, RACK_Q, r)
    assert in_workshop_region(seated, quat_from_axis_angle((1.0, 0.0, 0.0), np.radians(44)), RACK_POS, RACK_Q, r)
    # corner of the footprint in the rack frame: inside at 5.9 cm, outside at 6.1 cm along the rack's own x
    rot = np.array([[np.cos(0.4), -np.sin(0.4)], [np.sin(0.4), np.cos(0.4)]])
    for d, want in ((0.059, True), (0.061, False)):
        p = np.array([*(RACK_POS[:2] + rot @ np.array([d, d])), 0.05])
        assert in_workshop_region(p, UPRIGHT, RACK_POS, RACK_Q, r) is want
    high = np.array([*seated[:2], 0.101])
    assert not in_workshop_region(high, UPRIGHT, RACK_POS, RACK_Q, r)


def test_rule_needs_a_recent_grasp_release_and_the_hold(sim_cfg: SimConfig) -> None:
    rule = WorkshopRule(sim_cfg.rack, 30.0)
    seated = _seated(sim_cfg)
    # never grasped: a vial standing in the rack does not count
    for _ in range(50):
        assert not rule.update(seated, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=False)
    rule.reset()
    for _ in range(5):
        assert not rule.update(seated, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=True)  # held: never success
    for _ in range(rule.hold_steps - 1):
        assert not rule.update(seated, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=False)
    assert rule.update(seated, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=False)
    assert rule.update(seated, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=True)  # latched
    # released too long before the vial got there: the streak may not start
    rule.reset()
    rule.update(seated, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=True)
    far = seated + np.array([0.3, 0.0, 0.0])
    for _ in range(rule.grasp_window_steps):
        rule.update(far, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=False)
    for _ in range(rule.hold_steps * 3):
        assert not rule.update(seated, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=False)
    # a broken streak after a recent grasp fails too once the window has passed
    rule.reset()
    rule.update(seated, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=True)
    for _ in range(rule.hold_steps - 1):
        rule.update(seated, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=False)
    assert not rule.update(far, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=False)
    for _ in range(rule.hold_steps * 2):
        assert not rule.update(seated, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=False)
