"""Compose the task scene with ``MjSpec``: SO-101 from the installed wheel + mat, vial, rack, lights, cameras.

Collision filtering (contype/conaffinity bits) keeps the convex hulls of the gripper meshes — larger than
the visible jaws — away from the objects: only the two fingertip pads touch the vial and the rack, so
nothing is pushed before visible contact. All object and pad contacts use ``contact.margin`` (≈ 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from so101_core.geometry import look_at, mat_to_quat, quat_from_axis_angle, quat_mul, quat_to_mat, yaw_quat
from so101_core.package_files import package_file

from . import CAMERA_NAMES, JOINT_NAMES
from .config import CameraConfig, SimConfig
from .dynamics import ArmDynamics, apply_to_spec
from .errors import SceneError
from .render_meshes import lighten_visual_meshes

# Collision bits.
ARM, PAD, OBJECT, ENV, GRIPPER = 1, 2, 4, 8, 16

VIAL, RACK, STANDING = "vial", "rack", "standing_vial"
OBJECT_NAMES: tuple[str, ...] = (VIAL, RACK)  # the single-vial scene's task objects (standing vials besides)
PARK_DEPTH = 0.5  # m below the mat where an unused standing vial waits (no collisions, gravity compensated)


def vial_names(count: int) -> tuple[str, ...]:
    """Body names of ``count`` vials: ``("vial",)`` alone, ``("vial_0", "vial_1", ...)`` for several."""
    if count < 1:
        raise SceneError(f"a scene needs at least one vial, got {count}")
    return (VIAL,) if count == 1 else tuple(f"{VIAL}_{i}" for i in range(count))


def is_vial(name: str) -> bool:
    """True for a vial's body name (:func:`vial_names`)."""
    return name == VIAL or (name.startswith(VIAL + "_") and name[len(VIAL) + 1 :].isdigit())


def standing_names(count: int) -> tuple[str, ...]:
    """Body names of ``count`` standing vials (pre-filled slots): ``("standing_vial_0", ...)``. Not vials
    to place (:func:`is_vial` is false for them)."""
    return tuple(f"{STANDING}_{i}" for i in range(count))


def is_standing(name: str) -> bool:
    """True for a standing vial's body name (:func:`standing_names`)."""
    return name.startswith(STANDING + "_") and name[len(STANDING) + 1 :].isdigit()


def parked_position(k: int) -> np.ndarray:
    """Where unused standing vial ``k`` waits (3,) m, world: under the mat, out of every camera's view."""
    return np.array([0.2 + 0.05 * k, 0.0, -PARK_DEPTH])


def vial_lying_quat(yaw: float, roll: float) -> np.ndarray:
    """Orientation (wxyz) of the lying vial: up axis pointing at ``yaw`` rad, rolled ``roll`` rad about it."""
    lying = quat_mul(quat_from_axis_angle((0.0, 1.0, 0.0), np.pi / 2), quat_from_axis_angle((0, 0, 1.0), roll))
    return quat_mul(yaw_quat(yaw), lying)


def _robot_spec(cfg: SimConfig) -> mujoco.MjSpec:
    try:
        path = package_file(cfg.robot.mjcf_package, cfg.robot.mjcf_resource)
    except ModuleNotFoundError as exc:
        raise SceneError(f"robot MJCF package {cfg.robot.mjcf_package!r} is not installed") from exc
    except ValueError as exc:
        raise SceneError(f"robot MJCF package: {exc}") from exc
    if not path.is_file():
        raise SceneError(f"robot MJCF {cfg.robot.mjcf_resource!r} not found in {cfg.robot.mjcf_package}")
    return mujoco.MjSpec.from_file(str(path))


