"""Subtask segmentation of scripted seeds, and clear errors for seeds without a grasp."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from so101_core.seeds.format import SeedDemo
from so101_core.seeds.from_rollout import scripted_seeds
from so101_core.sim.twin import Twin
from so101_skillgen.config import SegmentationConfig, SkillGenConfig
from so101_skillgen.errors import SegmentationError, SkillGenError
from so101_skillgen.library import build_library
from so101_skillgen.segmentation import segment_seed, signature
from so101_skillgen.tracking import make_tracker


@pytest.fixture(scope="module")
def twin() -> Twin:
    return Twin()


@pytest.fixture(scope="module")
def seeds(twin: Twin) -> list[SeedDemo]:
    out = scripted_seeds(twin, [200, 201, 202])
    assert len(out) >= 2
    return out


def test_scripted_seed_has_grasp_then_place(seeds: list[SeedDemo]) -> None:
    cfg = SegmentationConfig()
    for seed in seeds:
        subs = segment_seed(seed, cfg)
        assert signature(subs) == (("grasp", "vial", None), ("place", "rack", "vial"))
        grasp, place = subs
        assert 0 <= grasp.start < grasp.end <= place.start < place.end <= seed.steps
        g = seed.actions[:, 5]
        # the gripper closes inside the grasp and opens (release) inside the place
        assert np.any(g[grasp.start : grasp.end] > cfg.gripper_open_above)
        assert g[grasp.end - 1] < cfg.gripper_closed_below
        assert g[place.start] < cfg.gripper_closed_below and np.any(g[place.start : place.end] > cfg.gripper_open_above)
        # the vial moved with the gripper: lifted at the grasp end, lower at the place end than at its start
        vz = seed.object_poses["vial"][:, 2]
        assert vz[grasp.end - 1] >= vz[grasp.start] + cfg.lift_height
        assert vz[place.end - 1] < vz[place.start] - 0.03


def test_ee_positions_start_the_grasp_at_the_approach(seeds: list[SeedDemo], twin: Twin) -> None:
    seed = seeds[0]
    tracker = make_tracker(twin, SkillGenConfig().ik)
    ee = tracker.fk(seed.actions[:, :5])
    tool = np.einsum("nij,j->ni", ee[:, :3, :3], twin.grasp_geometry().point) + ee[:, :3, 3]
    grasp = segment_seed(seed, SegmentationConfig(), tool)[0]
    dist = np.linalg.norm(tool - seed.object_poses["vial"][:, :3], axis=1)
    assert grasp.start > 0
    assert dist[grasp.start] >= 0.06 > dist[grasp.start + 1]


def _no_grasp(seed: SeedDemo) -> SeedDemo:
    actions = seed.actions.copy()
    actions[:, 5] = 0.9  # the gripper never closes
    return replace(seed, actions=actions)


def test_seed_without_grasp_is_a_clear_error(seeds: list[SeedDemo]) -> None:
    with pytest.raises(SegmentationError, match="no grasp"):
        segment_seed(_no_grasp(seeds[0]))


def test_closing_on_nothing_is_not_a_grasp(seeds: list[SeedDemo]) -> None:
    seed = seeds[0]
    frozen = {n: np.repeat(p[:1], seed.steps, axis=0) for n, p in seed.object_poses.items()}
    with pytest.raises(SegmentationError, match="no grasp"):
        segment_seed(replace(seed, object_poses=frozen))


def test_grasp_never_released_is_a_clear_error(seeds: list[SeedDemo]) -> None:
    seed = seeds[0]
    actions = seed.actions.copy()
    opened = int(np.flatnonzero(actions[:, 5] > 0.5)[0])
    close = opened + int(np.flatnonzero(actions[opened:, 5] < 0.3)[0])
    actions[close:, 5] = -0.17
    with pytest.raises(SegmentationError, match="never released"):
        segment_seed(replace(seed, actions=actions))


def test_library_names_the_seed_without_grasp(seeds: list[SeedDemo], twin: Twin) -> None:
    cfg = SkillGenConfig()
    tracker = make_tracker(twin, cfg.ik)
    bad = [seeds[0], _no_grasp(seeds[1])]
    with pytest.raises(SegmentationError, match=r"seed b\.npz: no grasp"):
        build_library(bad, tracker, cfg, twin.grasp_geometry().point, ["a.npz", "b.npz"])
    with pytest.raises(SkillGenError, match="none of the 1 seeds is successful"):
        build_library([replace(seeds[0], success=False)], tracker, cfg, twin.grasp_geometry().point)
