"""Scripted expert: approach → grasp → lift → carry → place upright in a rack slot → release → retreat,
once per vial (several vials: one after the other, each to its own slot).

Closed loop at the control rate: every :meth:`ScriptedExpert.act` call takes the measured joint positions
and object poses and returns 6 joint targets (rad), the same interface a teleoperator drives. Cartesian
segments are tracked by damped-least-squares IK on MuJoCo's Jacobian (5 arm joints: point + vial-axis
alignment, free rotation about the vial axis); transits interpolate in joint space. The place target
uses the vial pose actually measured in the hand, so slip during lift is compensated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

import mujoco
import numpy as np

from so101_core.arrays import F64
from so101_core.geometry import quat_to_mat

from . import GRIPPER_INDEX
from .config import SimConfig
from .errors import PlanningError
from .grasp import GraspGeometry
from .ik import ArmIK, AxisTarget
from .scene import RACK, VIAL, SceneIndex, is_standing, is_vial
from .twin import GRIPPER_CLOSED, GRIPPER_OPEN, Pose, Twin


class Phase(Enum):
    PREGRASP = "pregrasp"
    DESCEND = "descend"
    CLOSE = "close"
    LIFT = "lift"
    CARRY = "carry"
    LOWER = "lower"
    RELEASE = "release"
    RETREAT = "retreat"
    DONE = "done"


@dataclass(frozen=True)
class ExpertTiming:
    """Phase durations (s) and clearances (m)."""

    pregrasp: float = 1.6
    descend: float = 1.0
    close: float = 0.5
    lift: float = 0.8
    carry: float = 2.0
    lower: float = 1.0
    release: float = 0.4
    retreat: float = 0.8
    hover: float = 0.06  # pre-grasp height above the grasp point
    lift_height: float = 0.08
    slot_clearance: float = 0.03  # vial bottom above the rack top before lowering
    seat_gap: float = 0.004  # vial bottom above the slot floor at release
    max_regrasps: int = 2
    grasp_lift: float = 0.003  # m the grasp point is raised (see ScriptedExpert._grasp_target)
    grasp_lift_per_rad: float = 0.02  # m per rad of heading clockwise from pointing at the robot base


@dataclass(frozen=True)
class _Segment:
    """One phase's motion: ``joint`` (q0 → q1), ``cart`` (point p0 → p1 by IK) or ``hold``."""

    kind: str
    duration: float  # s (inf for the final hold)
    grip: float  # rad, gripper target
    q0: F64 = field(default_factory=lambda: np.zeros(6))
    q1: F64 = field(default_factory=lambda: np.zeros(6))
    p0: F64 = field(default_factory=lambda: np.zeros(3))
    p1: F64 = field(default_factory=lambda: np.zeros(3))
    point: F64 = field(default_factory=lambda: np.zeros(3))
    axis_local: F64 = field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))
    axis_world: F64 = field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))


def min_jerk(tau: float) -> float:
    t = min(max(tau, 0.0), 1.0)
    return t * t * t * (10.0 - 15.0 * t + 6.0 * t * t)


