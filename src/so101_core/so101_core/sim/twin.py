"""The digital twin: compiled scene + ``MjData`` behind a joint-target interface (what a sim node wraps).

Control: :meth:`Twin.step` holds the 6 joint targets (rad, :data:`JOINT_NAMES` order) for one control
period. At 30 Hz with a 2 ms timestep a period is 16 or 17 physics steps, chosen so that sim time after
k steps is exactly k / control_hz.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import mujoco
import numpy as np
from numpy.typing import ArrayLike

from so101_core.arrays import F64
from so101_core.geometry import yaw_quat

from . import CAMERA_NAMES, GRIPPER_INDEX, JOINT_NAMES
from .config import SimConfig, TaskConfig, load_sim_config, load_task_config
from .dynamics import ArmDynamics
from .errors import ConfigError, InvalidCommandError, UnknownNameError
from .grasp import GraspGeometry, grasp_geometry
from .ik import ArmIK, AxisTarget
from .randomization import (
    SPAWN_CLEARANCE,
    DRConfig,
    EpisodeSample,
    ModelRandomizer,
    VialSample,
    check_prefill,
    fill_order,
    load_dr_config,
    nominal_vials,
    sample_episode,
    target_slot_choices,
    vial_gap,
)
from .scene import RACK, SceneIndex, build_model, parked_position, standing_names, vial_lying_quat, vial_names
from .servo import DelayLine, DelayState, step_servos
from .task import TaskState, slot_centres


class TwinState(NamedTuple):
    """A :meth:`Twin.snapshot`: the simulation data, the control ticks and the servo delay line (or None)."""

    data: mujoco.MjData
    ticks: int
    delay: DelayState | None


class Pose(NamedTuple):
    """World pose: ``position`` (3,) m and ``quaternion`` (4,) wxyz."""

    position: F64
    quaternion: F64


@dataclass(frozen=True)
class ContactState:
    """Whether each jaw pad touches the vial (or, with several, one of the vials)."""

    fixed_jaw: bool
    moving_jaw: bool

    @property
    def both(self) -> bool:
        return self.fixed_jaw and self.moving_jaw


GRIPPER_OPEN = 0.9  # rad, gripper target used to open the jaws
GRIPPER_CLOSED = -0.17  # rad, squeezes anything between the pads


class Twin:
    """MuJoCo twin of the SO-101 vial-in-rack scene.

    ``dr=None`` loads ``config/dr.yaml``; pass :meth:`DRConfig.disabled` for the nominal scene. ``task=None``
    loads ``task.yaml``'s single-vial task. A ``task`` with a vial layout (a multi-vial variant) builds one
    vial per placement (:attr:`vial_names`); without one the scene holds the single vial of ``sim.yaml`` and
    :attr:`TaskConfig.standing_count` standing vials (:attr:`standing_names`): each episode stands the first
    ones upright in its pre-filled slots (:attr:`EpisodeSample.prefilled`), the rest wait parked under the
    mat, out of view, touching nothing.
    ``dynamics``: an identified arm's servo and joint parameters (:mod:`.dynamics`, ``config/arms/<id>.yaml``) in
    place of the nominal ones; with a latency or a dead band the servo loop is stepped physics step by physics
    step (:mod:`.servo`).
    """

    def __init__(
        self,
        sim: SimConfig | None = None,
        dr: DRConfig | None = None,
        task: TaskConfig | None = None,
        dynamics: ArmDynamics | None = None,
    ) -> None:
        self.config = sim or load_sim_config()
        self.dr = dr if dr is not None else load_dr_config()
        self.task: TaskConfig = task if task is not None else load_task_config()
        task = self.task
        self.vial_names = vial_names(len(nominal_vials(self.config, task)))
        self.standing_names = standing_names(task.standing_count)
        self.object_names: tuple[str, ...] = (*self.vial_names, *self.standing_names, RACK)
        _check_layout(self.config, task)
        if self.dr.enabled:
            check_prefill(self.config, self.dr, task)
        self.dynamics = dynamics
        self.model = build_model(self.config, len(self.vial_names), len(self.standing_names), dynamics)
        self.data = mujoco.MjData(self.model)
        self.index = SceneIndex.of(self.model, self.config, self.object_names)
        below = 2 * self.config.vial.radius + SPAWN_CLEARANCE  # a lying vial's top, and the clearance
        self.rest_footprint = rest_footprint(self.model, self.index, self.config.robot.home, below)
        self._randomizer = ModelRandomizer(self.model, self.index)
        self._renderers: dict[tuple[int, int], mujoco.Renderer] = {}
        self._ctrl_lo = self.model.actuator_ctrlrange[self.index.actuator_ids, 0].copy()
        self._ctrl_hi = self.model.actuator_ctrlrange[self.index.actuator_ids, 1].copy()
        self._ticks = 0
        self._delay: DelayLine | None = None
        self._deadband = np.zeros(len(JOINT_NAMES))
        if dynamics is not None and dynamics.has_servo_effects:
            self._delay = DelayLine(dynamics.column("latency_s"), np.zeros(len(JOINT_NAMES)))
            self._deadband = dynamics.column("deadband")
        self._grasp: GraspGeometry | None = None
        self.episode: EpisodeSample | None = None
        self.reset(None)

    # ------------------------------------------------------------------ timing
    @property
    def control_period(self) -> float:
        """Seconds per :meth:`step` (1 / control_hz)."""
        return 1.0 / self.config.physics.control_hz

    @property
    def time(self) -> float:
        """Simulated time since reset (s)."""
        return float(self.data.time)

    @property
    def ticks(self) -> int:
        """Control steps since reset."""
        return self._ticks

    def _substeps(self, tick: int) -> int:
        ratio = self.control_period / self.model.opt.timestep
        return max(1, round((tick + 1) * ratio) - round(tick * ratio))

    # ------------------------------------------------------------------ episode
    def grasp_geometry(self) -> GraspGeometry:
        """Planned vial grasp in the gripper (see :mod:`.grasp`)."""
        if self._grasp is None:
            self._grasp = grasp_geometry(self.model, self.index, self.config.vial.radius)
        return self._grasp

    def reset(self, seed: int | None = None) -> EpisodeSample:
        """Start an episode: DR from ``seed`` (same seed → identical state), robot at home, objects placed."""
        rng = np.random.default_rng(seed)
        sample = sample_episode(self.config, self.dr, rng, seed, task=self.task, keep_out=self.rest_footprint)
        self._randomizer.apply(sample, self.data)
        mujoco.mj_resetData(self.model, self.data)
        home = np.asarray(self.config.robot.home, dtype=np.float64)
        self.data.qpos[self.index.qpos_adr] = home
        self.data.ctrl[self.index.actuator_ids] = np.clip(home, self._ctrl_lo, self._ctrl_hi)
        self._write_pose(RACK, np.array([*sample.rack_xy, 0.0]), yaw_quat(sample.rack_yaw))
        for name, vial in zip(self.vial_names, sample.vials, strict=True):
            self._write_pose(name, *self._lying(vial))
        for k, name in enumerate(self.standing_names):
            self._write_pose(name, *self._standing(sample, k))
        if sample.partly_done:
            self._start_in_hand(sample)
        mujoco.mj_forward(self.model, self.data)
        self.data.time = 0.0
        self._ticks = 0
        self._reset_servos()
        self.episode = sample
        return sample

    def _lying(self, vial: VialSample) -> tuple[F64, F64]:
        return np.array([*vial.xy, self.config.vial.radius]), vial_lying_quat(vial.yaw, vial.roll)

    def _standing(self, sample: EpisodeSample, k: int) -> tuple[F64, F64]:
        """Standing vial ``k`` upright on the floor of its pre-filled slot, or parked when the episode has fewer."""
        if k >= len(sample.prefilled):
            return parked_position(k), np.array([1.0, 0.0, 0.0, 0.0])
        rack = self.config.rack
        centre = slot_centres(np.array([*sample.rack_xy, 0.0]), yaw_quat(sample.rack_yaw), rack)[sample.prefilled[k]]
        z = rack.base_height + self.config.vial.half_length
        return np.array([*centre, z]), yaw_quat(sample.rack_yaw)

    def _start_in_hand(self, sample: EpisodeSample) -> None:
        """Partly-done start: the (first) vial already grasped and lifted 6 cm above its sampled spot."""
        g = self.grasp_geometry()
        v = self.config.vial
        axis = np.array([np.cos(sample.vial_yaw), np.sin(sample.vial_yaw), 0.0])
        target = np.array([*sample.vial_xy, v.radius]) + g.along * axis + np.array([0.0, 0.0, 0.06])
        ik = ArmIK(self.model, self.index.ee_site, self.index.qpos_adr[:5], self.index.dof_adr[:5])
        q0 = np.asarray(self.config.robot.home[:5])
        res = ik.solve(q0, target, g.point, [AxisTarget(g.axis, axis)])
        q = np.array([*res.q, g.close_angle])
        self.data.qpos[self.index.qpos_adr] = q
        ctrl = q.copy()
        ctrl[GRIPPER_INDEX] = GRIPPER_CLOSED
        self.data.ctrl[self.index.actuator_ids] = ctrl
        mujoco.mj_kinematics(self.model, self.data)
        site = self.index.ee_site
        pos, quat = g.vial_pose_in_hand(self.data.site_xpos[site].copy(), self.data.site_xmat[site].reshape(3, 3))
        self._write_pose(self.vial_names[0], pos, quat)
        mujoco.mj_step(self.model, self.data, nstep=150)  # let the grip settle (0.3 s)

    # ------------------------------------------------------------------ control
    @property
    def joint_names(self) -> tuple[str, ...]:
        return JOINT_NAMES

    def step(self, joint_targets: ArrayLike) -> None:
        """Hold ``joint_targets`` (6,) rad (clipped to the servo range) for one control period."""
        q = np.asarray(joint_targets, dtype=np.float64)
        if q.shape != (len(JOINT_NAMES),):
            raise InvalidCommandError(f"joint_targets must have shape (6,), got {q.shape}")
        if not np.all(np.isfinite(q)):
            raise InvalidCommandError(f"joint_targets must be finite, got {q.tolist()}")
        nstep = self._substeps(self._ticks)
        if self._delay is None:
            self.data.ctrl[self.index.actuator_ids] = np.clip(q, self._ctrl_lo, self._ctrl_hi)
            mujoco.mj_step(self.model, self.data, nstep=nstep)
        else:
            t0 = self.data.time
            self._delay.push(t0, np.clip(q, self._ctrl_lo, self._ctrl_hi))
            edges = t0 + self.model.opt.timestep * np.arange(nstep + 1)
            targets = self._delay.mean_targets(edges)
            ix = self.index
            step_servos(self.model, self.data, ix.actuator_ids, ix.qpos_adr, targets, self._deadband,
                        (self._ctrl_lo, self._ctrl_hi))  # fmt: skip
            self._delay.prune(float(edges[-1]))
        self._ticks += 1

    def _reset_servos(self) -> None:
        """The servo loop holds the targets now applied (nothing commanded before is still on its way)."""
        if self._delay is not None:
            self._delay.reset(self.data.ctrl[self.index.actuator_ids])

    def snapshot(self) -> TwinState:
        """The simulation state now (a copy), for :meth:`restore`: stepping on from it is bit-identical."""
        data = mujoco.MjData(self.model)
        mujoco.mj_copyData(data, self.model, self.data)
        return TwinState(data, self._ticks, self._delay.state() if self._delay is not None else None)

    def restore(self, state: TwinState) -> None:
        """Return to a :meth:`snapshot` of this episode (the model's randomization is not part of it)."""
        mujoco.mj_copyData(self.data, self.model, state.data)
        self._ticks = state.ticks
        if self._delay is not None and state.delay is not None:
            self._delay.restore(state.delay)

    def joint_targets(self) -> F64:
        """Currently applied targets (6,) rad."""
        return self.data.ctrl[self.index.actuator_ids].copy()

    def joint_positions(self) -> F64:
        """Measured joint positions (6,) rad."""
        return self.data.qpos[self.index.qpos_adr].copy()

    def joint_velocities(self) -> F64:
        """Joint velocities (6,) rad/s."""
        return self.data.qvel[self.index.dof_adr].copy()

    def joint_efforts(self) -> F64:
        """Servo torques (6,) N·m."""
        return self.data.actuator_force[self.index.actuator_ids].copy()

    def set_joint_positions(self, q: ArrayLike) -> None:
        """Write the joint state (6,) rad without physics (replay / rendering); targets follow."""
        arr = np.asarray(q, dtype=np.float64)
        if arr.shape != (len(JOINT_NAMES),) or not np.all(np.isfinite(arr)):
            raise InvalidCommandError(f"joint positions must be 6 finite values, got {arr.tolist()}")
        self.data.qpos[self.index.qpos_adr] = arr
        self.data.qvel[self.index.dof_adr] = 0.0
        self.data.ctrl[self.index.actuator_ids] = np.clip(arr, self._ctrl_lo, self._ctrl_hi)
        mujoco.mj_forward(self.model, self.data)
        self._reset_servos()

    # ------------------------------------------------------------------ objects
    def _check_object(self, name: str) -> None:
        if name not in self.object_names:
            raise UnknownNameError(f"unknown object {name!r} (known: {list(self.object_names)})")

    def _write_pose(self, name: str, pos: F64, quat: F64) -> None:
        a = self.index.object_qpos_adr[name]
        self.data.qpos[a : a + 3] = pos
        self.data.qpos[a + 3 : a + 7] = np.asarray(quat) / np.linalg.norm(quat)
        d = self.index.object_dof_adr[name]
        self.data.qvel[d : d + 6] = 0.0

    def object_poses(self) -> dict[str, Pose]:
        """Pose of every object (:attr:`object_names`: ``{"vial": Pose, "rack": Pose}`` for the single vial);
        the rack origin is its base-plate bottom centre."""
        out = {}
        for name in self.object_names:
            a = self.index.object_qpos_adr[name]
            out[name] = Pose(self.data.qpos[a : a + 3].copy(), self.data.qpos[a + 3 : a + 7].copy())
        return out

    def set_object_pose(self, name: str, pose: Pose | tuple[ArrayLike, ArrayLike]) -> None:
        """Teleport an object (velocity zeroed) to position (3,) m / quaternion (4,) wxyz."""
        self._check_object(name)
        pos = np.asarray(pose[0], dtype=np.float64)
        quat = np.asarray(pose[1], dtype=np.float64)
        if pos.shape != (3,) or quat.shape != (4,) or not np.all(np.isfinite(pos)) or np.linalg.norm(quat) < 1e-9:
            raise InvalidCommandError(f"bad pose for {name}: position {pos.tolist()}, quaternion {quat.tolist()}")
        self._write_pose(name, pos, quat)
        mujoco.mj_forward(self.model, self.data)

    def jaw_contacts(self, vial_name: str | None = None) -> ContactState:
        """Which jaw pads currently touch ``vial_name`` (None: any vial)."""
        names = self.vial_names if vial_name is None else (vial_name,)
        for n in names:
            self._check_object(n)
        vial = {g for n in names for g in self.index.object_geoms[n]}
        fixed, moving = self.index.pad_geoms
        hit = {fixed: False, moving: False}
        for i in range(self.data.ncon):
            c = self.data.contact[i]
            g1, g2 = int(c.geom1), int(c.geom2)
            for pad, other in ((g1, g2), (g2, g1)):
                if pad in hit and other in vial and c.dist <= 0.0:
                    hit[pad] = True
        return ContactState(hit[fixed], hit[moving])

    def task_state(self) -> TaskState:
        """The success rules' input now: every vial's pose, the rack's, which vials are held, and for the single
        vial its target slot and the standing vials with their slots (:attr:`episode`)."""
        return self.state_of(self.object_poses(), self.held_vials())

    def state_of(self, poses: Mapping[str, tuple[ArrayLike, ArrayLike]], held: Sequence[bool]) -> TaskState:
        """The success rules' input for object ``poses`` by name (position (3,) m, quaternion (4,) wxyz, world:
        e.g. recorded or received ones) and the vials' ``held`` flags, in this twin's episode: the single vial's
        target slot and the standing vials' slots (:attr:`EpisodeSample.prefilled`); no targets with several
        vials (any slot counts, as before)."""
        ep = self.episode
        targets: tuple[int, ...] = ()
        standing: tuple[tuple[str, int], ...] = ()
        if ep is not None and not self.task.vials:
            targets = (ep.target_slot,)
            standing = tuple(zip(self.standing_names, ep.prefilled, strict=False))
        return TaskState.of(poses, self.vial_names, held, targets, standing)

    def held_vials(self) -> tuple[bool, ...]:
        """Per vial (:attr:`vial_names` order): held by both jaw pads."""
        if len(self.vial_names) == 1:
            return (self.jaw_contacts().both,)
        return tuple(self.jaw_contacts(n).both for n in self.vial_names)

    # ------------------------------------------------------------------ cameras
    def _renderer(self, width: int, height: int) -> mujoco.Renderer:
        key = (width, height)
        if key not in self._renderers:
            self._renderers[key] = mujoco.Renderer(self.model, height=height, width=width)
        return self._renderers[key]

    def _camera_id(self, camera: str) -> int:
        if camera not in self.index.cameras:
            raise UnknownNameError(f"unknown camera {camera!r} (known: {list(CAMERA_NAMES)})")
        return self.index.cameras[camera]

    def render(
        self, camera: str, *, depth: bool = False, width: int | None = None, height: int | None = None
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """RGB (H, W, 3) uint8 of ``camera``; with ``depth`` also depth (H, W) uint16 in mm (0 = no hit)."""
        cam = self._camera_id(camera)
        w, h = width or self.config.width, height or self.config.height
        r = self._renderer(w, h)
        r.update_scene(self.data, camera=cam)
        rgb = r.render().copy()
        if not depth:
            return rgb
        r.enable_depth_rendering()
        try:
            r.update_scene(self.data, camera=cam)
            d = r.render()
        finally:
            r.disable_depth_rendering()
        far = self.model.stat.extent * self.model.vis.map.zfar
        mm = np.where((d > 0) & (d < 0.99 * far), np.round(d * 1000.0), 0)
        return rgb, np.clip(mm, 0, 65535).astype(np.uint16)

    def camera_intrinsics(self, camera: str, width: int | None = None, height: int | None = None) -> F64:
        """Pinhole K (3, 3) in pixels for CameraInfo (square pixels, principal point at the image centre)."""
        cam = self._camera_id(camera)
        w, h = width or self.config.width, height or self.config.height
        fy = 0.5 * h / np.tan(np.radians(self.model.cam_fovy[cam]) / 2.0)
        return np.array([[fy, 0.0, w / 2.0], [0.0, fy, h / 2.0], [0.0, 0.0, 1.0]])

    def close(self) -> None:
        """Free the OpenGL contexts (call before exit to avoid teardown noise)."""
        for r in self._renderers.values():
            r.close()
        self._renderers.clear()

    def __enter__(self) -> Twin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def rest_footprint(model: mujoco.MjModel, index: SceneIndex, home: ArrayLike, below: float) -> F64:
    """Where the arm at ``home`` (6,) rad comes down onto the mat: the xy (K, 2) m, world, on a 2 mm grid, of
    its collision geometry's points (mesh vertices, other shapes' bounding-box corners) lower than ``below`` m.
    A vial drawn there would start inside the gripper (:func:`~.randomization.sample_episode` keeps clear)."""
    data = mujoco.MjData(model)
    data.qpos[index.qpos_adr] = np.asarray(home, dtype=np.float64)
    mujoco.mj_kinematics(model, data)
    objects = set(index.object_bodies.values())
    points = []
    for g in range(model.ngeom):
        body = int(model.geom_bodyid[g])
        if body == 0 or body in objects or not (model.geom_contype[g] or model.geom_conaffinity[g]):
            continue
        if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH:
            mesh = int(model.geom_dataid[g])
            local = model.mesh_vert[model.mesh_vertadr[mesh] : model.mesh_vertadr[mesh] + model.mesh_vertnum[mesh]]
        else:
            centre, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
            local = centre + half * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
        world = local @ data.geom_xmat[g].reshape(3, 3).T + data.geom_xpos[g]
        points.append(world[world[:, 2] < below, :2])
    xy = np.concatenate(points) if points else np.zeros((0, 2))
    return np.unique(np.round(xy / 0.002), axis=0) * 0.002


def _check_layout(sim: SimConfig, task: TaskConfig) -> None:
    """The single vial's fill order must suit the rack (:func:`~.randomization.fill_order`); a multi-vial layout
    must keep its vials ``min_vial_gap`` apart and have a target slot per vial."""
    if not task.vials:
        fill_order(sim, task)
        return
    slots = target_slot_choices(sim, task)
    if len(slots) < len(task.vials):
        raise ConfigError("task.slots", f"{len(slots)} target slots for {len(task.vials)} vials")
    nominal = tuple(VialSample(np.array(v.xy), v.yaw, 0.0) for v in task.vials)
    gap = vial_gap(nominal, sim.vial.half_length)
    if gap < task.min_vial_gap:
        raise ConfigError("task.vials", f"the nominal vials lie {gap:.3f} m apart, closer than min_vial_gap "
                          f"{task.min_vial_gap} m")  # fmt: skip
