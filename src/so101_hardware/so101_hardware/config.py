"""Loader of ``config/robot.yaml`` (its ``robot:`` section) into frozen dataclasses; errors name the field."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from so101_core.config import ConfigError as BaseConfigError
from so101_core.control.safety import SafetyConfig, parse_safety_config
from so101_core.robot_spec import JOINT_NAMES

from .calibration import ArmCalibration, Role, find_calibration, load_calibration
from .errors import ConfigError
from .feetech.bus import BusConfig
from .robot import ArmConfig


@dataclass(frozen=True)
class ArmEntry:
    """One arm of ``robot.yaml``: LeRobot id, optional calibration path, its :class:`ArmConfig`."""

    robot_id: str
    calibration: Path | None
    arm: ArmConfig
    role: Role

    def load_calibration(self, env: Mapping[str, str] | None = None) -> ArmCalibration:
        """The explicit calibration file if set, else LeRobot's file for ``robot_id``."""
        path = self.calibration or find_calibration(self.robot_id, self.role, env)
        return load_calibration(path)


SHUTDOWN_BEHAVIORS = ("hold", "torque_off", "rest_then_torque_off")


@dataclass(frozen=True)
class ShutdownConfig:
    """What the follower does when the driver stops: ``behavior`` one of :data:`SHUTDOWN_BEHAVIORS`;
    ``rest_pose`` (6,) rad and ``rest_ease_s`` s for ``rest_then_torque_off``."""

    behavior: str = "torque_off"
    rest_pose: tuple[float, ...] = (0.0,) * len(JOINT_NAMES)
    rest_ease_s: float = 2.0

    def __post_init__(self) -> None:
        if self.behavior not in SHUTDOWN_BEHAVIORS:
            raise ConfigError("shutdown", f"must be one of {list(SHUTDOWN_BEHAVIORS)}, got {self.behavior!r}")
        if len(self.rest_pose) != len(JOINT_NAMES) or not all(math.isfinite(v) for v in self.rest_pose):
            raise ConfigError("rest_pose", f"needs {len(JOINT_NAMES)} finite values (rad)")
        if not (math.isfinite(self.rest_ease_s) and self.rest_ease_s >= 0):
            raise ConfigError("rest_ease_s", f"must be >= 0, got {self.rest_ease_s}")

    @property
    def torque_off(self) -> bool:
        return self.behavior != "hold"


@dataclass(frozen=True)
class RobotHardwareConfig:
    """The ``robot:`` section: follower, optional leader, conversion hooks and safety."""

    follower: ArmEntry
    leader: ArmEntry | None
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    shutdown: ShutdownConfig = field(default_factory=ShutdownConfig)


def _get(section: Mapping[str, Any], key: str, where: str, kind: Any, default: Any = ...) -> Any:
    if key not in section:
        if default is ...:
            raise ConfigError(f"{where}.{key}", "is required")
        return default
    value = section[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kind):
        raise ConfigError(f"{where}.{key}", f"has the wrong type: {value!r}")
    return value