def _configure_robot(spec: mujoco.MjSpec, cfg: SimConfig) -> None:
    for name in JOINT_NAMES:
        mj = cfg.robot.mjcf_joint(name)
        if spec.joint(mj) is None:
            raise SceneError(f"joint {mj!r} (for {name}) not in the robot MJCF")
    by_joint = {a.target: a for a in spec.actuators}
    for name, act_cfg in zip(JOINT_NAMES, cfg.robot.actuators, strict=True):
        act = by_joint.get(cfg.robot.mjcf_joint(name))
        if act is None:
            act = spec.add_actuator(name=name, target=cfg.robot.mjcf_joint(name))
            act.trntype = mujoco.mjtTrn.mjTRN_JOINT
            joint = spec.joint(cfg.robot.mjcf_joint(name))
            act.ctrlrange = joint.range
            act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
        act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
        gain = np.zeros(10)
        gain[0] = act_cfg.kp
        bias = np.zeros(10)
        bias[1], bias[2] = -act_cfg.kp, -act_cfg.kv
        act.gainprm = gain
        act.biasprm = bias
        act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        act.forcerange = [-act_cfg.force_limit, act_cfg.force_limit]

    pads = set(cfg.robot.jaw_pads)
    grip_bodies = set(cfg.robot.gripper_bodies)
    found_pads = set()
    for geom in spec.geoms:
        if geom.name in pads:
            found_pads.add(geom.name)
            geom.contype, geom.conaffinity = PAD, OBJECT | ENV
            geom.margin = cfg.contact.margin
            geom.friction = list(cfg.contact.pad_friction)
            geom.condim = cfg.contact.pad_condim
            geom.solref = list(cfg.contact.solref)
            geom.solimp = list(cfg.contact.solimp)
        elif geom.contype or geom.conaffinity:
            if geom.parent.name in grip_bodies:
                geom.contype, geom.conaffinity = GRIPPER, ENV
            else:
                geom.contype, geom.conaffinity = ARM, OBJECT | ENV
    if found_pads != pads:
        raise SceneError(f"jaw pad geoms {sorted(pads - found_pads)} not in the robot MJCF")


def _object_geom(body: mujoco.MjsBody, cfg: SimConfig, **kw: object) -> mujoco.MjsGeom:
    g = body.add_geom(**kw)
    g.contype, g.conaffinity = OBJECT, OBJECT | ARM | PAD | ENV
    g.margin = cfg.contact.margin
    g.solref = list(cfg.contact.solref)
    g.solimp = list(cfg.contact.solimp)
    return g


def _add_vial(spec: mujoco.MjSpec, cfg: SimConfig, name: str, standing: int | None = None) -> None:
    """A vial lying at its nominal pose, or (``standing`` = k) standing vial k parked (gravity compensated:
    :class:`~.randomization.ModelRandomizer` switches that and its collisions with its use per episode)."""
    v = cfg.vial
    if standing is None:
        vb = spec.worldbody.add_body(
            name=name, pos=[v.xy[0], v.xy[1], v.radius], quat=list(vial_lying_quat(v.yaw, v.roll))
        )
    else:
        vb = spec.worldbody.add_body(name=name, pos=list(parked_position(standing)), gravcomp=1.0)
    vb.add_freejoint(name=name)
    g = _object_geom(
        vb,
        cfg,
        name=name,
        type=mujoco.mjtGeom.mjGEOM_CYLINDER,
        size=[v.radius, v.half_length, 0.0],
        mass=v.mass,
        material="vial",
    )
    g.friction = list(v.friction)
    g.condim = v.condim
    cap = vb.add_geom(
        name=f"{name}_cap",
        type=mujoco.mjtGeom.mjGEOM_CYLINDER,
        size=[v.radius * 1.05, 0.008, 0.0],
        pos=[0.0, 0.0, v.half_length - 0.008],
        material="vial_cap",
        contype=0,
        conaffinity=0,
        density=0.0,
    )
    cap.group = 1


