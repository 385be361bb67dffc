"""Where the arm can stand a vial upright: an upper bound on a place task's yield, before any generation.

A vial lying on the mat is grasped across its diameter, so in the hand its axis lies in the plane normal to
the jaw line (EE z): u(θ) = (cos θ, sin θ, 0) in the EE frame, θ set by the grasp's turn about the jaw line
(the other jaw order mirrors it). The approach axis stays in the arm's vertical plane through the base, so for
each θ the vial stands upright at one pitch of the approach only, and close to the base that pitch is out of
reach whatever θ; and the vial's pose on the mat limits the θ the arm can grasp it with. A vial's target slot is
*fillable* when some θ (every ``THETA_STEP``) and grasp point along the vial (the planned one or ``ALONG_SHIFTS``
from it) let the arm both grasp the vial where it lies (jaw point on its axis, approach from above:
``APPROACH_DOWN``) and hold it upright (within ``PLACE_AXIS_TOLERANCE``) with its centre over the slot at the
release and where it enters the cell (lower end ``DROP_ABOVE`` over the rack's top). The judgement is generous
(no jaw clearance on the mat, no collision, no physics), so a scene with a vial whose slot is not fillable fails
for every generator that grasps the vials lying on the mat from above at those points, and the fraction of
scenes whose vials are all fillable is an upper bound on such a generator's yield over the scene distribution
(task variant x DR profile).
Looser, ``entry_only`` also counts a vial that can only be held upright at the cell's entry: the generator lets
such a vial drop into its cell (:mod:`.attempt`, 3 cm into a cell 12 mm wider than itself), so ``entry_only`` bounds
its yield.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from so101_core.arrays import F64
from so101_core.geometry import quat_to_mat
from so101_core.robot_spec import GRIPPER_INDEX
from so101_core.sim.scene import RACK
from so101_core.sim.task import slot_centres
from so101_core.sim.twin import Twin

from .attempt import DROP_ABOVE, PLACE_AXIS_TOLERANCE
from .tracking import Tracker

THETA_STEP = np.deg2rad(5.0)  # rad between the in-hand axes tried
POSITION_TOLERANCE = 0.002  # m
GRASP_AXIS_TOLERANCE = 0.05  # rad: the in-hand axis on the lying vial's axis at the grasp
RELEASE_GAP = 0.004  # m between the vial's lower end and the cell floor at the release (the expert's seat gap)
ROLLS = (0.0, -1.5, 1.5)  # rad: wrist rolls of the home pose the solves start from
APPROACH_DOWN = 0.5  # the grasp's approach axis points at least this much down (z component -0.5: 30° below level)
ALONG_SHIFTS = (0.0, 0.025, -0.025)  # m: grasp points tried along the vial's axis, from the planned one


@dataclass(frozen=True)
class UprightBound:
    """Over ``scenes`` episodes: ``fillable`` of them have every target slot fillable (``entry_only``: judged at
    the cell's entry alone); ``unfillable_radii`` (m) are the distances from the robot base of the target slots
    that are not."""

    scenes: int
    fillable: int
    unfillable_radii: tuple[float, ...]
    entry_only: int = 0

    @property
    def fraction(self) -> float:
        return self.fillable / self.scenes if self.scenes else 0.0

    def to_json(self) -> dict[str, object]:
        radii = sorted(self.unfillable_radii)
        return {
            "scenes": self.scenes,
            "fillable_scenes": self.fillable,
            "yield_upper_bound": round(self.fraction, 4),
            "yield_upper_bound_entry_only": round(self.entry_only / self.scenes, 4) if self.scenes else 0.0,
            "unfillable_slots": len(radii),
            "unfillable_slot_radius_max_m": round(radii[-1], 4) if radii else None,
        }


def in_hand_axes() -> F64:
    """The in-hand axes (M, 3) of a lying vial grasped across its diameter, EE frame, every ``THETA_STEP``,
    ordered from the axis pointing back along the approach outward (where upright holds are likeliest)."""
    theta = np.arange(0.0, 2 * np.pi, THETA_STEP)
    theta = theta[np.argsort(np.abs(np.angle(np.exp(1j * (theta - np.pi)))), kind="stable")]
    return np.stack([np.cos(theta), np.sin(theta), np.zeros_like(theta)], axis=1)


def fillable(tracker: Tracker, home: F64, jaw: F64, along: float, vial: tuple[F64, F64] | None, points: F64) -> bool:
    """Whether some in-hand axis lets the arm grasp the vial lying with centre ``vial[0]`` (3,) m and up axis
    ``vial[1]`` (3,), world (None: already in the hand, not judged), the jaw point (EE frame ``jaw`` (3,) m)
    ``along`` m up its axis from the centre, then hold it upright with its centre at each of ``points``
    (K, 3) m, world; every solve from ``home`` (5,) at the ``ROLLS``."""
    return _fill(tracker, home, jaw, along, vial, points)[0]


def _fill(
    tracker: Tracker, home: F64, jaw: F64, along: float, vial: tuple[F64, F64] | None, points: F64
) -> tuple[bool, bool]:
    """(:func:`fillable` at every one of ``points``, at the last of them alone), each grasp solved once."""
    up = np.array([0.0, 0.0, 1.0])
    starts = [np.array([*home[:4], roll]) for roll in ROLLS]
    last = False
    for a in in_hand_axes():
        if vial is not None:
            grasp = vial[0] + along * vial[1]
            if not _reaches(tracker, starts, grasp, vial[1], jaw, a, GRASP_AXIS_TOLERANCE, down=True):
                continue
        centre = jaw - along * a
        if not _reaches(tracker, starts, points[-1], up, centre, a, PLACE_AXIS_TOLERANCE):
            continue
        last = True
        if all(_reaches(tracker, starts, p, up, centre, a, PLACE_AXIS_TOLERANCE) for p in points[:-1]):
            return True, True
    return False, last


def _reaches(
    tracker: Tracker, starts: list[F64], p: F64, axis: F64, tool_point: F64, tool_axis: F64, tol: float,
    down: bool = False,
) -> bool:  # fmt: skip
    """Whether a solve from one of ``starts`` puts ``tool_point`` on ``p`` (``POSITION_TOLERANCE``) and
    ``tool_axis`` within ``tol`` rad of ``axis``; ``down``: with the approach (EE x) ``APPROACH_DOWN`` below level."""
    for q in starts:
        res = tracker.solve(q, p, axis, tool_point, tool_axis)
        if res.pos_error > POSITION_TOLERANCE or res.axis_error > tol:
            continue
        if not down or tracker.fk(res.q[None])[0][2, 0] <= -APPROACH_DOWN:
            return True
    return False


def slot_points(twin: Twin) -> list[F64]:
    """Per target slot of the twin's current episode: the vial centre (2, 3) m, world, at the release and where
    it enters the cell."""
    cfg, rack = twin.config, twin.object_poses()[RACK]
    assert twin.episode is not None
    centres = slot_centres(rack.position, rack.quaternion, cfg.rack)
    base = float(rack.position[2])
    release = base + cfg.rack.base_height + RELEASE_GAP + cfg.vial.half_length
    entry = base + cfg.rack.top_height + DROP_ABOVE + cfg.vial.half_length
    return [np.array([[*centres[s], release], [*centres[s], entry]]) for s in twin.episode.target_slots]


def upright_bound(twin: Twin, tracker: Tracker, scenes: int, first_seed: int = 0) -> UprightBound:
    """:class:`UprightBound` over the scenes of seeds ``first_seed`` … ``first_seed + scenes - 1`` of the
    twin's task and DR profile (the vial held as the grasp geometry plans, centred in the jaws; a vial already
    in the hand at the start is judged at its slot only)."""
    g = twin.grasp_geometry()
    jaw = np.asarray(g.point, dtype=np.float64)
    reach = twin.config.vial.half_length - 0.015  # the pads stay on the vial
    alongs = [g.along + d for d in ALONG_SHIFTS if abs(g.along + d) <= reach]
    home = np.asarray(twin.config.robot.home[:GRIPPER_INDEX], dtype=np.float64)
    ok, entry_ok, radii = 0, 0, []
    for seed in range(first_seed, first_seed + scenes):
        twin.reset(seed)
        bad, bad_entry = [], False
        poses, held = twin.object_poses(), twin.held_vials()
        for name, in_hand, points in zip(twin.vial_names, held, slot_points(twin), strict=True):
            pose = poses[name]
            vial = None if in_hand else (pose.position, quat_to_mat(pose.quaternion)[:, 2])
            entry = False
            for along in alongs:
                full, at_entry = _fill(tracker, home, jaw, along, vial, points)
                entry = entry or at_entry
                if full:
                    break
            else:
                bad.append(float(np.linalg.norm(points[0, :2])))
                bad_entry = bad_entry or not entry
        ok += not bad
        entry_ok += not bad_entry
        radii += bad
    return UprightBound(scenes, ok, tuple(radii), entry_ok)
