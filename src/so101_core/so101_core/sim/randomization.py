"""Domain randomization (``config/dr.yaml``): sample per-episode parameters from a seed, apply to the model.

Sampling is pure (a ``numpy.random.Generator`` in, an :class:`EpisodeSample` out), so the same seed
always yields the same episode; :class:`ModelRandomizer` restores the nominal model before applying.
A profile (``profiles.<name>`` in ``dr.yaml``, e.g. ``wide``: twice the SPEC ranges) overrides the
object ranges of the base file.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from so101_core.arrays import F64
from so101_core.config.fields import Fields, load_yaml
from so101_core.geometry import mat_to_quat, quat_from_axis_angle, quat_mul, quat_to_mat

from .config import SimConfig, TaskConfig, VialPlacement, default_config_dir, load_task_config
from .errors import ConfigError
from .scene import SceneIndex

Interval = tuple[float, float]


@dataclass(frozen=True)
class DRConfig:
    """Randomization ranges; intervals are ``(min, max)`` offsets (poses) or scale factors (physics)."""

    enabled: bool = True
    rack_x: Interval = (-0.04, 0.04)
    rack_y: Interval = (-0.01, 0.01)
    rack_yaw: Interval = (-0.5, 0.5)
    vial_x: Interval = (-0.04, 0.04)
    vial_y: Interval = (-0.01, 0.01)
    vial_yaw: Interval = (-0.3, 0.3)  # heading on the mat (the workshop's "roll" of the lying vial)
    vial_roll: Interval = (0.0, 0.0)  # about the vial's own axis (symmetric: no visible effect)
    partly_done_prob: float = 0.05
    light_intensity_scale: Interval = (0.6, 1.3)
    color_temperature_k: Interval = (3500.0, 7500.0)
    camera_pos_jitter: float = 0.01
    camera_rot_jitter: float = 0.03
    robot_color: float = 0.08
    object_color: float = 0.12
    mat_color: float = 0.12
    friction_scale: Interval = (0.85, 1.15)
    mass_scale: Interval = (0.8, 1.2)
    damping_scale: Interval = (0.8, 1.25)
    prefill: tuple[int, int] = (0, 2)  # standing vials in the first slots of task.fill_order (uniform count)

    @staticmethod
    def disabled() -> DRConfig:
        return DRConfig(enabled=False)


def load_dr_config(path: str | Path | None = None, profile: str | None = None) -> DRConfig:
    """Load and validate ``dr.yaml`` (errors name the field, e.g. ``dr.objects.rack.yaw``); ``profile``
    picks ``profiles.<profile>`` (its ``objects`` ranges replace the base file's)."""
    return _parse(load_yaml(path or default_config_dir() / "dr.yaml", "dr", ConfigError), profile)


def parse_dr_config(data: Mapping[str, Any], profile: str | None = None) -> DRConfig:
    return _parse(Fields(data, "dr", error=ConfigError), profile)


def _objects(f: Fields, profile: str | None) -> Fields:
    """The ``objects`` section, or with ``profile`` the per-object merge of ``profiles.<profile>.objects``
    over it (errors then name ``dr.profiles.<profile>.objects...``)."""
    profiles = f.sub("profiles", {})
    if profile is None:
        return f.sub("objects")
    if not profiles.has(profile):
        raise ConfigError(profiles.field(profile), f"unknown DR profile (known: {profiles.names()})")
    prof = profiles.sub(profile)
    over = prof.sub("objects")
    base = f.sub("objects")
    merged: dict[str, Any] = {}
    for name in sorted({*base.names(), *over.names()}):
        b = dict(base.sub(name, {})._data) if base.has(name) else {}
        o = dict(over.sub(name, {})._data) if over.has(name) else {}
        merged[name] = {**b, **o}
    prof.finish()
    return Fields(merged, over.path, error=ConfigError)


def _parse(f: Fields, profile: str | None = None) -> DRConfig:
    enabled = f.raw("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f.field("enabled"), f"expected true/false, got {enabled!r}")
    objs = _objects(f, profile)
    rack = objs.sub("rack")
    vial = objs.sub("vial")
    light = f.sub("lighting")
    cams = f.sub("cameras")
    cols = f.sub("colors")
    phys = f.sub("physics")
    cfg = DRConfig(
        enabled=enabled,
        rack_x=rack.interval("x", lo=-0.1, hi=0.1),
        rack_y=rack.interval("y", lo=-0.1, hi=0.1),
        rack_yaw=rack.interval("yaw", lo=-math.pi, hi=math.pi),
        vial_x=vial.interval("x", lo=-0.1, hi=0.1),
        vial_y=vial.interval("y", lo=-0.1, hi=0.1),
        vial_yaw=vial.interval("yaw", (0.0, 0.0), lo=-math.pi, hi=math.pi),
        vial_roll=vial.interval("roll", (0.0, 0.0), lo=-math.pi, hi=math.pi),
        partly_done_prob=f.num("partly_done_prob", 0.0, lo=0.0, hi=1.0),
        light_intensity_scale=light.interval("intensity_scale", lo=0.0, hi=5.0),
        color_temperature_k=light.interval("color_temperature_k", lo=1000.0, hi=15000.0),
        camera_pos_jitter=cams.num("pos_jitter", 0.0, lo=0.0, hi=0.1),
        camera_rot_jitter=cams.num("rot_jitter", 0.0, lo=0.0, hi=0.5),
        robot_color=cols.num("robot", 0.0, lo=0.0, hi=1.0),
        object_color=cols.num("objects", 0.0, lo=0.0, hi=1.0),
        mat_color=cols.num("mat", 0.0, lo=0.0, hi=1.0),
        friction_scale=phys.interval("friction_scale", lo=0.1, hi=10.0),
        mass_scale=phys.interval("mass_scale", lo=0.1, hi=10.0),
        damping_scale=phys.interval("damping_scale", lo=0.1, hi=10.0),
        prefill=_count_range(f, "prefill"),
    )
    for sub in (rack, vial, objs, light, cams, cols, phys, f):
        sub.finish()
    return cfg


def _count_range(f: Fields, key: str) -> tuple[int, int]:
    """An integer ``[min, max]`` pair, 0 <= min <= max <= 8 (``[0, 0]`` when absent)."""
    raw = f.raw(key, [0, 0])
    ok = isinstance(raw, list) and len(raw) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in raw)
    if not ok or not 0 <= raw[0] <= raw[1] <= 8:
        raise ConfigError(f.field(key), f"expected [min, max] integers with 0 <= min <= max <= 8, got {raw!r}")
    return int(raw[0]), int(raw[1])


@dataclass(frozen=True)
class VialSample:
    """One vial's draw: centre ``xy`` (2,) m on the mat, heading ``yaw`` and ``roll`` about its axis (rad)."""

    xy: F64
    yaw: float
    roll: float


@dataclass(frozen=True)
class EpisodeSample:
    """Everything randomized for one episode (nominal values when DR is disabled)."""

    seed: int | None
    rack_xy: F64  # (2,) m, world
    rack_yaw: float  # rad
    vial_xy: F64  # (2,) m, world
    vial_roll: float  # rad about the vial axis
    partly_done: bool
    light_scale: float
    light_rgb: F64  # (3,) colour-temperature tint, max channel 1
    camera_dpos: F64  # (ncam, 3) m
    camera_drot: F64  # (ncam, 3) rad, rotation vector
    robot_rgb: F64  # (3,) offset
    vial_rgb: F64
    rack_rgb: F64
    mat_rgb: F64
    friction_scale: float
    mass_scale: float
    damping_scale: float
    vial_yaw: float = 0.0  # rad, heading of the lying vial's cap end in the xy plane (world)
    target_slot: int = 0  # index into RackConfig.slot_offsets(): the slot this episode's vial goes to
    extras: dict[str, float] = field(default_factory=dict)
    more_vials: tuple[VialSample, ...] = ()  # a multi-vial task's vials after the first
    more_slots: tuple[int, ...] = ()  # their target slots, in the same order
    prefilled: tuple[int, ...] = ()  # slots with a vial standing upright at the start (the first slots of
    # task.fill_order, standing_names order); the single vial's target is the next slot of the order

    @property
    def vials(self) -> tuple[VialSample, ...]:
        """Every vial in :func:`~.scene.vial_names` order (the first is ``vial_xy``/``vial_yaw``/``vial_roll``)."""
        return (VialSample(self.vial_xy, self.vial_yaw, self.vial_roll), *self.more_vials)

    @property
    def target_slots(self) -> tuple[int, ...]:
        """Each vial's target slot, in the order of :attr:`vials`."""
        return (self.target_slot, *self.more_slots)


def kelvin_to_rgb(kelvin: float) -> F64:
    """Approximate blackbody colour (3,) in [0, 1] of a colour temperature in K (1000–40000)."""
    t = kelvin / 100.0
    r = 255.0 if t <= 66 else 329.698727446 * (t - 60) ** -0.1332047592
    g = 99.4708025861 * math.log(t) - 161.1195681661 if t <= 66 else 288.1221695283 * (t - 60) ** -0.0755148492
    if t >= 66:
        b = 255.0
    elif t <= 19:
        b = 0.0
    else:
        b = 138.5177312231 * math.log(t - 10) - 305.0447927307
    rgb = np.clip(np.array([r, g, b]) / 255.0, 0.0, 1.0)
    return rgb / rgb.max()


def _segment_gap(a: VialSample, b: VialSample, half_length: float) -> float:
    """Closest distance (m) between two lying vials' axis segments on the mat (sampled finely enough: 1 mm)."""
    t = np.linspace(-half_length, half_length, 41)
    pa = a.xy + t[:, None] * np.array([np.cos(a.yaw), np.sin(a.yaw)])
    pb = b.xy + t[:, None] * np.array([np.cos(b.yaw), np.sin(b.yaw)])
    return float(np.min(np.linalg.norm(pa[:, None] - pb[None], axis=-1)))


def vial_gap(vials: tuple[VialSample, ...], half_length: float) -> float:
    """Smallest axis-to-axis distance (m) between any two of ``vials`` (inf for fewer than two)."""
    gaps = [_segment_gap(a, b, half_length) for i, a in enumerate(vials) for b in vials[i + 1 :]]
    return min(gaps, default=math.inf)


def nominal_vials(sim: SimConfig, task: TaskConfig | None) -> tuple[VialPlacement, ...]:
    """The nominal placement of every vial: the task's layout, or the single vial of ``sim.yaml``."""
    if task is not None and task.vials:
        return task.vials
    return (VialPlacement(sim.vial.xy, sim.vial.yaw),)


def fill_order(sim: SimConfig, task: TaskConfig) -> list[int]:
    """The single vial's ``task.fill_order``, checked against the rack: slots of it, each pair
    ``task.min_slot_gap`` or more apart (centres, m: no two share a wall); :class:`ConfigError` otherwise."""
    n = sim.rack.slots**2
    order = list(task.fill_order)
    bad = [i for i in order if i >= n]
    if bad:
        raise ConfigError("task.fill_order", f"slots {bad} are not slots of the {n}-slot rack")
    off = np.asarray(sim.rack.slot_offsets(), dtype=np.float64)
    for k, a in enumerate(order):
        for b in order[k + 1 :]:
            d = float(np.linalg.norm(off[a] - off[b]))
            if d < task.min_slot_gap - 1e-9:
                raise ConfigError("task.fill_order", f"slots {a} and {b} lie {d:.3f} m apart, closer than "
                                  f"min_slot_gap {task.min_slot_gap} m (they share a wall)")  # fmt: skip
    return order


def prefilled_before(task: TaskConfig, target: int) -> tuple[int, ...]:
    """The pre-filled slots of an episode whose target slot is ``target``: the slots of ``task.fill_order``
    before it (what :func:`sample_episode` stands vials in when no slot is ``occupied``); () when ``target`` is
    not in the order or the task has no pre-fill. Lets a consumer that only sees the target (a graph node
    reading ``sim/target_slot``) know which slot each standing vial holds."""
    order = list(task.fill_order)
    if not task.prefill or task.vials or target not in order:
        return ()
    return tuple(order[: order.index(target)])


def check_prefill(sim: SimConfig, dr: DRConfig, task: TaskConfig) -> None:
    """The pre-fill must leave a free slot of the order for the vial (:class:`ConfigError` naming the field)."""
    order = fill_order(sim, task) if not task.vials else []
    if task.prefill and not task.vials and dr.prefill[1] > min(len(order) - 1, task.standing_vials):
        raise ConfigError("dr.prefill", f"up to {dr.prefill[1]} standing vials, but the task has "
                          f"{task.standing_vials} (task.standing_vials) and {len(order)} slots in fill_order: "
                          "at most one fewer than the slots leaves the vial one")  # fmt: skip


def target_slot_choices(sim: SimConfig, task: TaskConfig | None) -> list[int]:
    """The slots targets are drawn from: the task's ``slots`` or every slot of the rack."""
    n = sim.rack.slots**2
    allowed = list(task.slots) if task is not None and task.slots else list(range(n))
    bad = [i for i in allowed if i >= n]
    if bad:
        raise ConfigError("task.slots", f"slots {bad} are not slots of the {n}-slot rack")
    return allowed


def _slot_radii(sim: SimConfig, rack_xy: F64, rack_yaw: float) -> F64:
    """Distance (m) of every slot centre (slots², ) from the robot base, the rack at ``rack_xy``, ``rack_yaw``."""
    off = np.asarray(sim.rack.slot_offsets(), dtype=np.float64)
    c, s = math.cos(rack_yaw), math.sin(rack_yaw)
    return np.asarray(np.linalg.norm(rack_xy + off @ np.array([[c, s], [-s, c]]), axis=1), dtype=np.float64)


def _far_first(slots: list[int], sim: SimConfig, rack_xy: F64, rack_yaw: float) -> list[int]:
    """``slots`` ordered by the distance of their centres from the robot base, farthest first (the vials are
    placed in that order, so the hand never reaches over a vial already standing in the rack)."""
    order = np.argsort(-_slot_radii(sim, rack_xy, rack_yaw)[slots], kind="stable")
    return [slots[int(i)] for i in order]


def _draw_slots(
    free: list[int], count: int, sim: SimConfig, task: TaskConfig | None, rack_xy: F64, rack_yaw: float,
    rng: np.random.Generator,
) -> list[int]:  # fmt: skip
    """``count`` target slots among ``free``: uniform among the sets whose slots lie ``task.min_slot_gap``
    apart (any set when none does) and ``task.min_slot_radius`` or farther from the robot base; where no set
    is that far, the set whose nearest slot is farthest. One ``rng`` draw (one slot: the old uniform draw)."""
    near = task.min_slot_radius if task is not None else 0.0
    sets = list(itertools.combinations(free, count))
    sets = [c for c in sets if all(_clear_of(c[k], c[:k], sim, task) for k in range(1, count))] or sets
    radii = _slot_radii(sim, rack_xy, rack_yaw)
    nearest = [float(radii[list(c)].min()) for c in sets]
    far = [c for c, r in zip(sets, nearest, strict=True) if r >= near]
    chosen = far[int(rng.integers(len(far)))] if far else sets[int(np.argmax(nearest))]
    return list(chosen)


def _clear_of(slot: int, drawn: Sequence[int], sim: SimConfig, task: TaskConfig | None) -> bool:
    """Whether ``slot``'s centre lies ``task.min_slot_gap`` or more from every slot of ``drawn`` (m)."""
    gap = task.min_slot_gap if task is not None else 0.0
    if gap <= 0 or not drawn:
        return True
    off = np.asarray(sim.rack.slot_offsets(), dtype=np.float64)
    return bool(np.min(np.linalg.norm(off[list(drawn)] - off[slot], axis=1)) >= gap - 1e-9)


def _apart(free: list[int], drawn: list[int], sim: SimConfig, task: TaskConfig | None) -> list[int]:
    """The slots of ``free`` at least ``task.min_slot_gap`` from every slot of ``drawn`` (centres, m); all of
    ``free`` when none is."""
    return [i for i in free if _clear_of(i, drawn, sim, task)] or free


MAX_LAYOUT_DRAWS = 50  # draws of a vial too close to another, the rack or the resting arm; then the nearest miss
SPAWN_CLEARANCE = 0.005  # m between a lying vial's surface and the rack or the resting arm (``keep_out``)


def spawn_clearance(v: VialSample, sim: SimConfig, rack_xy: F64, rack_yaw: float, keep_out: F64) -> float:
    """Distance (m) from the surface of vial ``v`` lying on the mat to the rack's footprint (at ``rack_xy``,
    ``rack_yaw``) or the nearest of the ``keep_out`` points (K, 2), world; negative where they overlap."""
    t = np.linspace(-sim.vial.half_length, sim.vial.half_length, 41)
    axis = v.xy + t[:, None] * np.array([math.cos(v.yaw), math.sin(v.yaw)])  # (41, 2) m, sampled every 2.5 mm
    c, s = math.cos(rack_yaw), math.sin(rack_yaw)
    local = (axis - rack_xy) @ np.array([[c, -s], [s, c]])  # rack frame
    outside = np.maximum(np.abs(local) - sim.rack.size / 2, 0.0)
    nearest = float(np.min(np.linalg.norm(outside, axis=1)))
    if len(keep_out):
        nearest = min(nearest, float(np.min(np.linalg.norm(axis[:, None] - keep_out[None], axis=-1))))
    return nearest - sim.vial.radius


def sample_episode(
    sim: SimConfig,
    dr: DRConfig,
    rng: np.random.Generator,
    seed: int | None = None,
    occupied: tuple[int, ...] = (),
    task: TaskConfig | None = None,
    keep_out: F64 | None = None,
) -> EpisodeSample:
    """Draw one episode's parameters. Draw order is fixed, so ``rng`` state fully determines the result.

    ``task`` None: ``task.yaml``'s single-vial task. The single vial's target is the first free slot of
    ``task.fill_order`` (slots in ``occupied`` skipped): with DR and ``task.prefill``, a uniform count in
    ``dr.prefill`` of its first free slots hold a standing vial (:attr:`EpisodeSample.prefilled`; the count
    is the last draw, so every other draw of a seed is that of earlier versions, where one draw picked the
    target among all slots); without DR none, and the target is the order's first slot. Several vials: the
    vial's heading, then the target slots (one per vial, :func:`_draw_slots`: uniform among the sets of the
    task's slots not in ``occupied`` that keep ``task.min_slot_gap`` and ``task.min_slot_radius``), then the
    other vials (each redrawn while it lies within ``task.min_vial_gap`` of an earlier one); without DR the
    farthest free slots (``far_first``) or the first ones, each apart from those before.
    A drawn vial (not the nominal layout) is also redrawn while it lies within ``SPAWN_CLEARANCE`` of the rack
    or of a ``keep_out`` point ((K, 2) m, world: where the arm rests on the mat, :class:`~.twin.Twin`); only
    such episodes draw differently from earlier versions.
    """

    def u(iv: Interval) -> float:
        return float(rng.uniform(iv[0], iv[1]))

    def jitter(amp: float, n: int = 3) -> F64:
        return rng.uniform(-amp, amp, size=n)

    task = task if task is not None else load_task_config()
    ncam = len(sim.cameras)
    layout = nominal_vials(sim, task)
    single = len(layout) == 1
    if single and dr.enabled:
        check_prefill(sim, dr, task)
    order = fill_order(sim, task) if single else target_slot_choices(sim, task)
    choices = [i for i in order if i not in occupied]
    if len(choices) < len(layout):
        raise ValueError(f"{len(choices)} free target slots for {len(layout)} vials (occupied: {sorted(occupied)})")
    if not dr.enabled:
        z3 = np.zeros(3)
        if single:
            first, rest = choices[0], []
        else:  # the farthest free slots (far_first) or the first ones, each apart from those taken before it
            ordered = choices
            if task is not None and task.fill == "far_first":
                ordered = _far_first(choices, sim, np.array(sim.rack.xy), sim.rack.yaw)
            taken: list[int] = []
            for _ in layout:
                taken.append(_apart([i for i in ordered if i not in taken], taken, sim, task)[0])
            first, *rest = taken
        more = tuple(VialSample(np.array(v.xy), v.yaw, sim.vial.roll) for v in layout[1:])
        return EpisodeSample(
            seed, np.array(sim.rack.xy), sim.rack.yaw, np.array(layout[0].xy), sim.vial.roll, False, 1.0,
            np.ones(3), np.zeros((ncam, 3)), np.zeros((ncam, 3)), z3, z3, z3, z3, 1.0, 1.0, 1.0,
            layout[0].yaw, first, more_vials=more, more_slots=tuple(rest),
        )  # fmt: skip
    rack_xy = np.array(sim.rack.xy) + np.array([u(dr.rack_x), u(dr.rack_y)])
    rack_yaw = sim.rack.yaw + u(dr.rack_yaw)
    vial_xy = np.array(layout[0].xy) + np.array([u(dr.vial_x), u(dr.vial_y)])
    vial_roll = sim.vial.roll + u(dr.vial_roll)
    partly = bool(rng.uniform() < dr.partly_done_prob)
    light_scale = u(dr.light_intensity_scale)
    light_rgb = kelvin_to_rgb(u(dr.color_temperature_k))
    cam_dpos = rng.uniform(-dr.camera_pos_jitter, dr.camera_pos_jitter, size=(ncam, 3))
    cam_drot = rng.uniform(-dr.camera_rot_jitter, dr.camera_rot_jitter, size=(ncam, 3))
    robot_rgb, vial_rgb = jitter(dr.robot_color), jitter(dr.object_color)
    rack_rgb, mat_rgb = jitter(dr.object_color), jitter(dr.mat_color)
    friction, mass, damping = u(dr.friction_scale), u(dr.mass_scale), u(dr.damping_scale)
    vial_yaw = layout[0].yaw + u(dr.vial_yaw)
    keep = np.zeros((0, 2)) if keep_out is None else np.asarray(keep_out, dtype=np.float64).reshape(-1, 2)

    def clearance(v: VialSample) -> float:
        return spawn_clearance(v, sim, rack_xy, rack_yaw, keep) - SPAWN_CLEARANCE

    lead = VialSample(vial_xy, vial_yaw, vial_roll)
    draws = 1
    while clearance(lead) < 0 and draws < MAX_LAYOUT_DRAWS:  # redrawn; the clearest draw is kept
        xy = np.array(layout[0].xy) + np.array([u(dr.vial_x), u(dr.vial_y)])
        v = VialSample(xy, layout[0].yaw + u(dr.vial_yaw), sim.vial.roll + u(dr.vial_roll))
        lead = max(lead, v, key=clearance)
        draws += 1
    vial_xy, vial_yaw, vial_roll = lead.xy, lead.yaw, lead.roll
    target, slots = choices[0], []
    if not single:
        target, *slots = _draw_slots(choices, len(layout), sim, task, rack_xy, rack_yaw, rng)
    placed = [lead]
    for nominal in layout[1:]:
        best: tuple[float, VialSample] | None = None
        for _ in range(MAX_LAYOUT_DRAWS):
            xy = np.array(nominal.xy) + np.array([u(dr.vial_x), u(dr.vial_y)])
            v = VialSample(xy, nominal.yaw + u(dr.vial_yaw), sim.vial.roll + u(dr.vial_roll))
            gap = vial_gap((*placed, v), sim.vial.half_length) - task.min_vial_gap
            margin = min(gap, clearance(v))
            if best is None or margin > best[0]:
                best = (margin, v)
            if margin >= 0:
                break
        assert best is not None
        placed.append(best[1])  # the first draw that keeps the gap and the clearance, else the nearest miss
    if slots and task.fill == "far_first":
        target, *slots = _far_first([target, *slots], sim, rack_xy, rack_yaw)
    prefilled: tuple[int, ...] = ()
    if single and task.prefill:  # the last draw: standing vials in the first free slots of the order
        count = min(int(rng.integers(dr.prefill[0], dr.prefill[1] + 1)), len(choices) - 1)
        prefilled, target = tuple(choices[:count]), choices[count]
    return EpisodeSample(
        seed=seed,
        rack_xy=rack_xy,
        rack_yaw=rack_yaw,
        vial_xy=vial_xy,
        vial_roll=vial_roll,
        partly_done=partly,
        light_scale=light_scale,
        light_rgb=light_rgb,
        camera_dpos=cam_dpos,
        camera_drot=cam_drot,
        robot_rgb=robot_rgb,
        vial_rgb=vial_rgb,
        rack_rgb=rack_rgb,
        mat_rgb=mat_rgb,
        friction_scale=friction,
        mass_scale=mass,
        damping_scale=damping,
        vial_yaw=vial_yaw,
        target_slot=target,
        more_vials=tuple(placed[1:]),
        more_slots=tuple(slots),
        prefilled=prefilled,
    )


class ModelRandomizer:
    """Applies an :class:`EpisodeSample`'s model-level parameters, always starting from the nominal model."""

    def __init__(self, model: mujoco.MjModel, index: SceneIndex) -> None:
        self._m = model
        self._ix = index
        self._nominal = {
            name: getattr(model, name).copy()
            for name in (
                "geom_friction", "body_mass", "body_inertia", "dof_damping", "light_diffuse",
                "light_specular", "cam_pos", "cam_quat", "mat_rgba", "geom_contype", "geom_conaffinity",
                "body_gravcomp",
            )
        }  # fmt: skip

    def restore(self) -> None:
        for name, value in self._nominal.items():
            getattr(self._m, name)[:] = value

    def apply(self, s: EpisodeSample, data: mujoco.MjData) -> None:
        """Set the model parameters of ``s``; ``data`` is used as scratch (reset it afterwards)."""
        m, ix, nom = self._m, self._ix, self._nominal
        self.restore()
        obj_geoms = [g for gs in ix.object_geoms.values() for g in gs]
        fr_geoms = [*obj_geoms, *ix.pad_geoms, ix.mat_geom]
        m.geom_friction[fr_geoms, 0] = nom["geom_friction"][fr_geoms, 0] * s.friction_scale
        for b in ix.object_bodies.values():
            m.body_mass[b] = nom["body_mass"][b] * s.mass_scale
            m.body_inertia[b] = nom["body_inertia"][b] * s.mass_scale
        m.dof_damping[ix.dof_adr] = nom["dof_damping"][ix.dof_adr] * s.damping_scale
        m.light_diffuse[:] = nom["light_diffuse"] * s.light_scale * s.light_rgb
        m.light_specular[:] = nom["light_specular"] * s.light_scale
        for k, cam in enumerate(sorted(ix.cameras.values())):
            m.cam_pos[cam] = nom["cam_pos"][cam] + s.camera_dpos[k]
            rv = s.camera_drot[k]
            ang = float(np.linalg.norm(rv))
            if ang > 0:
                dq = quat_from_axis_angle(rv, ang)
                m.cam_quat[cam] = mat_to_quat(quat_to_mat(quat_mul(nom["cam_quat"][cam], dq)))
        for mat in ix.robot_materials:
            m.mat_rgba[mat, :3] = np.clip(nom["mat_rgba"][mat, :3] + s.robot_rgb, 0.0, 1.0)
        for name, delta in (
            ("vial", s.vial_rgb),
            ("rack", s.rack_rgb),
            ("rack_marker", s.rack_rgb),
            ("mat", s.mat_rgb),
        ):
            mid = ix.object_materials[name]
            m.mat_rgba[mid, :3] = np.clip(nom["mat_rgba"][mid, :3] + delta, 0.0, 1.0)
        for k, name in enumerate(ix.standing):  # unused standing vials: parked, no contacts, gravity compensated
            if k >= len(s.prefilled):
                geoms = list(ix.object_geoms[name])
                m.geom_contype[geoms] = 0
                m.geom_conaffinity[geoms] = 0
            else:
                m.body_gravcomp[ix.object_bodies[name]] = 0.0
        mujoco.mj_setConst(m, data)
