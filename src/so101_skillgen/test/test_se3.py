"""Batched SE(3) helpers: group laws, Shepperd's quaternion near 0° and 180°, slerp, rotation error, retargeting."""

# ruff: noqa: N803, N806  (math notation: R rotation, T pose, J Jacobian)

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor

from so101_skillgen import se3


def random_rotations(n: int, gen: torch.Generator, dtype: torch.dtype = torch.float64) -> Tensor:
    q = torch.randn((n, 4), generator=gen, dtype=dtype)
    return se3.matrix_from_quat(q)


def random_poses(shape: tuple[int, ...], gen: torch.Generator, dtype: torch.dtype = torch.float64) -> Tensor:
    n = math.prod(shape)
    R = random_rotations(n, gen, dtype).reshape(*shape, 3, 3)
    p = torch.randn((*shape, 3), generator=gen, dtype=dtype)
    return se3.make_transform(R, p)


def axis_angle_matrix(axis: tuple[float, float, float], angle: float, dtype: torch.dtype) -> Tensor:
    a = torch.tensor(axis, dtype=torch.float64)
    return se3.matrix_from_axis_angle(a / a.norm() * angle).to(dtype)


def naive_quat(R: Tensor) -> Tensor:
    """The textbook formula: w = ½√(1 + trace), (x, y, z) = (R₂₁ − R₁₂, …) / 4w — divides by ≈ 0 near 180°."""
    w = 0.5 * torch.sqrt(torch.clamp(1.0 + R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2], min=0.0))
    x = (R[..., 2, 1] - R[..., 1, 2]) / (4 * w)
    y = (R[..., 0, 2] - R[..., 2, 0]) / (4 * w)
    z = (R[..., 1, 0] - R[..., 0, 1]) / (4 * w)
    return torch.stack([w, x, y, z], -1)


def quat_matrix_error(q: Tensor, R: Tensor) -> float:
    back = se3.matrix_from_quat(q) if bool(torch.isfinite(q).all()) else torch.full_like(R, math.nan)
    err = (back - R).abs().amax()
    return math.inf if not math.isfinite(float(err)) else float(err)


def test_group_laws_with_batch_dims() -> None:
    gen = torch.Generator().manual_seed(0)
    a, b, c = (random_poses((4, 3), gen) for _ in range(3))
    eye = torch.eye(4, dtype=torch.float64).expand(4, 3, 4, 4)
    torch.testing.assert_close(se3.compose(a, se3.inverse(a)), eye, atol=1e-12, rtol=0)
    torch.testing.assert_close(se3.inverse(se3.compose(a, b)), se3.compose(se3.inverse(b), se3.inverse(a)))
    torch.testing.assert_close(se3.compose(se3.compose(a, b), c), se3.compose(a, se3.compose(b, c)))
    torch.testing.assert_close(se3.compose(a, eye), a)
    assert se3.make_transform(torch.eye(3), torch.zeros(2, 5, 3)).shape == (2, 5, 4, 4)  # broadcast


