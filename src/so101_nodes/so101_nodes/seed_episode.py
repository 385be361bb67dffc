"""One seed episode assembled from stamped streams — the seed recorder's logic, without a graph.

Streams: joint states (one step per control period: a state closer than 0.9 period to the pending one is
dropped), commands (matched to a state by equal ``header.stamp``, else sample-and-hold of the latest) and
object poses (the latest with a stamp <= the state's). A state becomes a step when the next one arrives
(:meth:`SeedEpisode.add_state`) or when the episode ends (:meth:`SeedEpisode.flush`); states before the
episode's first command are counted as ``lead_steps`` and not recorded. Stamps are ns; joints rad (canonical
order); poses ``(7,)`` xyz m + wxyz.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from so101_core.arrays import F64
from so101_core.seeds.format import SeedDemo


class StreamHistory:
    """Recent commands and object poses, kept across episodes (a command may precede its episode)."""

    def __init__(self, object_names: Sequence[str], *, pose_history: int = 16, action_history: int = 64) -> None:
        self.latest_action: F64 | None = None
        self._actions: dict[int, F64] = {}
        self._action_stamps: deque[int] = deque()
        self._action_history = action_history
        self._poses: dict[str, deque[tuple[int, F64]]] = {n: deque(maxlen=pose_history) for n in object_names}

    @property
    def object_names(self) -> tuple[str, ...]:
        return tuple(self._poses)

    def add_action(self, stamp_ns: int, action: F64) -> None:
        """A command ``(6,)`` rad stamped ``stamp_ns``."""
        self.latest_action = action
        self._actions[stamp_ns] = action
        self._action_stamps.append(stamp_ns)
        while len(self._action_stamps) > self._action_history:
            self._actions.pop(self._action_stamps.popleft(), None)

    def add_pose(self, name: str, stamp_ns: int, pose: F64) -> None:
        """A pose ``(7,)`` of object ``name``."""
        self._poses[name].append((stamp_ns, pose))

    def action_at(self, stamp_ns: int) -> tuple[F64, bool] | None:
        """The command stamped ``stamp_ns`` (``True``), else the latest one (``False``); None before any."""
        if (exact := self._actions.get(stamp_ns)) is not None:
            return exact, True
        return (self.latest_action, False) if self.latest_action is not None else None

    def pose_at(self, name: str, stamp_ns: int) -> F64 | None:
        """The latest pose of ``name`` stamped <= ``stamp_ns`` (else the oldest kept); None if none arrived."""
        history = self._poses[name]
        best = None
        for stamp, pose in history:
            if stamp <= stamp_ns:
                best = pose
        if best is None and history:
            best = history[0][1]
        return best


@dataclass
class SeedEpisode:
    """The steps of one episode; ``period_ns`` is the control period."""

    index: int
    seed: int | None
    period_ns: int
    t_ns: list[int] = field(default_factory=list)
    q: list[F64] = field(default_factory=list)
    actions: list[F64] = field(default_factory=list)
    poses: dict[str, list[F64]] = field(default_factory=dict)
    pending: tuple[int, F64] | None = None  # the last state, waiting for its action and poses
    lead_steps: int = 0
    unmatched_actions: int = 0
    has_action: bool = False

    @property
    def steps(self) -> int:
        return len(self.t_ns)

    def add_state(self, stamp_ns: int, q: F64, history: StreamHistory) -> bool:
        """A joint state; True when it made the pending state a step (the caller then judges that step)."""
        finished = False
        if self.pending is not None:
            if stamp_ns - self.pending[0] < 0.9 * self.period_ns:
                return False  # a re-published state, or a faster stream (driver at 100 Hz): one step per period
            finished = self._finish(history)
        self.pending = (stamp_ns, q)
        return finished

    def flush(self, history: StreamHistory) -> bool:
        """Make the pending state a step (end of episode, once a command came); True when a step was added."""
        return self.pending is not None and self.has_action and self._finish(history)

    def _finish(self, history: StreamHistory) -> bool:
        assert self.pending is not None
        stamp, q = self.pending
        self.pending = None
        found = history.action_at(stamp) if self.has_action else None
        if found is None:
            self.lead_steps += 1
            return False
        action, matched = found
        self.unmatched_actions += not matched
        poses = {name: history.pose_at(name, stamp) for name in history.object_names}
        self.t_ns.append(stamp)
        self.q.append(q)
        self.actions.append(action.copy())
        if all(pose is not None for pose in poses.values()):
            for name, pose in poses.items():
                self.poses.setdefault(name, []).append(np.asarray(pose))
        else:  # a pose missing for this step: hold the last one (arrays stay aligned)
            for kept in self.poses.values():
                kept.append(kept[-1])
        return True

    def has_poses(self, object_names: Sequence[str]) -> bool:
        """Every object has a pose for every step."""
        return len(self.poses) == len(object_names) and all(len(v) == self.steps for v in self.poses.values())

    def latest_pose(self, name: str) -> F64:
        return self.poses[name][-1]

    def to_seed_demo(
        self, *, success: bool, source: str, control_hz: float, with_poses: bool, extra: dict[str, Any]
    ) -> SeedDemo:
        """The recorded steps as a :class:`SeedDemo` (``t`` from 0 s; poses only ``with_poses``)."""
        return SeedDemo(
            t=(np.asarray(self.t_ns, dtype=np.int64) - self.t_ns[0]).astype(np.float64) * 1e-9,
            joint_positions=np.asarray(self.q, dtype=np.float64),
            actions=np.asarray(self.actions, dtype=np.float64),
            object_poses={name: np.asarray(v, dtype=np.float64) for name, v in self.poses.items()}
            if with_poses
            else {},
            success=bool(success),
            source=source,
            seed=self.seed,
            control_hz=control_hz,
            extra=extra,
        )
