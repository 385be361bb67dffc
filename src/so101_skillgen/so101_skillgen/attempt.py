"""One generation attempt in the twin: randomized scene → per-subtask source selection → retarget →
transit + IK tracking → physics rollout at the control rate → task success; then Savitzky–Golay
smoothing of the arm commands and a verification replay of exactly the commands that are kept (when the
smoothed commands fail on replay, a narrower window, then the commands as executed, each replayed in turn).

A grasp is tried in a few variants (:meth:`AttemptRunner.grasp_variants`: the seed's in-hand axis or its
mirror, turned about the jaw line so the pads sweep no lower than in the seed, raised ≤ 5 mm;
:mod:`.clearance` says why a 5-joint arm needs this; first one with which the following place can hold the
object upright over its slot) from a twin snapshot, and a place that cannot be tracked tries the other
k-nearest sources; the recording keeps only what was finally executed, so replays stay exact. A place whose
release depth is out of the arm's upright reach (close to the base) lets the vial go higher, no more than
``DROP_ABOVE`` over the rack's top, so it drops into its cell (:meth:`AttemptRunner._track_segment`). A transit
crosses at the safe height, or lower where that is out of reach (:func:`.transit.crossing_heights`).

Failure reasons (``AttemptOutcome.reason``): ``ik_divergence`` (tracking error above ``ik.tolerance``),
``collision`` (planned transit hits the scene, or the rack is pushed), ``miss`` (grasp lifts nothing),
``drop`` (held object lost before its release), ``place_miss`` (released but not placed),
``not_released`` (placed but still held), ``filter`` (the last step fails the geometric filter, a vial has
left its slot, stands in another slot than its episode's target, or a pre-filled vial no longer stands upright
in its own slot), ``replay_mismatch`` (no smoothing of the commands, not even none, succeeds on replay).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from so101_core.arrays import F64
from so101_core.geometry import quat_to_mat
from so101_core.robot_spec import GRIPPER_INDEX
from so101_core.sim.config import TaskConfig
from so101_core.sim.scene import RACK
from so101_core.sim.task import SuccessDetector
from so101_core.sim.twin import Twin, TwinState
from so101_core.sim.workshop_rule import WorkshopRule

from .clearance import JawClearance
from .config import SkillGenConfig
from .errors import SkillGenError
from .frames import object_frame, pose_to_matrix, rigid_inverse, slot_frame
from .grasp_fit import (  # noqa: F401  (PLACE_AXIS_TOLERANCE and the others: part of this module's interface)
    CLOSE_STRIDE,
    GRASP_TRIES,
    GRASP_TURNS,
    MAX_GRASP_RAISE,
    PLACE_AXIS_TOLERANCE,
    GraspFitter,
)
from .keep_filter import final_miss, unplaced
from .library import SeedLibrary, SourceSegment
from .segmentation import GRASP
from .selection import select_source
from .smoothing import smooth_joints, smoothing_windows
from .tracking import Tracker
from .transit import (
    CollisionChecker,
    HeldObject,
    crossing_heights,
    joint_path,
    safe_height,
    transit_waypoints,
)

FAILURE_REASONS: tuple[str, ...] = (
    "ik_divergence", "collision", "miss", "drop", "place_miss", "not_released", "filter", "replay_mismatch",
)  # fmt: skip
MAX_JOINT_JUMP = 0.35  # rad between consecutive commands: more is an IK branch flip (ik_divergence)
CENTRING_GAIN = 0.2  # of the measured miss added to the place's targets per step (an integrator at the control rate)
CENTRING_ABOVE = 0.05  # m: centring runs while the held vial's lower end is this near above the rack's top
CENTRING_MAX = 0.01  # m: the largest correction (servo sag and grasp slip are a few mm; the cells leave 6 mm)
DROP_ABOVE = 0.005  # m: the highest a vial is let go, its lower end over the rack's top (it drops into its cell)
DROP_LEVELS = (0.25, 0.5, 0.75, 1.0)  # tried release heights, as fractions from the planned one to DROP_ABOVE


class AttemptError(SkillGenError):
    """The attempt stops with ``reason`` (one of :data:`FAILURE_REASONS`); caught by :meth:`AttemptRunner.run`."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.rollout: AttemptOutcome | None = None  # what had been executed when it was raised (_Recorder.seal)