class ScriptedExpert:
    """Stateful expert; call :meth:`reset` at each episode start, then :meth:`act` once per control step."""

    def __init__(
        self,
        model: mujoco.MjModel,
        index: SceneIndex,
        sim: SimConfig,
        grasp: GraspGeometry,
        timing: ExpertTiming | None = None,
    ) -> None:
        self._m = model
        self._ix = index
        self._cfg = sim
        self._g = grasp
        self.timing = timing or ExpertTiming()
        self._dt = 1.0 / sim.physics.control_hz
        self._ik = ArmIK(model, index.ee_site, index.qpos_adr[:5], index.dof_adr[:5])
        self._phase = Phase.PREGRASP
        self._t = 0.0
        self._q_cmd: F64 = np.zeros(6)
        self._regrasps = 0
        self._seg = _Segment("hold", 0.0, GRIPPER_OPEN)
        self._place: tuple[F64, F64, F64] = (np.zeros(3), np.zeros(3), np.zeros(3))
        self._slot: int | None = None
        self._vial = VIAL
        self._queue: list[tuple[str, int | None]] = []  # the vials still to place after the current one
        self.failure: str | None = None  # why the expert gave up (PlanningError text), None while fine

    @staticmethod
    def for_twin(twin: Twin, timing: ExpertTiming | None = None) -> ScriptedExpert:
        return ScriptedExpert(twin.model, twin.index, twin.config, twin.grasp_geometry(), timing)

    @property
    def phase(self) -> Phase:
        return self._phase

    @property
    def done(self) -> bool:
        return self._phase is Phase.DONE

    # ------------------------------------------------------------------ geometry
    def _vial_axis(self, vial: Pose) -> F64:
        return quat_to_mat(vial.quaternion)[:, 2]

    def _grasp_target(self, vial: Pose) -> tuple[F64, F64]:
        """World point for the grasp and the vial's up axis, from the vial pose.

        The point is raised ``grasp_lift`` m, plus ``grasp_lift_per_rad`` m per rad that the vial's heading
        turns clockwise from pointing at the robot base: the wrist then rolls the jaws so that the moving
        jaw sweeps low, and without the lift it closes into the mat (measured: headings 0.12–0.3 rad that
        way failed every grasp; with the lift 40/40 episodes succeed over the ±0.3 rad range).
        """
        axis = self._vial_axis(vial)
        t = self.timing
        toward_base = math.atan2(-vial.position[1], -vial.position[0])
        psi = (math.atan2(axis[1], axis[0]) - toward_base + math.pi) % (2 * math.pi) - math.pi
        lift = t.grasp_lift + t.grasp_lift_per_rad * max(0.0, -psi)
        return vial.position + self._g.along * axis + np.array([0.0, 0.0, lift]), axis

    def _site(self, q: F64) -> tuple[F64, F64]:
        return self._ik.forward(q[:5])

    def _in_hand(self, q: F64, vial: Pose) -> bool:
        pos, rot = self._site(q)
        expect, _ = self._g.vial_pose_in_hand(pos, rot)
        return bool(np.linalg.norm(expect - vial.position) < 0.02 and vial.position[2] > 2.5 * self._cfg.vial.radius)

    def _solve(self, q: F64, target: F64, point: F64, axis_local: F64, axis_world: F64) -> F64:
        axes = [AxisTarget(axis_local, axis_world)]
        best = self._ik.solve(q[:5], target, point, axes)
        if not best.converged:  # multi-start: transits can need a far wrist configuration
            home = np.asarray(self._cfg.robot.home[:5], dtype=np.float64)
            for roll in (-1.5, 0.0, 1.5):
                for seed in (q[:5], home):
                    start = np.array([*seed[:4], roll])
                    res = self._ik.solve(start, target, point, axes)
                    key = (not res.converged, res.pos_error + 0.05 * res.axis_error)
                    if key < (not best.converged, best.pos_error + 0.05 * best.axis_error):
                        best = res
        res = best
        if res.pos_error > 0.01:
            raise PlanningError(f"IK cannot reach {np.round(target, 3).tolist()} (error {res.pos_error:.3f} m)")
        return res.q

    def _standing_top(self, objects: Mapping[str, Pose]) -> float:
        """Highest top (m) of the other vials standing upright (already placed, or pre-filled); -inf when none."""
        hl = self._cfg.vial.half_length
        tops = [
            float(p.position[2]) + hl
            for name, p in objects.items()
            if (is_vial(name) or is_standing(name)) and name != self._vial and quat_to_mat(p.quaternion)[2, 2] > 0.5
        ]
        return max(tops, default=-math.inf)

    def _slot_xy(self, rack: Pose) -> F64:
        """World xy (2,) of the target slot (the one closest to the rack centre when none was given)."""
        rot = quat_to_mat(rack.quaternion)
        offsets = np.array(self._cfg.rack.slot_offsets())
        i = self._slot if self._slot is not None else int(np.argmin(np.linalg.norm(offsets, axis=1)))
        best = offsets[i]
        return (rack.position + rot @ np.array([best[0], best[1], 0.0]))[:2]

    # ------------------------------------------------------------------ phases
    def reset(
        self,
        q: F64,
        objects: Mapping[str, Pose],
        target_slot: int | None = None,
        *,
        targets: Sequence[tuple[str, int]] | None = None,
    ) -> None:
        """Plan from the current state; starts at CARRY when the vial is already held (partly-done start).

        ``target_slot`` indexes ``RackConfig.slot_offsets()`` (None: the centre slot) for the single vial;
        ``targets`` lists (vial name, slot) pairs to place in that order instead. A first phase that
        cannot be planned (unreachable pre-grasp) does not raise: the expert holds still (``done``) and
        :attr:`failure` says why, so the episode is reported as a failed seed.
        """
        n = self._cfg.rack.slots**2
        plan: list[tuple[str, int | None]] = list(targets) if targets else [(VIAL, target_slot)]
        for name, slot in plan:
            if slot is not None and not 0 <= slot < n:
                raise PlanningError(f"target slot {slot} of {name} is not a slot of the {n}-slot rack")
            if name not in objects:
                raise PlanningError(f"no object {name!r} in the scene (objects: {sorted(objects)})")
        self._q_cmd = np.asarray(q, dtype=np.float64).copy()
        self._regrasps = 0
        (self._vial, self._slot), self._queue = plan[0], plan[1:]
        self.failure = None
        first = Phase.PREGRASP
        if self._in_hand(self._q_cmd, objects[self._vial]):
            self._q_cmd[GRIPPER_INDEX] = GRIPPER_CLOSED
            first = Phase.CARRY
        try:
            self._enter(first, self._q_cmd, objects)
        except PlanningError as exc:
            self.failure = f"{first.value}: {exc}"
            self._enter(Phase.DONE, self._q_cmd, objects)

    def _enter(self, phase: Phase, q: F64, objects: Mapping[str, Pose]) -> None:
        self._phase = phase
        self._t = 0.0
        t, g, vial = self.timing, self._g, objects[self._vial]
        q0 = self._q_cmd.copy()
        up = np.array([0.0, 0.0, 1.0])
        if phase is Phase.PREGRASP:
            gp, axis = self._grasp_target(vial)
            q_goal = self._solve(q0, gp + t.hover * up, g.point, g.axis, axis)
            seg = _Segment("joint", t.pregrasp, GRIPPER_OPEN, q0=q0, q1=np.array([*q_goal, GRIPPER_OPEN]))
        elif phase is Phase.DESCEND:
            gp, axis = self._grasp_target(vial)
            p0, r0 = self._site(q0)
            seg = _Segment(
                "cart", t.descend, GRIPPER_OPEN, p0=p0 + r0 @ g.point, p1=gp, point=g.point,
                axis_local=g.axis, axis_world=axis,
            )  # fmt: skip
        elif phase is Phase.CLOSE:
            seg = _Segment("hold", t.close, GRIPPER_CLOSED)
        elif phase is Phase.LIFT:
            p0, r0 = self._site(q0)
            axis_l = r0.T @ self._vial_axis(vial)
            start = p0 + r0 @ g.point
            seg = _Segment(
                "cart", t.lift, GRIPPER_CLOSED, p0=start, p1=start + t.lift_height * up, point=g.point,
                axis_local=axis_l, axis_world=r0 @ axis_l,
            )  # fmt: skip
        elif phase is Phase.CARRY:
            pos, rot = self._site(q)  # measured: the vial pose actually in the hand
            axis_l = rot.T @ self._vial_axis(vial)
            centre_l = rot.T @ (vial.position - pos)
            rack = objects[RACK]
            slot = self._slot_xy(rack)
            hl = self._cfg.vial.half_length
            top = max(rack.position[2] + self._cfg.rack.top_height, self._standing_top(objects))
            above = np.array([*slot, top + hl + t.slot_clearance])
            seat = np.array([*slot, rack.position[2] + self._cfg.rack.base_height + hl + t.seat_gap])
            q_goal = self._solve(q0, above, centre_l, axis_l, up)
            self._place = (centre_l, axis_l, seat)
            seg = _Segment("joint", t.carry, GRIPPER_CLOSED, q0=q0, q1=np.array([*q_goal, GRIPPER_CLOSED]))
        elif phase is Phase.LOWER:
            centre_l, axis_l, seat = self._place
            pos, rot = self._site(q0)
            seg = _Segment(
                "cart", t.lower, GRIPPER_CLOSED, p0=pos + rot @ centre_l, p1=seat, point=centre_l,
                axis_local=axis_l, axis_world=up,
            )  # fmt: skip
        elif phase is Phase.RELEASE:
            seg = _Segment("hold", t.release, self.release_opening)
        elif phase is Phase.RETREAT:
            pos, rot = self._site(q0)
            back = -0.05 * rot[:, 0] + 0.04 * up  # back out along the approach axis, and up
            seg = _Segment(
                "cart", t.retreat, self.release_opening, p0=pos, p1=pos + back,
                axis_local=np.array([1.0, 0.0, 0.0]), axis_world=rot[:, 0],
            )  # fmt: skip
        else:
            seg = _Segment("hold", np.inf, float(q0[GRIPPER_INDEX]))
        self._seg = seg

    release_opening = 0.45  # rad: opens the jaws ~2 cm around the vial without sweeping the rack

    def _next(self, q: F64, objects: Mapping[str, Pose]) -> None:
        order = list(Phase)
        nxt = order[order.index(self._phase) + 1]
        if self._phase is Phase.RETREAT and self._queue:  # the next vial
            (self._vial, self._slot), self._queue = self._queue[0], self._queue[1:]
            self._regrasps = 0
            nxt = Phase.PREGRASP
        if self._phase is Phase.LIFT and not self._in_hand(q, objects[self._vial]):
            if self._regrasps >= self.timing.max_regrasps:
                nxt = Phase.DONE
            else:
                self._regrasps += 1
                nxt = Phase.PREGRASP
        self._enter(nxt, q, objects)

    def act(self, q: F64, objects: Mapping[str, Pose]) -> F64:
        """Joint targets (6,) rad for this control step, from measured ``q`` (6,) and object poses."""
        q = np.asarray(q, dtype=np.float64)
        if self._t >= self._seg.duration:
            try:
                self._next(q, objects)
            except PlanningError as exc:  # unreachable object pose: give up, hold still
                self.failure = f"{self._phase.value}: {exc}"
                self._enter(Phase.DONE, q, objects)
        seg = self._seg
        self._t += self._dt
        tau = min_jerk(self._t / seg.duration) if np.isfinite(seg.duration) else 1.0
        out: F64 = self._q_cmd.copy()
        if seg.kind == "joint":
            out = seg.q0 + tau * (seg.q1 - seg.q0)
        elif seg.kind == "cart":
            target = seg.p0 + tau * (seg.p1 - seg.p0)
            res = self._ik.solve(out[:5], target, seg.point, [AxisTarget(seg.axis_local, seg.axis_world)])
            out[:5] = res.q
            out[GRIPPER_INDEX] = seg.grip
        else:
            out[GRIPPER_INDEX] = seg.grip
        self._q_cmd = out
        return out.copy()