def _section(data: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ConfigError(where, "must be a mapping")
    return data


def _joint_map(data: Any, where: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, value in _section(data or {}, where).items():
        if name not in JOINT_NAMES:
            raise ConfigError(f"{where}.{name}", f"unknown joint; expected one of {list(JOINT_NAMES)}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}.{name}", f"must be a number, got {value!r}")
        out[name] = float(value)
    return out


def _arm(data: Any, where: str, role: Role, signs: dict[str, float], offsets: dict[str, float]) -> ArmEntry:
    sec = _section(data, where)
    bus_sec = _section(_get(sec, "bus", where, Mapping), f"{where}.bus")
    port = _get(bus_sec, "port", f"{where}.bus", str)
    baudrate = _get(bus_sec, "baudrate", f"{where}.bus", int, 1_000_000)
    timeout_ms = float(_get(bus_sec, "timeout_ms", f"{where}.bus", int | float, 20.0))
    retries = _get(bus_sec, "retries", f"{where}.bus", int, 2)
    try:
        bus = BusConfig(port=port, baudrate=baudrate, timeout_ms=timeout_ms, retries=retries)
    except ConfigError as exc:
        raise ConfigError(f"{where}.{exc.field}", exc.message) from None
    calib = _get(sec, "calibration", where, (str, type(None)), None)
    if "disable_torque_on_disconnect" in sec:
        raise ConfigError(
            f"{where}.disable_torque_on_disconnect",
            f"was replaced by {where}.shutdown ({' | '.join(SHUTDOWN_BEHAVIORS)})",
        )
    shutdown = _shutdown(sec, where) if role == "follower" else ShutdownConfig("hold")
    max_torque = _get(sec, "max_torque_nm", where, int | float, ArmConfig.max_torque_nm)
    if not (math.isfinite(max_torque) and max_torque > 0):
        raise ConfigError(f"{where}.max_torque_nm", f"must be > 0, got {max_torque}")
    arm = ArmConfig(
        bus=bus,
        torque_on_connect=_get(sec, "torque_on_connect", where, bool, role == "follower"),
        disable_torque_on_disconnect=shutdown.torque_off,
        sync_calibration=_get(sec, "sync_calibration", where, bool, True),
        signs=signs,
        offsets_rad=offsets,
        max_torque_nm=float(max_torque),
    )
    return ArmEntry(_get(sec, "id", where, str), Path(calib).expanduser() if calib else None, arm, role)


def _shutdown(sec: Mapping[str, Any], where: str) -> ShutdownConfig:
    behavior = _get(sec, "shutdown", where, str, ShutdownConfig.behavior)
    rest = _get(sec, "rest_pose", where, list, list(ShutdownConfig.rest_pose))
    ease = _get(sec, "rest_ease_s", where, int | float, ShutdownConfig.rest_ease_s)
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in rest):
        raise ConfigError(f"{where}.rest_pose", f"must be numbers (rad), got {rest!r}")
    try:
        return ShutdownConfig(behavior, tuple(float(v) for v in rest), float(ease))
    except ConfigError as exc:
        raise ConfigError(f"{where}.{exc.field}", exc.message) from None


def parse_robot_config(data: Any) -> RobotHardwareConfig:
    """Validate the decoded YAML document (a mapping with a ``robot:`` key)."""
    robot = _section(_section(data, "document").get("robot"), "robot")
    signs = _joint_map(robot.get("joint_sign"), "robot.joint_sign")
    for name, sign in signs.items():
        if sign not in (1.0, -1.0):
            raise ConfigError(f"robot.joint_sign.{name}", f"must be 1 or -1, got {sign}")
    offsets = _joint_map(robot.get("joint_offset_rad"), "robot.joint_offset_rad")
    follower = _arm(_get(robot, "follower", "robot", Mapping), "robot.follower", "follower", signs, offsets)
    leader_data = robot.get("leader")
    leader = _arm(leader_data, "robot.leader", "leader", signs, offsets) if leader_data is not None else None
    try:
        safety = parse_safety_config(robot.get("safety"))
    except BaseConfigError as exc:
        raise ConfigError(exc.field, exc.message) from None
    shutdown = _shutdown(_get(robot, "follower", "robot", Mapping), "robot.follower")
    return RobotHardwareConfig(follower, leader, safety, shutdown)


def load_robot_config(path: str | os.PathLike[str]) -> RobotHardwareConfig:
    """Read and validate ``robot.yaml``."""
    fpath = Path(path)
    try:
        data = yaml.safe_load(fpath.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError("robot", f"cannot read the robot config: {exc}", file=str(fpath)) from exc
    try:
        return parse_robot_config(data)
    except ConfigError as exc:
        raise ConfigError(exc.field, exc.message, file=str(fpath)) from None
