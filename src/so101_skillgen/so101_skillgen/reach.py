"""Pre-flight check: can the pipeline reach every object pose the domain-randomization ranges allow?

For each object pose range of ``dr.yaml`` (``dr.objects.<object>.<x|y|yaw>``; ``yaw`` is the vial's heading
and the rack's yaw), both extremes (the other parameters nominal) and the xy corners are retargeted through
every subtask that depends on the object — a place into the rack at its centre slot and at each corner slot,
since the target slot is drawn per episode — and tracked the way an attempt tracks them: the first target
solved from several starts (the transit's multi-start), then the whole segment followed with warm-started IK (every
``_STRIDE``-th target). A case is reachable when one of the ``k`` nearest seeds (the attempt draws among
them) keeps the tracking error within ``ik.tolerance``. An unreachable extreme alone only costs yield near
the edge of the range (it is reported, :func:`check_reachability` returns it); when the pose three quarters of
the way to it is unreachable too, a quarter of that side of the range or more is out of reach and
:class:`UnreachableRangeError` names the range field — before any generation time is spent. The xy corners
(both offsets at their extremes, a small part of the range) are only reported. (Refusing on an unreachable
extreme, as before, refused ranges the pipeline generates well in: twice the SPEC ranges.)
"""

from __future__ import annotations

import numpy as np
from so101_core.arrays import F64
from so101_core.geometry import yaw_quat
from so101_core.sim.randomization import DRConfig, nominal_vials
from so101_core.sim.scene import RACK, is_vial, vial_lying_quat
from so101_core.sim.twin import Twin

from .config import SkillGenConfig
from .errors import UnreachableRangeError
from .frames import object_frame, slot_frame
from .library import SeedLibrary
from .segmentation import GRASP
from .selection import nearest
from .tracking import Tracker

_STRIDE = 4


def _pose(twin: Twin, name: str, x: float, y: float, ang: float) -> F64:
    """Object pose (7,) with offsets (x, y) m and ``ang`` (vial heading / rack yaw, rad) from the nominal."""
    c = twin.config
    if is_vial(name):
        v = nominal_vials(c, twin.task)[twin.vial_names.index(name)]
        return np.array([v.xy[0] + x, v.xy[1] + y, c.vial.radius, *vial_lying_quat(v.yaw + ang, c.vial.roll)])
    return np.array([c.rack.xy[0] + x, c.rack.xy[1] + y, 0.0, *yaw_quat(c.rack.yaw + ang)])


def _ranges(dr: DRConfig, name: str) -> dict[str, tuple[float, float]]:
    if is_vial(name):
        return {"x": dr.vial_x, "y": dr.vial_y, "yaw": dr.vial_yaw}
    return {"x": dr.rack_x, "y": dr.rack_y, "yaw": dr.rack_yaw}


def _tracked(tracker: Tracker, twin: Twin, points: F64, axes: F64, tool_p: F64, tool_a: F64, tol: float) -> float:
    """Worst tool-point error (m) tracking the segment: multi-start at its first target, then warm-started."""
    home = np.asarray(twin.config.robot.home[:5], dtype=np.float64)
    best = None
    for roll in (0.0, -1.5, 1.5):
        res = tracker.solve(np.array([*home[:4], roll]), points[0], axes[0], tool_p, tool_a)
        if best is None or res.pos_error < best.pos_error:
            best = res
        if best.pos_error <= tol:
            break
    assert best is not None
    worst, q = best.pos_error, best.q
    idx = [*range(_STRIDE, len(points), _STRIDE), len(points) - 1]
    for i in idx:
        res = tracker.solve(q, points[i], axes[i], tool_p, tool_a)
        worst, q = max(worst, res.pos_error), res.q
        if worst > tol:
            break
    return float(worst)


def _case_error(
    twin: Twin, library: SeedLibrary, tracker: Tracker, cfg: SkillGenConfig, slot: int, obj: str,
    x: float, y: float, ang: float, target: int | None, offsets: F64,
) -> float:  # fmt: skip
    frame = object_frame(_pose(twin, obj, x, y, ang), obj in set(cfg.symmetric_objects))
    if target is not None:
        frame = slot_frame(frame, offsets, target)
    err = np.inf
    for j in nearest(library.candidates(slot), frame, cfg.selection.k, cfg.selection.rotation_weight):
        seg = library.slots[slot][j]
        points, axes = seg.retarget(frame)
        err = min(err, _tracked(tracker, twin, points, axes, seg.tool_points[0], seg.tool_axes[0], cfg.ik.tolerance))
        if err <= cfg.ik.tolerance:
            break
    return float(err)


def check_reachability(
    twin: Twin, dr: DRConfig, library: SeedLibrary, tracker: Tracker, cfg: SkillGenConfig
) -> list[str]:
    """Raise :class:`UnreachableRangeError` (field ``dr.objects.<obj>.<range>``) for a range a quarter or more
    of which is out of reach; returns the unreachable extremes (each a short sentence) otherwise."""
    if not dr.enabled:
        return []
    tol = cfg.ik.tolerance
    offsets = np.asarray(twin.config.rack.slot_offsets(), dtype=np.float64)
    order = np.argsort(np.linalg.norm(offsets, axis=1), kind="stable")
    centre, corners = int(order[0]), [int(i) for i in order[::-1][:4]]
    edges: list[str] = []
    for slot, (kind, obj, _held) in enumerate(library.signature):
        if obj != RACK and not is_vial(obj):
            continue
        ranges = _ranges(dr, obj)
        cases: list[tuple[str, float, float, float, bool]] = []  # (field, x, y, yaw, may refuse)
        for key in ("x", "y", "yaw"):
            for v in ranges[key]:
                off = {"x": 0.0, "y": 0.0, "yaw": 0.0, key: v}
                cases.append((key, off["x"], off["y"], off["yaw"], True))
        for x in ranges["x"]:
            for y in ranges["y"]:
                cases.append(("x" if abs(x) >= abs(y) else "y", x, y, 0.0, False))
        place = kind != GRASP and obj == RACK
        for key, x, y, ang, may_refuse in cases:
            # the object's own range is judged at the centre slot; a corner slot out of reach is a per-episode
            # choice that costs yield, reported but never a reason to refuse the range
            for target in [centre, *corners] if place else [None]:
                err = _case_error(twin, library, tracker, cfg, slot, obj, x, y, ang, target, offsets)
                if err <= tol:
                    continue
                where = f" into slot {target}" if target is not None else ""
                what = f"{obj} at offset (x={x:+.3f} m, y={y:+.3f} m, yaw={ang:+.2f} rad) puts the {kind}{where}"
                half = 0.0
                if may_refuse and target in (None, centre):
                    f = 0.75
                    half = _case_error(twin, library, tracker, cfg, slot, obj, f * x, f * y, f * ang, target, offsets)
                if half > tol:
                    raise UnreachableRangeError(
                        f"dr.objects.{obj}.{key}",
                        f"{what} out of the arm's reach (tracking error {err:.3f} m > {tol} m), and at three quarters "
                        f"of that offset too ({half:.3f} m); narrow the range",
                    )
                edges.append(f"{what} out of reach (tracking error {err:.3f} m): yield drops near that edge")
    return edges
