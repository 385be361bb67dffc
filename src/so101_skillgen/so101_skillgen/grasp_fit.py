"""Grasp variants of a retargeted grasp (:class:`GraspFitter`, a part of :class:`~.attempt.AttemptRunner`): which
in-hand axis to track, turned about the jaw line and raised so that the jaws sweep no lower than in the seed
(:mod:`.clearance`) and the following place can hold the vial upright; the seed's axis or its mirror (the jaws
swapped about the cylinder), in an order that prefers upright places, then the wrist roll sign of
``skillgen.yaml`` ``grasp_wrist_roll`` (one sign for similar scenes: ACT averages between modes), then less
turn, then less raise.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

import numpy as np
from so101_core.arrays import F64
from so101_core.robot_spec import GRIPPER_INDEX
from so101_core.sim.twin import Twin

from .clearance import JawClearance
from .config import SkillGenConfig
from .library import SourceSegment
from .tracking import Tracker

MAX_GRASP_RAISE = 0.005  # m a grasp may be raised to keep the seed's jaw clearance (grasp_axis)
GRASP_TRIES = 3  # grasp variants tried per grasp (grasp_variants)
GRASP_TURNS = (0.0, 0.1, -0.1, 0.2, -0.2, 0.3, -0.3, 0.4, -0.4, 0.5, -0.5, 0.6, -0.6)  # rad, tried in order
CLOSE_STRIDE = 3  # targets stepped over while following a grasp to its closing pose (only that pose is used)
PLACE_AXIS_TOLERANCE = 0.15  # rad: a grasp is chosen so that the place can hold the object this near upright
WRIST_ROLL = 4  # index of wrist_roll among the arm joints

Fit = tuple[F64, float, float, float, float]  # in-hand axis, turn δ rad, raise m, place axis error rad, wrist roll rad


class GraspFitter:
    """The grasp-variant search of an attempt runner (needs its twin, tracker, config and jaw clearance)."""

    twin: Twin
    tracker: Tracker
    cfg: SkillGenConfig
    jaws: JawClearance

    def _ee(self, q_arm: F64) -> F64:
        return self.tracker.fk(np.asarray(q_arm)[None])[0]

    def _solve_multistart(self, q0: F64, p: F64, a: F64, tool_p: F64, tool_a: F64) -> tuple[F64, float]:
        best = self.tracker.solve(q0, p, a, tool_p, tool_a)
        if best.pos_error <= self.cfg.ik.tolerance and best.axis_error < 0.1:
            return best.q, best.pos_error
        home = np.asarray(self.twin.config.robot.home[:GRIPPER_INDEX], dtype=np.float64)
        for roll in (-1.5, 0.0, 1.5):
            for base in (q0, home):
                res = self.tracker.solve(np.array([*base[:4], roll]), p, a, tool_p, tool_a)
                if res.pos_error + 0.05 * res.axis_error < best.pos_error + 0.05 * best.axis_error:
                    best = res
        return best.q, best.pos_error

    def _close_pose(
        self, q0: F64, seg: SourceSegment, points: F64, axes: F64, tool_a: F64, k: int
    ) -> tuple[F64, float] | None:
        """EE frame (4, 4) and wrist roll (rad) at step ``k`` of the grasp tracked with in-hand axis ``tool_a``
        (None: not trackable)."""
        tool_p = seg.tool_points[0]
        q, err = self._solve_multistart(q0, points[0], axes[0], tool_p, tool_a)
        if err > self.cfg.ik.tolerance:
            return None
        steps = [*range(CLOSE_STRIDE, k, CLOSE_STRIDE), k] if k > 0 else []
        res = None
        for n in steps:
            res = self.tracker.solve(q, points[n], axes[n], tool_p, tool_a)
            q = res.q
        if res is not None and (res.pos_error > self.cfg.ik.tolerance or res.axis_error > 0.05):
            return None
        return self._ee(q), float(q[WRIST_ROLL])

    def grasp_variants(
        self,
        q0: F64,
        seg: SourceSegment,
        points: F64,
        axes: F64,
        object_z: float,
        place: tuple[F64, F64] | None = None,
    ) -> Iterator[tuple[F64, float, float]]:
        """Grasp variants to try in order, each (in-hand axis (3,) EE frame, turn δ rad, raise m), at most
        ``GRASP_TRIES``.

        The seed's in-hand axis and its mirror (the jaws swapped about the cylinder, a roll by π: the moving
        jaw then sweeps on the high side, the wrist rolls the other way) are each fitted by :meth:`grasp_axis`;
        one whose in-hand axis the following place (``place``: its start and insertion targets, world,
        :meth:`_insertion`) can hold upright goes first, then the one closing with the wrist roll of the sign
        ``cfg.grasp_wrist_roll`` prefers (``any``: no preference), then the one needing less turn, then less
        raise; then the other, then the first raised 3 mm more.
        Lazily: when the seed's axis fits as it is (no turn, no raise, upright, the preferred roll sign),
        nothing can go before it, and the mirror is fitted only if that grasp fails (one fit instead of two)."""
        t = seg.tool_axes[0]
        prefer = self.cfg.grasp_wrist_roll

        def fit(base: F64) -> Fit:
            return self.grasp_axis(q0, seg, points, axes, object_z, base, place)

        def key(f: Fit) -> tuple[bool, bool, bool, float, float]:
            off_sign = prefer != "any" and np.isfinite(f[4]) and (f[4] > 0) != (prefer == "positive")
            return (f[3] > PLACE_AXIS_TOLERANCE, bool(off_sign), abs(f[1]) > 0, f[2], abs(f[1]))

        def ordered() -> Iterator[tuple[F64, float, float]]:
            first = fit(t)
            as_is = key(first) == (False, False, False, 0.0, 0.0)
            if as_is:
                yield first[:3]
            fits = sorted([first, fit(np.array([t[0], -t[1], t[2]]))], key=key)  # stable: the seed's on a tie
            if not as_is:
                yield fits[0][:3]
            yield fits[1][:3]
            a, d, r, _, _ = fits[0]
            yield a, d, r + 0.003

        return islice(ordered(), GRASP_TRIES)

    def place_axis_error(self, q0: F64, tool_p: F64, tool_a: F64, place: tuple[F64, F64] | None) -> float:
        """How far (rad) the arm can bring in-hand axis ``tool_a`` (EE frame) onto the place's axis at its
        insertion and at its start (``place``: world points (M, 3), axes (M, 3)), the worse of them (π where a
        point is out of reach; past ``PLACE_AXIS_TOLERANCE`` the first such error); 0 without a place to follow."""
        if place is None:
            return 0.0
        worst = 0.0
        for p, a in zip(*place, strict=True):
            worst = max(worst, self._hold_error(q0, p, a, tool_p, tool_a))
            if worst > PLACE_AXIS_TOLERANCE:
                break  # not upright already: the verdict is all a grasp variant uses
        return worst

    def _hold_error(self, q0: F64, p: F64, a: F64, tool_p: F64, tool_a: F64) -> float:
        """Axis error (rad) holding ``tool_a`` on axis ``a`` at point ``p`` (π when out of reach), from ``q0``
        and, when that falls short, from home at three wrist rolls."""
        res = self.tracker.solve(q0, p, a, tool_p, tool_a)
        if res.pos_error > self.cfg.ik.tolerance or res.axis_error > PLACE_AXIS_TOLERANCE:
            home = np.asarray(self.twin.config.robot.home[:GRIPPER_INDEX], dtype=np.float64)
            res = min(
                (self.tracker.solve(np.array([*home[:4], roll]), p, a, tool_p, tool_a) for roll in (-1.5, 0.0, 1.5)),
                key=lambda r: (r.pos_error > self.cfg.ik.tolerance, r.axis_error),
            )
        return float(res.axis_error) if res.pos_error <= self.cfg.ik.tolerance else float(np.pi)

    def grasp_axis(
        self,
        q0: F64,
        seg: SourceSegment,
        points: F64,
        axes: F64,
        object_z: float,
        tool_a: F64,
        place: tuple[F64, F64] | None = None,
    ) -> Fit:
        """The object axis in the hand (EE frame (3,)) to track for a retargeted grasp, the turn δ (rad) that
        gave it, the height (m) to raise the grasp by (see :mod:`.clearance`), the following place's axis
        error (rad, :meth:`place_axis_error`) with that axis in the hand and the wrist roll (rad) it closes
        with (nan when not tracked).

        A lying cylinder grasped across its diameter may sit at any angle about the jaw line (EE z), so
        the seed's in-hand axis is turned about it by the smallest δ after which the pads sweep at most
        ``MAX_GRASP_RAISE`` lower (relative to the object) than in the seed and the place can still stand
        the object upright (within ``PLACE_AXIS_TOLERANCE``: a 5-joint arm cannot for every in-hand axis,
        and a vial released 8° or more off its insertion axis leans in the slot); the grasp is then raised
        by what is left. Nothing changes when the tracked retarget already keeps the seed's clearance."""
        closed = np.flatnonzero(seg.gripper < self.cfg.segmentation.gripper_closed_below)
        tool_p = seg.tool_points[0]
        if len(closed) == 0 or closed[0] == 0:
            return tool_a, 0.0, 0.0, self.place_axis_error(q0, tool_p, tool_a, place), np.nan
        k = int(closed[0])
        opening = float(np.max(seg.gripper[:k]))
        seed_clear = self.jaws.lowest(seg.ee[k], opening) - float(seg.object_frame[2, 3])
        best: Fit = (tool_a, 0.0, np.inf, np.inf, np.nan)
        for d in GRASP_TURNS:
            c, s = np.cos(d), np.sin(d)
            a = np.array([c * tool_a[0] - s * tool_a[1], s * tool_a[0] + c * tool_a[1], tool_a[2]])
            closing = self._close_pose(q0, seg, points, axes, a, k)
            if closing is None:
                continue
            ee, roll = closing
            need = max(0.0, seed_clear - (self.jaws.lowest(ee, opening) - object_z))
            place_err = self.place_axis_error(q0, tool_p, a, place)
            upright = place_err <= PLACE_AXIS_TOLERANCE
            if need <= MAX_GRASP_RAISE and upright:
                return a, float(d), need, place_err, roll
            if (not upright, need) < (best[3] > PLACE_AXIS_TOLERANCE, best[2]):
                best = (a, float(d), need, place_err, roll)
        if not np.isfinite(best[2]):
            return tool_a, 0.0, 0.0, self.place_axis_error(q0, tool_p, tool_a, place), np.nan
        return best[0], best[1], min(best[2], MAX_GRASP_RAISE), best[3], best[4]
