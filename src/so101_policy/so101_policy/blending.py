"""EMA blending of consecutive action chunks and the plan the policy node executes.

A plan is a run of future actions ``(N, 6)`` whose row 0 is for control step ``start``. When a new chunk arrives
(its row 0 is for step ``chunk_start``, the step its observation was taken), rows before ``now`` are dropped,
and on the overlap with the current plan each row becomes ``alpha · new + (1 − alpha) · old`` (an exponential
moving average over chunks, newest weighted ``alpha``); beyond the old plan the new rows are taken as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from so101_core.arrays import F64


@dataclass(frozen=True)
class Plan:
    """``actions`` (N, 6) for steps ``start .. start + N - 1``."""

    actions: F64
    start: int

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


def blend(old: Plan | None, chunk: npt.ArrayLike, chunk_start: int, now: int, horizon: int, alpha: float) -> Plan:
    """The plan from step ``now`` after receiving ``chunk`` (H, 6) observed at ``chunk_start``.

    Only the first ``horizon`` rows of ``chunk`` are used. ``alpha`` in (0, 1] weights the new chunk.
    Returns an empty plan (N = 0) when the chunk is entirely in the past.
    """
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    new = np.asarray(chunk, dtype=np.float64)[:horizon]
    if new.ndim != 2 or new.shape[1] != 6:
        raise ValueError(f"chunk must be (H, 6), got {new.shape}")
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
