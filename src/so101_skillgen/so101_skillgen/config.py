"""``config/skillgen.yaml`` → frozen dataclasses; every error names the dotted field (``skillgen.ik.backend``).

Units: metres, radians, seconds, control steps (30 Hz) where a field says ``steps``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from so101_core.config.fields import Fields, load_yaml
from so101_core.sim.config import default_config_dir
from so101_core.sim.scene import VIAL, is_vial

from .errors import SkillGenConfigError

IK_BACKENDS: tuple[str, ...] = ("mujoco", "skillgen", "analytic")
"""``mujoco``: damped least squares on the twin's MuJoCo Jacobian (:mod:`so101_core.sim.ik`);
``skillgen``: the torch solver of :mod:`so101_skillgen.ik` loaded from ``ik.config``."""
REPLAY_SOURCES: tuple[str, ...] = ("actions", "joint_positions")


@dataclass(frozen=True)
class SegmentationConfig:
    """Thresholds of :mod:`so101_skillgen.segmentation`.

    ``gripper_closed_below`` / ``gripper_open_above``: gripper command (rad) counted as closed / open.
    ``lift_height``: the grasped object must rise this much (m) with the gripper closed (grasp end).
    ``approach_distance``: the grasp segment starts at the last step farther than this (m) from the object.
    ``place_approach_height``: the place segment starts at the last step the held object is this much (m)
    above its release height. ``post_release_steps``: steps kept after the release (retreat).
    """

    gripper_closed_below: float = 0.3
    gripper_open_above: float = 0.3
    lift_height: float = 0.02
    approach_distance: float = 0.06
    place_approach_height: float = 0.045
    post_release_steps: int = 30


@dataclass(frozen=True)
class SelectionConfig:
    """kNN source selection: ``k`` nearest seeds, distance = position (m) + ``rotation_weight`` (m/rad) · angle."""

    k: int = 3
    rotation_weight: float = 0.05


@dataclass(frozen=True)
class TransitConfig:
    """Transit planning (:mod:`so101_skillgen.transit`): lift to a safe height, move, descend.

    ``height``: clearance (m) of the tool point (and of a held object's lowest point) above the highest
    obstacle top (the rack). ``speed``: Cartesian speed (m/s) of the tool point. ``min_steps``: per leg.
    ``check_every``: collision-check every n-th planned configuration. ``dwell_steps``: hold the transit's
    last configuration so the servos settle before the subtask starts.
    """

    height: float = 0.03
    speed: float = 0.12
    min_steps: int = 6
    check_every: int = 2
    dwell_steps: int = 5


@dataclass(frozen=True)
class SmoothingConfig:
    """Savitzky–Golay smoothing of the arm joints (never the gripper)."""

    window: int = 21
    order: int = 3


@dataclass(frozen=True)
class TrackingConfig:
    """IK tracking. ``tolerance``: tracking-point error (m) above which an attempt fails (``ik_divergence``)."""

    backend: str = "mujoco"
    config: str = "ik.yaml"
    damping: float = 0.05
    max_step: float = 0.1
    iterations: int = 60
    tolerance: float = 0.01


@dataclass(frozen=True)
class RolloutConfig:
    """Physics rollout checks. ``settle_steps``: hold after the last segment for the success detector;
    ``rack_push_tolerance``: rack displacement (m) before the release that counts as a ``collision``.
    ``execution_noise_rad`` (0 = none): the kept demo is executed with a smooth random offset of this standard
    deviation (rad) on each arm joint's command (correlation time ``execution_noise_tau_s``, s), while its recorded
    actions stay the planned commands: its states stray from the plan and its actions lead back (DART, Laskey et
    al. 2017), what a policy needs when its own errors take it off the demos' paths. A draw whose execution fails
    the task or the final check is replaced by the next, up to ``execution_noise_draws`` (then the attempt fails
    with the last draw's reason, ``replay_mismatch`` or ``filter``)."""

    settle_steps: int = 20
    rack_push_tolerance: float = 0.01
    execution_noise_rad: float = 0.0
    execution_noise_tau_s: float = 0.3
    execution_noise_draws: int = 3


@dataclass(frozen=True)
class SkillGenConfig:
    """Everything :func:`so101_skillgen.generation.generate` needs (besides seeds and the twin configs).

    ``num_trials``: attempt budget per requested demo (``num_demos · num_trials`` in total);
    ``generation_guarantee``: keep going until ``num_demos`` are kept or the budget is spent (otherwise
    stop after exactly ``num_demos`` attempts). ``replay_source``: which joint channel of a seed is
    FK-replayed into the source EE trajectory (the commanded ``actions`` keep the seed's servo lag
    consistent with its gripper timing). ``symmetric_objects``: objects whose roll about their local z is
    ignored when retargeting (``vial`` covers every vial of a multi-vial task). ``grasp_wrist_roll``: the sign
    of the wrist roll a grasp closes with, preferred where the seed's in-hand axis and its mirror both let the
    place stand the vial upright (:mod:`.grasp_fit`; ``any``: no preference).
    """

    num_demos: int = 20
    num_trials: int = 20
    generation_guarantee: bool = True
    random_seed: int = 0
    replay_source: str = "actions"
    symmetric_objects: tuple[str, ...] = ("vial",)
    grasp_wrist_roll: str = "negative"
    segmentation: SegmentationConfig = field(default_factory=SegmentationConfig)
    selection: SelectionConfig = field(default_factory=SelectionConfig)
    transit: TransitConfig = field(default_factory=TransitConfig)
    smoothing: SmoothingConfig = field(default_factory=SmoothingConfig)
    ik: TrackingConfig = field(default_factory=TrackingConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)

    def is_symmetric(self, name: str) -> bool:
        """Whether object ``name`` is listed in ``symmetric_objects`` (each of several vials as ``vial``)."""
        return name in self.symmetric_objects or (is_vial(name) and VIAL in self.symmetric_objects)

    @property
    def max_attempts(self) -> int:
        return self.num_demos * self.num_trials if self.generation_guarantee else self.num_demos


def load_skillgen_config(path: str | Path | None = None) -> SkillGenConfig:
    """Load and validate ``skillgen.yaml`` (default: ``config/skillgen.yaml``)."""
    return _parse(load_yaml(path or default_config_dir() / "skillgen.yaml", "skillgen", SkillGenConfigError))


def parse_skillgen_config(data: Mapping[str, Any]) -> SkillGenConfig:
    """Validate an already-parsed mapping (same rules as :func:`load_skillgen_config`)."""
    return _parse(Fields(data, "skillgen", error=SkillGenConfigError))


def _flag(f: Fields, key: str, default: bool) -> bool:
    v = f.raw(key, default)
    if not isinstance(v, bool):
        raise SkillGenConfigError(f.field(key), f"expected true/false, got {v!r}")
    return v


def _parse(f: Fields) -> SkillGenConfig:
    d = SkillGenConfig()
    s = f.sub("segmentation", {})
    ds = d.segmentation
    seg = SegmentationConfig(
        gripper_closed_below=s.num("gripper_closed_below", ds.gripper_closed_below, lo=-3.2, hi=3.2),
        gripper_open_above=s.num("gripper_open_above", ds.gripper_open_above, lo=-3.2, hi=3.2),
        lift_height=s.num("lift_height", ds.lift_height, lo=0.0, hi=0.5, lo_open=True),
        approach_distance=s.num("approach_distance", ds.approach_distance, lo=0.0, hi=0.5, lo_open=True),
        place_approach_height=s.num("place_approach_height", ds.place_approach_height, lo=0.0, hi=0.5),
        post_release_steps=s.integer("post_release_steps", ds.post_release_steps, lo=0, hi=100_000),
    )
    s.finish()
    sel_f = f.sub("selection", {})
    sel = SelectionConfig(
        k=sel_f.integer("k", d.selection.k, lo=1, hi=1000),
        rotation_weight=sel_f.num("rotation_weight", d.selection.rotation_weight, lo=0.0, hi=10.0),
    )
    sel_f.finish()
    t = f.sub("transit", {})
    dt = d.transit
    transit = TransitConfig(
        height=t.num("height", dt.height, lo=0.0, hi=0.3),
        speed=t.num("speed", dt.speed, lo=0.0, hi=2.0, lo_open=True),
        min_steps=t.integer("min_steps", dt.min_steps, lo=1, hi=10_000),
        check_every=t.integer("check_every", dt.check_every, lo=1, hi=1000),
        dwell_steps=t.integer("dwell_steps", dt.dwell_steps, lo=0, hi=1000),
    )
    t.finish()
    sm = f.sub("smoothing", {})
    smoothing = SmoothingConfig(
        window=sm.integer("window", d.smoothing.window, lo=1, hi=1001),
        order=sm.integer("order", d.smoothing.order, lo=0, hi=10),
    )
    if smoothing.window % 2 == 0:
        raise SkillGenConfigError(sm.field("window"), f"must be odd, got {smoothing.window}")
    if smoothing.order >= smoothing.window:
        raise SkillGenConfigError(sm.field("order"), f"must be < window ({smoothing.window}), got {smoothing.order}")
    sm.finish()
    i = f.sub("ik", {})
    di = d.ik
    ik = TrackingConfig(
        backend=i.text("backend", di.backend, choices=IK_BACKENDS),
        config=i.text("config", di.config),
        damping=i.num("damping", di.damping, lo=0.0, hi=10.0, lo_open=True),
        max_step=i.num("max_step", di.max_step, lo=0.0, hi=3.2, lo_open=True),
        iterations=i.integer("iterations", di.iterations, lo=1, hi=100_000),
        tolerance=i.num("tolerance", di.tolerance, lo=0.0, hi=0.5, lo_open=True),
    )
    i.finish()
    r = f.sub("rollout", {})
    rollout = RolloutConfig(
        settle_steps=r.integer("settle_steps", d.rollout.settle_steps, lo=0, hi=100_000),
        rack_push_tolerance=r.num("rack_push_tolerance", d.rollout.rack_push_tolerance, lo=0.0, hi=1.0, lo_open=True),
        execution_noise_rad=r.num("execution_noise_rad", d.rollout.execution_noise_rad, lo=0.0, hi=0.5),
        execution_noise_tau_s=r.num(
            "execution_noise_tau_s", d.rollout.execution_noise_tau_s, lo=0.0, hi=60.0, lo_open=True
        ),
        execution_noise_draws=r.integer("execution_noise_draws", d.rollout.execution_noise_draws, lo=1, hi=1000),
    )
    r.finish()
    sym = f.raw("symmetric_objects", list(d.symmetric_objects))
    if not isinstance(sym, list) or not all(isinstance(x, str) for x in sym):
        raise SkillGenConfigError(f.field("symmetric_objects"), f"expected a list of object names, got {sym!r}")
    cfg = SkillGenConfig(
        num_demos=f.integer("num_demos", d.num_demos, lo=1, hi=10_000_000),
        num_trials=f.integer("num_trials", d.num_trials, lo=1, hi=100_000),
        generation_guarantee=_flag(f, "generation_guarantee", d.generation_guarantee),
        random_seed=f.integer("random_seed", d.random_seed, lo=0, hi=2**63 - 1),
        replay_source=f.text("replay_source", d.replay_source, choices=REPLAY_SOURCES),
        symmetric_objects=tuple(sym),
        grasp_wrist_roll=f.text("grasp_wrist_roll", d.grasp_wrist_roll, choices=("any", "positive", "negative")),
        segmentation=seg,
        selection=sel,
        transit=transit,
        smoothing=smoothing,
        ik=ik,
        rollout=rollout,
    )
    f.finish()
    return cfg
