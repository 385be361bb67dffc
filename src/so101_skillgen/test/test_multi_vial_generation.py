"""SkillGen on the multi-vial variant: six subtasks, each source drawn per subtask, demos that replay."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from so101_core.seeds.format import SeedDemo, load_seed
from so101_core.sim.config import TaskConfig, load_task_config
from so101_core.sim.randomization import load_dr_config
from so101_core.sim.scene import RACK
from so101_core.sim.task import TaskState, placed, slot_centres
from so101_core.sim.twin import Twin
from so101_core.sim.workshop_rule import WorkshopRule
from so101_skillgen.bench_skillgen import expert_seeds
from so101_skillgen.config import load_skillgen_config
from so101_skillgen.errors import SkillGenError
from so101_skillgen.generation import Generator
from so101_skillgen.keep_filter import off_target


@pytest.fixture(scope="module")
def multi() -> TaskConfig:
    return load_task_config(variant="multi_vial")


@pytest.fixture(scope="module")
def seeds(multi: TaskConfig) -> list[SeedDemo]:
    with Twin(None, load_dr_config(), multi) as tw:
        out, _ = expert_seeds(tw, 3)  # the first 3 successful scripted episodes
    return out


def test_library_has_a_grasp_and_a_place_per_vial(seeds: list[SeedDemo], multi: TaskConfig) -> None:
    gen = Generator(seeds, load_skillgen_config(), dr=load_dr_config(), task=multi, check_reach=False)
    assert gen.library.signature == tuple(
        step for v in ("vial_0", "vial_1", "vial_2") for step in (("grasp", v, None), ("place", RACK, v))
    )
    slots = {seg.slot for seg in gen.library.slots[1]}  # the first vial's place: its recorded slot per seed
    assert slots <= set(multi.slots or range(gen.twin.config.rack.slots**2))


def test_generated_demos_place_every_vial(tmp_path: Path, seeds: list[SeedDemo], multi: TaskConfig) -> None:
    cfg = load_skillgen_config()
    gen = Generator(seeds, cfg, dr=load_dr_config(), task=multi, check_reach=False)
    summary = gen.run(tmp_path, 2, max_attempts=12)
    assert summary.kept == 2, summary.to_json()
    files = sorted(tmp_path.glob("demo_*.npz"))
    assert len(files) == 2
    with Twin(None, load_dr_config(), multi) as tw:
        for f in files:
            demo = load_seed(f)
            assert [s["kind"] for s in demo.extra["sources"]] == ["grasp", "place"] * 3
            tw.reset(int(demo.extra["scene_seed"]))
            rule = WorkshopRule(tw.config.rack, tw.config.physics.control_hz)
            for a in demo.actions:
                tw.step(a)
                rule.update_state(TaskState.of(tw.object_poses(), tw.vial_names, tw.held_vials()))
            poses = tw.object_poses()
            r = poses[RACK]
            centres = slot_centres(r.position, r.quaternion, tw.config.rack)
            slots = set()
            for n in tw.vial_names:
                v = poses[n]
                assert placed(v.position, v.quaternion, r.position, r.quaternion, tw.config.rack, multi), n
                slots.add(int(np.argmin(np.linalg.norm(centres - v.position[:2], axis=1))))
            assert slots == set(tw.episode.target_slots) and len(slots) == 3  # type: ignore[union-attr]
            assert rule.succeeded == demo.extra["workshop_rule"]


def test_seeds_of_another_task_are_refused(seeds: list[SeedDemo]) -> None:
    with pytest.raises(SkillGenError, match=r"task variant .single_vial. has"):
        Generator(seeds, load_skillgen_config(), dr=load_dr_config(), check_reach=False)


def test_a_vial_in_another_slot_than_its_target_is_not_kept(seeds: list[SeedDemo], multi: TaskConfig) -> None:
    """The final check of a kept demo: every vial upright in its episode's target slot; two vials swapped (each
    standing in the other's slot) fail it, naming the first and both slots."""
    gen = Generator(seeds, load_skillgen_config(), dr=load_dr_config(), task=multi, check_reach=False)
    tw = gen.twin
    tw.reset(7)
    assert tw.episode is not None
    rack = tw.object_poses()[RACK]
    centres = slot_centres(rack.position, rack.quaternion, tw.config.rack)
    targets = tw.episode.target_slots
    upright = np.array([1.0, 0.0, 0.0, 0.0])

    def standing(order: tuple[int, ...]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        poses = {n: (np.array([*centres[order[k]], 0.06]), upright) for k, n in enumerate(tw.vial_names)}
        return {**poses, RACK: (rack.position, rack.quaternion)}

    assert off_target(tw, standing(targets)) is None
    swapped = (targets[1], targets[0], targets[2])
    assert off_target(tw, standing(swapped)) == (
        f"vial_0 stands in slot {targets[1]}, not in its target slot {targets[0]}"
    )
