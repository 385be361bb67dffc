"""The plugin's pieces in this process: the env type maps the twin to LeRobot's keys and units and makes vector
environments that replay the twin's seeded episodes exactly; bad settings are refused; the replay checkpoint
round-trips and refuses a file without its actions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from lerobot.configs import FeatureType
from lerobot.envs import make_env, preprocess_observation
from lerobot.envs.utils import NEW_ROLLOUT_OPTION, env_to_policy_features
from lerobot_env_so101_vial_rack.configuration_vial_rack import So101VialRackEnv
from lerobot_env_so101_vial_rack.modeling_so101_replay import So101ReplayPolicy, save_replay_policy
from so101_core.lerobot_units import to_lerobot
from so101_policy.sim_env import EnvConfig, VialRackEnv


def test_env_type_gives_lerobots_keys_and_the_twins_seeded_episodes() -> None:
    cfg = So101VialRackEnv(cameras=["top"], width=32, height=24, episode_s=0.2, instruction="put it in")
    features = env_to_policy_features(cfg)
    assert {k: (f.type, tuple(f.shape)) for k, f in features.items()} == {
        "action": (FeatureType.ACTION, (6,)),
        "observation.state": (FeatureType.STATE, (6,)),
        "observation.images.top": (FeatureType.VISUAL, (3, 24, 32)),
    }
    vec = make_env(cfg, n_envs=2)["so101_vial_rack"][0]
    alone = VialRackEnv(EnvConfig(cameras=("top",), width=32, height=24, episode_s=0.2, task="put it in"))
    try:
        assert list(vec.call("task_description")) == ["put it in"] * 2
        assert vec.call("_max_episode_steps")[0] == 6
        obs, _ = vec.reset(seed=[3, 4], options={NEW_ROLLOUT_OPTION: True})
        want, _ = alone.reset(seed=4)
        batch = preprocess_observation(obs)
        assert batch["observation.images.top"].shape == (2, 3, 24, 32)
        np.testing.assert_array_equal(obs["pixels"]["top"][1], want["pixels"]["top"])  # seed 4's scene
        np.testing.assert_allclose(batch["observation.state"][1].numpy(), want["agent_pos"], atol=1e-6)
        np.testing.assert_allclose(want["agent_pos"], to_lerobot(alone.twin.joint_positions()), atol=1e-4)
        target = want["agent_pos"] + np.array([30.0, 0, 0, 0, 0, 0], dtype=np.float32)  # pan 30° away
        for step in range(1, 9):  # 6 steps to the end, then 2 more: a finished sub-env stays frozen
            obs, reward, terminated, truncated, info = vec.step(np.stack([target, target]))
            want_reward = 0.0
            if step <= 6:
                want, want_reward, _, want_truncated, want_info = alone.step(target)
                assert want_truncated == (step == 6)
            assert (reward[1], bool(truncated[1]), bool(terminated[1])) == (want_reward, step >= 6, False)
            np.testing.assert_allclose(obs["agent_pos"][1], want["agent_pos"], atol=1e-6)
            if step == 6:  # LeRobot reads success from the final info of a sub-env whose episode just ended
                assert info["final_info"]["is_success"][1] == want_info["is_success"] is False
                assert info["final_info"]["steps"][1] == 6
        assert alone.step(target)[4]["steps"] == 6
    finally:
        vec.close()
        alone.close()


def test_bad_settings_are_refused() -> None:
    for bad in ({"cameras": ["nope"]}, {"cameras": ["top", "top"]}, {"width": 0}, {"episode_s": 0.0}):
        with pytest.raises(ValueError, match=r"env\."):
            So101VialRackEnv(**bad)


def test_replay_checkpoint_round_trips_and_needs_its_actions(tmp_path: Path) -> None:
    import torch
    from safetensors.torch import save_file

    actions = np.arange(18, dtype=np.float32).reshape(3, 6)
    policy = So101ReplayPolicy.from_pretrained(save_replay_policy(actions, tmp_path / "replay"))
    batch = {"observation.state": torch.zeros(2, 6)}
    got = [policy.select_action(batch).numpy() for _ in range(4)]
    assert all(g.shape == (2, 6) for g in got)
    np.testing.assert_array_equal([g[1] for g in got], actions[[0, 1, 2, 2]])  # the last row after the end
    policy.reset()
    np.testing.assert_array_equal(policy.select_action(batch)[0].numpy(), actions[0])
    with pytest.raises(ValueError, match=r"finite \(N, 6\)"):
        save_replay_policy(np.zeros((3, 5)), tmp_path / "bad")
    save_file({"other": torch.zeros(1)}, str(tmp_path / "replay" / "model.safetensors"))
    with pytest.raises(RuntimeError, match="actions"):
        So101ReplayPolicy.from_pretrained(tmp_path / "replay")
