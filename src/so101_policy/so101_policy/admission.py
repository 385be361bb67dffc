"""How a policy's action chunk enters the plan: the one rule the policy node and any evaluator share.

Of a chunk ``(H, 6)`` rad whose row 0 is for step ``chunk_start``, only the rows that will execute are looked
at: the first ``horizon`` rows, less those already in the past at step ``now``. They are

- **refused** when a value is NaN / inf, when a value lies more than ``max_excursion_rad`` outside its joint's
  range (a gross excursion: a broken policy, not an overshoot), or when the first executed row is further than
  ``max_step_rad`` (arm joints) from ``reference`` (the last command, or the measured position before any);
- otherwise **clamped** into the range (the twin's ``ctrlrange``, which the arm and the simulator clip to anyway)
  and merged into the plan: EMA-blended (:func:`so101_policy.blending.blend`), or with ``ensemble_coeff`` > 0
  averaged with every earlier prediction for the same step (ACT's temporal ensemble,
  :func:`so101_policy.blending.ensemble`).

A refused chunk leaves the current plan as it was (its queued actions stay good); so does a chunk whose rows
are all in the past. Pure functions: no clock, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from so101_core.arrays import F64
from so101_core.joints import twin_ranges
from so101_core.robot_spec import JOINT_NAMES

from .blending import Plan, blend, ensemble
from .config import PolicyNodeConfig


@dataclass(frozen=True)
class ChunkLimits:
    """``lower`` / ``upper`` (6,) rad: the joint range rows are clamped into; ``max_excursion_rad``: how far
    outside it a value may lie and still be clamped (further = refused); ``max_step_rad`` (5,) rad: the
    largest jump of the first executed row from the reference (arm joints)."""

    lower: F64
    upper: F64
    max_excursion_rad: float
    max_step_rad: F64

    @classmethod
    def from_config(cls, config: PolicyNodeConfig) -> ChunkLimits:
        """The twin's ctrlrange with ``config``'s excursion and step limits."""
        ranges = twin_ranges()
        return cls(
            np.asarray(ranges.lower, dtype=np.float64),
            np.asarray(ranges.upper, dtype=np.float64),
            float(config.max_excursion_rad),
            np.asarray(config.max_step_rad, dtype=np.float64),
        )


@dataclass(frozen=True)
class Admission:
    """The outcome for one chunk: ``plan`` to execute from ``now`` (the old one when refused or entirely late),
    ``refused`` why ("" = accepted), ``clamped`` joint values moved into the range, ``rows`` rows that execute
    (0 = the chunk came entirely too late)."""

    plan: Plan | None
    refused: str
    clamped: int
    rows: int


def admit_chunk(
    plan: Plan | None,
    chunk: npt.ArrayLike,
    chunk_start: int,
    now: int,
    horizon: int,
    alpha: float,
    limits: ChunkLimits,
    reference: npt.ArrayLike,
    reference_name: str = "the last command",
    *,
    ensemble_coeff: float = 0.0,
) -> Admission:
    """Check, clamp and merge ``chunk`` (H, 6) rad observed at step ``chunk_start`` into ``plan`` at step ``now``.

    ``horizon``: rows of a chunk that may execute; ``alpha``: EMA weight of the new chunk (see
    :func:`~so101_policy.blending.blend`); ``reference`` (6,) rad: the last command (or the measured position),
    named ``reference_name`` in a refusal; ``ensemble_coeff`` > 0: ACT's temporal ensemble with that coefficient
    instead of the EMA (:func:`~so101_policy.blending.ensemble`; ``alpha`` unused), 0: the EMA.
    """
    rows = np.asarray(chunk, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[1] != 6:
        raise ValueError(f"chunk must be (H, 6), got {rows.shape}")
    skip = max(0, now - chunk_start)
    run = rows[:horizon][skip:]
    if len(run) == 0:
        return Admission(plan, "", 0, 0)
    bad = np.argwhere(~np.isfinite(run))
    if len(bad):
        t, j = bad[0]
        return Admission(plan, f"chunk has NaN/inf actions ({JOINT_NAMES[j]} at t={skip + t})", 0, 0)
    beyond = np.maximum(limits.lower - run, run - limits.upper)
    if np.any(beyond > limits.max_excursion_rad):
        t, j = np.unravel_index(int(np.argmax(beyond)), beyond.shape)
        return Admission(
            plan,
            f"chunk out of range: {JOINT_NAMES[j]} = {run[t, j]:.3f} rad at t={skip + t}, {beyond[t, j]:.3f} rad "
            f"beyond its limit (max {limits.max_excursion_rad:g})",
            0,
            0,
        )
    clamped = np.clip(run, limits.lower, limits.upper)
    moved = int(np.count_nonzero(clamped != run))
    jump = np.abs(clamped[0, :5] - np.asarray(reference, dtype=np.float64)[:5])
    if np.any(jump > limits.max_step_rad):
        j = int(np.argmax(jump - limits.max_step_rad))
        limit = limits.max_step_rad[j]
        return Admission(
            plan, f"chunk starts {jump[j]:.3f} rad from {reference_name} on {JOINT_NAMES[j]} (max {limit:g})", 0, 0
        )
    start = chunk_start + skip
    if ensemble_coeff > 0:
        merged = ensemble(plan, clamped, start, now, len(clamped), ensemble_coeff)
    else:
        merged = blend(plan, clamped, start, now, len(clamped), alpha)
    return Admission(merged, "", moved, len(clamped))
