"""Run scripted-expert episodes on the twin and record them (joint states, actions, object poses at 30 Hz)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from so101_core.arrays import F64

from .config import TaskConfig, load_task_config
from .scene import RACK, VIAL
from .scripted_expert import ScriptedExpert
from .task import SuccessDetector
from .twin import Twin


@dataclass
class EpisodeRecord:
    """One episode. Arrays are per control step: ``joint_positions``/``actions`` (T, 6) rad,
    ``vial_poses``/``rack_poses`` (T, 7) = xyz m + quaternion wxyz, observed before the action.
    """

    seed: int | None
    success: bool
    steps: int
    partly_done: bool
    joint_positions: F64 = field(default_factory=lambda: np.zeros((0, 6)))
    actions: F64 = field(default_factory=lambda: np.zeros((0, 6)))
    vial_poses: F64 = field(default_factory=lambda: np.zeros((0, 7)))
    rack_poses: F64 = field(default_factory=lambda: np.zeros((0, 7)))
    target_slot: int = 0
    failure: str | None = None  # the expert's reason for giving up (unreachable pose), None otherwise


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
    task = task or load_task_config()
    expert = expert or ScriptedExpert.for_twin(twin)
    sample = twin.reset(seed)
    detector = SuccessDetector(task, twin.config.rack)
    expert.reset(twin.joint_positions(), twin.object_poses(), sample.target_slot)
    qs, acts, vials, racks = [], [], [], []
    steps = 0
    for steps in range(1, task.max_steps + 1):  # noqa: B007  (steps is reported)
        q = twin.joint_positions()
        poses = twin.object_poses()
        action = expert.act(q, poses)
        if record:
            qs.append(q)
            acts.append(action)
            vials.append(np.concatenate(poses[VIAL]))
            racks.append(np.concatenate(poses[RACK]))
        twin.step(action)
        poses = twin.object_poses()
        ok = detector.update(
            poses[VIAL].position, poses[VIAL].quaternion, poses[RACK].position, poses[RACK].quaternion,
            twin.jaw_contacts().both,
        )  # fmt: skip
        if ok and stop_on_success and expert.done:
            break
    rec = EpisodeRecord(
        seed, detector.succeeded, steps, sample.partly_done, target_slot=sample.target_slot, failure=expert.failure
    )
    if record:
        rec.joint_positions, rec.actions = np.asarray(qs), np.asarray(acts)
        rec.vial_poses, rec.rack_poses = np.asarray(vials), np.asarray(racks)
    return rec
