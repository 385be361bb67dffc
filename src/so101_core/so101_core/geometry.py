"""Rotation helpers, the one home of quaternion conventions: quaternions are **wxyz** (MuJoCo's order) unless a
name says ``xyzw`` (ROS messages, URDF tools); rotation matrices act on column vectors."""

from __future__ import annotations

import numpy as np

from so101_core.arrays import F64


def quat_from_axis_angle(axis: F64 | tuple[float, float, float], angle: float) -> F64:
    """Unit quaternion (w, x, y, z) for a rotation of ``angle`` rad about ``axis`` (3,)."""
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    s = np.sin(angle / 2.0)
    return np.array([np.cos(angle / 2.0), *(a * s)], dtype=np.float64)


def quat_mul(q1: F64, q2: F64) -> F64:
    """Hamilton product q1 ⊗ q2 (wxyz)."""
    w1, x1, y1, z1 = q1
    w2, x2, y2, z2 = q2
    return np.array(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ],
        dtype=np.float64,
    )


def quat_to_mat(q: F64) -> F64:
    """(4,) wxyz → (3, 3) rotation matrix."""
    w, x, y, z = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ],
        dtype=np.float64,
    )


def mat_to_quat(r: F64) -> F64:
    """(3, 3) rotation matrix → (4,) wxyz with w >= 0 (Shepperd's method)."""
    m = np.asarray(r, dtype=np.float64)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    cands = [tr, m[0, 0], m[1, 1], m[2, 2]]
    k = int(np.argmax(cands))
    if k == 0:
        s = 2.0 * np.sqrt(1.0 + tr)
        q = [s / 4, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif k == 1:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = [(m[2, 1] - m[1, 2]) / s, s / 4, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif k == 2:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, s / 4, (m[1, 2] + m[2, 1]) / s]
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, s / 4]
    out = np.asarray(q, dtype=np.float64)
    out /= np.linalg.norm(out)
    return -out if out[0] < 0 else out


def wxyz_to_xyzw(q: F64) -> F64:
    """(4,) wxyz → (4,) xyzw (the order of geometry_msgs/Quaternion)."""
    return np.roll(np.asarray(q, dtype=np.float64), -1)


def mat_to_quat_xyzw(r: F64) -> F64:
    """(3, 3) rotation matrix → (4,) xyzw with w >= 0 (:func:`mat_to_quat` in ROS's order)."""
    return wxyz_to_xyzw(mat_to_quat(r))


def look_at(pos: F64, target: F64, up: F64) -> F64:
    """Rotation (3, 3) of a MuJoCo camera at ``pos`` looking at ``target`` (camera looks along −z, y up)."""
    z = np.asarray(pos, dtype=np.float64) - np.asarray(target, dtype=np.float64)
    z /= np.linalg.norm(z)
    x = np.cross(np.asarray(up, dtype=np.float64), z)
    if np.linalg.norm(x) < 1e-9:  # up parallel to the view axis: pick any perpendicular
        x = np.cross(np.array([0.0, 1.0, 0.0]), z) if abs(z[1]) < 0.9 else np.cross(np.array([1.0, 0, 0]), z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return np.stack([x, y, z], axis=1)


def yaw_quat(yaw: float) -> F64:
    return quat_from_axis_angle((0.0, 0.0, 1.0), yaw)