def _add_objects(spec: mujoco.MjSpec, cfg: SimConfig, vials: tuple[str, ...], standing: tuple[str, ...]) -> None:
    world = spec.worldbody
    mat = cfg.mat
    world.add_geom(
        name="table",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        size=[2.0, 2.0, 0.05],
        pos=[0.0, 0.0, -mat.thickness],
        material="table",
        contype=ENV,
        conaffinity=ARM | PAD | OBJECT | GRIPPER,
    )
    mg = world.add_geom(
        name="mat",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[mat.size[0] / 2, mat.size[1] / 2, mat.thickness / 2],
        pos=[mat.center[0], mat.center[1], -mat.thickness / 2],
        material="mat",
        friction=list(mat.friction),
        contype=ENV,
        conaffinity=ARM | PAD | OBJECT | GRIPPER,
    )
    mg.margin = cfg.contact.margin
    for name in vials:
        _add_vial(spec, cfg, name)
    for k, name in enumerate(standing):
        _add_vial(spec, cfg, name, standing=k)

    r = cfg.rack
    rb = world.add_body(name=RACK, pos=[r.xy[0], r.xy[1], 0.0], quat=list(yaw_quat(r.yaw)))
    rb.add_freejoint(name=RACK)
    half = r.size / 2
    boxes: list[tuple[list[float], list[float]]] = [([half, half, r.base_height / 2], [0, 0, r.base_height / 2])]
    zc = r.base_height + r.wall_height / 2
    for k in range(r.slots + 1):
        c = -half + r.wall_thickness / 2 + k * r.slot_pitch
        boxes.append(([half, r.wall_thickness / 2, r.wall_height / 2], [0.0, c, zc]))
        boxes.append(([r.wall_thickness / 2, half, r.wall_height / 2], [c, 0.0, zc]))
    marked = 2 * r.slots + 2  # the +x outer wall (k = slots, the wall along y): the orientation marker
    vols = np.array([8 * s[0] * s[1] * s[2] for s, _ in boxes])
    for i, ((size, pos), vol) in enumerate(zip(boxes, vols, strict=True)):
        g = _object_geom(
            rb,
            cfg,
            name=f"rack_{i}",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=size,
            pos=pos,
            mass=float(r.mass * vol / vols.sum()),
            material="rack_marker" if i == marked else "rack",
        )
        g.friction = list(r.friction)
        g.condim = 3
    # the floor of the cells along the marked wall, in its colour (visual only: 1 mm, no mass, no contacts)
    row = (r.slots - 1) / 2.0 * r.slot_pitch
    floor = rb.add_geom(
        name="rack_marker_floor",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[r.slot_width / 2, half - r.wall_thickness, 0.0005],
        pos=[row, 0.0, r.base_height + 0.0005],
        material="rack_marker",
        contype=0,
        conaffinity=0,
        density=0.0,
    )
    floor.group = 1


def _camera_pose(spec: mujoco.MjSpec, cfg: SimConfig, cam: CameraConfig) -> tuple[np.ndarray, np.ndarray]:
    """Camera position and quaternion in its parent body (world, or the ee site's body)."""
    pos, at, up = (np.asarray(x, dtype=np.float64) for x in (cam.pos, cam.lookat, cam.up))
    rot = look_at(pos, at, up)
    if cam.frame == "world":
        return pos, mat_to_quat(rot)
    site = spec.site(cfg.robot.ee_site)
    r_site = quat_to_mat(np.asarray(site.quat, dtype=np.float64))
    p_site = np.asarray(site.pos, dtype=np.float64)
    return p_site + r_site @ pos, mat_to_quat(r_site @ rot)


