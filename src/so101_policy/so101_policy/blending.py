"""Merging consecutive action chunks into the plan the policy node executes: EMA blending or ACT's temporal ensemble.

A plan is a run of future actions ``(N, 6)`` whose row 0 is for control step ``start``, with ``counts`` (N,): how
many predictions each row merges. When a new chunk arrives (its row 0 is for step ``chunk_start``, the step its
observation was taken), rows before ``now`` are dropped, and on the overlap with the current plan each row becomes

- :func:`blend`: ``alpha · new + (1 − alpha) · old`` (an exponential moving average over chunks, newest weighted
  ``alpha``);
- :func:`ensemble`: the weighted average of every prediction made for that step so far, ``Σ w_k p_k / Σ w_k`` with
  ``w_k = exp(−coeff · k)``, k = 0 the oldest (ACT's temporal ensembling, Zhao et al. 2023; LeRobot's
  ``ACTTemporalEnsembler``), kept online through ``counts``;

beyond the old plan the new rows are taken as they are (count 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from so101_core.arrays import F64

I64 = npt.NDArray[np.int64]


def _no_counts() -> I64:
    return np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Plan:
    """``actions`` (N, 6) for steps ``start .. start + N - 1``; ``counts`` (N,): predictions merged into each row
    (left out: 1 each, a plain chunk)."""

    actions: F64
    start: int
    counts: I64 = field(default_factory=_no_counts)

    def __post_init__(self) -> None:
        if len(self.counts) == 0 and len(self.actions):
            object.__setattr__(self, "counts", np.ones(len(self.actions), dtype=np.int64))
        if self.counts.shape != (len(self.actions),):
            raise ValueError(f"counts must be ({len(self.actions)},), got {self.counts.shape}")

    @property
    def end(self) -> int:
        """First step not covered."""
        return self.start + len(self.actions)

    def at(self, step: int) -> F64 | None:
        """The action for ``step``, or None outside the plan."""
        if self.start <= step < self.end:
            return self.actions[step - self.start]
        return None

    def remaining(self, step: int) -> int:
        return max(0, self.end - max(step, self.start))


def _chunk_rows(chunk: npt.ArrayLike, horizon: int) -> F64:
    rows = np.asarray(chunk, dtype=np.float64)[:horizon]
    if rows.ndim != 2 or rows.shape[1] != 6:
        raise ValueError(f"chunk must be (H, 6), got {rows.shape}")
    return rows


def blend(old: Plan | None, chunk: npt.ArrayLike, chunk_start: int, now: int, horizon: int, alpha: float) -> Plan:
    """The plan from step ``now`` after receiving ``chunk`` (H, 6) observed at ``chunk_start``.

    Only the first ``horizon`` rows of ``chunk`` are used. ``alpha`` in (0, 1] weights the new chunk.
    Returns an empty plan (N = 0) when the chunk is entirely in the past.
    """
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    new = _chunk_rows(chunk, horizon)
    skip = max(0, now - chunk_start)
    new = new[skip:]
    start = chunk_start + skip
    if old is None or len(new) == 0:
        return Plan(new.copy(), start)
    out = new.copy()
    for i in range(len(out)):
        prev = old.at(start + i)
        if prev is not None:
            out[i] = alpha * new[i] + (1.0 - alpha) * prev
    return Plan(out, start)


def ensemble(old: Plan | None, chunk: npt.ArrayLike, chunk_start: int, now: int, horizon: int, coeff: float) -> Plan:
    """The plan from step ``now`` after receiving ``chunk`` (H, 6) observed at ``chunk_start``: ACT's temporal ensemble.

    Only the first ``horizon`` rows of ``chunk`` are used; their number n (at least 2) is the ensemble's chunk
    size. With weights ``w = exp(−coeff · arange(n))`` and ``W = cumsum(w)``, a row of the old plan averaging c
    predictions takes the new prediction p as ``(avg · W[c−1] + w[c] · p) / W[c]`` and counts c + 1, capped at n
    as LeRobot's ``ACTTemporalEnsembler`` caps it (a row already at n merges the next one as its n-th; chunks
    observed at distinct steps never give a step more than n). ``coeff`` > 0 weights the older predictions more
    (ACT: 0.01, nearly uniform). Rows before ``now`` are dropped; rows beyond the old plan are taken as they are
    (count 1). Returns an empty plan (N = 0) when the chunk is entirely in the past.
    """
    if not coeff > 0:
        raise ValueError(f"coeff must be > 0, got {coeff}")
    rows = _chunk_rows(chunk, horizon)
    size = max(len(rows), 2)
    weights = np.exp(-coeff * np.arange(size))  # (n,) w[0] for the oldest prediction of a step
    cumulative = np.cumsum(weights)
    skip = max(0, now - chunk_start)
    new = rows[skip:]
    start = chunk_start + skip
    out, counts = new.copy(), np.ones(len(new), dtype=np.int64)
    if old is not None:
        lo, hi = max(start, old.start), min(start + len(new), old.end)  # the steps both cover
        if lo < hi:
            here, there = slice(lo - start, hi - start), slice(lo - old.start, hi - old.start)
            c = np.clip(old.counts[there], 1, size - 1)  # (M,) predictions merged so far (capped)
            merged = old.actions[there] * cumulative[c - 1, None] + weights[c, None] * new[here]
            out[here] = merged / cumulative[c, None]
            counts[here] = c + 1
    return Plan(out, start, counts)
