"""Scene composition: offline assets, cameras, actuators, contact margins and collision filtering."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from so101_core.sim import JOINT_NAMES
from so101_core.sim.config import SimConfig
from so101_core.sim.scene import ARM, ENV, GRIPPER, OBJECT, PAD, SceneIndex, build_model
from so101_core.sim.twin import Twin


def test_scene_builds_from_installed_wheel(sim_cfg: SimConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = build_model(sim_cfg)
    ix = SceneIndex.of(model, sim_cfg)
    assert model.nu == 6 and model.ncam == 3 and model.nlight >= 1
    assert [model.joint(model.jnt_qposadr.tolist().index(a)).name for a in ix.qpos_adr] == list(JOINT_NAMES)
    assert model.opt.timestep == pytest.approx(0.002)
    assert model.body("vial").mass[0] == pytest.approx(0.02, rel=1e-3)
    assert model.body_subtreemass[model.body("rack").id] == pytest.approx(0.2, rel=1e-3)
    kp = [a.kp for a in sim_cfg.robot.actuators]
    assert np.allclose(model.actuator_gainprm[ix.actuator_ids, 0], kp)
    assert np.allclose(model.actuator_forcerange[ix.actuator_ids, 1], [a.force_limit for a in sim_cfg.robot.actuators])


def test_contact_margins_are_zero_and_gripper_hulls_ignore_objects(sim_cfg: SimConfig) -> None:
    model = build_model(sim_cfg)
    ix = SceneIndex.of(model, sim_cfg)
    objects = [g for gs in ix.object_geoms.values() for g in gs]
    assert np.all(model.geom_margin[[*objects, *ix.pad_geoms]] <= 1e-9)
    for g in range(model.ngeom):
        if model.geom_contype[g] == GRIPPER:  # convex hulls of the jaws: mat only
            assert model.geom_conaffinity[g] == ENV
    assert all(model.geom_contype[p] == PAD for p in ix.pad_geoms)
    assert all(model.geom_contype[o] == OBJECT and model.geom_conaffinity[o] & (ARM | PAD) for o in objects)


def test_no_contact_before_visible_contact(nominal_twin: Twin) -> None:
    """A jaw pad 1 mm from the rack wall makes no contact (no phantom push); at -0.5 mm it does."""
    t = nominal_twin
    t.reset(0)
    m, d = t.model, t.data
    pad = t.index.pad_geoms[0]
    rack = t.object_poses()["rack"]
    wall_top = rack.position[2] + t.config.rack.top_height
    for gap, expect in ((0.001, False), (-0.0005, True)):
        # move the rack so its top surface sits `gap` below the pad's lowest point
        mujoco.mj_forward(m, d)
        pad_pos = d.geom_xpos[pad]
        lowest = pad_pos[2] - float(np.abs(d.geom_xmat[pad].reshape(3, 3)) @ m.geom_size[pad] @ [0, 0, 1])
        r = t.config.rack
        wall_y = -r.size / 2 + r.wall_thickness / 2 + r.slot_pitch  # an inner wall along x, rack yaw 0
        shift = np.array([pad_pos[0], pad_pos[1] - wall_y, rack.position[2] + lowest - gap - wall_top])
        t.set_object_pose("rack", (shift, rack.quaternion))
        touching = any(
            pad in (int(c.geom1), int(c.geom2)) and (set(t.index.object_geoms["rack"]) & {int(c.geom1), int(c.geom2)})
            for c in d.contact[: d.ncon]
        )
        assert touching is expect, f"gap {gap}"
