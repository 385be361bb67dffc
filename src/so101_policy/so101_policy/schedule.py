"""Learning-rate schedules, as a factor of the configured rate per optimizer step.

``constant``: 1 after a linear warm-up; ``cosine``: linear warm-up from 0 over ``warmup_steps``, then
``0.5 · (1 + cos(π · p))`` with ``p`` the progress from the end of the warm-up (0) to ``total_steps`` (1), so the
rate reaches 0 at the last step. Steps count optimizer updates from 0; the factor of step ``s`` is the one its
update uses.
"""

from __future__ import annotations

import math

SCHEDULES = ("constant", "cosine")


def lr_factor(step: int, schedule: str, warmup_steps: int, total_steps: int) -> float:
    """Multiplier (0..1] of the base learning rate for optimizer step ``step`` (0-based)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r} (known: {SCHEDULES})")
    if warmup_steps > 0 and step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "constant":
        return 1.0
    span = max(1, total_steps - warmup_steps)
    progress = min(1.0, (step - warmup_steps) / span)
    return 0.5 * (1.0 + math.cos(math.pi * progress))
