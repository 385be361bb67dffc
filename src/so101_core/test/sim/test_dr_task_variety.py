"""The task as hard as the seed's: the vial's heading and the target slot drawn per episode, the wide profile,
and an expert that cannot reach reports a failed episode instead of raising."""

from __future__ import annotations

import math

import numpy as np
import pytest
from so101_core.sim.config import SimConfig
from so101_core.sim.errors import ConfigError
from so101_core.sim.randomization import DRConfig, load_dr_config, parse_dr_config, sample_episode
from so101_core.sim.rollout import run_scripted_episode
from so101_core.sim.scene import VIAL
from so101_core.sim.scripted_expert import Phase, ScriptedExpert
from so101_core.sim.twin import Twin


def test_wide_profile_doubles_the_object_ranges(dr_cfg: DRConfig) -> None:
    wide = load_dr_config(profile="wide")
    for name in ("rack_x", "rack_y", "rack_yaw", "vial_x", "vial_y", "vial_yaw"):
        assert getattr(wide, name) == pytest.approx(tuple(2 * v for v in getattr(dr_cfg, name))), name
    assert wide.friction_scale == dr_cfg.friction_scale and wide.partly_done_prob == dr_cfg.partly_done_prob
    with pytest.raises(ConfigError, match=r"dr\.profiles\.huge") as info:
        load_dr_config(profile="huge")
    assert info.value.field == "dr.profiles.huge"
    bad = {"enabled": True, "objects": {"rack": {"x": [0, 0], "y": [0, 0], "yaw": [0, 0]}, "vial": {"x": [0, 0],
           "y": [0, 0]}}, "lighting": {"intensity_scale": [1, 1], "color_temperature_k": [5000, 5000]},
           "cameras": {}, "colors": {}, "physics": {"friction_scale": [1, 1], "mass_scale": [1, 1],
           "damping_scale": [1, 1]}, "profiles": {"w": {"objects": {"vial": {"yaw": [1, -1]}}}}}  # fmt: skip
    with pytest.raises(ConfigError, match=r"dr\.profiles\.w\.objects\.vial\.yaw"):
        parse_dr_config(bad, profile="w")


def test_heading_and_target_slot_are_drawn_per_episode(sim_cfg: SimConfig, dr_cfg: DRConfig) -> None:
    headings, slots = [], []
    for seed in range(200):
        s = sample_episode(sim_cfg, dr_cfg, np.random.default_rng(seed), seed)
        headings.append(s.vial_yaw - sim_cfg.vial.yaw)
        slots.append(s.target_slot)
    assert min(headings) >= dr_cfg.vial_yaw[0] and max(headings) <= dr_cfg.vial_yaw[1]
    assert max(headings) - min(headings) > 0.5  # really spread over ±0.3 rad
    assert set(slots) == {8, 6, 4}  # the first free slot of fill_order after 0..2 pre-filled ones
    s = sample_episode(sim_cfg, dr_cfg, np.random.default_rng(1), 1, occupied=(8, 6, 4, 2))
    assert s.target_slot == 0 and s.prefilled == ()  # occupied slots are skipped; the last free one is kept
    with pytest.raises(ValueError, match="occupied"):
        sample_episode(sim_cfg, dr_cfg, np.random.default_rng(1), 1, occupied=tuple(range(9)))


def test_the_twin_lays_the_vial_at_the_drawn_heading(twin: Twin) -> None:
    for seed in (3, 4, 5):
        sample = twin.reset(seed)
        if sample.partly_done:
            continue
        q = twin.object_poses()[VIAL].quaternion
        w, x, y, z = q / np.linalg.norm(q)
        axis = np.array([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)])  # local +z
        assert math.atan2(axis[1], axis[0]) == pytest.approx(math.remainder(sample.vial_yaw, 2 * math.pi), abs=1e-6)


def test_an_unreachable_first_phase_is_a_failed_episode_not_an_exception(sim_cfg: SimConfig) -> None:
    twin = Twin(sim_cfg, DRConfig.disabled())
    twin.reset()
    twin.set_object_pose(VIAL, (np.array([0.9, 0.0, sim_cfg.vial.radius]), twin.object_poses()[VIAL].quaternion))
    expert = ScriptedExpert.for_twin(twin)
    expert.reset(twin.joint_positions(), twin.object_poses())  # does not raise
    assert expert.phase is Phase.DONE and expert.failure is not None and "pregrasp" in expert.failure
    rec = run_scripted_episode(Twin(sim_cfg, DRConfig.disabled()), None)
    assert rec.success and rec.failure is None
