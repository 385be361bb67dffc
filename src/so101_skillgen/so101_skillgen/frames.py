"""Pose conversions for SkillGen (numpy): 7-vectors ↔ homogeneous transforms, symmetry-aware object frames.

Conventions: a pose 7-vector is position xyz (m) + quaternion wxyz; a transform is (4, 4) mapping
child-frame points to the parent (world = robot base) frame. Batched functions take leading axes.
"""

from __future__ import annotations

import numpy as np
from so101_core.arrays import F64
from so101_core.geometry import quat_to_mat


def pose_to_matrix(pose: F64) -> F64:
    """(7,) or (N, 7) xyz + wxyz → (4, 4) or (N, 4, 4)."""
    p = np.asarray(pose, dtype=np.float64)
    flat = p.reshape(-1, 7)
    out = np.tile(np.eye(4), (len(flat), 1, 1))
    for i, row in enumerate(flat):
        out[i, :3, :3] = quat_to_mat(row[3:])
        out[i, :3, 3] = row[:3]
    return out[0] if p.ndim == 1 else out


def rigid_inverse(t: F64) -> F64:
    """Inverse of a rigid transform (…, 4, 4)."""
    m = np.asarray(t, dtype=np.float64)
    out = np.zeros_like(m)
    rt = np.swapaxes(m[..., :3, :3], -1, -2)
    out[..., :3, :3] = rt
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", rt, m[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def axis_frame(position: F64, axis: F64) -> F64:
    """(4, 4) frame at ``position`` whose z is ``axis`` and whose x is the horizontal direction ⊥ axis.

    Used for rotationally symmetric objects (the vial): its roll about its own axis is not observable
    from the geometry, so it must not rotate a retargeted trajectory.
    """
    z = np.asarray(axis, dtype=np.float64)
    z = z / np.linalg.norm(z)
    x = np.cross(np.array([0.0, 0.0, 1.0]), z)
    if np.linalg.norm(x) < 1e-6:  # axis vertical: any horizontal x
        x = np.array([1.0, 0.0, 0.0])
    x /= np.linalg.norm(x)
    out = np.eye(4)
    out[:3, :3] = np.stack([x, np.cross(z, x), z], axis=1)
    out[:3, 3] = position
    return out


def object_frame(pose: F64, symmetric: bool) -> F64:
    """(4, 4) frame of an object pose (7,); ``symmetric`` objects use :func:`axis_frame` of their local z."""
    t = pose_to_matrix(pose)
    if symmetric:
        return axis_frame(t[:3, 3], t[:3, 2])
    return t


def slot_frame(rack_frame: F64, offsets: F64, slot: int) -> F64:
    """(4, 4) frame of rack slot ``slot``: the rack frame moved to that slot's centre (``offsets`` (S, 2) m,
    rack frame, as ``RackConfig.slot_offsets()``). Places retarget against it, so the rack's yaw and the
    episode's target slot both move the goal."""
    out = np.asarray(rack_frame, dtype=np.float64).copy()
    off = np.asarray(offsets, dtype=np.float64)[slot]
    out[:3, 3] = out[:3, :3] @ np.array([off[0], off[1], 0.0]) + out[:3, 3]
    return out


def nearest_slot(rack_frame: F64, offsets: F64, point: F64) -> int:
    """Index of the slot whose centre is horizontally nearest ``point`` (3,) world, in the rack frame."""
    local = rigid_inverse(np.asarray(rack_frame, dtype=np.float64)) @ np.array([*point, 1.0])
    d = np.linalg.norm(np.asarray(offsets, dtype=np.float64) - local[:2], axis=1)
    return int(np.argmin(d))


def rotation_angle(r_a: F64, r_b: F64) -> float:
    """Geodesic angle (rad) between two rotations (3, 3)."""
    c = (np.trace(r_a.T @ r_b) - 1.0) / 2.0
    return float(np.arccos(np.clip(c, -1.0, 1.0)))
