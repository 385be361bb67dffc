"""Scripted expert drives the twin to success through the joint-target interface (CPU, no rendering)."""

from __future__ import annotations

import numpy as np
from so101_core.sim.bench import run_sim_benchmark
from so101_core.sim.config import TaskConfig
from so101_core.sim.randomization import DRConfig
from so101_core.sim.rollout import run_scripted_episode
from so101_core.sim.scripted_expert import Phase, ScriptedExpert
from so101_core.sim.twin import Twin


def test_expert_succeeds_on_randomized_seeds(twin: Twin, task_cfg: TaskConfig) -> None:
    expert = ScriptedExpert.for_twin(twin)
    for seed in (0, 1, 2, 3):
        rec = run_scripted_episode(twin, seed, expert=expert, task=task_cfg, record=True)
        assert rec.success, f"seed {seed}"
        assert rec.actions.shape == (rec.steps, 6) and rec.vial_poses.shape == (rec.steps, 7)
        assert np.all(np.isfinite(rec.actions))


def test_expert_finishes_a_partly_done_start(in_hand_twin: Twin, task_cfg: TaskConfig) -> None:
    expert = ScriptedExpert.for_twin(in_hand_twin)
    in_hand_twin.reset(11)
    expert.reset(in_hand_twin.joint_positions(), in_hand_twin.object_poses())
    assert expert.phase is Phase.CARRY
    rec = run_scripted_episode(in_hand_twin, 11, expert=expert, task=task_cfg)
    assert rec.partly_done and rec.success


def test_benchmark_reports_all_figures() -> None:
    out = run_sim_benchmark(1, render_frames=1, width=64, height=48, dr=DRConfig.disabled())
    assert out["success_rate"] == 1.0
    assert out["physics_rtf"] > 0 and out["render_fps"] > 0
    assert out["cameras"] == ["ego", "side", "top"]
