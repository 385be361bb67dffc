"""Twin core: reproducible resets, servo tracking, grasp holding, rendering, intrinsics, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from so101_core.sim import GRIPPER_INDEX
from so101_core.sim.errors import InvalidCommandError, UnknownNameError
from so101_core.sim.ik import ArmIK
from so101_core.sim.randomization import DRConfig
from so101_core.sim.task import up_axis_z
from so101_core.sim.twin import GRIPPER_CLOSED, Twin


def _state(t: Twin) -> np.ndarray:
    m = t.model
    return np.concatenate(
        [t.data.qpos, t.data.qvel, m.geom_friction.ravel(), m.body_mass, m.dof_damping,
         m.light_diffuse.ravel(), m.cam_pos.ravel(), m.cam_quat.ravel(), m.mat_rgba.ravel()]
    )  # fmt: skip


def test_same_seed_same_state_and_different_seeds_differ(twin: Twin) -> None:
    twin.reset(7)
    a = _state(twin)
    twin.reset(8)
    b = _state(twin)
    twin.reset(7)
    c = _state(twin)
    assert np.array_equal(a, c)
    assert not np.allclose(a, b)


def test_reset_stays_within_configured_ranges(twin: Twin, dr_cfg: DRConfig) -> None:
    cfg = twin.config
    for seed in range(12):
        s = twin.reset(seed)
        poses = twin.object_poses()
        dv = poses["vial"].position[:2] - np.array(cfg.vial.xy)
        dr_ = poses["rack"].position[:2] - np.array(cfg.rack.xy)
        if not s.partly_done:
            assert dr_cfg.vial_x[0] - 1e-9 <= dv[0] <= dr_cfg.vial_x[1] + 1e-9
            assert dr_cfg.vial_y[0] - 1e-9 <= dv[1] <= dr_cfg.vial_y[1] + 1e-9
            assert dr_cfg.vial_roll[0] <= s.vial_roll - cfg.vial.roll <= dr_cfg.vial_roll[1]
            assert abs(float(up_axis_z(poses["vial"].quaternion))) < 1e-6  # lying down
        assert dr_cfg.rack_x[0] - 1e-9 <= dr_[0] <= dr_cfg.rack_x[1] + 1e-9
        assert dr_cfg.rack_y[0] - 1e-9 <= dr_[1] <= dr_cfg.rack_y[1] + 1e-9
        assert dr_cfg.rack_yaw[0] <= s.rack_yaw - cfg.rack.yaw <= dr_cfg.rack_yaw[1]
        assert dr_cfg.friction_scale[0] <= s.friction_scale <= dr_cfg.friction_scale[1]
        assert dr_cfg.mass_scale[0] <= s.mass_scale <= dr_cfg.mass_scale[1]
        assert dr_cfg.light_intensity_scale[0] <= s.light_scale <= dr_cfg.light_intensity_scale[1]
        assert np.all(np.abs(s.camera_dpos) <= dr_cfg.camera_pos_jitter)
        assert twin.model.body_mass[twin.index.object_bodies["vial"]] == pytest.approx(
            cfg.vial.mass * s.mass_scale, rel=1e-6
        )
        assert twin.time == 0.0


def test_control_period_keeps_sim_time_on_the_30hz_grid(nominal_twin: Twin) -> None:
    t = nominal_twin
    t.reset(0)
    home = np.array(t.config.robot.home)
    for _ in range(30):
        t.step(home)
    assert t.time == pytest.approx(1.0, abs=1e-9)
    assert t.ticks == 30


def test_joint_target_is_reached(nominal_twin: Twin) -> None:
    t = nominal_twin
    t.reset(0)
    target = np.array([0.3, -1.2, 1.2, 0.6, 0.4, 0.5])
    for _ in range(60):  # 2 s
        t.step(target)
    assert np.max(np.abs(t.joint_positions() - target)) < 0.03


def test_gripper_holds_vial_through_a_20cm_lift(in_hand_twin: Twin) -> None:
    t = in_hand_twin
    t.reset(3)
    assert t.jaw_contacts().both
    ix = t.index
    ik = ArmIK(t.model, ix.ee_site, ix.qpos_adr[:5], ix.dof_adr[:5])
    q0 = t.joint_positions()
    p0, _ = ik.forward(q0[:5])
    z0 = t.object_poses()["vial"].position[2]
    res = ik.solve(q0[:5], p0 + np.array([0.0, 0.0, 0.20]))
    assert res.converged
    target = q0.copy()
    target[GRIPPER_INDEX] = GRIPPER_CLOSED
    for k in range(1, 46):  # 1.5 s ramp, then hold
        target[:5] = q0[:5] + min(k / 30.0, 1.0) * (res.q - q0[:5])
        t.step(target)
    vial = t.object_poses()["vial"].position
    assert vial[2] - z0 > 0.19
    assert t.jaw_contacts().both


def test_render_small_rgb_and_depth_on_cpu(nominal_twin: Twin) -> None:
    t = nominal_twin
    t.reset(0)
    for cam in ("ego", "side", "top"):
        img = t.render(cam, width=64, height=48)
        assert isinstance(img, np.ndarray)
        assert img.shape == (48, 64, 3) and img.dtype == np.uint8
        assert img.std() > 0  # not a blank frame
    out = t.render("top", depth=True, width=64, height=48)
    assert isinstance(out, tuple)
    _rgb, depth = out
    assert depth.shape == (48, 64) and depth.dtype == np.uint16
    centre = int(depth[24, 32])
    assert 700 < centre < 800  # top camera 0.75 m above the mat


def test_camera_intrinsics(nominal_twin: Twin) -> None:
    k = nominal_twin.camera_intrinsics("side")
    fovy = np.radians(nominal_twin.config.camera("side").fovy)
    assert k.shape == (3, 3)
    assert k[1, 1] == pytest.approx(240.0 / np.tan(fovy / 2))
    assert (k[0, 2], k[1, 2]) == (320.0, 240.0)


def test_bad_inputs_raise_clear_errors(nominal_twin: Twin) -> None:
    t = nominal_twin
    with pytest.raises(InvalidCommandError, match="shape"):
        t.step(np.zeros(5))
    with pytest.raises(InvalidCommandError, match="finite"):
        t.step(np.array([0, 0, 0, 0, 0, np.nan]))
    with pytest.raises(UnknownNameError, match="fisheye"):
        t.render("fisheye")
    with pytest.raises(UnknownNameError, match="beaker"):
        t.set_object_pose("beaker", (np.zeros(3), np.array([1.0, 0, 0, 0])))


def test_set_object_pose_round_trips(nominal_twin: Twin) -> None:
    t = nominal_twin
    t.reset(0)
    pos, quat = np.array([0.1, 0.2, 0.3]), np.array([0.0, 1.0, 0.0, 0.0])
    t.set_object_pose("vial", (pos, quat))
    got = t.object_poses()["vial"]
    assert np.allclose(got.position, pos) and np.allclose(got.quaternion, quat)
