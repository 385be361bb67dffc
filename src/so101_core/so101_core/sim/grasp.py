"""Grasp geometry of the vial in the jaws, shared by the scripted expert and the partly-done reset.

Frames: the end-effector site (x along the jaws = approach, z from the fixed toward the moving jaw).
The vial is grasped across its diameter, its up axis in the site x–y plane at ``π/2 + tilt`` from the
approach axis: a tilted approach on the mat becomes a ``tilt``-below-horizontal approach when the vial
stands upright over the rack, which the SO-101 reaches comfortably near its base.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from so101_core.arrays import F64
from so101_core.geometry import mat_to_quat

from .scene import SceneIndex


@dataclass(frozen=True)
class GraspGeometry:
    """``point``: vial-axis point held between the pads, site frame (3,) m.
    ``axis``: the vial's up axis in the site frame (3,), unit. ``along``: grasp point above the vial centre
    along its axis (m). ``close_angle``: gripper joint angle (rad) at which the pads touch the vial.
    """

    point: F64
    axis: F64
    along: float
    close_angle: float

    def vial_pose_in_hand(self, site_pos: F64, site_rot: F64) -> tuple[F64, F64]:
        """Vial centre (3,) m and quaternion (4,) wxyz when held as planned by a site at this pose."""
        z = site_rot @ self.axis
        x = site_rot[:, 2]  # jaw axis, perpendicular to the vial axis
        x = x - (x @ z) * z
        x /= np.linalg.norm(x)
        rot = np.stack([x, np.cross(z, x), z], axis=1)
        centre = site_pos + site_rot @ self.point - self.along * z
        return centre, mat_to_quat(rot)


def pad_frame(model: mujoco.MjModel, index: SceneIndex, gripper_angle: float) -> tuple[F64, F64, F64, F64]:
    """Fixed and moving pad centres (3,) and half-extents (3,) in the site frame at a gripper angle."""
    data = mujoco.MjData(model)
    data.qpos[index.qpos_adr[5]] = gripper_angle
    mujoco.mj_kinematics(model, data)
    rot = data.site_xmat[index.ee_site].reshape(3, 3)
    org = data.site_xpos[index.ee_site]
    out = []
    for g in index.pad_geoms:
        centre = rot.T @ (data.geom_xpos[g] - org)
        half = np.abs(rot.T @ data.geom_xmat[g].reshape(3, 3)) @ model.geom_size[g]
        out += [centre, half]
    return out[0], out[1], out[2], out[3]


def pad_gap(model: mujoco.MjModel, index: SceneIndex, gripper_angle: float) -> float:
    """Distance between the pads' inner faces along the site z axis (m)."""
    fc, fh, mc, mh = pad_frame(model, index, gripper_angle)
    return float((mc[2] - mh[2]) - (fc[2] + fh[2]))


def grasp_geometry(
    model: mujoco.MjModel,
    index: SceneIndex,
    vial_radius: float,
    *,
    tilt: float = np.radians(40.0),
    side: float = -1.0,
    depth: float = 0.003,
    clearance: float = 0.002,
    along: float = 0.01,
) -> GraspGeometry:
    """Grasp of a vial of ``vial_radius`` m: pads ``depth`` m past the vial axis along the approach,
    ``clearance`` m off the fixed pad (the moving jaw pushes the vial home), ``side`` = ±1 picks which
    end of the site y axis the cap points to.
    """
    fc, fh, _, _ = pad_frame(model, index, 0.0)
    point = fc + np.array([depth, 0.0, fh[2] + vial_radius + clearance])
    th = np.pi / 2 + tilt
    axis = np.array([np.cos(th), side * np.sin(th), 0.0])
    lo, hi = float(model.jnt_range[model.jnt_qposadr == index.qpos_adr[5]][0][0]), 1.5
    for _ in range(40):  # bisection: pad gap grows with the angle
        mid = 0.5 * (lo + hi)
        if pad_gap(model, index, mid) < 2 * vial_radius:
            lo = mid
        else:
            hi = mid
    return GraspGeometry(point=point, axis=axis, along=along, close_angle=0.5 * (lo + hi))
