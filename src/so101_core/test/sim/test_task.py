"""Success detection: upright in a slot and released for N steps; false when lying, outside or held."""

from __future__ import annotations

import numpy as np
from so101_core.geometry import quat_from_axis_angle
from so101_core.sim.config import SimConfig, TaskConfig
from so101_core.sim.task import SuccessDetector, geometric_filter, in_slot, placed, slot_centres

UPRIGHT = np.array([1.0, 0.0, 0.0, 0.0])
LYING = quat_from_axis_angle((1.0, 0.0, 0.0), np.pi / 2)
RACK_POS = np.array([0.2, 0.13, 0.0])
RACK_Q = quat_from_axis_angle((0.0, 0.0, 1.0), 0.3)


def _seated(sim: SimConfig) -> np.ndarray:
    slot = slot_centres(RACK_POS, RACK_Q, sim.rack)[0]
    return np.array([*slot, sim.rack.base_height + sim.vial.half_length])


def test_upright_in_slot_passes(sim_cfg: SimConfig, task_cfg: TaskConfig) -> None:
    assert placed(_seated(sim_cfg), UPRIGHT, RACK_POS, RACK_Q, sim_cfg.rack, task_cfg)


def test_lying_outside_or_between_slots_fails(sim_cfg: SimConfig, task_cfg: TaskConfig) -> None:
    r = sim_cfg.rack
    seated = _seated(sim_cfg)
    assert not placed(seated, LYING, RACK_POS, RACK_Q, r, task_cfg)
    lying_on_mat = np.array([0.25, -0.08, sim_cfg.vial.radius])
    assert not placed(lying_on_mat, LYING, RACK_POS, RACK_Q, r, task_cfg)
    outside = seated + np.array([0.12, 0.0, 0.0])
    assert not placed(outside, UPRIGHT, RACK_POS, RACK_Q, r, task_cfg)
    on_a_wall = np.array([*RACK_POS[:2], 0.0]) + np.array([0.0, 0.0, r.top_height + 0.05])
    between = (slot_centres(RACK_POS, RACK_Q, r)[0] + slot_centres(RACK_POS, RACK_Q, r)[1]) / 2
    on_a_wall[:2] = between
    assert not in_slot(on_a_wall, RACK_POS, RACK_Q, r, task_cfg.slot_tolerance)
    too_high = seated + np.array([0.0, 0.0, 0.2])
    assert not placed(too_high, UPRIGHT, RACK_POS, RACK_Q, r, task_cfg)


def test_geometric_filter_thresholds_and_batching(sim_cfg: SimConfig, task_cfg: TaskConfig) -> None:
    top = sim_cfg.rack.top_height
    pos = np.array(
        [
            [0.2 + 0.069, 0.13, top],  # 6.9 cm away: in
            [0.2 + 0.071, 0.13, top],  # 7.1 cm away: out
            [0.2, 0.13, top - 0.021],  # too low
            [0.2, 0.13, top + 0.099],  # high but in
        ]
    )
    quat = np.tile(UPRIGHT, (4, 1))
    got = geometric_filter(pos, quat, np.tile(RACK_POS, (4, 1)), top, task_cfg)
    assert got.tolist() == [True, False, False, True]
    tilted = quat_from_axis_angle((1.0, 0.0, 0.0), np.radians(61))  # up-axis z = 0.48
    assert not bool(geometric_filter(pos[0], tilted, RACK_POS, top, task_cfg))


def test_detector_needs_release_and_consecutive_steps(sim_cfg: SimConfig, task_cfg: TaskConfig) -> None:
    det = SuccessDetector(task_cfg, sim_cfg.rack)
    seated = _seated(sim_cfg)
    for _ in range(task_cfg.hold_steps * 2):  # still held by both jaws
        assert not det.update(seated, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=True)
    for _ in range(task_cfg.hold_steps - 1):
        assert not det.update(seated, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=False)
    assert not det.update(seated, LYING, RACK_POS, RACK_Q, held_by_both_jaws=False)  # streak broken
    for _ in range(task_cfg.hold_steps - 1):
        assert not det.update(seated, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=False)
    assert det.update(seated, UPRIGHT, RACK_POS, RACK_Q, held_by_both_jaws=False)
    det.reset()
    assert not det.succeeded and det.streak == 0
