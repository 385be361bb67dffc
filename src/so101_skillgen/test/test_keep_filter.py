"""SkillGen keeps an attempt only with the vial upright in its episode's target slot (the first free slot of
fill_order) and every pre-filled vial still upright in its own slot."""

from __future__ import annotations

import numpy as np
from so101_core.sim.randomization import load_dr_config
from so101_core.sim.scene import RACK, VIAL
from so101_core.sim.task import slot_centres
from so101_core.sim.twin import Twin
from so101_skillgen.keep_filter import final_miss

UPRIGHT = np.array([1.0, 0.0, 0.0, 0.0])
LYING = np.array([0.7071068, 0.0, 0.7071068, 0.0])


def test_a_wrong_free_slot_or_a_knocked_standing_vial_is_not_kept() -> None:
    with Twin(dr=load_dr_config(profile="wide")) as tw:
        s = next(s for s in map(tw.reset, range(100)) if len(s.prefilled) == 1 and not s.partly_done)
        poses = {n: (p.position, p.quaternion) for n, p in tw.object_poses().items()}
        rack = poses[RACK]
        centres = slot_centres(rack[0], rack[1], tw.config.rack)
        z = tw.config.rack.base_height + tw.config.vial.half_length

        def at(slot: int, quat: np.ndarray = UPRIGHT) -> tuple[np.ndarray, np.ndarray]:
            return np.array([*centres[slot], z]), quat

        assert final_miss(tw, tw.task, {**poses, VIAL: at(s.target_slot)}) is None
        for wrong in (i for i in range(9) if i != s.target_slot and i not in s.prefilled):
            miss = final_miss(tw, tw.task, {**poses, VIAL: at(wrong)})
            assert miss is not None and f"slot {s.target_slot}" in miss, (wrong, miss)
        knocked = {**poses, VIAL: at(s.target_slot), "standing_vial_0": at(s.prefilled[0], LYING)}
        miss = final_miss(tw, tw.task, knocked)
        assert miss is not None and "standing_vial_0" in miss
