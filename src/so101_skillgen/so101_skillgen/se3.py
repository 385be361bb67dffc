"""Batched SE(3) / SO(3) helpers in torch (any leading batch dims ``...``, float32/float64, CPU or CUDA).

Conventions: a pose ``T`` (..., 4, 4) maps points of its child frame into its parent frame (``p_parent =
T · p_child``); rotations are (..., 3, 3); quaternions are unit, scalar first (wxyz) with w ≥ 0;
axis-angle vectors (..., 3) are ``angle · unit_axis`` (rad). Nothing here allocates on a device other than
that of its inputs, and every function is differentiable almost everywhere.
"""

# ruff: noqa: N803, N806  (math notation: R rotation, T pose, J Jacobian, H Hessian as in the SPEC)

from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "SE3Error",
    "axis_angle_from_quat",
    "compose",
    "interpolate",
    "inverse",
    "make_transform",
    "matrix_from_axis_angle",
    "matrix_from_quat",
    "mm",
    "quat_from_matrix",
    "retarget",
    "rotation_error",
    "slerp",
]


class SE3Error(ValueError):
    """A tensor has the wrong shape for the SE(3) operation asked for."""


def _check(x: Tensor, tail: tuple[int, ...], name: str) -> None:
    if x.dim() < len(tail) or tuple(x.shape[-len(tail) :]) != tail:
        raise SE3Error(f"{name} must have shape (..., {', '.join(map(str, tail))}), got {tuple(x.shape)}")


