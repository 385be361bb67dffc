"""Closed-form IK: FK → IK → FK on reachable poses, every branch, nearest to the seed, the free axis, failures."""

# ruff: noqa: N803, N806  (math notation: R rotation, T pose, K cross-product matrix)

from __future__ import annotations

import math

import pytest
import torch
from so101_skillgen.ik import AnalyticIK, BatchedIK, JacobianIK, load_ik_config
from so101_skillgen.ik.analytic import _mat
from so101_skillgen.ik.pose_error import pose_error, swing_axis
from so101_skillgen.kinematics import ArmKinematics


@pytest.fixture(scope="module")
def kin() -> ArmKinematics:
    return ArmKinematics.from_urdf()


@pytest.fixture(scope="module")
def ik(kin: ArmKinematics) -> AnalyticIK:
    return AnalyticIK(load_ik_config(), kin)


def _one(T: torch.Tensor) -> tuple:
    t = T.numpy()
    return _mat(t[:3, :3]), (float(t[0, 3]), float(t[1, 3]), float(t[2, 3]))


def test_fk_ik_fk_full_pose_on_random_reachable_poses(kin: ArmKinematics, ik: AnalyticIK) -> None:
    q = kin.random_q(300, torch.Generator().manual_seed(3))
    T = kin.fk(q)
    res = ik.solve(T, partial_pose=False)
    assert res.success_rate == 1.0
    got = kin.fk(res.q)
    _, pe, re = pose_error(T, got, kin.approach_axis, False)
    assert float(pe.max()) < 1e-5 and float(re.max()) < math.radians(1.0)
    assert bool(((res.q >= kin.lower - 1e-9) & (res.q <= kin.upper + 1e-9)).all())


def test_every_branch_and_the_nearest_to_the_seed(kin: ArmKinematics, ik: AnalyticIK) -> None:
    """The pose's own joints are among the solutions; with several, a seed at each gets that one back."""
    qs = kin.random_q(300, torch.Generator().manual_seed(5))
    several = 0
    for q in qs:
        T = kin.fk(q[None])
        R, p = _one(T[0])
        sols = ik.solutions(R, p)
        assert min(max(abs(a - b) for a, b in zip(s, q.tolist(), strict=True)) for s in sols) < 1e-3
        for s in sols:
            _, pe, re = pose_error(T, kin.fk(torch.tensor([s])), kin.approach_axis, False)
            assert float(pe) < 1e-5 and float(re) < 1e-3
            back = ik.solve_one(R, p, tuple(x + 0.05 for x in s))
            assert back.ok and max(abs(a - b) for a, b in zip(back.q, s, strict=True)) < 1e-6
        several += len(sols) >= 2
    assert several >= 1


def test_partial_pose_frees_exactly_the_out_of_plane_swing(kin: ArmKinematics, ik: AnalyticIK) -> None:
    q = torch.tensor([[0.4, -0.3, 0.6, 0.5, -0.7]], dtype=torch.float64)
    T = kin.fk(q)
    a = T[:, :3, 2]
    for axis, free in ((swing_axis(a), True), (a, False)):  # 5° out of the plane vs 5° of roll
        k = axis[0] / torch.linalg.vector_norm(axis[0])
        K = torch.tensor([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]], dtype=torch.float64)
        ang = math.radians(5.0)
        rot = torch.eye(3, dtype=torch.float64) + math.sin(ang) * K + (1 - math.cos(ang)) * K @ K
        Tt = T.clone()
        Tt[0, :3, :3] = rot @ T[0, :3, :3]
        part = ik.solve(Tt, partial_pose=True)
        full = ik.solve(Tt, partial_pose=False)
        got = kin.fk(part.q)
        assert float(torch.linalg.vector_norm(got[0, :3, 3] - Tt[0, :3, 3])) < 1e-5
        assert bool(part.success[0])  # both are solvable with the swing freed (roll is controllable)
        _, _, re_full = pose_error(Tt, got, kin.approach_axis, False)
        sol = ik.solve_one(*_one(Tt[0]))
        assert abs(float(re_full) - sol.swing) < 1e-4  # the only residual is the swing partial pose freed
        if free:  # 5° out of the plane: unreachable in full pose
            assert abs(sol.swing - ang) < 1e-3 and not bool(full.success[0])
        else:  # roll is controllable: only the 7.9 mm roll-axis offset's small pan change is left (< 0.3°)
            assert sol.swing < 5e-3


def test_unreachable_and_limit_violations_are_answered_not_raised(kin: ArmKinematics, ik: AnalyticIK) -> None:
    T = kin.fk(torch.zeros(1, 5, dtype=torch.float64))[0].clone()
    T[:3, 3] = torch.tensor([0.9, 0.0, 0.2], dtype=torch.float64)  # 90 cm away: beyond the arm
    R, p = _one(T)
    sol = ik.solve_one(R, p)
    assert not sol.ok and "reach" in sol.message
    res = ik.solve(T[None])
    assert not bool(res.success[0]) and float(res.position_error[0]) > 0.3


def test_numerical_backends_start_cold_targets_from_the_closed_form(kin: ArmKinematics) -> None:
    cfg = load_ik_config()
    q = kin.random_q(5, torch.Generator().manual_seed(9))
    T = kin.fk(q)
    jac = JacobianIK(cfg, kin).solve(T)
    bat = BatchedIK(cfg, kin).solve(T)
    assert jac.success_rate == 1.0 and bat.success_rate == 1.0
    assert jac.iterations <= 20  # converges at once from the analytic start (cold DLS needs ~100s)


def test_signed_out_of_plane_swing_is_zero_on_the_arm_and_its_sine_off_it(kin: ArmKinematics, ik: AnalyticIK) -> None:
    """The root the analytic tracker's secant search looks for: a·n vanishes on every pose the arm reaches and
    is ±sin of a swing out of the arm's plane (the sign says which side)."""
    qs = kin.random_q(50, torch.Generator().manual_seed(7))
    ang = math.radians(5.0)
    for q in qs:
        T = kin.fk(q[None])
        R, p = _one(T[0])
        assert abs(ik.out_of_plane(R, p, float(q[0]))) < 1e-5  # the URDF's rounded rpy: ~5e-6 rad
        k = swing_axis(T[:, :3, 2])[0]
        k = k / torch.linalg.vector_norm(k)
        K = torch.tensor([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]], dtype=torch.float64)
        signs = []
        for a in (ang, -ang):
            rot = torch.eye(3, dtype=torch.float64) + math.sin(a) * K + (1 - math.cos(a)) * K @ K
            Tt = T[0].clone()
            Tt[:3, :3] = rot @ T[0, :3, :3]
            got = ik.out_of_plane(*_one(Tt), float(q[0]))
            assert got is not None and abs(abs(got) - math.sin(ang)) < 5e-3  # the pan moves with the tool offset
            signs.append(math.copysign(1.0, got))
        assert signs[0] == -signs[1]
