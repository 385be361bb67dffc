"""Why an evaluation episode failed, from its recorded trajectory (what :class:`.monitor.EpisodeLog` holds).

One reason per failed episode, from the vial's last recorded pose and the jaw contacts over the episode (the
vial starts lying on the mat, so its orientation alone says nothing before it is placed):

- ``no twin steps recorded``: nothing to judge (the graph never stepped);
- ``never grasped the vial``: both jaw pads never touched it together;
- ``placed, still held at the end``: upright in a slot (:func:`~so101_core.sim.task.placed`), jaws still on it;
- ``placed and released, not held long enough``: the detector's ``hold_steps`` did not pass before the end;
- ``still carrying the vial at the end``: held by both jaws, not in a slot;
- ``grasped, never lifted the vial``: the jaws closed on it, but it never rose :data:`LIFT_M` above where it lay
  (a grasp that slipped, or a touch that only pushed it; a vial in the hand at the start counts as lifted);
- ``released outside a slot``: lifted, then let go (or dropped) anywhere but upright in a slot.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from so101_core.sim.config import RackConfig, TaskConfig
from so101_core.sim.task import placed, slot_centres, up_axis_z

NO_STEPS = "no twin steps recorded"
NEVER_GRASPED = "never grasped the vial"
PLACED_HELD = "placed, still held at the end"
PLACED_SHORT = "placed and released, not held long enough"
CARRYING = "still carrying the vial at the end"
NEVER_LIFTED = "grasped, never lifted the vial"
RELEASED_ELSEWHERE = "released outside a slot"
LIFT_M = 0.05
"""How far (m) the vial's centre must rise above its starting height to count as lifted: more than a lying vial
tipped on end or rolled by the jaws rises."""


def lifted(start_z: float, highest_z: float, held_at_start: bool) -> bool:
    """Whether a vial that started at height ``start_z`` and reached ``highest_z`` (m) was lifted; one in the hand
    at the start (a partly-done start) was lifted already."""
    return held_at_start or highest_z - start_z >= LIFT_M


def failure_reason(
    arrays: dict[str, npt.NDArray[Any]], success: bool, task: TaskConfig, rack: RackConfig
) -> str | None:
    """None for a successful episode, else its reason (see the module docstring). ``arrays``: ``vial``/``rack``
    (T, 7) xyz m + wxyz, ``both_jaws`` (T,) bool, as :meth:`.monitor.EpisodeLog.arrays` returns them."""
    if success:
        return None
    vial, rack_pose, jaws = arrays["vial"], arrays["rack"], np.asarray(arrays["both_jaws"], dtype=bool)
    if len(vial) == 0:
        return NO_STEPS
    was_lifted = lifted(float(vial[0, 2]), float(np.max(vial[:, 2])), bool(jaws[0]))
    return failure_at_end(vial[-1], rack_pose[-1], bool(jaws.any()), bool(jaws[-1]), was_lifted, task, rack)


def failure_at_end(
    vial: npt.ArrayLike,
    rack_pose: npt.ArrayLike,
    ever_held: bool,
    held_now: bool,
    was_lifted: bool,
    task: TaskConfig,
    rack: RackConfig,
) -> str:
    """A failed episode's reason from its last poses (``vial``, ``rack_pose``: (7,) xyz m + wxyz), whether both
    jaws ever held the vial / hold it now, and whether it was ever :func:`lifted` (what an environment keeps
    without recording the episode)."""
    v, r = np.asarray(vial, dtype=np.float64), np.asarray(rack_pose, dtype=np.float64)
    if not ever_held:
        return NEVER_GRASPED
    if placed(v[:3], v[3:], r[:3], r[3:], rack, task):
        return PLACED_HELD if held_now else PLACED_SHORT
    if held_now:
        return CARRYING
    return RELEASED_ELSEWHERE if was_lifted else NEVER_LIFTED


def final_placement(arrays: dict[str, npt.NDArray[Any]], target_slot: int, rack: RackConfig) -> dict[str, Any] | None:
    """Where the vial ended (:func:`placement`, from the last recorded poses); None when nothing was recorded.
    ``arrays`` as in :func:`failure_reason`."""
    vial, rack_pose = arrays["vial"], arrays["rack"]
    if len(vial) == 0:
        return None
    return placement(vial[-1], rack_pose[-1], target_slot, rack)


def release_placement(arrays: dict[str, npt.NDArray[Any]], target_slot: int, rack: RackConfig) -> dict[str, Any] | None:
    """Where the vial was when the jaws last let go of it after it was lifted (:func:`placement` at the first step
    both jaws are off it): a release too high or off the slot tells a placement the policy aimed badly from one that
    toppled after it. None when no lifted vial was released. ``arrays`` as in :func:`failure_reason`."""
    vial, rack_pose, jaws = arrays["vial"], arrays["rack"], np.asarray(arrays["both_jaws"], dtype=bool)
    if len(vial) == 0:
        return None
    start_z, held_at_start = float(vial[0, 2]), bool(jaws[0])
    highest = np.maximum.accumulate(vial[:, 2])
    let_go = [
        i
        for i in range(1, len(vial))
        if jaws[i - 1] and not jaws[i] and lifted(start_z, float(highest[i]), held_at_start)
    ]
    return placement(vial[let_go[-1]], rack_pose[let_go[-1]], target_slot, rack) if let_go else None


def placement(vial: npt.ArrayLike, rack_pose: npt.ArrayLike, target_slot: int, rack: RackConfig) -> dict[str, Any]:
    """Where the vial is, to tell a near miss from a wrong slot or a drop: ``nearest_slot`` (the slot whose centre
    is nearest in xy), ``target_offset_mm`` (xy distance from the centre of ``target_slot``; None without a target,
    ``target_slot`` < 0), ``height_mm`` (vial centre above the rack's origin, i.e. the mat) and ``tilt_deg`` (its
    axis from vertical). ``vial``, ``rack_pose``: (7,) xyz m + wxyz."""
    v, r = np.asarray(vial, dtype=np.float64), np.asarray(rack_pose, dtype=np.float64)
    centres = slot_centres(r[:3], r[3:], rack)
    gaps = np.linalg.norm(centres - v[:2], axis=1)
    up = float(np.clip(up_axis_z(v[3:]), -1.0, 1.0))
    return {
        "nearest_slot": int(np.argmin(gaps)),
        "target_offset_mm": round(1000.0 * float(gaps[target_slot]), 1) if 0 <= target_slot < len(gaps) else None,
        "height_mm": round(1000.0 * float(v[2] - r[2]), 1),
        "tilt_deg": round(float(np.degrees(np.arccos(up))), 1),
    }
