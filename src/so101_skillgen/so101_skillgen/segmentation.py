"""Subtask segmentation of a seed: one ``grasp`` and one ``place`` per manipulated object.

Signals: the gripper command channel (``actions[:, 5]``, rad; closing = falling below
``gripper_closed_below``, release = rising above ``gripper_open_above``) and object motion (the object
that rises by ``lift_height`` while the gripper is closed is the grasped one — it moves with the EE).

- grasp of object o: from the last step the tool was farther than ``approach_distance`` from o (or the
  previous subtask's end) to the first step o has risen ``lift_height`` above its height at closing;
- place of o onto target r (at the release, the nearest object that the seed never grasps — the rack, not
  a vial already standing in it — or, when every object is grasped, the nearest other): from the last step o was
  ``place_approach_height`` above its release height to ``post_release_steps`` after the release.

Closings that lift nothing (a missed grasp that the teleoperator retried) are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from so101_core.arrays import F64
from so101_core.robot_spec import GRIPPER_INDEX
from so101_core.seeds.format import SeedDemo
from so101_core.sim.scene import is_standing

from .config import SegmentationConfig
from .errors import SegmentationError

GRASP, PLACE = "grasp", "place"


@dataclass(frozen=True)
class Subtask:
    """Steps ``[start, end)`` of a seed. ``object``: the object whose pose the subtask depends on
    (grasp → the grasped object, place → the place target); ``held``: the object carried (place only)."""

    kind: str
    object: str
    start: int
    end: int
    held: str | None = None

    @property
    def steps(self) -> int:
        return self.end - self.start


def _events(g: F64, cfg: SegmentationConfig) -> list[tuple[int, int | None]]:
    """(closing step, release step or None) pairs from the gripper command channel (T,)."""
    closed = g < cfg.gripper_closed_below
    out: list[tuple[int, int | None]] = []
    i = 1
    while i < len(g):
        if closed[i] and not closed[i - 1]:
            opened = np.flatnonzero(g[i:] > cfg.gripper_open_above)
            rel = int(i + opened[0]) if len(opened) else None
            out.append((i, rel))
            if rel is None:
                break
            i = rel
        i += 1
    return out


def segment_seed(
    seed: SeedDemo, cfg: SegmentationConfig | None = None, ee_positions: F64 | None = None
) -> list[Subtask]:
    """Subtasks of ``seed`` in time order; ``ee_positions`` (T, 3) m (tool point, world) refines grasp starts.

    Raises :class:`SegmentationError` when the seed holds no grasp that lifts an object, or a grasp
    that is never released.
    """
    cfg = cfg or SegmentationConfig()
    names = [n for n in seed.object_poses if not is_standing(n)]  # standing vials are scenery, not task objects
    if not names:
        raise SegmentationError("seed has no object poses: cannot tell what is grasped")
    g = seed.actions[:, GRIPPER_INDEX]
    pos = {n: seed.object_poses[n][:, :3] for n in names}
    grasps: list[tuple[int, int | None, str]] = []
    for close, release in _events(g, cfg):
        stop = release if release is not None else seed.steps
        rise = {n: float(pos[n][close:stop, 2].max() - pos[n][close, 2]) for n in names}
        held = max(rise, key=lambda n: rise[n])
        if rise[held] >= cfg.lift_height:  # else closed on nothing (missed grasp): not a subtask
            grasps.append((close, release, held))
    grasped = {h for _, _, h in grasps}
    subtasks: list[Subtask] = []
    prev_end = 0
    for close, release, held in grasps:
        stop = release if release is not None else seed.steps
        z0 = pos[held][close, 2]
        grasp_end = int(close + np.flatnonzero(pos[held][close:stop, 2] >= z0 + cfg.lift_height)[0]) + 1
        start = prev_end
        if ee_positions is not None:
            far = np.linalg.norm(ee_positions[prev_end:close] - pos[held][prev_end:close], axis=1)
            idx = np.flatnonzero(far >= cfg.approach_distance)
            if len(idx):
                start = prev_end + int(idx[-1])
        subtasks.append(Subtask("grasp", held, start, grasp_end))
        if release is None:
            raise SegmentationError(f"the grasp of {held!r} at step {close} is never released (no place)")
        others = [n for n in names if n not in grasped] or [n for n in names if n != held]
        if not others:
            raise SegmentationError(f"no place target besides the held object {held!r}")
        at = pos[held][release]
        target = min(others, key=lambda n: float(np.linalg.norm(pos[n][release, :2] - at[:2])))
        z_rel = at[2]
        high = np.flatnonzero(pos[held][grasp_end:release, 2] >= z_rel + cfg.place_approach_height)
        place_start = grasp_end + int(high[-1]) if len(high) else grasp_end
        place_end = min(release + cfg.post_release_steps, seed.steps)
        subtasks.append(Subtask("place", target, place_start, place_end, held=held))
        prev_end = place_end
    if not subtasks:
        raise SegmentationError(
            f"no grasp found: the gripper command never closes (< {cfg.gripper_closed_below} rad) on an object "
            f"that then rises {cfg.lift_height} m (seed {seed.seed!r}, source {seed.source!r})"
        )
    return subtasks


def signature(subtasks: list[Subtask]) -> tuple[tuple[str, str, str | None], ...]:
    """The subtask structure (kind, object, held) — seeds must share it to be mixed per subtask."""
    return tuple((s.kind, s.object, s.held) for s in subtasks)
