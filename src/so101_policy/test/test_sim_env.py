"""The evaluation task as a gymnasium environment: same seed → same episode, LeRobot units, the driver's speed
limit, success reported in info."""

from __future__ import annotations

import numpy as np
import pytest
from so101_core.lerobot_units import to_lerobot
from so101_policy.sim_env import EnvConfig, VialRackEnv

SPEC = EnvConfig(cameras=("top",), width=32, height=24, episode_s=1.0, randomize=True)


@pytest.fixture(scope="module")
def env() -> VialRackEnv:
    e = VialRackEnv(SPEC)
    yield e
    e.close()


def test_same_seed_same_episode_and_lerobot_units(env: VialRackEnv) -> None:
    a, info = env.reset(seed=3)
    assert info == {"is_success": False, "workshop_success": False, "seed": 3, "steps": 0}
    assert a["pixels"]["top"].shape == (24, 32, 3) and a["pixels"]["top"].dtype == np.uint8
    assert env.observation_space.contains(a)
    np.testing.assert_allclose(a["agent_pos"], to_lerobot(env.twin.joint_positions()), atol=1e-4)
    first = a["pixels"]["top"].copy()
    env.reset(seed=4)
    b, _ = env.reset(seed=3)
    np.testing.assert_array_equal(b["pixels"]["top"], first)


def test_commands_move_at_the_drivers_speed_and_the_episode_ends(env: VialRackEnv) -> None:
    obs, _ = env.reset(seed=5)
    target = obs["agent_pos"].copy()
    target[0] += 60.0  # shoulder_pan 60° away: the filter lets it move max_speed × period per step
    obs, reward, terminated, truncated, info = env.step(target)
    moved = np.radians(obs["agent_pos"][0] - target[0] + 60.0)
    assert 0.0 < moved <= env.filter.max_step[0] + 0.01, moved  # the goal moved one period's worth
    assert reward == 0.0 and not terminated and not truncated and info["steps"] == 1
    steps = 1
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(target)
        steps += 1
    assert truncated and not terminated and steps == env._max_episode_steps == 30
    assert env.step(target)[4]["steps"] == 30  # a step after the end changes nothing
