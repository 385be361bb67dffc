"""URDF kinematics in torch against MuJoCo's twin: link and EE poses, and the site Jacobian (``mj_jacSite``).

The URDF EE frame ``gripper_frame_link`` = MJCF site ``gripperframe`` rotated +90° about its y axis (same
origin): the URDF z axis (the approach axis) is the site's x axis.
"""

# ruff: noqa: N806  (math notation: R rotation, T pose, J Jacobian)

from __future__ import annotations

from collections.abc import Iterator

import mujoco
import numpy as np
import pytest
import torch
from so101_core.joints import twin_ranges
from so101_core.sim.randomization import DRConfig
from so101_core.sim.twin import Twin
from so101_skillgen.kinematics import ArmKinematics, KinematicsError

LINK_TO_BODY = {
    "shoulder_link": "shoulder",
    "upper_arm_link": "upper_arm",
    "lower_arm_link": "lower_arm",
    "wrist_link": "wrist",
    "gripper_link": "gripper",
}
SITE_TO_URDF = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # R_site^T R_urdf = Ry(+90°)


@pytest.fixture(scope="module")
def twin() -> Iterator[Twin]:
    t = Twin(dr=DRConfig.disabled())
    yield t
    t.close()


@pytest.fixture(scope="module")
def kin() -> ArmKinematics:
    return ArmKinematics.from_urdf()


def random_q(kin: ArmKinematics, n: int, seed: int) -> torch.Tensor:
    return kin.random_q(n, torch.Generator().manual_seed(seed))


def test_chain_limits_and_approach_axis(kin: ArmKinematics) -> None:
    assert kin.joint_names == ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
    assert kin.link_names == tuple(LINK_TO_BODY)
    ranges = twin_ranges()
    np.testing.assert_allclose(kin.lower.numpy(), ranges.lower[:5], atol=1e-5)
    np.testing.assert_allclose(kin.upper.numpy(), ranges.upper[:5], atol=1e-5)
    assert kin.approach_axis.tolist() == [0.0, 0.0, 1.0]


def test_fk_matches_the_twin_bodies_and_ee_site(kin: ArmKinematics, twin: Twin) -> None:
    q = random_q(kin, 20, 0)
    frames = kin.link_frames(q).numpy()
    ee = kin.fk(q).numpy()
    site = twin.index.ee_site
    for i in range(len(q)):
        twin.set_joint_positions(np.array([*q[i].tolist(), 0.2]))
        for k, body in enumerate(LINK_TO_BODY.values()):
            b = twin.model.body(body).id
            assert np.abs(frames[i, k, :3, 3] - twin.data.xpos[b]).max() < 1e-5  # 10 µm
            np.testing.assert_allclose(frames[i, k, :3, :3], twin.data.xmat[b].reshape(3, 3), atol=1e-4)
        assert np.abs(ee[i, :3, 3] - twin.data.site_xpos[site]).max() < 1e-5
        np.testing.assert_allclose(twin.data.site_xmat[site].reshape(3, 3) @ SITE_TO_URDF, ee[i, :3, :3], atol=1e-4)
        site_x = twin.data.site_xmat[site].reshape(3, 3)[:, 0]  # the MJCF site's approach axis
        np.testing.assert_allclose(ee[i, :3, :3] @ kin.approach_axis.numpy(), site_x, atol=1e-4)


def test_jacobian_matches_mujoco_jac_site(kin: ArmKinematics, twin: Twin) -> None:
    q = random_q(kin, 20, 1)
    J = kin.jacobian(q).numpy()
    m, d = twin.model, twin.data
    jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    dofs = twin.index.dof_adr[:5]
    for i in range(len(q)):
        twin.set_joint_positions(np.array([*q[i].tolist(), 0.2]))
        mujoco.mj_jacSite(m, d, jacp, jacr, twin.index.ee_site)
        # same origin: the linear rows agree; angular velocity is frame-independent (both in world = base)
        np.testing.assert_allclose(J[i, :3], jacp[:, dofs], atol=2e-5)
        np.testing.assert_allclose(J[i, 3:], jacr[:, dofs], atol=2e-5)


def test_batch_dims_dtype_and_fk_jacobian_consistency(kin: ArmKinematics) -> None:
    q = random_q(kin, 6, 2).reshape(2, 3, 5)
    T, J = kin.fk_and_jacobian(q)
    assert T.shape == (2, 3, 4, 4) and J.shape == (2, 3, 6, 5)
    k32 = kin.to(dtype=torch.float32)
    torch.testing.assert_close(k32.fk(q.float()), T.float(), atol=1e-5, rtol=0)
    # finite differences of the position agree with the linear rows
    eps = 1e-6
    dq = torch.zeros(5, dtype=torch.float64)
    dq[2] = eps
    fd = (kin.fk(q + dq)[..., :3, 3] - kin.fk(q - dq)[..., :3, 3]) / (2 * eps)
    torch.testing.assert_close(fd, J[..., :3, 2], atol=1e-8, rtol=0)


def test_bad_inputs_raise_clear_errors(kin: ArmKinematics) -> None:
    with pytest.raises(KinematicsError, match=r"q must have shape \(\.\.\., 5\), got \(3, 6\)"):
        kin.fk(torch.zeros(3, 6))
    with pytest.raises(KinematicsError, match="ee_link 'no_such_link' is not a link"):
        ArmKinematics.from_urdf(ee_link="no_such_link")
    with pytest.raises(KinematicsError, match="moving joints base"):
        ArmKinematics.from_urdf(ee_link="wrist_link")
