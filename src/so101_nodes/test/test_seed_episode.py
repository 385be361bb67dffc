"""The seed episode assembly without a graph: thinning, command matching, pose hold, lead steps, the demo."""

from __future__ import annotations

import numpy as np
from so101_nodes.seed_episode import SeedEpisode, StreamHistory

PERIOD = 33_333_333  # 30 Hz, ns
OBJECTS = ("vial", "rack")


def pose(x: float) -> np.ndarray:
    return np.array([x, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])


def q(v: float) -> np.ndarray:
    return np.full(6, v)


def test_states_before_the_first_command_are_lead_steps_and_not_recorded() -> None:
    history = StreamHistory(OBJECTS)
    ep = SeedEpisode(index=0, seed=7, period_ns=PERIOD)
    assert not ep.add_state(0, q(0.0), history)
    assert not ep.add_state(PERIOD, q(0.1), history)  # the first state had no command: a lead step
    assert ep.lead_steps == 1 and ep.steps == 0
    history.add_action(PERIOD, q(1.0))
    ep.has_action = True
    assert ep.add_state(2 * PERIOD, q(0.2), history)
    assert ep.steps == 1 and ep.t_ns == [PERIOD]
    np.testing.assert_array_equal(ep.actions[0], q(1.0))


def test_commands_match_by_stamp_else_sample_and_hold() -> None:
    history = StreamHistory(OBJECTS)
    ep = SeedEpisode(index=0, seed=None, period_ns=PERIOD, has_action=True)
    history.add_action(0, q(1.0))
    history.add_action(PERIOD, q(2.0))
    history.add_action(5, q(9.0))  # latest, stamped like no state
    ep.add_state(0, q(0.0), history)
    ep.add_state(PERIOD, q(0.0), history)
    ep.add_state(2 * PERIOD, q(0.0), history)  # no command with this stamp
    assert ep.flush(history)
    assert [a[0] for a in ep.actions] == [1.0, 2.0, 9.0]
    assert ep.unmatched_actions == 1


def test_a_faster_stream_is_thinned_to_one_step_per_period() -> None:
    history = StreamHistory(OBJECTS)
    history.add_action(0, q(1.0))
    ep = SeedEpisode(index=0, seed=None, period_ns=PERIOD, has_action=True)
    for i in range(10):  # 100 Hz for 0.1 s
        ep.add_state(i * 10_000_000, q(i), history)
    ep.flush(history)
    assert ep.t_ns == [0, 30_000_000, 60_000_000, 90_000_000]  # >= 0.9 period apart


def test_poses_are_the_latest_at_the_state_stamp_and_held_when_missing() -> None:
    history = StreamHistory(OBJECTS)
    history.add_action(0, q(1.0))
    ep = SeedEpisode(index=0, seed=None, period_ns=PERIOD, has_action=True)
    history.add_pose("vial", 0, pose(0.1))
    history.add_pose("rack", 0, pose(0.5))
    history.add_pose("vial", PERIOD + 1, pose(0.2))  # after the second state: not used for it
    ep.add_state(0, q(0.0), history)
    ep.add_state(PERIOD, q(0.0), history)
    ep.add_state(2 * PERIOD, q(0.0), history)
    ep.flush(history)
    assert [p[0] for p in ep.poses["vial"]] == [0.1, 0.1, 0.2]
    assert ep.has_poses(OBJECTS)
    demo = ep.to_seed_demo(success=True, source="scripted", control_hz=30.0, with_poses=True, extra={"k": 1})
    np.testing.assert_allclose(demo.t, [0.0, PERIOD * 1e-9, 2 * PERIOD * 1e-9])
    assert demo.object_poses["rack"].shape == (3, 7) and demo.success and demo.extra["k"] == 1


def test_flush_before_any_command_adds_nothing() -> None:
    history = StreamHistory(OBJECTS)
    ep = SeedEpisode(index=0, seed=None, period_ns=PERIOD)
    ep.add_state(0, q(0.0), history)
    assert not ep.flush(history) and ep.steps == 0