def _add_cameras_and_lights(spec: mujoco.MjSpec, cfg: SimConfig) -> None:
    site = spec.site(cfg.robot.ee_site)
    if site is None:
        raise SceneError(f"end-effector site {cfg.robot.ee_site!r} not in the robot MJCF")
    for cam in cfg.cameras:
        pos, quat = _camera_pose(spec, cfg, cam)
        parent = spec.worldbody if cam.frame == "world" else site.parent
        parent.add_camera(name=cam.name, pos=list(pos), quat=list(quat), fovy=cam.fovy)
    for i, light in enumerate(cfg.lights):
        spec.worldbody.add_light(
            name=f"light{i}",
            pos=list(light.pos),
            dir=list(light.dir),
            diffuse=list(light.diffuse),
            specular=list(light.specular),
            castshadow=light.castshadow,
        )
    spec.visual.headlight.ambient = list(cfg.ambient)
    spec.visual.headlight.diffuse = [0.1, 0.1, 0.1]
    spec.visual.headlight.specular = [0.0, 0.0, 0.0]
    spec.visual.global_.offwidth = max(cfg.width, 640)
    spec.visual.global_.offheight = max(cfg.height, 480)
    spec.visual.quality.offsamples = 0  # MSAA off: CPU rendering speed


def _add_assets(spec: mujoco.MjSpec, cfg: SimConfig) -> None:
    spec.add_texture(
        name="table",
        type=mujoco.mjtTexture.mjTEXTURE_2D,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
        rgb1=[0.55, 0.45, 0.35],
        rgb2=[0.50, 0.40, 0.30],
        width=256,
        height=256,
    )
    tm = spec.add_material(name="table", rgba=[1.0, 1.0, 1.0, 1.0])
    tm.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "table"
    tm.texrepeat = [8.0, 8.0]
    spec.add_material(name="mat", rgba=list(cfg.mat.rgba))
    spec.add_material(name="vial", rgba=list(cfg.vial.rgba), specular=0.6, shininess=0.8)
    spec.add_material(name="vial_cap", rgba=[0.85, 0.15, 0.15, 1.0])
    spec.add_material(name="rack", rgba=list(cfg.rack.rgba))
    spec.add_material(name="rack_marker", rgba=list(cfg.rack.marker_rgba))


def _physics_options(spec: mujoco.MjSpec, cfg: SimConfig) -> None:
    spec.option.timestep = cfg.physics.timestep
    spec.option.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{cfg.physics.integrator.upper()}")
    spec.option.cone = getattr(mujoco.mjtCone, f"mjCONE_{cfg.physics.cone.upper()}")
    spec.option.impratio = cfg.physics.impratio
    spec.option.iterations = cfg.physics.iterations
    spec.option.noslip_iterations = cfg.physics.noslip_iterations


def build_spec(cfg: SimConfig, vials: int = 1, standing: int = 0, dynamics: ArmDynamics | None = None) -> mujoco.MjSpec:
    """Return the composed (uncompiled) scene spec with ``vials`` vials (:func:`vial_names`) and ``standing``
    standing vials (:func:`standing_names`); ``dynamics`` replaces the nominal servo gains and joint parameters
    (an identified arm, :mod:`.dynamics`)."""
    spec = _robot_spec(cfg)
    spec.modelname = "so101_vial_rack"
    _physics_options(spec, cfg)
    _configure_robot(spec, cfg)
    if cfg.robot.render_mesh_cell_m > 0:
        lighten_visual_meshes(spec, cfg.robot.render_mesh_cell_m)
    if dynamics is not None:
        apply_to_spec(spec, cfg, dynamics)
    _add_assets(spec, cfg)
    _add_objects(spec, cfg, vial_names(vials), standing_names(standing))
    _add_cameras_and_lights(spec, cfg)
    return spec


def build_model(
    cfg: SimConfig, vials: int = 1, standing: int = 0, dynamics: ArmDynamics | None = None
) -> mujoco.MjModel:
    """Compile the scene for ``cfg`` with ``vials`` vials and ``standing`` standing vials (offline: assets come
    from the installed wheel); ``dynamics``: an identified arm's parameters."""
    spec = build_spec(cfg, vials, standing, dynamics)
    try:
        return spec.compile()
    except ValueError as exc:
        raise SceneError(f"scene does not compile: {exc}") from exc


