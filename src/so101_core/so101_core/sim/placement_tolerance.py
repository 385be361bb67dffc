"""The task's placement tolerance: how far from its slot's centre a vial may be set down and still stand in it.

Each successful episode's joint targets are replayed open loop in the twin from the episode's own scene, with the
rack (and the vials standing in it) moved by ``offset`` mm along +x, −x, +y and −y of the world: the arm then sets
the vial down that far from its target slot's centre. Our success rule judges every replay. What a policy needs:
its placement error must stay where the rate is still near 1 (SkillGen's demos place 2–3 mm from the centre).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from so101_core.arrays import F64

from .success import SuccessRules
from .twin import Twin

DIRECTIONS = ((1.0, 0.0), (-1.0, 0.0), (0.0, 1.0), (0.0, -1.0))
SETTLE_STEPS = 30  # control steps holding the last target after the replay, for the vial to come to rest


class SceneMismatchError(ValueError):
    """An episode's recorded scene is not the one its seed draws here (another DR profile or config)."""


@dataclass(frozen=True)
class Replay:
    """A successful episode to replay: its scene ``seed``, joint targets ``actions`` (T, 6) rad, and the rack's
    recorded pose at its first step ``rack_start`` (7,) xyz m + wxyz (checks that the seed draws its scene)."""

    seed: int
    actions: F64
    rack_start: F64


def replay_succeeds(twin: Twin, replay: Replay, shift_xy_m: tuple[float, float]) -> bool:
    """Replay ``replay`` on ``twin`` with the rack and its standing vials moved by ``shift_xy_m`` (m, world x, y);
    True when our success rule (for the twin's task) held. Raises :class:`SceneMismatchError` when the seed's rack
    is not where the episode recorded it (more than 1 mm away, or its quaternion more than 0.01 away, sign aside)."""
    twin.reset(replay.seed)
    rack_pos, rack_quat = (np.asarray(v, dtype=np.float64) for v in twin.object_poses()["rack"])
    start = np.asarray(replay.rack_start, dtype=np.float64)
    if (
        np.linalg.norm(rack_pos - start[:3]) > 1e-3
        or min(np.linalg.norm(rack_quat - start[3:]), np.linalg.norm(rack_quat + start[3:])) > 1e-2
    ):
        raise SceneMismatchError(
            f"seed {replay.seed}: the rack starts at {np.round(rack_pos, 4).tolist()} here, the episode recorded "
            f"{np.round(start[:3], 4).tolist()} (made under another DR profile or config?)"
        )
    shift = np.array([shift_xy_m[0], shift_xy_m[1], 0.0])
    for name in ("rack", *twin.standing_names):
        pos, quat = twin.object_poses()[name]
        twin.set_object_pose(name, (np.asarray(pos) + shift, quat))
    rules = SuccessRules.of(twin.task, twin.config)
    success = False
    last = replay.actions[-1]
    for action in (*replay.actions, *([last] * SETTLE_STEPS)):
        twin.step(action)
        success, _ = rules.update(twin.task_state())
    return bool(success)


def placement_tolerance(
    twin: Twin, replays: Iterable[Replay], offsets_mm: Iterable[float]
) -> dict[str, dict[str, float]]:
    """Success of every replay at every offset (mm; 0: once, else in the four :data:`DIRECTIONS`), keyed by the
    offset as text: ``replays``, ``successes``, ``success_rate``."""
    offsets = [float(o) for o in offsets_mm]
    if any(o < 0 or not np.isfinite(o) for o in offsets):
        raise ValueError(f"offsets must be finite and >= 0 mm, got {offsets}")
    tally: dict[float, list[int]] = {o: [0, 0] for o in offsets}
    for replay in replays:
        for offset in offsets:
            for dx, dy in DIRECTIONS if offset > 0 else ((0.0, 0.0),):
                ok = replay_succeeds(twin, replay, (dx * offset / 1000.0, dy * offset / 1000.0))
                tally[offset][0] += 1
                tally[offset][1] += ok
    return {_key(o): _row(n, ok) for o, (n, ok) in tally.items()}


def _key(offset: float) -> str:
    return f"{offset:g}"


def _row(n: int, ok: int) -> dict[str, float]:
    return {"replays": n, "successes": ok, "success_rate": ok / n if n else 0.0}


def replay_of(seed: int | None, actions: F64, object_poses: Mapping[str, F64]) -> Replay:
    """A :class:`Replay` from an episode's seed, actions and recorded object poses (a demo's, a rollout's)."""
    if seed is None:
        raise SceneMismatchError("an episode without a scene seed cannot be replayed in its scene")
    return Replay(int(seed), np.asarray(actions, dtype=np.float64), np.asarray(object_poses["rack"][0]))
