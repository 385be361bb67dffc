"""Pose error, weighting and the partial-pose projection: the ONE definition of the IK residual, used by
every backend (torch: analytic's check, batched, curobo's check; numpy twins for the jacobian backend; the
fused Triton kernel mirrors it line by line).

All vectors are in the robot base frame, position first: ``e = (e_p, e_r)`` with ``e_p = p* − p`` (m) and
``e_r`` the axis-angle (rad) of the rotation taking the current EE orientation to the target one.

Partial pose (5-DOF arm, ``ik.yaml`` ``partial_pose.free_axis: out_of_plane_swing``): the approach axis
``a`` (EE frame; URDF z along the jaws) always lies in the arm's vertical plane, so its swing out of that
plane — the rotation about ``m`` = world z minus its component along the current approach direction
(:func:`swing_axis`) — is the one rotation the arm cannot make; ``e_r`` is the full rotation error with its
``m`` component removed, and the angular Jacobian rows are projected onto the plane ⟂ ``m``
(:func:`project_angular`), so the solver neither chases nor resists that swing. Roll about ``a`` and pitch
in the plane stay controlled.
"""

# ruff: noqa: N803, N806  (math notation: R rotation, T pose, J Jacobian, H Hessian as in the SPEC)

from __future__ import annotations

import numpy as np
import torch
from so101_core.arrays import F64
from torch import Tensor

from ..se3 import mm, rotation_error


def _mv(R: Tensor, v: Tensor) -> Tensor:
    return mm(R, v[..., None])[..., 0]


__all__ = [
    "free_rotation_np",
    "perpendicular_unit",
    "pose_error",
    "project_angular",
    "swing_axis",
    "swing_axis_np",
    "weight_error",
]


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
) -> tuple[Tensor, Tensor, Tensor]:
    """``(e (..., 6), position_error (...) m, rotation_error (...) rad)`` of ``current`` (..., 4, 4)
    relative to ``target`` (..., 4, 4), base frame, position first. With ``partial_pose`` the rotation
    error leaves the out-of-plane swing free (module docstring). ``perp`` is accepted for call
    compatibility (graph-captured callers precompute tensors) and unused."""
    del perp
    e_p = target[..., :3, 3] - current[..., :3, 3]
    R, Rt = current[..., :3, :3], target[..., :3, :3]
    e_r = rotation_error(Rt, R)
    if partial_pose:
        m = swing_axis(_mv(R, approach_axis))
        e_r = e_r - (e_r * m).sum(-1, keepdim=True) * m
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
    """Jacobian (..., 6, n) with its angular rows projected onto the plane ⟂ the free direction
    :func:`swing_axis` of the current approach direction ``R·a``."""
    m = swing_axis(_mv(R, approach_axis))  # (..., 3)
    P = torch.eye(3, dtype=J.dtype, device=J.device) - m[..., :, None] * m[..., None, :]
    return torch.cat([J[..., :3, :], mm(P, J[..., 3:, :])], dim=-2)


def swing_axis_np(a: F64) -> F64:
    """numpy twin of :func:`swing_axis`: the free rotation direction (..., 3) for approach directions ``a``."""
    a = np.asarray(a, dtype=np.float64)
    m = np.zeros_like(a)
    m[..., 2] = 1.0
    m = m - a[..., 2:3] * a
    n = np.linalg.norm(m, axis=-1, keepdims=True)
    fallback = np.zeros_like(a)
    fallback[..., 0] = 1.0
    return np.where(n > 1e-9, m / np.maximum(n, 1e-12), fallback)


def free_rotation_np(e_full: F64, a_cur: F64) -> tuple[F64, F64]:
    """numpy twin of the partial-pose step of :func:`pose_error`: ``(e_r (..., 3), m (..., 3))`` — the full
    rotation error ``e_full`` with its component along the free direction ``m`` (of the current approach
    directions ``a_cur``) removed; project the angular Jacobian rows with ``I − m mᵀ``."""
    m = swing_axis_np(a_cur)
    return e_full - np.sum(e_full * m, axis=-1, keepdims=True) * m, m
