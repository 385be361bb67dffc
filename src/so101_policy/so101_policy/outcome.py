"""Why an evaluation episode failed, from its recorded trajectory (what :class:`.monitor.EpisodeLog` holds).

One reason per failed episode, from the vial's last recorded pose and the jaw contacts over the episode (the
vial starts lying on the mat, so its orientation alone says nothing before it is placed):

- ``no twin steps recorded``: nothing to judge (the graph never stepped);
- ``never grasped the vial``: both jaw pads never touched it together;
- ``placed, still held at the end``: upright in a slot (:func:`~so101_core.sim.task.placed`), jaws still on it;
- ``placed and released, not held long enough``: the detector's ``hold_steps`` did not pass before the end;
- ``still carrying the vial at the end``: held by both jaws, not in a slot;
- ``released outside a slot``: grasped at some point, then let go (or dropped) anywhere but upright in a slot.
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
RELEASED_ELSEWHERE = "released outside a slot"


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
    if not jaws.any():
        return NEVER_GRASPED
    if placed(vial[-1, :3], vial[-1, 3:], rack_pose[-1, :3], rack_pose[-1, 3:], rack, task):
        return PLACED_HELD if jaws[-1] else PLACED_SHORT
    return CARRYING if jaws[-1] else RELEASED_ELSEWHERE


def final_placement(arrays: dict[str, npt.NDArray[Any]], target_slot: int, rack: RackConfig) -> dict[str, Any] | None:
    """Where the vial ended, to tell a near miss from a wrong slot or a drop: ``nearest_slot`` (the slot whose
    centre is nearest in xy), ``target_offset_mm`` (xy distance from the centre of ``target_slot``; None without
    a target, ``target_slot`` < 0), ``height_mm`` (vial centre above the rack's origin, i.e. the mat) and
    ``tilt_deg`` (its axis from vertical). None when nothing was recorded. ``arrays`` as in :func:`failure_reason`."""
    vial, rack_pose = arrays["vial"], arrays["rack"]
    if len(vial) == 0:
        return None
    pos, quat = vial[-1, :3], vial[-1, 3:]
    centres = slot_centres(rack_pose[-1, :3], rack_pose[-1, 3:], rack)
    gaps = np.linalg.norm(centres - pos[:2], axis=1)
    up = float(np.clip(up_axis_z(quat), -1.0, 1.0))
    return {
        "nearest_slot": int(np.argmin(gaps)),
        "target_offset_mm": round(1000.0 * float(gaps[target_slot]), 1) if 0 <= target_slot < len(gaps) else None,
        "height_mm": round(1000.0 * float(pos[2] - rack_pose[-1, 2]), 1),
        "tilt_deg": round(float(np.degrees(np.arccos(up))), 1),
    }
