"""The upright bound (so101_skillgen.upright): which rack slots the 5-joint arm can stand a grasped vial in."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest
from so101_core.geometry import quat_to_mat
from so101_core.robot_spec import GRIPPER_INDEX
from so101_core.sim.config import load_task_config
from so101_core.sim.randomization import DRConfig
from so101_core.sim.twin import Twin
from so101_skillgen.config import load_skillgen_config
from so101_skillgen.tracking import Tracker, make_tracker
from so101_skillgen.upright import THETA_STEP, fillable, in_hand_axes, slot_points, upright_bound


@pytest.fixture(scope="module")
def twin() -> Iterator[Twin]:
    made = Twin(None, DRConfig.disabled())
    yield made
    made.close()


@pytest.fixture(scope="module")
def tracker(twin: Twin) -> Tracker:
    return make_tracker(twin, load_skillgen_config().ik)


def test_in_hand_axes_are_every_turn_about_the_jaw_line() -> None:
    axes = in_hand_axes()
    assert axes.shape == (round(2 * np.pi / THETA_STEP), 3)
    np.testing.assert_allclose(np.linalg.norm(axes, axis=1), 1.0)
    np.testing.assert_allclose(axes[:, 2], 0.0)  # perpendicular to the jaw line (EE z)
    np.testing.assert_allclose(axes[0], [-1.0, 0.0, 0.0], atol=1e-12)  # back along the approach first
    assert len({tuple(np.round(a, 9)) for a in axes}) == len(axes)


def test_the_nominal_slot_is_fillable_and_the_same_slot_near_the_base_is_not(twin: Twin, tracker: Tracker) -> None:
    twin.reset(0)
    g = twin.grasp_geometry()
    home = np.asarray(twin.config.robot.home[:GRIPPER_INDEX], dtype=np.float64)
    pose = twin.object_poses()[twin.vial_names[0]]
    vial = (pose.position, quat_to_mat(pose.quaternion)[:, 2])
    points = slot_points(twin)[0]  # release and cell entry over the target slot, world
    radius = float(np.linalg.norm(points[0, :2]))
    assert 0.2 < radius < 0.3
    assert fillable(tracker, home, g.point, g.along, vial, points)
    near = points.copy()
    near[:, :2] *= 0.12 / radius  # the same heights 12 cm from the base
    assert not fillable(tracker, home, g.point, g.along, vial, near)
    assert not fillable(tracker, home, g.point, g.along, None, near)  # whatever the grasp


def test_the_bound_counts_the_scenes_whose_slots_are_out_of_reach(twin: Twin, tracker: Tracker) -> None:
    nominal = upright_bound(twin, tracker, 1)
    assert (nominal.scenes, nominal.fillable, nominal.entry_only, nominal.unfillable_radii) == (1, 1, 1, ())
    assert nominal.to_json()["yield_upper_bound"] == 1.0
    # the rack pushed toward the base, the target the slot nearest to it
    dr = replace(DRConfig(), rack_x=(-0.06, -0.06), rack_y=(-0.03, -0.03), rack_yaw=(0.0, 0.0))
    rack = twin.config.rack
    xy = np.asarray(rack.xy) + np.array([-0.06, -0.03])
    nearest = int(np.argmin(np.linalg.norm(xy + np.asarray(rack.slot_offsets()), axis=1)))
    close = Twin(None, dr, replace(load_task_config(), fill_order=(nearest,), prefill=False))
    try:
        bound = upright_bound(close, make_tracker(close, load_skillgen_config().ik), 1)
    finally:
        close.close()
    assert (bound.scenes, bound.fillable, bound.entry_only) == (1, 0, 0)
    assert len(bound.unfillable_radii) == 1 and 0.1 < bound.unfillable_radii[0] < 0.14
    assert bound.to_json()["yield_upper_bound"] == 0.0