def test_shape_errors_name_the_argument() -> None:
    with pytest.raises(se3.SE3Error, match=r"R must have shape \(\.\.\., 3, 3\), got \(3, 4\)"):
        se3.quat_from_matrix(torch.zeros(3, 4))
    with pytest.raises(se3.SE3Error, match="ee_traj must have shape"):
        se3.retarget(torch.eye(4), torch.eye(4), torch.eye(4))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_shepperd_round_trips_every_branch_and_near_0_and_180_degrees(dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(1)
    axes = [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (1.0, -2.0, 0.5)]
    angles = [0.0, 1e-7, 1e-3, 1.0, math.pi - 1e-3, math.pi - 1e-6, math.pi]
    R = torch.stack([axis_angle_matrix(ax, ang, dtype) for ax in axes for ang in angles])
    R = torch.cat([R, random_rotations(200, gen, dtype)])
    q = se3.quat_from_matrix(R)
    assert q.dtype == dtype and bool((q[..., 0] >= 0).all())
    torch.testing.assert_close(q.norm(dim=-1), torch.ones(len(R), dtype=dtype))
    tol = 5e-6 if dtype == torch.float32 else 1e-12
    assert quat_matrix_error(q, R) < tol


def test_naive_formula_fails_near_180_degrees_where_shepperd_does_not() -> None:
    for angle in (math.pi, math.pi - 1e-5):
        R = axis_angle_matrix((1.0, 1.0, 0.0), angle, torch.float32)[None]
        assert quat_matrix_error(se3.quat_from_matrix(R), R) < 1e-5
        assert quat_matrix_error(naive_quat(R), R) > 1e-2  # nan/inf at π, ≫ 1 % off just below it
    # near 0° both are fine: the trace branch is the naive formula
    R0 = axis_angle_matrix((0.3, -0.2, 0.9), 1e-4, torch.float32)[None]
    assert quat_matrix_error(naive_quat(R0), R0) < 1e-6
    assert quat_matrix_error(se3.quat_from_matrix(R0), R0) < 1e-6


def test_slerp_and_interpolate() -> None:
    gen = torch.Generator().manual_seed(2)
    q0 = se3.quat_from_matrix(random_rotations(16, gen))
    q1 = se3.quat_from_matrix(random_rotations(16, gen))
    torch.testing.assert_close(se3.slerp(q0, q1, 0.0), q0)
    torch.testing.assert_close(se3.matrix_from_quat(se3.slerp(q0, q1, 1.0)), se3.matrix_from_quat(q1))
    torch.testing.assert_close(se3.slerp(q0, -q1, 0.3), se3.slerp(q0, q1, 0.3))  # shortest arc either sign
    R0, R1 = se3.matrix_from_quat(q0), se3.matrix_from_quat(q1)
    half = se3.matrix_from_quat(se3.slerp(q0, q1, torch.full((16,), 0.5, dtype=torch.float64)))
    total = se3.rotation_error(R1, R0).norm(dim=-1)
    torch.testing.assert_close(se3.rotation_error(half, R0).norm(dim=-1), total / 2)
    torch.testing.assert_close(se3.rotation_error(R1, half).norm(dim=-1), total / 2)
    T0 = se3.make_transform(R0, torch.zeros(16, 3, dtype=torch.float64))
    T1 = se3.make_transform(R1, torch.ones(16, 3, dtype=torch.float64))
    mid = se3.interpolate(T0, T1, 0.5)
    torch.testing.assert_close(mid[:, :3, 3], torch.full((16, 3), 0.5, dtype=torch.float64))
    torch.testing.assert_close(mid[:, :3, :3], half)
    torch.testing.assert_close(se3.interpolate(T0, T1, 0.0), T0)


def test_rotation_error_is_the_axis_angle_up_to_180_degrees() -> None:
    gen = torch.Generator().manual_seed(3)
    R = random_rotations(64, gen)
    axis = torch.nn.functional.normalize(torch.randn(64, 3, generator=gen, dtype=torch.float64), dim=-1)
    angle = torch.linspace(0.0, math.pi - 1e-4, 64, dtype=torch.float64)[:, None]
    v = axis * angle
    Rt = se3.matrix_from_axis_angle(v) @ R
    torch.testing.assert_close(se3.rotation_error(Rt, R), v, atol=1e-9, rtol=0)


def test_retargeted_trajectory_keeps_its_pose_relative_to_the_object() -> None:
    gen = torch.Generator().manual_seed(4)
    traj = random_poses((3, 50), gen)  # 3 trajectories of 50 poses
    seed_obj, new_obj = random_poses((3,), gen), random_poses((3,), gen)
    out = se3.retarget(traj, seed_obj, new_obj)
    assert out.shape == (3, 50, 4, 4)
    rel_before = se3.inverse(seed_obj)[:, None] @ traj
    rel_after = se3.inverse(new_obj)[:, None] @ out
    torch.testing.assert_close(rel_after, rel_before, atol=1e-12, rtol=0)
    torch.testing.assert_close(se3.retarget(traj, seed_obj, seed_obj), traj, atol=1e-12, rtol=0)  # no move


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu() -> None:
    gen = torch.Generator().manual_seed(5)
    R = random_rotations(1000, gen, torch.float32)
    torch.testing.assert_close(se3.quat_from_matrix(R.cuda()).cpu(), se3.quat_from_matrix(R))
    a, b = R[:10, None], R[None, :7].transpose(-1, -2)
    torch.testing.assert_close(se3.mm(a.cuda(), b.cuda()).cpu(), a @ b)  # broadcast multiply-sum on CUDA
