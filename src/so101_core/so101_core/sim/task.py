"""Task success for the vial-in-rack task: pure functions on poses plus a stateful per-step detector.

Poses are world positions (..., 3) m and quaternions (..., 4) wxyz; functions broadcast over leading
axes so SkillGen/evaluation can filter batches. The rack origin is its base-plate bottom centre.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .config import RackConfig, TaskConfig

BoolArray = NDArray[np.bool_]


def up_axis_z(quat: ArrayLike) -> NDArray[np.float64]:
    """z component of the body's local +z axis in the world, (...,) from quaternions (..., 4) wxyz."""
    q = np.asarray(quat, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    x, y = q[..., 1], q[..., 2]
    return np.asarray(1.0 - 2.0 * (x * x + y * y))


def geometric_filter(
    vial_pos: ArrayLike,
    vial_quat: ArrayLike,
    rack_pos: ArrayLike,
    rack_top_height: float,
    task: TaskConfig,
) -> BoolArray:
    """SkillGen's filter: vial centre within ``xy_radius`` of the rack centre horizontally, between
    ``z_min`` and ``z_max`` above the rack's top surface, and upright (up-axis z > ``upright_min``).
    """
    v = np.asarray(vial_pos, dtype=np.float64)
    r = np.asarray(rack_pos, dtype=np.float64)
    dxy = np.linalg.norm(v[..., :2] - r[..., :2], axis=-1)
    dz = v[..., 2] - (r[..., 2] + rack_top_height)
    upright = up_axis_z(vial_quat) > task.upright_min
    return np.asarray((dxy <= task.xy_radius) & (dz >= task.z_min) & (dz <= task.z_max) & upright)


def slot_centres(rack_pos: ArrayLike, rack_quat: ArrayLike, rack: RackConfig) -> NDArray[np.float64]:
    """World xy (S, 2) of the rack's slot centres for one rack pose."""
    q = np.asarray(rack_quat, dtype=np.float64)
    w, z = q[0], q[3]
    yaw = 2.0 * np.arctan2(z, w)  # the rack stays flat on the mat: its yaw is enough
    c, s = np.cos(yaw), np.sin(yaw)
    off = np.asarray(rack.slot_offsets(), dtype=np.float64)
    rot = np.array([[c, -s], [s, c]])
    return np.asarray(rack_pos, dtype=np.float64)[:2] + off @ rot.T


def in_slot(
    vial_pos: ArrayLike,
    rack_pos: ArrayLike,
    rack_quat: ArrayLike,
    rack: RackConfig,
    tolerance: float,
    slot: int | None = None,
) -> bool:
    """True when the vial centre is within ``tolerance`` m (horizontally) of slot ``slot``'s centre (None: of
    some slot's)."""
    centres = slot_centres(rack_pos, rack_quat, rack)
    if slot is not None:
        centres = centres[slot : slot + 1]
    d = np.linalg.norm(centres - np.asarray(vial_pos, dtype=np.float64)[:2], axis=1)
    return bool(d.min() <= tolerance)


def placed(
    vial_pos: ArrayLike,
    vial_quat: ArrayLike,
    rack_pos: ArrayLike,
    rack_quat: ArrayLike,
    rack: RackConfig,
    task: TaskConfig,
    slot: int | None = None,
) -> bool:
    """Vial upright in rack slot ``slot`` (None: in any slot) by the geometric filter and the slot check,
    ignoring the gripper."""
    return bool(geometric_filter(vial_pos, vial_quat, rack_pos, rack.top_height, task)) and in_slot(
        vial_pos, rack_pos, rack_quat, rack, task.slot_tolerance, slot
    )


Pose7 = tuple[NDArray[np.float64], NDArray[np.float64]]  # position (3,) m, quaternion (4,) wxyz


@dataclass(frozen=True)
class TaskState:
    """What the success rules read at one step: every vial's pose (the scene's vial order), the rack's pose,
    which vials both jaw pads hold, each vial's target slot (``targets``: one per vial, or empty: any slot,
    the multi-vial variant) and the vials standing in pre-filled slots (``standing``: pose and slot each),
    which must stay upright in their slots."""

    vials: tuple[Pose7, ...]
    rack: Pose7
    held: tuple[bool, ...]
    targets: tuple[int, ...] = ()
    standing: tuple[tuple[Pose7, int], ...] = ()

    def __post_init__(self) -> None:
        if self.targets and len(self.targets) != len(self.vials):
            raise ValueError(f"{len(self.targets)} target slots for {len(self.vials)} vials")

    def target(self, i: int) -> int | None:
        """Vial ``i``'s target slot (None: any slot)."""
        return self.targets[i] if self.targets else None

    @staticmethod
    def of(
        poses: Mapping[str, tuple[ArrayLike, ArrayLike]],
        vials: Sequence[str],
        held: Sequence[bool],
        targets: Sequence[int] = (),
        standing: Sequence[tuple[str, int]] = (),
    ) -> TaskState:
        """From object poses by name (``Twin.object_poses``), the vials' names and held flags, their target
        slots and the standing vials' (name, slot) pairs."""

        def p7(name: str) -> Pose7:
            pos, quat = poses[name]
            return np.asarray(pos, dtype=np.float64), np.asarray(quat, dtype=np.float64)

        return TaskState(
            tuple(p7(v) for v in vials),
            p7("rack"),
            tuple(bool(h) for h in held),
            tuple(int(t) for t in targets),
            tuple((p7(n), int(slot)) for n, slot in standing),
        )

    @staticmethod
    def one_vial(
        vial_pos: ArrayLike,
        vial_quat: ArrayLike,
        rack_pos: ArrayLike,
        rack_quat: ArrayLike,
        held: bool,
        target: int | None = None,
        standing: Sequence[tuple[Pose7, int]] = (),
    ) -> TaskState:
        """The state of a single-vial scene (world poses, quaternions wxyz), its target slot (None: any slot)
        and standing vials (pose, slot)."""
        vial = (np.asarray(vial_pos, dtype=np.float64), np.asarray(vial_quat, dtype=np.float64))
        rack = (np.asarray(rack_pos, dtype=np.float64), np.asarray(rack_quat, dtype=np.float64))
        return TaskState((vial,), rack, (bool(held),), () if target is None else (int(target),), tuple(standing))


def placed_state(state: TaskState, rack: RackConfig, task: TaskConfig) -> bool:
    """The pose part of our rule on ``state``: every vial upright in its target slot (:func:`placed`) and every
    standing vial still upright in its own slot; the gripper is not looked at."""
    rp, rq = state.rack
    if not all(placed(p, q, rp, rq, rack, task, state.target(i)) for i, (p, q) in enumerate(state.vials)):
        return False
    return all(placed(p, q, rp, rq, rack, task, slot) for (p, q), slot in state.standing)


@dataclass
class SuccessDetector:
    """Success = :func:`placed_state` (the vial upright in its target slot, every standing vial upright in its
    own) and released (not touching both jaws) for ``hold_steps`` consecutive steps; with several vials, every
    vial placed and none held."""

    task: TaskConfig
    rack: RackConfig
    streak: int = 0
    succeeded: bool = False

    def reset(self) -> None:
        self.streak = 0
        self.succeeded = False

    def update(
        self,
        vial_pos: ArrayLike,
        vial_quat: ArrayLike,
        rack_pos: ArrayLike,
        rack_quat: ArrayLike,
        held_by_both_jaws: bool,
        target: int | None = None,
    ) -> bool:
        """Feed one control step of the single vial (``target``: its slot, None: any slot, no standing vials);
        returns True once success has been reached (latched). :meth:`update_state` takes the whole state."""
        return self.update_state(
            TaskState.one_vial(vial_pos, vial_quat, rack_pos, rack_quat, held_by_both_jaws, target)
        )

    def update_state(self, state: TaskState) -> bool:
        """Feed one control step (``Twin.task_state()``); True once success has been reached (latched)."""
        ok = not any(state.held) and placed_state(state, self.rack, self.task)
        self.streak = self.streak + 1 if ok else 0
        if self.streak >= self.task.hold_steps:
            self.succeeded = True
        return self.succeeded
