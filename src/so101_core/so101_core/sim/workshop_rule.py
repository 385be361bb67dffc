"""The upstream SO-101 workshop's success rule for vial-in-rack, as a per-step detector.

The rule (SPEC step 2), stricter than SkillGen's geometric filter:

* the vial is upright: ``|up · z| > 0.7`` (its local +z axis against world z; either end up);
* its centre lies inside the rack's square footprint (``rack.size`` × ``rack.size``, 12 × 12 cm) in the
  rack frame, and below ``0.1 m`` above the rack origin (the base plate's bottom centre) in that frame;
  with a target slot (the single vial, ``TaskState.targets``) the footprint is that slot's cell (a
  ``slot_pitch`` square around its centre: the footprint divided by the walls' centre lines), and every
  vial standing in a pre-filled slot must stay upright in its own cell;
* it was grasped (held by both jaws) within the last 20 steps at 60 Hz before the hold began, and is released;
* all of that holds for 25 consecutive steps at 60 Hz.

Step counts are given at the workshop's 60 Hz and converted to the same *time* at our control rate:
the hold rounds up (never shorter than 25/60 s), the grasp window rounds down (never looser than 20/60 s)
but keeps at least one step. Reading of "grasped within the last 20 steps": a hold streak may only start
within that window after the last step the vial was held, so a vial knocked into the rack without being
carried there never counts, and a vial that was carried keeps counting for as long as the streak lasts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from so101_core.geometry import quat_to_mat

from .config import RackConfig
from .errors import SimError
from .task import TaskState, up_axis_z

WORKSHOP_HZ = 60.0
WORKSHOP_HOLD_STEPS = 25
WORKSHOP_GRASP_WINDOW_STEPS = 20
WORKSHOP_UPRIGHT_MIN = 0.7
WORKSHOP_HEIGHT_MAX = 0.1  # m above the rack origin, in the rack frame


def steps_at_rate(steps_60hz: int, control_hz: float, *, round_up: bool) -> int:
    """The number of control steps at ``control_hz`` lasting as long as ``steps_60hz`` steps at 60 Hz."""
    exact = steps_60hz * control_hz / WORKSHOP_HZ
    n = math.ceil(exact - 1e-9) if round_up else math.floor(exact + 1e-9)
    return max(1, n)


def in_workshop_region(
    vial_pos: ArrayLike,
    vial_quat: ArrayLike,
    rack_pos: ArrayLike,
    rack_quat: ArrayLike,
    rack: RackConfig,
    slot: int | None = None,
) -> bool:
    """Pose part of the rule: upright (|up·z| > 0.7), inside the footprint (with ``slot``: inside that slot's
    cell, ``slot_pitch`` square), below 0.1 m in the rack frame."""
    rel = quat_to_mat(np.asarray(rack_quat, dtype=np.float64)).T @ (
        np.asarray(vial_pos, dtype=np.float64) - np.asarray(rack_pos, dtype=np.float64)
    )
    half = rack.size / 2.0
    if slot is not None:
        rel[:2] -= np.asarray(rack.slot_offsets()[slot], dtype=np.float64)
        half = rack.slot_pitch / 2.0
    inside = abs(rel[0]) <= half and abs(rel[1]) <= half and rel[2] < WORKSHOP_HEIGHT_MAX
    return bool(inside and abs(float(up_axis_z(vial_quat))) > WORKSHOP_UPRIGHT_MIN)


def in_workshop_state(state: TaskState, rack: RackConfig) -> bool:
    """The rule's pose part on ``state``: every vial in its target cell (or the footprint, without targets) and
    every standing vial upright in its own cell."""
    rp, rq = state.rack
    if not all(in_workshop_region(p, q, rp, rq, rack, state.target(i)) for i, (p, q) in enumerate(state.vials)):
        return False
    return all(in_workshop_region(p, q, rp, rq, rack, slot) for (p, q), slot in state.standing)


@dataclass
class WorkshopRule:
    """Stateful detector of the workshop rule, fed once per control step like ``SuccessDetector``.

    ``control_hz`` is the rate :meth:`update` is called at (``physics.control_hz``, 30 Hz by default:
    hold 13 steps, grasp window 10 steps).
    """

    rack: RackConfig
    control_hz: float
    hold_steps: int = field(init=False)
    grasp_window_steps: int = field(init=False)
    streak: int = 0
    succeeded: bool = False
    steps_since_grasp: int | None = None  # None: never grasped since reset

    def __post_init__(self) -> None:
        if not (math.isfinite(self.control_hz) and self.control_hz > 0.0):
            raise SimError(f"WorkshopRule: control_hz must be a positive number, got {self.control_hz!r}")
        self.hold_steps = steps_at_rate(WORKSHOP_HOLD_STEPS, self.control_hz, round_up=True)
        self.grasp_window_steps = steps_at_rate(WORKSHOP_GRASP_WINDOW_STEPS, self.control_hz, round_up=False)

    def reset(self) -> None:
        """Forget the episode: no streak, never grasped, not succeeded."""
        self.streak = 0
        self.succeeded = False
        self.steps_since_grasp = None

    def update(
        self,
        vial_pos: ArrayLike,
        vial_quat: ArrayLike,
        rack_pos: ArrayLike,
        rack_quat: ArrayLike,
        held_by_both_jaws: bool,
        target: int | None = None,
    ) -> bool:
        """Feed one control step of the single vial (world poses, quaternions wxyz; ``target``: its slot, None:
        the footprint, no standing vials); True once the rule has held (latched)."""
        return self.update_state(
            TaskState.one_vial(vial_pos, vial_quat, rack_pos, rack_quat, held_by_both_jaws, target)
        )

    def update_state(self, state: TaskState) -> bool:
        """Feed one control step (``Twin.task_state()``): every vial in its region (:func:`in_workshop_state`),
        none held."""
        if any(state.held):
            self.steps_since_grasp = 0
            self.streak = 0
            return self.succeeded
        if self.steps_since_grasp is not None:
            self.steps_since_grasp += 1
        ok = in_workshop_state(state, self.rack)
        if ok and self.streak == 0:
            recent = self.steps_since_grasp is not None and self.steps_since_grasp <= self.grasp_window_steps
            ok = recent
        self.streak = self.streak + 1 if ok else 0
        if self.streak >= self.hold_steps:
            self.succeeded = True
        return self.succeeded
