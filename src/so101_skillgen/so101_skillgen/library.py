"""Source library: seeds FK-replayed, segmented and cut into retargetable subtask segments.

For each seed and subtask the library keeps the seed's EE trajectory (N, 4, 4) (FK of the replayed
joint channel, world frame), the tool point and tool axis *in the EE frame* per step (grasp: the jaw
grasp point and the grasped object's axis at the grasp end; place: the held object's centre and axis as
they sat in the hand), the gripper commands (N,) rad copied verbatim from the seed's actions, and the
frame (4, 4) of the object the subtask depends on at its first step.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from so101_core.arrays import F64
from so101_core.robot_spec import GRIPPER_INDEX
from so101_core.seeds.format import SeedDemo
from so101_core.sim.scene import is_vial

from . import se3
from .config import SkillGenConfig
from .errors import SelectionError
from .frames import nearest_slot, object_frame, pose_to_matrix, slot_frame
from .segmentation import GRASP, Subtask, segment_seed, signature
from .tracking import Tracker


@dataclass(frozen=True)
class SourceSegment:
    """One subtask of one seed, ready to retarget. Arrays have N = ``subtask.steps`` rows."""

    seed_index: int
    seed_name: str
    subtask: Subtask
    ee: F64  # (N, 4, 4) world
    tool_points: F64  # (N, 3) EE frame, m
    tool_axes: F64  # (N, 3) EE frame, unit
    gripper: F64  # (N,) rad
    object_frame: F64  # (4, 4) world, at the subtask start (a place into a rack: the target slot's frame)
    slot: int | None = None  # place into a rack: the seed's target slot

    def retarget(self, new_object_frame: F64) -> tuple[F64, F64]:
        """World tool-point targets (N, 3) m and tool-axis targets (N, 3) after ΔT = T_new · T_seed⁻¹."""
        ee = se3.retarget(
            torch.from_numpy(self.ee),
            torch.from_numpy(self.object_frame),
            torch.from_numpy(np.asarray(new_object_frame, dtype=np.float64)),
        ).numpy()
        rot, pos = ee[:, :3, :3], ee[:, :3, 3]
        points = np.einsum("nij,nj->ni", rot, self.tool_points) + pos
        axes = np.einsum("nij,nj->ni", rot, self.tool_axes)
        return points, axes


@dataclass(frozen=True)
class SeedLibrary:
    """Segments per subtask slot: ``slots[i][j]`` is slot i of the j-th usable seed."""

    signature: tuple[tuple[str, str, str | None], ...]
    slots: tuple[tuple[SourceSegment, ...], ...]
    seed_names: tuple[str, ...]

    def candidates(self, slot: int) -> list[F64]:
        """Object frames (4, 4) at the start of slot ``slot`` in every seed (kNN candidates)."""
        return [s.object_frame for s in self.slots[slot]]


def _seed_slot(demo: SeedDemo, sub: Subtask, offsets: F64) -> int:
    """The slot a seed placed into: ``extra["target_slots"][held]`` (or, single vial, ``extra["target_slot"]``)
    when recorded, else the slot nearest the held object's position at the end of the place (teleoperated
    seeds)."""
    assert sub.held is not None
    slots = demo.extra.get("target_slots")
    if isinstance(slots, dict) and sub.held in slots:
        return int(slots[sub.held])
    if "target_slot" in demo.extra and sum(is_vial(n) for n in demo.object_poses) == 1:
        return int(demo.extra["target_slot"])
    rack = pose_to_matrix(demo.object_poses[sub.object][sub.end - 1])
    return nearest_slot(rack, offsets, demo.object_poses[sub.held][sub.end - 1, :3])


def _segment(
    j: int,
    name: str,
    demo: SeedDemo,
    sub: Subtask,
    ee: F64,
    grasp_point: F64,
    symmetric: bool,
    slot_offsets: F64 | None,
) -> SourceSegment:
    sl = slice(sub.start, sub.end)
    n = sub.steps
    seg_ee = ee[sl]
    if sub.kind == GRASP:
        obj = pose_to_matrix(demo.object_poses[sub.object][sub.end - 1])
        axis_local = ee[sub.end - 1, :3, :3].T @ obj[:3, 2]
        points = np.tile(grasp_point, (n, 1))
        axes = np.tile(axis_local, (n, 1))
    else:
        assert sub.held is not None
        held = pose_to_matrix(demo.object_poses[sub.held][sl])
        rt = np.swapaxes(seg_ee[:, :3, :3], 1, 2)
        points = np.einsum("nij,nj->ni", rt, held[:, :3, 3] - seg_ee[:, :3, 3])
        axes = np.einsum("nij,nj->ni", rt, held[:, :3, 2])
    frame = object_frame(demo.object_poses[sub.object][sub.start], symmetric)
    slot = None
    if sub.kind != GRASP and slot_offsets is not None:
        slot = _seed_slot(demo, sub, slot_offsets)
        frame = slot_frame(frame, slot_offsets, slot)
    return SourceSegment(
        seed_index=j,
        seed_name=name,
        subtask=sub,
        ee=seg_ee.copy(),
        tool_points=points,
        tool_axes=axes / np.linalg.norm(axes, axis=1, keepdims=True),
        gripper=demo.actions[sl, GRIPPER_INDEX].copy(),
        object_frame=frame,
        slot=slot,
    )


def build_library(
    demos: Sequence[SeedDemo],
    tracker: Tracker,
    cfg: SkillGenConfig,
    grasp_point: F64,
    names: Sequence[str] | None = None,
    slot_offsets: F64 | None = None,
) -> SeedLibrary:
    """FK-replay and segment every successful seed (``grasp_point`` (3,): jaw grasp point, EE frame, m).

    ``slot_offsets`` (S, 2) m: the rack's slot centres (rack frame); given, a place is retargeted from the
    seed's slot to the attempt's target slot (otherwise from rack frame to rack frame).

    Raises :class:`~so101_skillgen.errors.SegmentationError` (naming the seed) for a seed without a
    grasp, :class:`SelectionError` when no successful seed is left. Seeds whose subtask structure differs
    from the most common one are left out.
    """
    names = list(names) if names is not None else [f"seed_{i}" for i in range(len(demos))]
    if not demos:
        raise SelectionError("no seeds given")
    prepared: list[tuple[str, SeedDemo, list[Subtask], F64]] = []
    for name, demo in zip(names, demos, strict=True):
        if not demo.success:
            continue
        channel = demo.actions if cfg.replay_source == "actions" else demo.joint_positions
        ee = tracker.fk(channel[:, :GRIPPER_INDEX])
        tool = np.einsum("nij,j->ni", ee[:, :3, :3], grasp_point) + ee[:, :3, 3]
        try:
            subs = segment_seed(demo, cfg.segmentation, tool)
        except Exception as exc:
            raise type(exc)(f"seed {name}: {exc}") from exc
        prepared.append((name, demo, subs, ee))
    if not prepared:
        raise SelectionError(f"none of the {len(demos)} seeds is successful: nothing to learn from")
    common = Counter(signature(p[2]) for p in prepared).most_common(1)[0][0]
    usable = [p for p in prepared if signature(p[2]) == common]
    slots = []
    for i in range(len(common)):
        slots.append(
            tuple(
                _segment(j, name, demo, subs[i], ee, grasp_point, cfg.is_symmetric(subs[i].object), slot_offsets)
                for j, (name, demo, subs, ee) in enumerate(usable)
            )
        )
    return SeedLibrary(signature=common, slots=tuple(slots), seed_names=tuple(p[0] for p in usable))
