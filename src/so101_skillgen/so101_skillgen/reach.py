"""Pre-flight check: do the domain-randomization ranges keep every object within the arm's reach?

For each object pose range of ``dr.yaml`` (``dr.objects.<object>.<x|y|yaw|roll>``), both extremes (the
other parameters nominal) and the xy corners are retargeted through every subtask that depends on the
object; the first, lowest and last tool targets must be solvable by IK within ``ik.tolerance``.
Otherwise :class:`UnreachableRangeError` names the range field — before any generation time is spent.
"""

from __future__ import annotations

import numpy as np
from so101_core.sim.geometry import F64, yaw_quat
from so101_core.sim.randomization import DRConfig
from so101_core.sim.scene import RACK, VIAL, vial_lying_quat
from so101_core.sim.twin import Twin

from .config import SkillGenConfig
from .errors import UnreachableRangeError
from .frames import object_frame
from .library import SeedLibrary
from .selection import nearest
from .tracking import Tracker

_FIELDS = {VIAL: ("x", "y", "roll"), RACK: ("x", "y", "yaw")}


def _pose(twin: Twin, name: str, x: float, y: float, ang: float) -> F64:
    """Object pose (7,) with offsets (x, y) m and ``ang`` (vial roll / rack yaw, rad) from the nominal."""
    c = twin.config
    if name == VIAL:
        return np.array(
            [c.vial.xy[0] + x, c.vial.xy[1] + y, c.vial.radius, *vial_lying_quat(c.vial.yaw, c.vial.roll + ang)]
        )
    return np.array([c.rack.xy[0] + x, c.rack.xy[1] + y, 0.0, *yaw_quat(c.rack.yaw + ang)])


def _ranges(dr: DRConfig, name: str) -> dict[str, tuple[float, float]]:
    if name == VIAL:
        return {"x": dr.vial_x, "y": dr.vial_y, "roll": dr.vial_roll}
    return {"x": dr.rack_x, "y": dr.rack_y, "yaw": dr.rack_yaw}


def _reachable(tracker: Tracker, twin: Twin, points: F64, axes: F64, tool_p: F64, tool_a: F64, tol: float) -> float:
    """Worst tool-point error (m) over the first, lowest and last target (multi-start IK)."""
    home = np.asarray(twin.config.robot.home[:5], dtype=np.float64)
    worst = 0.0
    for i in sorted({0, int(np.argmin(points[:, 2])), len(points) - 1}):
        best = np.inf
        for roll in (0.0, -1.5, 1.5):
            res = tracker.solve(np.array([*home[:4], roll]), points[i], axes[i], tool_p, tool_a)
            best = min(best, res.pos_error)
            if best <= tol:
                break
        worst = max(worst, best)
    return worst


def check_reachability(twin: Twin, dr: DRConfig, library: SeedLibrary, tracker: Tracker, cfg: SkillGenConfig) -> None:
    """Raise :class:`UnreachableRangeError` (field ``dr.objects.<obj>.<range>``) for an unreachable range."""
    if not dr.enabled:
        return
    sym = set(cfg.symmetric_objects)
    tol = cfg.ik.tolerance
    for slot, (_kind, obj, _held) in enumerate(library.signature):
        if obj not in _FIELDS:
            continue
        ranges = _ranges(dr, obj)
        ang_key = _FIELDS[obj][2]
        cases: list[tuple[str, float, float, float]] = []
        for key in ("x", "y", ang_key):
            for v in ranges[key]:
                off = {"x": 0.0, "y": 0.0, ang_key: 0.0, key: v}
                cases.append((key, off["x"], off["y"], off[ang_key]))
        for x in ranges["x"]:
            for y in ranges["y"]:
                cases.append(("x" if abs(x) >= abs(y) else "y", x, y, 0.0))
        for key, x, y, ang in cases:
            pose = _pose(twin, obj, x, y, ang)
            frame = object_frame(pose, obj in sym)
            j = nearest(library.candidates(slot), frame, 1, cfg.selection.rotation_weight)[0]
            seg = library.slots[slot][j]
            points, axes = seg.retarget(frame)
            err = _reachable(tracker, twin, points, axes, seg.tool_points[0], seg.tool_axes[0], tol)
            if err > tol:
                raise UnreachableRangeError(
                    f"dr.objects.{obj}.{key}",
                    f"{obj} at offset (x={x:+.3f} m, y={y:+.3f} m, {ang_key}={ang:+.2f} rad) puts the {_kind} "
                    f"out of the arm's reach (IK error {err:.3f} m > {tol} m); narrow the range",
                )
