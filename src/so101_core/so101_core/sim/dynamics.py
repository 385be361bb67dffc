"""Per-arm servo and joint dynamics of the twin: the nominal values and the identified ``config/arms/<id>.yaml``.

What one joint's dynamics hold (:class:`JointDynamics`), all that the twin can represent of a servo:

- ``kp`` (N·m/rad) and ``kv`` (N·m·s/rad): the servo's position loop, the MuJoCo position actuator's gain and
  derivative bias, ``force = kp · deadzone(target − q) − kv · q̇`` clipped to sim.yaml's ``force_limit``;
- ``armature`` (kg·m²): reflected rotor inertia (MJCF joint ``armature``);
- ``damping`` (N·m·s/rad) and ``frictionloss`` (N·m): passive viscous and Coulomb friction of the joint
  (MJCF joint ``damping`` / ``frictionloss``);
- ``deadband`` (rad): the position-error dead band of the servo (its backlash as the position loop sees it);
- ``latency_s`` (s): command-to-motion latency, from the command to the servo acting on it.

The nominal twin is what sim.yaml (gains) and the robot MJCF (joint parameters) say, with no dead band and no
latency. A per-arm file ``config/arms/<robot_id>.yaml`` (written by ``so101 sysid fit``) overrides only the
values it names, joint by joint::

    robot_id: my_so101_follower
    joints:                      # loaded by the twin: where the data say this arm differs from the nominal
      shoulder_pan: {kp: 24.1, latency_s: 0.031}
    fit: {...}                   # the identification behind it (estimates, uncertainty, residuals); not loaded
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import yaml

from so101_core.config.fields import Fields, load_yaml
from so101_core.config_paths import config_dir

from . import JOINT_NAMES
from .config import SimConfig
from .errors import ConfigError

ARMS_DIR = "arms"
PARAMETERS = ("kp", "kv", "armature", "damping", "frictionloss", "deadband", "latency_s")
#: Upper bounds a per-arm file is checked against (SI units as above); far beyond any STS3215.
_BOUNDS = {
    "kp": 1e4,
    "kv": 1e3,
    "armature": 1.0,
    "damping": 1e2,
    "frictionloss": 10.0,
    "deadband": 0.2,
    "latency_s": 0.5,
}
_ROBOT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class JointDynamics:
    """One joint's servo loop and joint parameters (units in the module docstring)."""

    kp: float
    kv: float
    armature: float
    damping: float
    frictionloss: float
    deadband: float = 0.0
    latency_s: float = 0.0

    def __post_init__(self) -> None:
        for name in PARAMETERS:
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 <= value <= _BOUNDS[name]):
                raise ConfigError(name, f"must be in [0, {_BOUNDS[name]:g}], got {value}")
        if self.kp <= 0.0:
            raise ConfigError("kp", f"must be > 0, got {self.kp}")

    def vector(self) -> np.ndarray:
        """(7,) the parameters in :data:`PARAMETERS` order."""
        return np.array([getattr(self, n) for n in PARAMETERS])

    @classmethod
    def from_vector(cls, values: np.ndarray) -> JointDynamics:
        return cls(**{n: float(v) for n, v in zip(PARAMETERS, values, strict=True)})


@dataclass(frozen=True)
class ArmDynamics:
    """The six joints' dynamics, :data:`JOINT_NAMES` order; ``robot_id`` names the arm ("" = nominal)."""

    joints: tuple[JointDynamics, ...]
    robot_id: str = ""

    def __post_init__(self) -> None:
        if len(self.joints) != len(JOINT_NAMES):
            raise ConfigError("joints", f"need {len(JOINT_NAMES)} joints, got {len(self.joints)}")

    def __getitem__(self, joint: str) -> JointDynamics:
        return self.joints[JOINT_NAMES.index(joint)]

    def column(self, name: str) -> np.ndarray:
        """(6,) one parameter over the joints."""
        return np.array([getattr(j, name) for j in self.joints])

    def with_joint(self, joint: str, dynamics: JointDynamics) -> ArmDynamics:
        out = list(self.joints)
        out[JOINT_NAMES.index(joint)] = dynamics
        return replace(self, joints=tuple(out))

    @property
    def has_servo_effects(self) -> bool:
        """True when a joint has a dead band or a latency (the twin then steps its servo loop itself)."""
        return bool(np.any(self.column("deadband") > 0) or np.any(self.column("latency_s") > 0))

    def overrides(self, nominal: ArmDynamics) -> dict[str, dict[str, float]]:
        """``{joint: {parameter: value}}`` where this differs from ``nominal``."""
        out: dict[str, dict[str, float]] = {}
        for name, mine, nom in zip(JOINT_NAMES, self.joints, nominal.joints, strict=True):
            diff = {p: float(getattr(mine, p)) for p in PARAMETERS if getattr(mine, p) != getattr(nom, p)}
            if diff:
                out[name] = diff
        return out


