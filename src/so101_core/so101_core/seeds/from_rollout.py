"""Scripted seeds without hardware: :class:`~so101_core.sim.rollout.EpisodeRecord` → :class:`SeedDemo`."""

from __future__ import annotations

import numpy as np

from so101_core.seeds.format import SeedDemo, SeedFormatError
from so101_core.sim.rollout import EpisodeRecord, run_scripted_episode
from so101_core.sim.twin import Twin


def seed_from_record(record: EpisodeRecord, control_hz: float = 30.0, source: str = "scripted") -> SeedDemo:
    """Convert a recorded episode (``record=True``) into a seed demo (timestamps k / control_hz)."""
    if len(record.actions) == 0:
        raise SeedFormatError(f"episode with seed {record.seed} was not recorded (run it with record=True)")
    steps = len(record.actions)
    return SeedDemo(
        t=np.arange(steps, dtype=np.float64) / control_hz,
        joint_positions=np.asarray(record.joint_positions, dtype=np.float64),
        actions=np.asarray(record.actions, dtype=np.float64),
        object_poses={name: np.asarray(p) for name, p in record.object_poses.items()},
        success=bool(record.success),
        seed=record.seed,
        source=source,
        control_hz=control_hz,
        extra={
            "partly_done": bool(record.partly_done),
            "target_slot": int(record.target_slot),
            "prefilled": [int(v) for v in record.prefilled],
            **({"target_slots": dict(record.target_slots)} if len(record.target_slots) > 1 else {}),
            **({"failure": record.failure} if record.failure else {}),
        },
    )


def scripted_seeds(twin: Twin, seeds: list[int], *, only_successful: bool = True) -> list[SeedDemo]:
    """Run the scripted expert once per scene seed and return the (successful) episodes as seeds.

    Episodes that start partly done (vial already in hand) are skipped: they hold no grasp to learn from.
    """
    out = []
    for s in seeds:
        rec = run_scripted_episode(twin, s, record=True)
        if rec.partly_done or (only_successful and not rec.success):
            continue
        out.append(seed_from_record(rec, twin.config.physics.control_hz))
    return out
