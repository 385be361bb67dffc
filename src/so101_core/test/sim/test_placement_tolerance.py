"""The placement tolerance replays a real successful episode (the scripted expert's, nominal scene) with the rack
moved: in place it succeeds, a slot's half-width off it fails, and a replay in another scene is refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from so101_core.sim.config import load_sim_config
from so101_core.sim.placement_tolerance import SceneMismatchError, placement_tolerance, replay_of, replay_succeeds
from so101_core.sim.randomization import DRConfig
from so101_core.sim.rollout import run_scripted_episode
from so101_core.sim.twin import Twin


@pytest.fixture(scope="module")
def twin_and_replay():  # type: ignore[no-untyped-def]
    with Twin(load_sim_config(), DRConfig.disabled()) as twin:
        rec = run_scripted_episode(twin, 7, record=True)
        assert rec.success
        yield twin, replay_of(rec.seed, rec.actions, rec.object_poses)


def test_in_place_it_succeeds_and_a_slot_half_width_off_it_fails(twin_and_replay) -> None:  # type: ignore[no-untyped-def]
    twin, replay = twin_and_replay
    table = placement_tolerance(twin, [replay], [0, 25])
    assert table["0"] == {"replays": 1, "successes": 1, "success_rate": 1.0}
    # 25 mm: past the cell's opening (4 cm pitch, 6 mm walls) in every direction: on a wall or beside the rack
    assert table["25"]["replays"] == 4 and table["25"]["successes"] == 0
    with pytest.raises(ValueError, match="offsets must be finite and >= 0"):
        placement_tolerance(twin, [replay], [-1])


def test_a_replay_outside_its_scene_is_refused(twin_and_replay) -> None:  # type: ignore[no-untyped-def]
    twin, replay = twin_and_replay
    moved = dataclasses.replace(replay, rack_start=replay.rack_start + np.array([0.01, 0, 0, 0, 0, 0, 0]))
    with pytest.raises(SceneMismatchError, match="another DR profile"):
        replay_succeeds(twin, moved, (0.0, 0.0))
    with pytest.raises(SceneMismatchError, match="without a scene seed"):
        replay_of(None, replay.actions, {"rack": replay.rack_start[None]})
