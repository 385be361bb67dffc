"""``lerobot-eval`` (LeRobot's own command, a separate process finding this plugin as an installed distribution) runs
in the twin: a policy replaying the scripted expert's kept demo scores, seed by seed, what ``so101 eval --fast``'s
evaluator scores for the same replay on the same seeds (success, episode length, hence ``pc_success`` inside the
Wilson interval); and a tiny ACT checkpoint trained here by ``so101_policy.train`` runs through it end to end in
asynchronous vector environments, with videos, scoring inside ``so101 eval --fast``'s interval for it (both 0 %: no
checkpoint that succeeds can be trained on a CPU in a test)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from lerobot_env_so101_vial_rack.modeling_so101_replay import save_replay_policy
from so101_core.lerobot_units import to_lerobot
from so101_policy.config import EvalConfig
from so101_policy.fast_eval import evaluate_checkpoint_fast, run_fast_evaluation
from so101_policy.replay_policy import ReplayPolicy

DEMO_SEED = 7  # the demo: the scripted expert on this seed's nominal scene
FIRST_SEED, EPISODES = (
    51,
    3,
)  # DR scenes (target slot and layout drawn by seed) where the replayed demo succeeds on some and fails on others


def start_lerobot_eval(*args: str, out: Path) -> subprocess.Popen[str]:
    """Start ``lerobot-eval`` on the CPU, offline, writing into ``out`` (its log: ``out``.log)."""
    try:
        importlib.metadata.distribution("lerobot_env_so101_vial_rack")
    except importlib.metadata.PackageNotFoundError:
        pytest.fail("lerobot_env_so101_vial_rack is not installed: LeRobot finds plugins by distribution (setup)")
    cmd = [str(Path(sys.executable).parent / "lerobot-eval"), "--env.type=so101_vial_rack", *args]
    cmd += ["--policy.device=cpu", f"--output_dir={out}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    with out.with_suffix(".log").open("w") as log:
        return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)


def eval_info(run: subprocess.Popen[str], out: Path) -> dict:
    """Wait for ``run``; its ``eval_info.json``."""
    try:
        run.wait(timeout=600)
    finally:
        run.kill()
    assert run.returncode == 0, out.with_suffix(".log").read_text()[-4000:]
    return json.loads((out / "eval_info.json").read_text())


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    """(N, 6) actions in LeRobot units of the scripted expert's successful rollout on DEMO_SEED's nominal scene."""
    from so101_core.sim.config import load_sim_config
    from so101_core.sim.randomization import DRConfig
    from so101_core.sim.rollout import run_scripted_episode
    from so101_core.sim.twin import Twin

    with Twin(load_sim_config(), DRConfig.disabled()) as twin:
        rec = run_scripted_episode(twin, DEMO_SEED, record=True)
    assert rec.success, "the scripted expert must succeed on the demo scene"
    return to_lerobot(rec.actions).astype(np.float32)


@pytest.mark.slow
def test_lerobot_eval_scores_the_replayed_demo_as_the_fast_evaluator_does(demo: np.ndarray, tmp_path: Path) -> None:
    episode_s = len(demo) / 30.0 + 3.0
    # the replay looks at no camera: none is rendered (recording instead of LeRobot's videos of the first episodes)
    run = start_lerobot_eval(
        f"--policy.path={save_replay_policy(demo, tmp_path / 'replay')}",
        "--env.cameras=[]",
        f"--env.episode_s={episode_s}",
        f"--seed={FIRST_SEED}",
        f"--eval.n_episodes={EPISODES}",
        f"--eval.batch_size={EPISODES}",
        "--eval.use_async_envs=false",
        "--eval.recording=true",
        out=tmp_path / "lerobot",
    )
    # meanwhile, so101 eval --fast's evaluator on the same replay and seeds
    cfg = EvalConfig(episodes=EPISODES, seed=FIRST_SEED, episode_s=episode_s, cameras=(), width=32, height=24)
    fast = run_fast_evaluation(ReplayPolicy(demo, cameras=()), tmp_path / "fast", cfg, (), (32, 24), envs=1)
    rows = [json.loads(line) for line in (tmp_path / "fast" / "fast_episodes.jsonl").read_text().splitlines()]
    info = eval_info(run, tmp_path / "lerobot")
    assert [r["seed"] for r in rows] == list(range(FIRST_SEED, FIRST_SEED + EPISODES))
    assert 0 < fast.successes < EPISODES, "the test scenes must include a success and a failure"

    metrics = info["per_task"][0]["metrics"]
    assert metrics["successes"] == [r["success"] for r in rows]  # seed by seed
    assert metrics["sum_rewards"] == [float(r["success"]) for r in rows]  # reward 1 on our detector's success
    recordings = tmp_path / "lerobot" / "recordings" / "so101_vial_rack_0"
    lengths = [json.loads((recordings / f"env_{i}/meta/info.json").read_text())["total_frames"] for i in range(3)]
    assert lengths == [r["steps"] for r in rows]  # every episode ends on the same step
    pc = info["overall"]["pc_success"] / 100.0
    assert info["overall"]["n_episodes"] == EPISODES
    assert fast.wilson_low <= pc <= fast.wilson_high and pc == pytest.approx(fast.success_rate)


@pytest.mark.slow
def test_lerobot_eval_runs_a_trained_act_checkpoint(tmp_path: Path) -> None:
    from so101_policy.testing.checkpoint import tiny_act_checkpoint

    checkpoint = tiny_act_checkpoint(tmp_path)
    run = start_lerobot_eval(
        f"--policy.path={checkpoint / 'pretrained_model'}",
        "--env.cameras=[top]",
        "--env.width=64",
        "--env.height=48",  # the dataset's image size
        "--env.episode_s=0.3",
        "--seed=1984",
        "--eval.n_episodes=2",
        "--eval.batch_size=2",
        "--eval.use_async_envs=true",
        out=tmp_path / "lerobot",
    )
    # meanwhile, so101 eval --fast on the same checkpoint and seeds
    cfg = EvalConfig(episodes=2, seed=1984, episode_s=0.3, device="cpu")
    fast = evaluate_checkpoint_fast(checkpoint, tmp_path / "fast", cfg, envs=1)
    info = eval_info(run, tmp_path / "lerobot")
    overall = info["overall"]
    assert overall["n_episodes"] == 2 and overall["pc_success"] == 0.0  # 9 steps cannot put a vial in the rack
    assert fast.episodes == 2 and fast.wilson_low <= overall["pc_success"] / 100.0 <= fast.wilson_high
    assert len(overall["video_paths"]) == 2 and all(Path(p).stat().st_size > 0 for p in overall["video_paths"])