def mm(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b`` for tiny matrices (..., m, k) @ (..., k, n), batch dims broadcast.

    On CUDA it is a broadcast multiply-sum (two elementwise kernels), several times faster than cuBLAS's
    batched GEMM/GEMV on thousands of 3×3 … 6×6 products and capturable in a CUDA graph; elsewhere ``@``.
    """
    if a.is_cuda:
        return (a.unsqueeze(-1) * b.unsqueeze(-3)).sum(-2)
    return a @ b


def make_transform(R: Tensor, p: Tensor) -> Tensor:
    """Pose (..., 4, 4) from rotation ``R`` (..., 3, 3) and translation ``p`` (..., 3) (broadcast)."""
    _check(R, (3, 3), "R")
    _check(p, (3,), "p")
    batch = torch.broadcast_shapes(R.shape[:-2], p.shape[:-1])
    T = torch.zeros((*batch, 4, 4), dtype=R.dtype, device=R.device)
    T[..., :3, :3] = R
    T[..., :3, 3] = p
    T[..., 3, 3] = 1.0
    return T


def inverse(T: Tensor) -> Tensor:
    """Inverse pose (..., 4, 4): (R, p)⁻¹ = (Rᵀ, −Rᵀp) — exact for rigid transforms, no general inverse."""
    _check(T, (4, 4), "T")
    Rt = T[..., :3, :3].transpose(-1, -2)
    return make_transform(Rt, -(Rt @ T[..., :3, 3:4]).squeeze(-1))


def compose(a: Tensor, b: Tensor) -> Tensor:
    """``a · b`` (..., 4, 4) (broadcast): the pose of ``b``'s child frame in ``a``'s parent frame."""
    _check(a, (4, 4), "a")
    _check(b, (4, 4), "b")
    return a @ b


def quat_from_matrix(R: Tensor) -> Tensor:
    """Unit quaternion (..., 4) wxyz, w ≥ 0, of rotation matrices (..., 3, 3) by Shepperd's method.

    Per element the largest of (trace, R₀₀, R₁₁, R₂₂) picks the branch, so the square root is always taken
    of a number ≥ 1 and the division is by ≥ 1: stable at 0° (trace branch) and at 180° (a diagonal branch),
    where the textbook ``w = ½√(1 + trace)`` formula divides by ≈ 0.
    """
    _check(R, (3, 3), "R")
    m00, m01, m02 = R[..., 0, 0], R[..., 0, 1], R[..., 0, 2]
    m10, m11, m12 = R[..., 1, 0], R[..., 1, 1], R[..., 1, 2]
    m20, m21, m22 = R[..., 2, 0], R[..., 2, 1], R[..., 2, 2]
    trace = m00 + m11 + m22
    # 4·(w², x², y², z²) up to the branch's own term: each candidate's "big" component is √(1 + d_k) / 2.
    d = torch.stack([trace, 2 * m00 - trace, 2 * m11 - trace, 2 * m22 - trace], dim=-1)
    big = torch.sqrt(torch.clamp(1.0 + d, min=1e-12))  # = 2·|component|, used as the divisor of its branch
    # Rows: the quaternion (unnormalized, scaled by 2·big) of each branch.
    cand = torch.stack(
        [
            torch.stack([big[..., 0] ** 2, m21 - m12, m02 - m20, m10 - m01], dim=-1),
            torch.stack([m21 - m12, big[..., 1] ** 2, m01 + m10, m02 + m20], dim=-1),
            torch.stack([m02 - m20, m01 + m10, big[..., 2] ** 2, m12 + m21], dim=-1),
            torch.stack([m10 - m01, m02 + m20, m12 + m21, big[..., 3] ** 2], dim=-1),
        ],
        dim=-2,
    ) / (2.0 * big.unsqueeze(-1))
    k = torch.argmax(d, dim=-1, keepdim=True)
    q = torch.gather(cand, -2, k.unsqueeze(-1).expand(*k.shape[:-1], 1, 4)).squeeze(-2)
    q = q / torch.linalg.vector_norm(q, dim=-1, keepdim=True)
    return torch.where(q[..., :1] < 0, -q, q)


def matrix_from_quat(q: Tensor) -> Tensor:
    """Rotation (..., 3, 3) of quaternions (..., 4) wxyz (normalized here; need not be unit)."""
    _check(q, (4,), "q")
    q = q / torch.linalg.vector_norm(q, dim=-1, keepdim=True)
    w, x, y, z = q.unbind(-1)
    return torch.stack(
        [
            torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], dim=-1),
            torch.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], dim=-1),
            torch.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], dim=-1),
        ],
        dim=-2,
    )


def axis_angle_from_quat(q: Tensor) -> Tensor:
    """Axis-angle (..., 3), angle in [0, π], of unit quaternions (..., 4) wxyz (stable near 0 and π)."""
    _check(q, (4,), "q")
    q = torch.where(q[..., :1] < 0, -q, q)
    v = q[..., 1:]
    s = torch.linalg.vector_norm(v, dim=-1, keepdim=True)
    angle = 2.0 * torch.atan2(s, q[..., :1])
    # angle / s → 2 / w as s → 0 (first order), avoiding 0/0
    scale = torch.where(s > 1e-7, angle / torch.clamp(s, min=1e-12), 2.0 / torch.clamp(q[..., :1], min=1e-12))
    return v * scale


def matrix_from_axis_angle(v: Tensor) -> Tensor:
    """Rotation (..., 3, 3) of axis-angle vectors (..., 3) (Rodrigues; exact near 0)."""
    _check(v, (3,), "v")
    angle = torch.linalg.vector_norm(v, dim=-1, keepdim=True)
    half = 0.5 * angle
    # sin(θ/2)/θ → 1/2 near 0
    k = torch.where(angle > 1e-7, torch.sin(half) / torch.clamp(angle, min=1e-12), 0.5 - angle**2 / 48.0)
    return matrix_from_quat(torch.cat([torch.cos(half), v * k], dim=-1))


def slerp(q0: Tensor, q1: Tensor, s: Tensor | float) -> Tensor:
    """Spherical interpolation (..., 4) wxyz from ``q0`` (s = 0) to ``q1`` (s = 1) along the shorter arc.

    ``s`` is a float or a tensor broadcastable to the batch shape (...); near-equal quaternions fall back
    to normalized lerp.
    """
    _check(q0, (4,), "q0")
    _check(q1, (4,), "q1")
    s_t = torch.as_tensor(s, dtype=q0.dtype, device=q0.device)
    if s_t.dim() > 0:
        s_t = s_t.unsqueeze(-1)
    dot = (q0 * q1).sum(-1, keepdim=True)
    q1 = torch.where(dot < 0, -q1, q1)
    dot = dot.abs().clamp(max=1.0)
    theta = torch.acos(dot)
    sin_t = torch.sin(theta)
    near = sin_t < 1e-6
    safe = torch.where(near, torch.ones_like(sin_t), sin_t)
    w0 = torch.where(near, 1.0 - s_t, torch.sin((1.0 - s_t) * theta) / safe)
    w1 = torch.where(near, s_t, torch.sin(s_t * theta) / safe)
    q = w0 * q0 + w1 * q1
    q = q / torch.linalg.vector_norm(q, dim=-1, keepdim=True)
    return torch.where(q[..., :1] < 0, -q, q)


def interpolate(T0: Tensor, T1: Tensor, s: Tensor | float) -> Tensor:
    """Pose (..., 4, 4) between ``T0`` (s = 0) and ``T1`` (s = 1): lerp of positions, slerp of rotations."""
    _check(T0, (4, 4), "T0")
    _check(T1, (4, 4), "T1")
    s_t = torch.as_tensor(s, dtype=T0.dtype, device=T0.device)
    s_p = s_t.unsqueeze(-1) if s_t.dim() > 0 else s_t
    p = T0[..., :3, 3] + s_p * (T1[..., :3, 3] - T0[..., :3, 3])
    q = slerp(quat_from_matrix(T0[..., :3, :3]), quat_from_matrix(T1[..., :3, :3]), s_t)
    return make_transform(matrix_from_quat(q), p)


def rotation_error(R_target: Tensor, R: Tensor) -> Tensor:
    """Axis-angle (..., 3), in the common parent frame, of the rotation taking ``R`` to ``R_target``.

    ``log(R_target · Rᵀ)`` through Shepperd's quaternion, so it stays accurate at 0 and near π; this is the
    rotation velocity (times 1 s) a geometric Jacobian's angular rows must produce.
    """
    _check(R_target, (3, 3), "R_target")
    _check(R, (3, 3), "R")
    return axis_angle_from_quat(quat_from_matrix(R_target @ R.transpose(-1, -2)))


def retarget(ee_traj: Tensor, T_seed_obj: Tensor, T_new_obj: Tensor) -> Tensor:
    """Move an end-effector trajectory (..., N, 4, 4) with its object: ΔT = T_new · T_seed⁻¹ on the left.

    ``T_seed_obj`` / ``T_new_obj`` (..., 4, 4): the object pose in the seed demo and in the new scene, in the
    same frame as the trajectory (robot base). Every returned pose keeps its pose relative to the object:
    T_new⁻¹ · out = T_seed⁻¹ · in.
    """
    _check(ee_traj, (4, 4), "ee_traj")
    if ee_traj.dim() < 3:
        raise SE3Error(f"ee_traj must have shape (..., N, 4, 4), got {tuple(ee_traj.shape)}")
    _check(T_seed_obj, (4, 4), "T_seed_obj")
    _check(T_new_obj, (4, 4), "T_new_obj")
    delta = compose(T_new_obj, inverse(T_seed_obj))
    return delta.unsqueeze(-3) @ ee_traj
