"""The single vial's target is observable: slots fill in task.yaml's fill_order (rack frame, a marked wall),
DR stands vials in its first slots, the target is the first free one, and success means that slot with every
standing vial still upright in its own."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator

import numpy as np
import pytest
from so101_core.sim.config import ConfigError, SimConfig, TaskConfig, load_task_config, parse_task_config
from so101_core.sim.randomization import DRConfig, load_dr_config, sample_episode
from so101_core.sim.scene import PARK_DEPTH, RACK, VIAL
from so101_core.sim.success import SuccessRules
from so101_core.sim.task import TaskState, slot_centres, up_axis_z
from so101_core.sim.twin import Twin

UPRIGHT = np.array([1.0, 0.0, 0.0, 0.0])
LYING = np.array([0.7071068, 0.0, 0.7071068, 0.0])
# sha256 (16 hex) of every draw but the target of seeds 0..49 at 7f17fd9, before the target became observable
DRAWS_7F17FD9 = {None: "51122888e14b921e", "wide": "720dd0c17bc2c2fd"}
OTHER_DRAWS = (
    "rack_xy", "rack_yaw", "vial_xy", "vial_roll", "partly_done", "light_scale", "light_rgb", "camera_dpos",
    "camera_drot", "robot_rgb", "vial_rgb", "rack_rgb", "mat_rgb", "friction_scale", "mass_scale", "damping_scale",
    "vial_yaw",
)  # fmt: skip


@pytest.fixture(scope="module")
def wide_twin(sim_cfg: SimConfig) -> Iterator[Twin]:
    t = Twin(sim_cfg, load_dr_config(profile="wide"))
    yield t
    t.close()


def _seed_with(twin: Twin, count: int, start: int = 0) -> int:
    """The first seed from ``start`` whose episode stands ``count`` vials and starts with the vial on the mat."""
    for seed in range(start, start + 200):
        s = twin.reset(seed)
        if len(s.prefilled) == count and not s.partly_done:
            return seed
    raise AssertionError(f"no seed with {count} standing vials")


@pytest.mark.parametrize("profile", [None, "wide"])
def test_target_is_the_first_free_slot_of_the_order(
    sim_cfg: SimConfig, task_cfg: TaskConfig, profile: str | None
) -> None:
    dr = load_dr_config(profile=profile)
    order = list(task_cfg.fill_order)
    counts = set()
    digest = hashlib.sha256()
    for seed in range(200):
        s = sample_episode(sim_cfg, dr, np.random.default_rng(seed), seed, task=task_cfg)
        n = len(s.prefilled)
        counts.add(n)
        assert s.prefilled == tuple(order[:n]) and s.target_slot == order[n], seed
        if seed < 50:
            for f in OTHER_DRAWS:
                digest.update(np.round(np.asarray(getattr(s, f), dtype=np.float64), 12).tobytes())
    assert counts == set(range(dr.prefill[0], dr.prefill[1] + 1))  # every pre-fill count occurs
    assert digest.hexdigest()[:16] == DRAWS_7F17FD9[profile], "a draw other than the target changed"
    nominal = sample_episode(sim_cfg, DRConfig.disabled(), np.random.default_rng(0), 0)  # task None: task.yaml's
    assert nominal.target_slot == order[0] and nominal.prefilled == ()
    easy = sample_episode(sim_cfg, dr, np.random.default_rng(3), 3, task=load_task_config(variant="single_slot"))
    assert easy.target_slot == 8 and easy.prefilled == ()


def test_the_order_is_checked(sim_cfg: SimConfig, task_cfg: TaskConfig, raw_yaml: object) -> None:
    for order, words in (((8, 7), "share a wall"), ((8, 9), "not slots"), ((4, 1), "share a wall")):
        with pytest.raises(ConfigError, match=words) as info:
            Twin(sim_cfg, DRConfig.disabled(), dataclasses.replace(task_cfg, fill_order=order))
        assert info.value.field == "task.fill_order"
    with pytest.raises(ConfigError, match="leaves the vial one") as info:
        Twin(sim_cfg, load_dr_config(), dataclasses.replace(task_cfg, fill_order=(8, 6)))
    assert info.value.field == "dr.prefill"
    with pytest.raises(ConfigError, match=r"task\.standing_vials") as info:
        Twin(sim_cfg, dataclasses.replace(load_dr_config(), prefill=(0, 3)), task_cfg)
    assert info.value.field == "dr.prefill"
    base = raw_yaml("task")  # type: ignore[operator]
    for key, value in (("fill_order", []), ("fill_order", [8, 8]), ("fill_order", [8, -1]), ("prefill", "yes"),
                       ("slots", [3]), ("standing_vials", 5)):  # fmt: skip
        with pytest.raises(ConfigError) as info:
            parse_task_config({**base, key: value})
        assert info.value.field == f"task.{key}"


def test_the_twin_stands_the_prefilled_vials_and_parks_the_rest(wide_twin: Twin, task_cfg: TaskConfig) -> None:
    tw = wide_twin
    assert tw.standing_names == ("standing_vial_0", "standing_vial_1")  # task.yaml standing_vials
    assert tw.object_names == (VIAL, *tw.standing_names, RACK) and tw.vial_names == (VIAL,)
    s = tw.reset(_seed_with(tw, 1))
    for _ in range(30):  # 1 s: they stay put
        tw.step(tw.joint_targets())
    poses = tw.object_poses()
    rack = poses[RACK]
    centres = slot_centres(rack.position, rack.quaternion, tw.config.rack)
    for k, name in enumerate(tw.standing_names):
        p = poses[name]
        if k < 1:
            assert np.linalg.norm(p.position[:2] - centres[task_cfg.fill_order[k]]) < 0.003, name
            assert p.position[2] == pytest.approx(tw.config.rack.base_height + tw.config.vial.half_length, abs=2e-3)
            assert up_axis_z(p.quaternion) > 0.999, name  # upright
        else:
            assert p.position[2] == pytest.approx(-PARK_DEPTH), name  # parked, not falling
            assert not tw.model.geom_contype[list(tw.index.object_geoms[name])].any()
    state = tw.task_state()
    assert state.targets == (s.target_slot,) == (task_cfg.fill_order[1],)
    assert [slot for _, slot in state.standing] == list(task_cfg.fill_order[:1])


def _place(tw: Twin, name: str, slot: int, quat: np.ndarray = UPRIGHT) -> None:
    rack = tw.object_poses()[RACK]
    xy = slot_centres(rack.position, rack.quaternion, tw.config.rack)[slot]
    z = rack.position[2] + tw.config.rack.base_height + tw.config.vial.half_length
    tw.set_object_pose(name, (np.array([*xy, z]), quat))


def _judge(tw: Twin, steps: int = 20) -> tuple[bool, bool]:
    """Both rules over ``steps`` still steps, the vial just released (one held step first: the workshop rule
    needs a recent grasp)."""
    rules = SuccessRules.of(tw.task, tw.config)
    state = tw.task_state()
    rules.update(dataclasses.replace(state, held=(True,)))
    for _ in range(steps):
        rules.update(state)
    return rules.succeeded, rules.workshop_succeeded


def test_only_the_target_slot_counts_and_the_standing_vials_must_stay(wide_twin: Twin) -> None:
    tw = wide_twin
    s = tw.reset(_seed_with(tw, 1, 40))
    free = [i for i in range(9) if i != s.target_slot and i not in s.prefilled]
    _place(tw, VIAL, s.target_slot)
    assert _judge(tw) == (True, True)
    for wrong in (free[0], free[-1]):  # a free slot, not the target: a failure for both rules
        _place(tw, VIAL, wrong)
        assert _judge(tw) == (False, False), wrong
    _place(tw, VIAL, s.target_slot)
    _place(tw, "standing_vial_0", s.prefilled[0], LYING)  # knocked over in its cell
    assert _judge(tw) == (False, False)
    _place(tw, "standing_vial_0", free[0])  # upright, but moved to another slot
    assert _judge(tw) == (False, False)
    # the legacy single-vial call (no target given) still accepts any slot; a target given is judged
    state = TaskState.one_vial(*tw.object_poses()[VIAL], *tw.object_poses()[RACK], False)
    assert state.targets == () and state.target(0) is None


def test_marker_and_standing_vials_show_at_160x120(wide_twin: Twin) -> None:
    """The policy's cameras see which side of the rack is marked, and which slots hold a vial."""
    tw = wide_twin
    for seed in (_seed_with(tw, 2), _seed_with(tw, 1, 60)):
        s = tw.reset(seed)
        shown = {c: tw.render(c, width=160, height=120) for c in ("side", "top")}
        for k, _ in enumerate(s.prefilled):  # the standing vials out of the way: the frames change
            tw.set_object_pose(f"standing_vial_{k}", (np.array([0.2, 0.0, -PARK_DEPTH]), UPRIGHT))
        for cam in ("side", "top"):
            changed = np.any(tw.render(cam, width=160, height=120) != shown[cam], axis=-1).sum()
            assert changed >= 8 * len(s.prefilled), (seed, cam, changed)
        marker = tw.index.object_materials["rack_marker"]
        rgba = tw.model.mat_rgba[marker].copy()
        tw.model.mat_rgba[marker] = tw.model.mat_rgba[tw.index.object_materials["rack"]]  # no marker
        try:
            unmarked = tw.render("top", width=160, height=120)
        finally:
            tw.model.mat_rgba[marker] = rgba
        tw.reset(seed)
        differ = np.any(np.abs(tw.render("top", width=160, height=120).astype(int) - unmarked) > 40, axis=-1).sum()
        assert differ >= 12, (seed, differ)  # the marked wall and cells: a dozen pixels or more
