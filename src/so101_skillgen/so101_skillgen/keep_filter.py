"""SkillGen's keep filter on an attempt's last recorded step, beside the latched success rules: a vial may tip
or be knocked after the hold. The same judgement as :func:`so101_core.sim.task.placed_state` (the rules'
pose part), per object so that a failure can say which one.

Kept: every vial upright in its episode's target slot (:meth:`Twin.state_of`: the single vial's first free slot
of ``task.yaml`` ``fill_order``; several vials each in the slot drawn for it) and every vial standing in a
pre-filled slot still upright in its own.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from so101_core.arrays import F64
from so101_core.sim.config import TaskConfig
from so101_core.sim.scene import RACK
from so101_core.sim.task import geometric_filter, placed, slot_centres
from so101_core.sim.twin import Twin

Poses = Mapping[str, tuple[F64, F64]]  # name → position (3,) m, quaternion (4,) wxyz, world


def unplaced(twin: Twin, task: TaskConfig, poses: Poses) -> tuple[str, int | None, bool] | None:
    """The first vial not upright in its target slot (several vials: in a slot), else the first standing vial no
    longer upright in its own slot: (name, that slot or None for any, whether it still passes the geometric
    filter: upright near the rack); None when every one is."""
    rack = twin.config.rack
    state = twin.state_of(poses, (False,) * len(twin.vial_names))
    rp, rq = state.rack
    checks = [(name, *state.vials[i], state.target(i)) for i, name in enumerate(twin.vial_names)]
    checks += [(name, p, q, slot) for name, ((p, q), slot) in zip(twin.standing_names, state.standing, strict=False)]
    for name, vp, vq, slot in checks:
        if not placed(vp, vq, rp, rq, rack, task, slot):
            return name, slot, bool(geometric_filter(vp, vq, rp, rack.top_height, task))
    return None


def off_target(twin: Twin, poses: Poses) -> str | None:
    """Why a placed vial stands in another slot than its episode's target (the slot nearest its centre); None
    when every vial is in its own (several vials: the rules accept any slot, this filter does not)."""
    episode = twin.episode
    if episode is None:
        return None
    rp, rq = poses[RACK]
    centres = slot_centres(rp, rq, twin.config.rack)
    for name, target in zip(twin.vial_names, episode.target_slots, strict=True):
        got = int(np.argmin(np.linalg.norm(centres - np.asarray(poses[name][0])[:2], axis=1)))
        if got != target:
            return f"{name} stands in slot {got}, not in its target slot {target}"
    return None


def final_miss(twin: Twin, task: TaskConfig, poses: Poses) -> str | None:
    """Why an attempt whose last step has ``poses`` (in ``twin``'s episode) is not kept; None when it is."""
    miss = unplaced(twin, task, poses)
    if miss is not None:
        name, slot, near = miss
        where = "a slot" if slot is None else f"its slot {slot}"
        if near:
            return f"{name} is not upright in {where} at the end"
        return f"final state of {name} fails the geometric filter"
    return off_target(twin, poses)