def nominal_dynamics(config: SimConfig, model: mujoco.MjModel | None = None) -> ArmDynamics:
    """The nominal twin: sim.yaml's actuator gains and the MJCF's joint armature, damping and frictionloss
    (``model``: a compiled scene or arm model; built from ``config`` when not given)."""
    if model is None:
        from .scene import build_arm_model

        model = build_arm_model(config)
    joints = []
    for name, act in zip(JOINT_NAMES, config.robot.actuators, strict=True):
        dof = int(model.jnt_dofadr[model.joint(config.robot.mjcf_joint(name)).id])
        joints.append(
            JointDynamics(
                kp=act.kp,
                kv=act.kv,
                armature=float(model.dof_armature[dof]),
                damping=float(model.dof_damping[dof]),
                frictionloss=float(model.dof_frictionloss[dof]),
            )
        )
    return ArmDynamics(tuple(joints))


def apply_to_spec(spec: mujoco.MjSpec, config: SimConfig, dynamics: ArmDynamics) -> None:
    """Write gains and joint parameters of ``dynamics`` into a configured robot spec (actuators already set
    up from sim.yaml); the dead band and the latency are the servo loop's (:mod:`.servo`)."""
    by_joint = {a.target: a for a in spec.actuators}
    for name, dyn in zip(JOINT_NAMES, dynamics.joints, strict=True):
        mj = config.robot.mjcf_joint(name)
        joint = spec.joint(mj)
        joint.armature = dyn.armature
        damping = np.zeros(3)  # MuJoCo >= 3.3: polynomial damping coefficients, the first the linear one
        damping[0] = dyn.damping
        joint.damping = damping
        joint.frictionloss = dyn.frictionloss
        act = by_joint[mj]
        gain = np.zeros(10)
        gain[0] = dyn.kp
        bias = np.zeros(10)
        bias[1], bias[2] = -dyn.kp, -dyn.kv
        act.gainprm = gain
        act.biasprm = bias


def arm_file(robot_id: str, directory: str | Path | None = None) -> Path:
    """``<config>/arms/<robot_id>.yaml`` (``directory``: the arms directory instead)."""
    check_robot_id(robot_id)
    base = Path(directory) if directory is not None else config_dir() / ARMS_DIR
    return base / f"{robot_id}.yaml"


def check_robot_id(robot_id: str) -> None:
    if not _ROBOT_ID.match(robot_id or ""):
        raise ConfigError("robot_id", f"must be letters, digits, '_', '-' or '.', got {robot_id!r}")


def load_arm_dynamics(path: str | Path, nominal: ArmDynamics) -> ArmDynamics:
    """Read a per-arm file: ``nominal`` with the values its ``joints`` section names (errors name the field)."""
    f = load_yaml(path, "arm", ConfigError)
    try:
        return parse_arm_dynamics(f, nominal)
    except ConfigError as exc:
        raise ConfigError(exc.field, exc.message, file=str(path)) from None


def arm_dynamics(robot_id: str, config: SimConfig, path: str | Path = "") -> ArmDynamics | None:
    """The twin of arm ``robot_id``: ``path`` (default ``<config>/arms/<robot_id>.yaml``) over the nominal;
    ``None`` for an empty ``robot_id`` (the nominal twin). A named arm without a file is an error."""
    if not robot_id and not path:
        return None
    file = Path(path) if path else arm_file(robot_id)
    if not file.is_file():
        raise ConfigError(
            "robot_id",
            f"no identified twin for arm {robot_id!r}: {file} does not exist "
            "(record it with `so101 sysid record`, fit it with `so101 sysid fit BAG --out " + str(file) + "`)",
        )
    dynamics = load_arm_dynamics(file, nominal_dynamics(config))
    if robot_id and dynamics.robot_id != robot_id:
        raise ConfigError(
            "robot_id", f"{file} is the twin of {dynamics.robot_id!r}, not of {robot_id!r}", file=str(file)
        )
    return dynamics


def parse_arm_dynamics(f: Fields | Mapping[str, Any], nominal: ArmDynamics) -> ArmDynamics:
    """Validate a parsed per-arm mapping (see :func:`load_arm_dynamics`)."""
    if not isinstance(f, Fields):
        f = Fields(f, "arm", error=ConfigError)
    robot_id = f.text("robot_id")
    check_robot_id(robot_id)
    joints_f = f.sub("joints", {})
    out = []
    for name, nom in zip(JOINT_NAMES, nominal.joints, strict=True):
        jf = joints_f.sub(name, {})
        values = {p: jf.num(p, getattr(nom, p), lo=0.0, hi=_BOUNDS[p]) for p in PARAMETERS}
        jf.finish()
        try:
            out.append(JointDynamics(**values))
        except ConfigError as exc:
            raise ConfigError(jf.field(exc.field), exc.message) from None
    joints_f.finish()
    fit = f.raw("fit", {})
    if not isinstance(fit, Mapping):
        raise ConfigError(f.field("fit"), f"expected a mapping, got {type(fit).__name__}")
    f.finish()
    return ArmDynamics(tuple(out), robot_id)


def save_arm_dynamics(
    path: str | Path,
    dynamics: ArmDynamics,
    nominal: ArmDynamics,
    fit: Mapping[str, Any] | None = None,
    header: str = "",
) -> Path:
    """Write the per-arm file: the values that differ from ``nominal`` under ``joints``, ``fit`` as given."""
    check_robot_id(dynamics.robot_id)
    doc: dict[str, Any] = {"robot_id": dynamics.robot_id, "joints": dynamics.overrides(nominal)}
    if fit:
        doc["fit"] = dict(fit)
    text = "".join(f"# {line}\n" for line in header.splitlines()) + yaml.safe_dump(doc, sort_keys=False, width=120)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return out
