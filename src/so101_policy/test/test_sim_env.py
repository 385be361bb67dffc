"""The evaluation task as a gymnasium environment: same seed → same episode, LeRobot units, the driver's speed
limit, success reported in info."""

from __future__ import annotations

import dataclasses

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
    slot = env.twin.episode.target_slot
    assert info == {"is_success": False, "workshop_success": False, "seed": 3, "steps": 0, "target_slot": slot}
    assert slot in env.twin.task.fill_order  # the first free slot: the scene's own target, not a placeholder
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


def test_rendering_on_request_shows_what_rendering_every_step_shows(env: VialRackEnv) -> None:
    """pixels_every_step off: a step keeps the last images (no render), observe() renders the state now, the same
    pixels as an environment that renders at every step after the same seed and commands."""
    lazy = VialRackEnv(dataclasses.replace(SPEC, pixels_every_step=False))
    try:
        eager, _ = env.reset(seed=6)
        first, _ = lazy.reset(seed=6)
        np.testing.assert_array_equal(first["pixels"]["top"], eager["pixels"]["top"])
        before = first["pixels"]["top"].copy()
        target = eager["agent_pos"].copy()
        target[0] += 60.0  # shoulder_pan sweeps the arm through the top camera's view
        for _ in range(12):
            eager, *_ = env.step(target)
            stale, *_ = lazy.step(target)
        np.testing.assert_array_equal(stale["pixels"]["top"], before)  # nothing rendered by the steps
        assert not np.array_equal(eager["pixels"]["top"], before)  # while the scene did change
        np.testing.assert_array_equal(lazy.observe()["top"], eager["pixels"]["top"])
        np.testing.assert_array_equal(lazy.step(target)[0]["pixels"]["top"], eager["pixels"]["top"])
    finally:
        lazy.close()


def test_the_outcome_says_how_the_episode_stands(env: VialRackEnv) -> None:
    from so101_policy.outcome import NEVER_GRASPED

    env.reset(seed=3)
    out = env.outcome()
    assert out["failure"] == NEVER_GRASPED  # nothing held yet
    end = out["final_placement"]  # the vial lies on the mat where it spawned, away from its target slot
    assert end["target_offset_mm"] > 30.0 and end["height_mm"] < 30.0 and end["tilt_deg"] > 45.0
    assert end["nearest_slot"] in range(9)


def test_a_vial_let_go_before_or_after_it_left_the_mat() -> None:
    """The expert's demo replayed, the jaws opened three steps after they first hold the vial (it never rose:
    ``grasped, never lifted``) or once it is lifted (``released outside a slot``): the environment tracks the lift."""
    from so101_core.sim.config import load_sim_config
    from so101_core.sim.randomization import DRConfig
    from so101_core.sim.rollout import run_scripted_episode
    from so101_core.sim.twin import Twin
    from so101_policy.outcome import LIFT_M, NEVER_LIFTED, RELEASED_ELSEWHERE

    with Twin(load_sim_config(), DRConfig.disabled()) as twin:
        rec = run_scripted_episode(twin, 7, record=True)
    assert rec.success
    actions = to_lerobot(rec.actions).astype(np.float32)
    opened = float(actions[:, 5].max())
    nominal = VialRackEnv(dataclasses.replace(SPEC, episode_s=30.0, randomize=False))
    try:

        def let_go(when: str) -> str | None:
            nominal.reset(seed=7)
            start_z, held_for = float(nominal.twin.task_state().vials[0][0][2]), 0
            for a in actions:
                state = nominal.twin.task_state()
                held_for += int(state.held[0])
                if (when == "grasped" and held_for >= 3) or (
                    when == "lifted" and float(state.vials[0][0][2]) - start_z > LIFT_M + 0.01
                ):
                    break
                nominal.step(a)
            else:
                raise AssertionError(f"the demo never reached '{when}'")
            release = a.copy()
            release[5] = opened
            lifted_z = float(nominal.twin.task_state().vials[0][0][2])
            for _ in range(45):  # 1.5 s: the jaws open and the vial settles
                nominal.step(release)
            out = nominal.outcome()
            let_go = out["release_placement"]  # where the jaws let go of it (only of a lifted vial)
            assert (let_go is None) == (when == "grasped"), let_go
            if let_go is not None:  # up in the air, well above where it ended on the mat
                assert let_go["height_mm"] > 1000.0 * (lifted_z - start_z) and let_go != out["final_placement"]
                assert out["final_placement"]["height_mm"] < let_go["height_mm"] - 30.0
            return out["failure"]

        assert let_go("grasped") == NEVER_LIFTED
        assert let_go("lifted") == RELEASED_ELSEWHERE
    finally:
        nominal.close()


def test_a_vial_in_the_hand_from_the_start_counts_as_lifted(env: VialRackEnv) -> None:
    """DR's partly-done starts put the vial in the hand, already up: opening the jaws is a release outside a slot,
    not a grasp that never lifted."""
    from so101_policy.outcome import RELEASED_ELSEWHERE

    seed = next(s for s in range(400) if env.reset(seed=s) and env.twin.episode.partly_done)
    assert env.twin.task_state().held[0], f"seed {seed}: a partly-done start holds the vial"
    opened = env.reset(seed=seed)[0]["agent_pos"].copy()
    opened[5] = float(env.action_space.high[5])  # the jaws wide open
    for _ in range(20):
        env.step(opened)
    assert env.outcome()["failure"] == RELEASED_ELSEWHERE