def build_arm_model(cfg: SimConfig, dynamics: ArmDynamics | None = None) -> mujoco.MjModel:
    """The arm alone (no mat, objects, cameras; contacts off), with sim.yaml's physics: the model of system
    identification, where the arm moves in free space."""
    spec = _robot_spec(cfg)
    spec.modelname = "so101_arm"
    _physics_options(spec, cfg)
    _configure_robot(spec, cfg)
    if dynamics is not None:
        apply_to_spec(spec, cfg, dynamics)
    try:
        model = spec.compile()
    except ValueError as exc:
        raise SceneError(f"arm model does not compile: {exc}") from exc
    model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    return model


@dataclass(frozen=True)
class SceneIndex:
    """Ids and addresses into a compiled scene model (all arrays in :data:`JOINT_NAMES` order)."""

    qpos_adr: np.ndarray  # (6,) int
    dof_adr: np.ndarray  # (6,) int
    actuator_ids: np.ndarray  # (6,) int
    ee_site: int
    ee_body: int
    pad_geoms: tuple[int, int]
    object_bodies: dict[str, int]
    object_qpos_adr: dict[str, int]  # first of 7 (xyz + wxyz)
    object_dof_adr: dict[str, int]  # first of 6
    object_geoms: dict[str, tuple[int, ...]]
    mat_geom: int
    cameras: dict[str, int]
    lights: tuple[int, ...]
    robot_materials: tuple[int, ...]
    object_materials: dict[str, int]
    standing: tuple[str, ...] = ()  # the standing vials among the objects (:func:`standing_names` order)

    @staticmethod
    def of(model: mujoco.MjModel, cfg: SimConfig, objects: tuple[str, ...] = OBJECT_NAMES) -> SceneIndex:
        """Index ``model``; ``objects``: its free bodies (the vials of :func:`vial_names`, the standing vials of
        :func:`standing_names`, then the rack)."""

        def jid(name: str) -> int:
            return int(model.joint(cfg.robot.mjcf_joint(name)).id)

        joints = [jid(n) for n in JOINT_NAMES]
        acts = []
        for j in joints:
            match = np.flatnonzero((model.actuator_trnid[:, 0] == j) & (model.actuator_trntype == 0))
            acts.append(int(match[0]))
        site = int(model.site(cfg.robot.ee_site).id)
        obj_bodies = {n: int(model.body(n).id) for n in objects}
        obj_geoms = {
            n: tuple(
                int(g)
                for g in np.flatnonzero(model.geom_bodyid == b)
                if model.geom_contype[g] != 0 or model.geom_conaffinity[g] != 0
            )
            for n, b in obj_bodies.items()
        }
        scene_mats = {"table", "mat", "vial", "vial_cap", "rack", "rack_marker"}
        robot_mats = tuple(i for i in range(model.nmat) if model.material(i).name not in scene_mats)
        return SceneIndex(
            qpos_adr=model.jnt_qposadr[joints].copy(),
            dof_adr=model.jnt_dofadr[joints].copy(),
            actuator_ids=np.asarray(acts),
            ee_site=site,
            ee_body=int(model.site_bodyid[site]),
            pad_geoms=(int(model.geom(cfg.robot.jaw_pads[0]).id), int(model.geom(cfg.robot.jaw_pads[1]).id)),
            object_bodies=obj_bodies,
            object_qpos_adr={n: int(model.jnt_qposadr[model.joint(n).id]) for n in objects},
            object_dof_adr={n: int(model.jnt_dofadr[model.joint(n).id]) for n in objects},
            object_geoms=obj_geoms,
            mat_geom=int(model.geom("mat").id),
            cameras={n: int(model.camera(n).id) for n in CAMERA_NAMES},
            lights=tuple(range(model.nlight)),
            robot_materials=robot_mats,
            object_materials={n: int(model.material(n).id) for n in ("mat", "vial", "rack", "rack_marker")},
            standing=tuple(n for n in objects if is_standing(n)),
        )
