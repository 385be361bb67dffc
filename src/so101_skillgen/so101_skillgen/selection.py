"""Per-subtask source selection: k nearest seeds on the pose of the object the subtask depends on.

Distance between object frames (4, 4): ``|Δp| + rotation_weight · angle(ΔR)`` (m, with
``rotation_weight`` in m/rad). One of the k nearest is drawn uniformly with the attempt's RNG.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from so101_core.arrays import F64

from .errors import SelectionError
from .frames import rotation_angle


def pose_distance(a: F64, b: F64, rotation_weight: float) -> float:
    """Distance (m) between two frames (4, 4)."""
    return float(np.linalg.norm(a[:3, 3] - b[:3, 3])) + rotation_weight * rotation_angle(a[:3, :3], b[:3, :3])


def nearest(candidates: Sequence[F64], query: F64, k: int, rotation_weight: float) -> list[int]:
    """Indices of the ``k`` candidate frames (each (4, 4)) nearest to ``query``, nearest first (stable ties)."""
    if not candidates:
        raise SelectionError("no source seeds to select from")
    d = np.array([pose_distance(c, query, rotation_weight) for c in candidates])
    return [int(i) for i in np.argsort(d, kind="stable")[: max(1, k)]]


def select_source(
    candidates: Sequence[F64], query: F64, k: int, rotation_weight: float, rng: np.random.Generator
) -> tuple[int, list[int]]:
    """Draw one of the ``k`` nearest candidates; returns (chosen index, the k nearest)."""
    near = nearest(candidates, query, k, rotation_weight)
    return near[int(rng.integers(len(near)))], near
