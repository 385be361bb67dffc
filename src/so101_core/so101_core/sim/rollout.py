"""Run scripted-expert episodes on the twin and record them (joint states, actions, object poses at 30 Hz)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from so101_core.arrays import F64

from .config import TaskConfig, load_task_config
from .scene import RACK, is_vial
from .scripted_expert import ScriptedExpert
from .success import SuccessRules
from .twin import Twin


@dataclass
class EpisodeRecord:
    """One episode. Arrays are per control step: ``joint_positions``/``actions`` (T, 6) rad,
    ``object_poses`` name → (T, 7) = xyz m + quaternion wxyz, observed before the action (``vial_poses`` /
    ``rack_poses``: the first vial's and the rack's; standing vials under their names). ``target_slots``: vial
    name → its slot; ``prefilled``: the slots holding a standing vial at the start (``standing_vial_k`` in the
    k-th).
    """

    seed: int | None
    success: bool
    steps: int
    partly_done: bool
    joint_positions: F64 = field(default_factory=lambda: np.zeros((0, 6)))
    actions: F64 = field(default_factory=lambda: np.zeros((0, 6)))
    object_poses: dict[str, F64] = field(default_factory=dict)
    target_slot: int = 0
    failure: str | None = None  # the expert's reason for giving up (unreachable pose), None otherwise
    target_slots: dict[str, int] = field(default_factory=dict)
    prefilled: tuple[int, ...] = ()
    workshop: bool = False  # the upstream workshop's rule held too

    @property
    def vial_poses(self) -> F64:
        """The first vial's poses (T, 7)."""
        return next((p for n, p in self.object_poses.items() if is_vial(n)), np.zeros((0, 7)))

    @property
    def rack_poses(self) -> F64:
        """The rack's poses (T, 7)."""
        return self.object_poses.get(RACK, np.zeros((0, 7)))


def run_scripted_episode(
    twin: Twin,
    seed: int | None,
    *,
    expert: ScriptedExpert | None = None,
    task: TaskConfig | None = None,
    record: bool = False,
    stop_on_success: bool = True,
) -> EpisodeRecord:
    """Reset ``twin`` with ``seed`` and let the scripted expert run until success or ``task.max_steps``."""
    task = task or twin.task or load_task_config()
    expert = expert or ScriptedExpert.for_twin(twin)
    sample = twin.reset(seed)
    rules = SuccessRules.of(task, twin.config)
    targets = dict(zip(twin.vial_names, sample.target_slots, strict=True))
    expert.reset(twin.joint_positions(), twin.object_poses(), targets=list(targets.items()))
    qs, acts = [], []
    poses_log: dict[str, list[F64]] = {n: [] for n in twin.object_names}
    steps = 0
    for steps in range(1, task.max_steps + 1):  # noqa: B007  (steps is reported)
        q = twin.joint_positions()
        poses = twin.object_poses()
        action = expert.act(q, poses)
        if record:
            qs.append(q)
            acts.append(action)
            for name, pose in poses.items():
                poses_log[name].append(np.concatenate(pose))
        twin.step(action)
        ok, _ = rules.update(twin.task_state())
        if ok and stop_on_success and expert.done:
            break
    rec = EpisodeRecord(
        seed, rules.succeeded, steps, sample.partly_done, target_slot=sample.target_slot, failure=expert.failure,
        target_slots=targets, prefilled=sample.prefilled, workshop=rules.workshop_succeeded,
    )  # fmt: skip
    if record:
        rec.joint_positions, rec.actions = np.asarray(qs), np.asarray(acts)
        rec.object_poses = {n: np.asarray(v).reshape(-1, 7) for n, v in poses_log.items()}
    return rec