@dataclass(frozen=True)
class AttemptOutcome:
    """Result of one attempt. Arrays per control step (T rows): ``actions`` / ``joint_positions`` (T, 6)
    rad (commanded / measured before the command), ``object_poses`` name → (T, 7) xyz + wxyz, world.
    ``sources``: per executed subtask, the source seed and the k candidates."""

    success: bool
    reason: str | None
    detail: str
    actions: F64
    joint_positions: F64
    object_poses: dict[str, F64]
    sources: list[dict[str, Any]] = field(default_factory=list)
    workshop: bool = False  # the upstream workshop's rule (sim.workshop_rule) held on the recorded rollout
    smoothing_window: int = 0  # Savitzky–Golay window of the kept commands (1: as executed; 0: not kept)
    scene: dict[str, Any] = field(default_factory=dict)  # the episode's target slots and pre-filled slots


class _Recorder:
    """The steps an attempt executes (with the rules' state) and its ``sources`` (:class:`AttemptOutcome`)."""

    def __init__(self, twin: Twin, task: TaskConfig) -> None:
        self.twin = twin
        self.sources: list[dict[str, Any]] = []
        self.detector = SuccessDetector(task, twin.config.rack)
        self.workshop = WorkshopRule(twin.config.rack, twin.config.physics.control_hz)
        self.qs: list[F64] = []
        self.acts: list[F64] = []
        self.poses: dict[str, list[F64]] = {n: [] for n in twin.object_poses()}

    def step(self, cmd: F64, offset: F64 | None = None) -> bool:
        """Record ``cmd`` (6,) as this step's action and execute it, plus ``offset`` (6,) rad when given."""
        tw = self.twin
        self.qs.append(tw.joint_positions())
        for name, pose in tw.object_poses().items():
            self.poses[name].append(np.concatenate(pose))
        self.acts.append(np.asarray(cmd, dtype=np.float64).copy())
        tw.step(cmd if offset is None else cmd + offset)
        state = tw.task_state()
        self.workshop.update_state(state)
        return self.detector.update_state(state)

    def mark(self) -> tuple[int, SuccessDetector, WorkshopRule]:
        """A point to :meth:`rewind` to (with :meth:`Twin.snapshot`): steps recorded and the rules' state."""
        return len(self.acts), copy.deepcopy(self.detector), copy.deepcopy(self.workshop)

    def rewind(self, mark: tuple[int, SuccessDetector, WorkshopRule]) -> None:
        """Forget every step after ``mark``."""
        n, det, ws = mark
        del self.acts[n:], self.qs[n:]
        for v in self.poses.values():
            del v[n:]
        self.detector, self.workshop = copy.deepcopy(det), copy.deepcopy(ws)

    def seal(self, fail: AttemptError) -> AttemptError:
        """``fail`` with the steps recorded so far attached (unless it has them already): a backtrack that then
        tries other variants, and fails too, still reports the rollout that ``fail`` describes."""
        if fail.rollout is None:
            a, q, p = self.arrays()
            sources = copy.deepcopy(self.sources)
            fail.rollout = AttemptOutcome(False, fail.reason, fail.detail, a, q, p, sources, self.workshop.succeeded)
        return fail

    def arrays(self) -> tuple[F64, F64, dict[str, F64]]:
        if not self.acts:
            z = np.zeros((0, 6))
            return z, z, {n: np.zeros((0, 7)) for n in self.poses}
        return np.asarray(self.acts), np.asarray(self.qs), {n: np.asarray(v) for n, v in self.poses.items()}


def replay(
    twin: Twin, task: TaskConfig, scene_seed: int, actions: F64, offsets: F64 | None = None
) -> tuple[bool, _Recorder]:
    """Reset ``twin`` with ``scene_seed`` and play ``actions`` (T, 6), each executed plus its row of ``offsets``
    (T, 6) rad when given (the recording keeps ``actions``); returns (task success, recording)."""
    twin.reset(scene_seed)
    rec = _Recorder(twin, task)
    ok = False
    for k, a in enumerate(actions):
        ok = rec.step(a, None if offsets is None else offsets[k])
    return ok, rec


def execution_noise(steps: int, std_rad: float, tau_s: float, dt_s: float, rng: np.random.Generator) -> F64:
    """(steps, 6) command offsets, rad: a first-order Gauss-Markov process per arm joint (stationary standard
    deviation ``std_rad``, correlation time ``tau_s``, sampled every ``dt_s``), starting at 0; the gripper's column
    is 0 (its command opens and closes the jaws: a grasp's timing stays the plan's)."""
    phi = float(np.exp(-dt_s / tau_s))
    kick = std_rad * np.sqrt(1.0 - phi * phi) * rng.standard_normal((steps, GRIPPER_INDEX))
    out = np.zeros((steps, 6))
    for k in range(1, steps):
        out[k, :GRIPPER_INDEX] = phi * out[k - 1, :GRIPPER_INDEX] + kick[k]
    return out


