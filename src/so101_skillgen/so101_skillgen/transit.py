"""Transit motions between subtasks: lift to a safe height, move across, descend (IK at the waypoints,
min-jerk joint interpolation between them) — then checked
against the twin's collision geometry (table, mat, rack, the held object carried rigidly in the hand).

Points are tool points in the world frame (m); axes are unit world directions of the tool axis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np
from so101_core.arrays import F64
from so101_core.geometry import mat_to_quat, quat_to_mat
from so101_core.robot_spec import GRIPPER_INDEX
from so101_core.sim.scripted_expert import min_jerk
from so101_core.sim.twin import Twin

from .config import TransitConfig

TOOL_EXTENT = 0.02
"""m the open jaws reach below the tool point (clearance reference when nothing is held)."""


@dataclass(frozen=True)
class HeldObject:
    """An object carried rigidly: its ``name`` and pose in the EE frame ``ee_to_object`` (4, 4)."""

    name: str
    ee_to_object: F64


def transit_waypoints(p0: F64, a0: F64, p1: F64, a1: F64, safe_z: float) -> list[tuple[F64, F64]]:
    """Tool-point waypoints (point (3,), axis (3,)) after the start: above ``p0`` at the safe height (if
    ``p0`` is below it), above ``p1``, then ``p1``. The axis turns to ``a1`` on the move across."""
    z = max(safe_z, float(p1[2]))
    out: list[tuple[F64, F64]] = []
    if p0[2] < z - 1e-4:
        out.append((np.array([p0[0], p0[1], z]), np.asarray(a0, float)))
    if np.linalg.norm(np.asarray(p1[:2]) - np.asarray(p0[:2])) > 1e-4 or not out:
        out.append((np.array([p1[0], p1[1], z]), np.asarray(a1, float)))
    if z - p1[2] > 1e-4:
        out.append((np.asarray(p1, float), np.asarray(a1, float)))
    return out


CROSSING_STEP = 0.015  # m between the crossing heights tried below the safe height
CROSSING_ABOVE = 0.01  # m: the lowest crossing tried stays this far above the higher end point


def crossing_heights(safe_z: float, z0: float, z1: float) -> list[float]:
    """Crossing heights (m) to try in turn: ``safe_z``, then every ``CROSSING_STEP`` lower while above both
    end points' heights ``z0`` and ``z1`` by ``CROSSING_ABOVE``; last, when the destination is the higher end
    (a place's start above its cell), its own height: the move across then ends on it, where a 5-joint arm
    holding a vial upright close to its base can still reach (the crossings above it may be out of reach)."""
    floor = max(z0, z1) + CROSSING_ABOVE
    out = [safe_z]
    while out[-1] - CROSSING_STEP >= floor:
        out.append(out[-1] - CROSSING_STEP)
    if z1 >= z0 + CROSSING_ABOVE and out[-1] - z1 > 1e-4:
        out.append(z1)
    return out


def joint_path(q_way: list[F64], lengths: list[float], cfg: TransitConfig, control_hz: float) -> F64:
    """Min-jerk joint interpolation (N, 5) through waypoint configurations ``q_way`` (first = start,
    excluded from the output); leg k lasts ``lengths[k] / cfg.speed`` s (at least ``cfg.min_steps`` steps)."""
    rows: list[F64] = []
    for k in range(1, len(q_way)):
        a, b = q_way[k - 1], q_way[k]
        n = max(cfg.min_steps, int(np.ceil(lengths[k - 1] / cfg.speed * control_hz)))
        rows.extend(a + min_jerk(i / n) * (b - a) for i in range(1, n + 1))
    return np.asarray(rows)


def safe_height(twin: Twin, held: HeldObject | None, held_axes: Sequence[F64], clearance: float) -> float:
    """Tool-point height (m) that keeps the jaws (or the held object's lowest point) ``clearance`` above
    the tops of the objects not held (rack top; a vial's top, lying or standing in the rack). ``held_axes``:
    the held vial's axis at the transit's start and end; it turns on the way (lying to upright for a place),
    and its lowest point is the lower of the two."""
    tops: list[float] = []
    poses = twin.object_poses()
    rack = twin.config.rack
    for name, pose in poses.items():
        if held is not None and name == held.name:
            continue
        if name == "rack":
            tops.append(float(pose.position[2]) + rack.top_height)
        else:
            tops.append(float(pose.position[2]) + _vial_half_height(twin, quat_to_mat(pose.quaternion)[:, 2]))
    below = TOOL_EXTENT
    if held is not None:  # tool point = the held vial's centre
        below = max([below, *(_vial_half_height(twin, a) for a in held_axes)])
    return max(tops, default=0.0) + clearance + below


def _vial_half_height(twin: Twin, axis: F64) -> float:
    """Vertical half-extent (m) of a vial whose axis points along ``axis`` (3,)."""
    vial = twin.config.vial
    c = abs(float(axis[2]) / float(np.linalg.norm(axis)))
    return vial.half_length * c + vial.radius * math.sqrt(max(0.0, 1 - c * c))


class CollisionChecker:
    """Kinematic collision check of joint paths on a scratch ``MjData`` of the twin's model.

    A configuration collides when a pair of bodies touches (penetration ≤ 0) that did not already touch
    at the path's start (the rack on the mat is allowed, a pad rubbing the rack is not); contacts between
    the gripper and the held object, or an object it has just released (``released``), are allowed.
    """

    def __init__(self, twin: Twin) -> None:
        self._twin = twin
        self._m = twin.model
        self._d = mujoco.MjData(twin.model)
        ix = twin.index
        grip_bodies = {int(self._m.geom_bodyid[g]) for g in ix.pad_geoms}
        grip_bodies.add(ix.ee_body)
        self._grip_bodies = grip_bodies

    def _pairs(self, in_hand: frozenset[int]) -> set[tuple[int, int]]:
        """Touching body pairs, leaving out the gripper's contacts with the bodies ``in_hand``."""
        mujoco.mj_kinematics(self._m, self._d)
        mujoco.mj_collision(self._m, self._d)
        out = set()
        for i in range(self._d.ncon):
            c = self._d.contact[i]
            if c.dist > 0.0:
                continue
            b1, b2 = int(self._m.geom_bodyid[c.geom1]), int(self._m.geom_bodyid[c.geom2])
            pair = (min(b1, b2), max(b1, b2))
            with_grip = pair[0] in self._grip_bodies or pair[1] in self._grip_bodies
            if with_grip and in_hand & set(pair):
                continue
            out.add(pair)
        return out

    def first_collision(
        self, q_arm: F64, gripper: float, held: HeldObject | None, every: int = 1, released: str | None = None
    ) -> int | None:
        """Index of the first colliding row of ``q_arm`` (N, 5) rad (checking every ``every``-th and the
        last), or None. ``gripper`` rad is the jaw opening used for the whole path; ``released``: the object
        the jaws let go of at the path's start (they may still brush it)."""
        tw = self._twin
        ix = tw.index
        self._d.qpos[:] = tw.data.qpos
        self._d.qpos[ix.qpos_adr[GRIPPER_INDEX]] = gripper
        touched = (held.name if held is not None else None, released)  # the gripper may touch these
        in_hand = frozenset(ix.object_bodies[n] for n in touched if n is not None)
        site = ix.ee_site

        def place(q: F64) -> None:
            self._d.qpos[ix.qpos_adr[:GRIPPER_INDEX]] = q
            if held is not None:
                mujoco.mj_kinematics(self._m, self._d)
                ee = np.eye(4)
                ee[:3, :3] = self._d.site_xmat[site].reshape(3, 3)
                ee[:3, 3] = self._d.site_xpos[site]
                obj = ee @ held.ee_to_object
                a = ix.object_qpos_adr[held.name]
                self._d.qpos[a : a + 3] = obj[:3, 3]
                self._d.qpos[a + 3 : a + 7] = mat_to_quat(obj[:3, :3])

        place(np.asarray(tw.data.qpos[ix.qpos_adr[:GRIPPER_INDEX]]))
        base = self._pairs(in_hand)
        rows = list(range(0, len(q_arm), every))
        if len(q_arm) and rows[-1] != len(q_arm) - 1:
            rows.append(len(q_arm) - 1)
        for i in rows:
            place(q_arm[i])
            if self._pairs(in_hand) - base:
                return i
        return None
