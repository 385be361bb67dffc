"""Pose error, weighting and the partial-pose projection used by the IK backends (torch, batched).

All vectors are in the robot base frame, position first: ``e = (e_p, e_r)`` with ``e_p = p* − p`` (m) and
``e_r`` the axis-angle (rad) of the rotation taking the current EE orientation to the target one.

Partial pose (5-DOF arm): the rotation about the approach axis ``a`` (EE frame; URDF z along the jaws) is
not controllable, so ``e_r`` is the *swing* part only — the rotation taking the current approach direction
``R·a`` onto the target one ``R*·a`` — which is perpendicular to ``R·a`` (the projection of the error onto
the plane ⟂ approach axis, exact even for large roll), and the angular Jacobian rows are projected onto that
plane too, so the solver neither chases nor resists roll.
"""

# ruff: noqa: N803, N806  (math notation: R rotation, T pose, J Jacobian, H Hessian as in the SPEC)

from __future__ import annotations

import torch
from torch import Tensor

from ..se3 import mm, rotation_error


def _mv(R: Tensor, v: Tensor) -> Tensor:
    return mm(R, v[..., None])[..., 0]


__all__ = ["perpendicular_unit", "pose_error", "project_angular", "swing_axis", "weight_error"]


def perpendicular_unit(axis: Tensor) -> Tensor:
    """A unit vector (3,) perpendicular to the unit ``axis`` (3,)."""
    ex = torch.tensor([1.0, 0.0, 0.0], dtype=axis.dtype, device=axis.device)
    ey = torch.tensor([0.0, 1.0, 0.0], dtype=axis.dtype, device=axis.device)
    other = torch.where(axis[..., :1].abs() < 0.9, ex, ey)  # no host sync (graph-capturable)
    v = torch.linalg.cross(axis, other, dim=-1)
    return v / torch.linalg.vector_norm(v)


def swing_axis(a: Tensor) -> Tensor:
    """The uncontrollable rotation direction (..., 3) for the approach direction ``a`` (..., 3), base frame.

    The approach axis lies in the arm's vertical plane (pan + parallel pitch joints + roll about it): the
    rotation about the in-plane direction ⟂ ``a`` — world z minus its ``a`` component — swings ``a`` out of
    that plane and is the one the arm cannot make. Pitch (about the plane normal) and roll (about ``a``)
    are controllable. For a vertical ``a`` the plane is the pan's choice: any horizontal direction ⟂ a.
    """
    z = torch.zeros_like(a)
    z[..., 2] = 1.0
    m = z - (a * z).sum(-1, keepdim=True) * a
    n = torch.linalg.vector_norm(m, dim=-1, keepdim=True)
    fallback = torch.zeros_like(a)
    fallback[..., 0] = 1.0
    return torch.where(n > 1e-9, m / torch.clamp(n, min=1e-12), fallback)


def pose_error(
    target: Tensor,
    current: Tensor,
    approach_axis: Tensor,
    partial_pose: bool,
    perp: Tensor | None = None,
    *,
    plane_free: bool = False,
) -> tuple[Tensor, Tensor, Tensor]:
    """``(e (..., 6), position_error (...) m, rotation_error (...) rad)`` of ``current`` (..., 4, 4)
    relative to ``target`` (..., 4, 4), base frame, position first. ``perp``: a precomputed
    :func:`perpendicular_unit` of the approach axis (keeps the function free of tensor creation, for CUDA
    graph capture). ``plane_free`` (with ``partial_pose``): free the out-of-plane swing of the approach axis
    (:func:`swing_axis`, the arm's real missing direction) instead of the roll about it."""
    e_p = target[..., :3, 3] - current[..., :3, 3]
    R, Rt = current[..., :3, :3], target[..., :3, :3]
    if partial_pose and plane_free:
        e_full = rotation_error(Rt, R)
        m = swing_axis(_mv(R, approach_axis))
        e_r = e_full - (e_full * m).sum(-1, keepdim=True) * m
    elif partial_pose:
        a_cur = _mv(R, approach_axis)
        a_tgt = _mv(Rt, approach_axis)
        c = torch.linalg.cross(a_cur, a_tgt, dim=-1)
        s = torch.linalg.vector_norm(c, dim=-1, keepdim=True)
        d = (a_cur * a_tgt).sum(-1, keepdim=True)
        angle = torch.atan2(s, d)
        # anti-parallel approach axes: any axis ⟂ the current approach direction will do
        fallback = _mv(R, perpendicular_unit(approach_axis) if perp is None else perp)
        unit = torch.where(s > 1e-9, c / torch.clamp(s, min=1e-12), torch.where(d > 0, torch.zeros_like(c), fallback))
        e_r = unit * angle
    else:
        e_r = rotation_error(Rt, R)
    e = torch.cat([e_p, e_r], dim=-1)
    return e, torch.linalg.vector_norm(e_p, dim=-1), torch.linalg.vector_norm(e_r, dim=-1)


def weight_error(
    e: Tensor,
    R: Tensor,
    weights: Tensor,
    pos_err: Tensor,
    threshold: float,
    min_scale: float,
) -> Tensor:
    """``W·e`` (..., 6): position weights in base axes; rotation weights along the EE axes (x, y, z of
    ``R`` (..., 3, 3)), scaled by max(threshold / e_pos, min_scale) while e_pos > ``threshold`` m."""
    scale = torch.where(
        pos_err > threshold, torch.clamp(threshold / torch.clamp(pos_err, min=1e-12), min=min_scale), 1.0
    ).unsqueeze(-1)
    e_r_local = _mv(R.transpose(-1, -2), e[..., 3:]) * weights[3:] * scale
    return torch.cat([e[..., :3] * weights[:3], _mv(R, e_r_local)], dim=-1)


def project_angular(J: Tensor, R: Tensor, approach_axis: Tensor) -> Tensor:
    """Jacobian (..., 6, n) with its angular rows projected onto the plane ⟂ the approach direction."""
    a = _mv(R, approach_axis)  # (..., 3)
    P = torch.eye(3, dtype=J.dtype, device=J.device) - a[..., :, None] * a[..., None, :]
    return torch.cat([J[..., :3, :], mm(P, J[..., 3:, :])], dim=-2)