@dataclass
class _Backtrack:
    """Where a grasp started (twin state, recording mark, command) and its variants, tried in order (those of
    the drawn source, then of the other k-nearest sources); when none works, those whose place was out of
    reach (``droppable``, indices into ``variants``) once more with ``drop`` set (the place may let its vial
    drop into the cell)."""

    slot: int
    state: TwinState
    mark: tuple[int, SuccessDetector, WorkshopRule]
    q_cmd: F64
    variants: list[tuple[int, F64, float, float]]  # (source index, in-hand axis, turn rad, raise m)
    source: dict[str, Any]
    tried: int = 0
    first: AttemptError | None = None
    pending: list[int] = field(default_factory=list)  # k-nearest sources whose variants are not listed yet
    more: Iterator[tuple[int, F64, float, float]] | None = None  # the current source's variants not yet fitted
    released: str | None = None  # the object the jaws had just let go of when the grasp started
    place: tuple[F64, F64] | None = None  # the following place's insertion and start (points, axes (2, 3)), world
    droppable: list[int] = field(default_factory=list)
    drop: bool = False


class AttemptRunner(GraspFitter):
    """Runs attempts on one twin with one library (not thread-safe: one twin per worker); its grasp variants are
    :class:`~.grasp_fit.GraspFitter`'s."""

    def __init__(self, twin: Twin, tracker: Tracker, library: SeedLibrary, cfg: SkillGenConfig, task: TaskConfig):
        self.twin = twin
        self.tracker = tracker
        self.library = library
        self.cfg = cfg
        self.task = task
        self.checker = CollisionChecker(twin)
        self._hz = twin.config.physics.control_hz
        self._slot_offsets = np.asarray(twin.config.rack.slot_offsets(), dtype=np.float64)
        self.jaws = JawClearance(twin)
        self._near: dict[int, list[int]] = {}  # per subtask of the running attempt: drawn source, then the rest
        self._released: str | None = None  # the object the last place let go of (the next transit may brush it)
        self._query: dict[int, F64] = {}

    # ------------------------------------------------------------------ helpers
    def _held(self, name: str, q_arm: F64) -> HeldObject:
        obj = pose_to_matrix(np.concatenate(self.twin.object_poses()[name]))
        return HeldObject(name, rigid_inverse(self._ee(q_arm)) @ obj)

    def _in_hand(self, held: HeldObject) -> bool:
        """The held object is still where the hand (measured joints) says, within 2.5 cm."""
        expect = self._ee(self.twin.joint_positions()[:GRIPPER_INDEX]) @ held.ee_to_object
        pos = self.twin.object_poses()[held.name].position
        return bool(np.linalg.norm(expect[:3, 3] - pos) < 0.025)

    def _track(self, q0: F64, points: F64, axes: F64, tool_p: F64, tool_a: F64, what: str) -> F64:
        """IK along the targets, warm-started; (N, 5) rad or :class:`AttemptError` (``ik_divergence``)."""
        out = np.empty((len(points), GRIPPER_INDEX))
        q = np.asarray(q0, dtype=np.float64)
        for i, (p, a) in enumerate(zip(points, axes, strict=True)):
            q = out[i] = self._track_step(q, p, a, tool_p, tool_a, f"{what} step {i}")
        return out

    def _track_segment(
        self, q0: F64, points: F64, axes: F64, tool_p: F64, tool_a: F64, what: str, drop: bool = False
    ) -> tuple[F64, F64, float]:
        """:meth:`_track` of a segment's targets, returned with them and how far (m) they were raised. ``drop``:
        a place into a rack cell that cannot be tracked down to its release is tracked with its targets (the held
        vial's centre) floored at the first of ``DROP_LEVELS`` that can, up to the vial's lower end ``DROP_ABOVE``
        over the rack's top: the gripper opens there as planned and the vial drops into the cell."""
        try:
            return self._track(q0, points, axes, tool_p, tool_a, what), points, 0.0
        except AttemptError as fail:
            if not drop or fail.reason != "ik_divergence":
                raise
            tw = self.twin
            top = float(tw.object_poses()[RACK].position[2]) + tw.config.rack.top_height
            low, high = float(points[:, 2].min()), top + DROP_ABOVE + tw.config.vial.half_length
            for level in DROP_LEVELS if high > low else ():
                floored = points.copy()
                floored[:, 2] = np.maximum(points[:, 2], low + level * (high - low))
                try:
                    q_seg = self._track(q0, floored, axes, tool_p, tool_a, what)
                except AttemptError:
                    continue
                return q_seg, floored, level * (high - low)
            raise

    def _track_step(self, q: F64, p: F64, a: F64, tool_p: F64, tool_a: F64, where: str) -> F64:
        """One warm-started IK step from ``q`` to target (``p``, ``a``); (5,) rad or ``ik_divergence``."""
        res = self.tracker.solve(q, p, a, tool_p, tool_a)
        tol = self.cfg.ik.tolerance
        if res.pos_error > tol:
            raise AttemptError("ik_divergence", f"{where}: tracking error {res.pos_error:.4f} m > {tol}")
        jump = float(np.max(np.abs(res.q - q)))
        if jump > MAX_JOINT_JUMP:
            raise AttemptError("ik_divergence", f"{where}: joint jump {jump:.2f} rad")
        return np.asarray(res.q, dtype=np.float64)

    def _centring(self, held: HeldObject, cell_xy: F64) -> F64 | None:
        """How far (xy (2,) m, world) the held vial must move to enter its cell centred: the cell centre
        ``cell_xy`` minus the vial's lower end, while that end is between the rack's top and ``CENTRING_ABOVE``
        over it; None elsewhere (inside the cell the walls guide it, and a correction there would lean it) or
        when the vial is not upright."""
        tw = self.twin
        pose, rack = tw.object_poses()[held.name], tw.object_poses()[RACK]
        up = quat_to_mat(pose.quaternion)[:, 2]
        up = up if up[2] >= 0 else -up
        if up[2] < 0.5:
            return None
        top = float(rack.position[2]) + tw.config.rack.top_height
        low = pose.position - tw.config.vial.half_length * up
        if not top <= low[2] <= top + CENTRING_ABOVE:
            return None
        return np.asarray(cell_xy, dtype=np.float64) - low[:2]

    def _transit(
        self, q0: F64, p0: F64, a0: F64, p1: F64, a1: F64, safe: float, tool_p: F64, tool_a: F64, kind: str
    ) -> F64:
        """Joint path (N, 5) from ``q0`` to the IK solution at the segment's first target, through the
        safe-height waypoints; raises ``ik_divergence`` when a waypoint cannot be reached."""
        q_way = [np.asarray(q0, dtype=np.float64)]
        lengths = []
        prev = p0
        for p, a in transit_waypoints(p0, a0, p1, a1, safe):
            q, err = self._solve_multistart(q_way[-1], p, a, tool_p, tool_a)
            if err > self.cfg.ik.tolerance:
                raise AttemptError("ik_divergence", f"transit to {kind}: waypoint {np.round(p, 3).tolist()} "
                                    f"unreachable ({err:.4f} m)")  # fmt: skip
            q_way.append(q)
            lengths.append(float(np.linalg.norm(p - prev)))
            prev = p
        return joint_path(q_way, lengths, self.cfg.transit, self._hz)

    def _clear_transit(
        self, q0: F64, p0: F64, a0: F64, p1: F64, a1: F64, tool_p: F64, tool_a: F64, seg: SourceSegment,
        grip: float, held: HeldObject | None,
    ) -> F64:  # fmt: skip
        """A collision-checked transit (:meth:`_transit`) at the safe height, or, when that one cannot be
        reached or collides, at the first lower crossing that can and does not (``crossing_heights``: the
        safe height clears the tallest object anywhere, a standing vial in the rack, and may be out of the
        arm's reach over a near slot); the safe height's failure is raised when none works."""
        cfg, kind, obj = self.cfg, seg.subtask.kind, seg.subtask.object
        safe = safe_height(self.twin, held, (a0, a1), cfg.transit.height)
        released = self._released if held is None else None
        first: AttemptError | None = None
        for z in crossing_heights(safe, float(p0[2]), float(p1[2])):
            try:
                q_tr = self._transit(q0, p0, a0, p1, a1, z, tool_p, tool_a, kind)
                hit = self.checker.first_collision(q_tr, grip, held, cfg.transit.check_every, released)
                if hit is not None:
                    raise AttemptError("collision", f"transit to {kind} of {obj} collides at step {hit}")
                return q_tr
            except AttemptError as fail:
                first = first or fail
        assert first is not None
        raise first

    # ------------------------------------------------------------------ attempt
    def run(self, scene_seed: int, rng: np.random.Generator) -> AttemptOutcome:
        """One attempt on scene ``scene_seed``; ``rng`` draws the sources among the k nearest. The outcome's
        ``scene`` names the episode's target slot(s) and pre-filled slots."""
        outcome = self._run(scene_seed, rng)
        ep = self.twin.episode
        assert ep is not None
        scene = {"target_slot": int(ep.target_slot), "prefilled": [int(v) for v in ep.prefilled]}
        if len(ep.target_slots) > 1:
            scene["target_slots"] = dict(zip(self.twin.vial_names, map(int, ep.target_slots), strict=True))
        return dataclasses.replace(outcome, scene=scene)

    def _run(self, scene_seed: int, rng: np.random.Generator) -> AttemptOutcome:
        tw, cfg = self.twin, self.cfg
        tw.reset(scene_seed)
        self.tracker.reset()  # the tracker's warm start must not carry over from another attempt
        rec = _Recorder(tw, self.task)
        sources = rec.sources
        try:
            self._execute(rec, rng)
        except AttemptError as fail:
            rollout = rec.seal(fail).rollout
            assert rollout is not None
            return rollout
        a, _, _ = rec.arrays()
        r = cfg.rollout
        draws: list[F64 | None] = [None]
        if r.execution_noise_rad > 0:  # drawn from the scene seed: a resumed run keeps the same demos
            dt = 1.0 / tw.config.physics.control_hz
            draws = [
                execution_noise(
                    len(a),
                    r.execution_noise_rad,
                    r.execution_noise_tau_s,
                    dt,
                    np.random.default_rng([scene_seed, 0xDA27, k]),
                )
                for k in range(r.execution_noise_draws)
            ]
        miss: str | None = None
        for offsets in draws:  # a draw whose execution fails the task, or the final check, gives way to the next
            for window in smoothing_windows(cfg.smoothing.window, cfg.smoothing.order):
                ok, rep = replay(tw, self.task, scene_seed, smooth_joints(a, window, cfg.smoothing.order), offsets)
                if ok:
                    break
            a2, q2, p2 = rep.arrays()
            ws = rep.workshop.succeeded
            miss = None  # the outcome reported is the last draw's
            if not ok:
                continue
            # the last step too, not only the latched hold (a vial may tip after it), and in the episode's slots
            miss = final_miss(tw, self.task, {n: (v[-1, :3], v[-1, 3:]) for n, v in p2.items()})
            if miss is None:
                return AttemptOutcome(True, None, "", a2, q2, p2, sources, ws, window)
        if miss is not None:
            return AttemptOutcome(False, "filter", miss, a2, q2, p2, sources, ws)
        noisy = "" if draws[0] is None else f" with any of its {len(draws)} execution-noise draws"
        return AttemptOutcome(
            False, "replay_mismatch", f"the executed commands do not succeed on replay{noisy}", a2, q2, p2, sources, ws
        )

    def _execute(self, rec: _Recorder, rng: np.random.Generator) -> None:
        """Every subtask in order, then the settle. A failure after a grasp (its miss, or a place that the
        grasp's in-hand pose cannot reach or finish) returns the twin to that grasp's start and tries its
        next variant (:meth:`grasp_variants`), and when none is left the variants whose place was out of reach
        again, the place allowed to drop the vial (:class:`_Backtrack`); the recording keeps only what was
        finally executed, and the first variant's failure is raised, with its own rollout, when none succeeds."""
        tw, lib, sources = self.twin, self.library, rec.sources
        q_cmd = tw.joint_targets()
        rack0 = tw.object_poses()[RACK].position.copy()
        held: HeldObject | None = None
        in_hand = [n for n, h in zip(tw.vial_names, tw.held_vials(), strict=True) if h]
        if in_hand:  # partly-done start: a vial is already in the hand
            held = self._held(in_hand[0], tw.joint_positions()[:GRIPPER_INDEX])
        plans: dict[int, tuple[SourceSegment, F64, F64, F64]] = {}
        self._near, self._query, self._released = {}, {}, None
        back: _Backtrack | None = None
        i = 0
        while True:
            try:
                while i < len(lib.signature):
                    kind, obj, _ = lib.signature[i]
                    if kind == GRASP and held is not None and held.name == obj:
                        i += 1
                        continue
                    seg, _, _, query = self._plan(i, plans, rng, sources)
                    if kind == GRASP:
                        if back is None or back.slot != i:
                            back = _Backtrack(i, tw.snapshot(), rec.mark(), q_cmd, [], sources[-1])
                            back.pending, back.released = list(self._near[i]), self._released
                            back.place = self._insertion(i, plans, rng, sources)
                        self._expand(back, q_cmd, query)
                        q_cmd, held = self._grasp(rec, q_cmd, rack0, back, query)
                    else:
                        if held is None or held.name != seg.subtask.held:
                            raise AttemptError("drop", f"nothing held at the start of the place onto {obj}")
                        drop = back is None or back.drop  # no grasp to vary: a partly-done start
                        try:
                            q_cmd = self._place(rec, i, held, q_cmd, rack0, sources[-1], drop)
                        except AttemptError as fail:
                            if back is not None and not back.drop and fail.reason == "ik_divergence":
                                back.droppable.append(back.tried - 1)  # the variant just tried
                            raise
                        self._released, held = held.name, None
                    i += 1
                self._settle(rec, q_cmd)
                return
            except AttemptError as fail:
                if back is None:
                    raise
                back.first = back.first or rec.seal(fail)
                if not self._expand(back, back.q_cmd, plans[back.slot][3]):
                    if back.drop or not back.droppable:
                        raise back.first from None
                    back.variants = [back.variants[k] for k in back.droppable]  # each once more, dropping
                    back.drop, back.tried = True, 0
                tw.restore(back.state)
                rec.rewind(back.mark)
                i, q_cmd, held, self._released = back.slot, back.q_cmd, None, back.released

    def _plan(
        self,
        i: int,
        plans: dict[int, tuple[SourceSegment, F64, F64, F64]],
        rng: np.random.Generator,
        sources: list[dict[str, Any]],
    ) -> tuple[SourceSegment, F64, F64, F64]:
        """Subtask ``i``'s source segment (drawn once per attempt, kept on a backtrack), its retargeted
        tool points and axes (N, 3) and the query frame (4, 4)."""
        if i in plans:
            return plans[i]
        tw, cfg, lib = self.twin, self.cfg, self.library
        kind, obj, held = lib.signature[i]
        pose = tw.object_poses()[obj]
        query = object_frame(np.concatenate(pose), cfg.is_symmetric(obj))
        target_slot = None
        if kind != GRASP and obj == RACK:  # the held vial's target slot this episode, wherever the rack stands
            assert tw.episode is not None and held is not None
            target_slot = tw.episode.target_slots[tw.vial_names.index(held)]
            query = slot_frame(query, self._slot_offsets, target_slot)
        j, near = select_source(lib.candidates(i), query, cfg.selection.k, cfg.selection.rotation_weight, rng)
        seg = lib.slots[i][j]
        sources.append(
            {"slot": i, "kind": kind, "object": obj, "seed": seg.seed_name,
             "candidates": [lib.slots[i][n].seed_name for n in near],
             **({"target_slot": target_slot, "seed_slot": seg.slot} if target_slot is not None else {})}
        )  # fmt: skip
        points, axes = seg.retarget(query)
        plans[i] = (seg, points, axes, query)
        self._near[i] = [j, *(n for n in near if n != j)]
        self._query[i] = query
        return plans[i]

    def _insertion(
        self,
        i: int,
        plans: dict[int, tuple[SourceSegment, F64, F64, F64]],
        rng: np.random.Generator,
        sources: list[dict[str, Any]],
    ) -> tuple[F64, F64] | None:
        """The targets (world points (2, 3), axes (2, 3)) of the place that follows grasp ``i``: its drawn
        source's retarget at the release and at its start (planned now, in the order the subtasks draw); None
        without one. Close to the robot the start, above the cell, may be out of reach where the release is not."""
        sig = self.library.signature
        if i + 1 >= len(sig) or sig[i + 1][0] == GRASP or sig[i + 1][2] != sig[i][1]:
            return None
        seg, points, axes, _ = self._plan(i + 1, plans, rng, sources)
        opened = np.flatnonzero(seg.gripper > self.cfg.segmentation.gripper_closed_below)
        k = max(int(opened[0]) - 1, 0) if len(opened) else len(points) - 1
        return points[[k, 0]], axes[[k, 0]]

    def _place(
        self, rec: _Recorder, i: int, held: HeldObject, q_cmd: F64, rack0: F64, source: dict[str, Any], drop: bool
    ) -> F64:
        """Run place subtask ``i`` with the drawn source; when it cannot be tracked (``ik_divergence``) or
        collides, the twin goes back to the place's start and the other k-nearest sources are tried in
        turn (``source["place_tries"]``); the drawn source's failure is raised when none works. ``drop``: a
        place into a cell may let the vial drop from higher (:meth:`_track_segment`, ``source["drop_m"]``)."""
        tw = self.twin
        state, mark = tw.snapshot(), rec.mark()
        first: AttemptError | None = None
        for n, j in enumerate(self._near[i]):
            if n:
                tw.restore(state)
                rec.rewind(mark)
            seg = self.library.slots[i][j]
            points, axes = seg.retarget(self._query[i])
            source.update(seed=seg.seed_name, place_tries=n + 1, seed_slot=seg.slot)
            source.pop("drop_m", None)
            h = self._held(held.name, tw.joint_positions()[:GRIPPER_INDEX])
            cell = self._query[i][:2, 3] if seg.subtask.object == RACK else None
            try:
                tool_p, tool_a = h.ee_to_object[:3, 3], h.ee_to_object[:3, 2]
                return self._subtask(
                    rec, seg, points, axes, tool_p, tool_a, q_cmd, h, rack0, cell, source if drop else None
                )
            except AttemptError as fail:
                if fail.reason not in ("ik_divergence", "collision"):
                    raise
                first = first or rec.seal(fail)
        assert first is not None
        raise first

    def _expand(self, back: _Backtrack, q_cmd: F64, query: F64) -> bool:
        """Make sure ``back`` has an untried variant: the current source's next one (fitted now), else the next
        k-nearest grasp source's (the drawn source first, then the others in distance order); False when
        none is left."""
        while back.tried >= len(back.variants):
            if back.more is not None:
                nxt = next(back.more, None)
                if nxt is not None:
                    back.variants.append(nxt)
                    continue
                back.more = None
            if not back.pending:
                return False
            j = back.pending.pop(0)
            seg = self.library.slots[back.slot][j]
            points, axes = seg.retarget(query)
            variants = self.grasp_variants(q_cmd[:GRIPPER_INDEX], seg, points, axes, float(query[2, 3]), back.place)
            back.more = ((j, *v) for v in variants)
        return True

    def _grasp(self, rec: _Recorder, q_cmd: F64, rack0: F64, back: _Backtrack, query: F64) -> tuple[F64, HeldObject]:
        """Transit to and run the next untried variant of a retargeted grasp; (last command (6,), held)."""
        j, tool_a, turn, raise_z = back.variants[back.tried]
        back.tried += 1
        seg = self.library.slots[back.slot][j]
        tw, obj = self.twin, seg.subtask.object
        back.source.update(seed=seg.seed_name, grasp_turn_rad=round(turn, 3), grasp_raise_m=round(raise_z, 4),
                           grasp_tries=back.tried)  # fmt: skip
        points, axes = seg.retarget(query)
        pts = points + np.array([0.0, 0.0, raise_z])
        z0 = tw.object_poses()[obj].position[2]
        q = self._subtask(rec, seg, pts, axes, seg.tool_points[0], tool_a, q_cmd, None, rack0)
        lifted = tw.object_poses()[obj].position[2] - z0 >= 0.5 * self.cfg.segmentation.lift_height
        if not (lifted and tw.jaw_contacts(obj).both):
            raise AttemptError("miss", f"grasp of {obj} did not lift it (source {seg.seed_name})")
        return q, self._held(obj, tw.joint_positions()[:GRIPPER_INDEX])

    def _subtask(
        self,
        rec: _Recorder,
        seg: SourceSegment,
        points: F64,
        axes: F64,
        tool_p: F64,
        tool_a: F64,
        q_cmd: F64,
        held: HeldObject | None,
        rack0: F64,
        cell_xy: F64 | None = None,
        drop_note: dict[str, Any] | None = None,
    ) -> F64:
        """Transit (checked for collisions) + dwell + the tracked segment, stepped in the twin; returns the
        last command (6,). ``held``: the object in the hand (a place), None for a grasp. ``cell_xy``: the centre
        (2,) m, world, of the rack cell a place puts the held vial into: just above the rack's top the targets
        follow the measured miss (:meth:`_centring`), so servo sag and a tilted grasp still enter the cell
        centred. ``drop_note`` given: a place whose release is out of reach may drop the vial from higher
        (:meth:`_track_segment`), noted there as ``drop_m``."""
        tw, cfg = self.twin, self.cfg
        kind, obj = seg.subtask.kind, seg.subtask.object
        ee = self._ee(q_cmd[:GRIPPER_INDEX])
        p0, a0 = ee[:3, :3] @ tool_p + ee[:3, 3], ee[:3, :3] @ tool_a
        grip = float(q_cmd[GRIPPER_INDEX]) if held is not None else float(seg.gripper[0])

        def transit(jaw: float) -> F64:
            return self._clear_transit(
                q_cmd[:GRIPPER_INDEX], p0, a0, points[0], axes[0], tool_p, tool_a, seg, jaw, held
            )

        try:
            q_tr = transit(grip)
        except AttemptError as fail:
            now = float(q_cmd[GRIPPER_INDEX])
            if held is not None or fail.reason != "collision" or grip <= now:
                raise
            # jaws opened wide at once beside a vial standing next door would knock it: they keep their present
            # opening through the transit, and the segment's first step opens them, above the next object
            try:
                q_tr, grip = transit(now), now
            except AttemptError:
                raise fail from None
        dwell = np.repeat(q_tr[-1:], cfg.transit.dwell_steps, axis=0)
        for q in np.concatenate([q_tr, dwell]):
            q_cmd = np.array([*q, grip])
            rec.step(q_cmd)
            self._monitor(held, rack0)
        if held is not None:  # servo sag / grasp offset: shift the targets by the measured miss
            points = points - (tw.object_poses()[held.name].position - points[0])
        may_drop = drop_note is not None and cell_xy is not None
        q_seg, points, drop = self._track_segment(q_tr[-1], points, axes, tool_p, tool_a, f"{kind} of {obj}", may_drop)
        if drop > 0 and drop_note is not None:
            drop_note["drop_m"] = round(drop, 4)
        closed_below = cfg.segmentation.gripper_closed_below
        corr = np.zeros(3)  # m, world: the centring correction of the targets (held, into a cell)
        q = q_tr[-1]
        for n, g in enumerate(seg.gripper):
            if held is not None and cell_xy is not None and g < closed_below:
                miss = self._centring(held, cell_xy)
                if miss is not None:
                    corr[:2] += CENTRING_GAIN * miss
                    corr *= min(1.0, CENTRING_MAX / max(float(np.linalg.norm(corr)), 1e-12))
            if corr.any():  # the pre-tracked q_seg proved the whole segment reachable; re-solve the shifted target
                q = self._track_step(q, points[n] + corr, axes[n], tool_p, tool_a, f"{kind} of {obj} step {n}")
            else:
                q = q_seg[n]
            q_cmd = np.array([*q, g])
            rec.step(q_cmd)
            if held is None:
                self._monitor(None, rack0)
            elif g < closed_below:
                self._monitor(held, None)
        return q_cmd

    def _monitor(self, held: HeldObject | None, rack0: F64 | None) -> None:
        if held is not None and not self._in_hand(held):
            raise AttemptError("drop", f"{held.name} left the hand")
        if rack0 is not None:
            moved = float(np.linalg.norm(self.twin.object_poses()[RACK].position[:2] - rack0[:2]))
            if moved > self.cfg.rollout.rack_push_tolerance:
                raise AttemptError("collision", f"rack pushed {moved:.3f} m")

    def _settle(self, rec: _Recorder, q_cmd: F64) -> None:
        margin = 5
        left = -1
        hold = max(self.task.hold_steps, rec.workshop.hold_steps)
        for _ in range(self.cfg.rollout.settle_steps + hold + margin):
            ok = rec.step(q_cmd) and rec.workshop.succeeded  # both rules resolved (ours decides)
            if ok and left < 0:
                left = margin
            if left == 0:
                return
            if left > 0:
                left -= 1
        if rec.detector.succeeded:
            return
        self._classify()

    def _classify(self) -> None:
        tw = self.twin
        if any(tw.held_vials()):
            raise AttemptError("not_released", "a vial is still held at the end")
        poses = {n: (p.position, p.quaternion) for n, p in tw.object_poses().items()}
        miss = unplaced(tw, self.task, poses)
        if miss is None:
            raise AttemptError("place_miss", "every vial placed, but not for the whole hold")
        name, slot, near = miss
        if near:
            where = "a slot" if slot is None else f"its slot {slot}"
            raise AttemptError("place_miss", f"{name} upright near the rack but not in {where}")
        raise AttemptError("place_miss", f"{name} at {np.round(poses[name][0], 3).tolist()} not placed")
