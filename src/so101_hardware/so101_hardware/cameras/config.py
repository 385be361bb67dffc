"""Loader of ``config/cameras.yaml`` (its ``cameras:`` section) into frozen camera configs; errors name the field
(``cameras.side.serial``), and a factory from a config to its :class:`Camera`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from .base import BACKENDS, Camera, CameraConfig, OpenCVCameraConfig, RealSenseCameraConfig
from .realsense import DeviceSource

CONFIG_TYPES: dict[str, type[CameraConfig]] = {"opencv": OpenCVCameraConfig, "realsense": RealSenseCameraConfig}
_TUPLE_FIELDS = ("k", "distortion")


def _field_types(cls: type[CameraConfig]) -> dict[str, str]:
    return {f.name: str(f.type) for f in dataclasses.fields(cls)}


def _check(value: Any, kind: str, path: str) -> Any:
    """``value`` converted to the dataclass field type ``kind`` (its annotation string); ConfigError otherwise."""
    if "tuple" in kind:
        if value is None and "None" in kind:
            return None
        if not isinstance(value, list | tuple) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value
        ):
            raise ConfigError(path, f"must be a list of numbers, got {value!r}")
        return tuple(float(v) for v in value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(path, f"must be true or false, got {value!r}")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(path, f"must be an integer, got {value!r}")
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(path, f"must be a number, got {value!r}")
        return float(value)
    if isinstance(value, int) and not isinstance(value, bool):  # a serial number written without quotes
        return str(value)
    if not isinstance(value, str):
        raise ConfigError(path, f"must be a string, got {value!r}")
    return value


def camera_config(key: str, data: Any) -> CameraConfig:
    """The validated config of camera ``key`` from its YAML mapping (``backend`` selects the type).

    Raises:
        ConfigError: ``field`` names the offending entry (``cameras.<key>.<field>``).
    """
    where = f"cameras.{key}"
    if not isinstance(data, Mapping):
        raise ConfigError(where, "must be a mapping")
    backend = data.get("backend")
    if backend not in BACKENDS:
        problem = "is required" if backend is None else f"is unknown: {backend!r}"
        raise ConfigError(f"{where}.backend", f"{problem}; use one of {', '.join(BACKENDS)}")
    cls = CONFIG_TYPES[backend]
    types = _field_types(cls)
    values: dict[str, Any] = {"name": key}
    for name, value in data.items():
        if name == "backend":
            continue
        if name not in types or name == "name":
            known = ", ".join(sorted(n for n in types if n != "name"))
            raise ConfigError(f"{where}.{name}", f"is not a {backend} camera field (known: backend, {known})")
        values[name] = _check(value, types[name], f"{where}.{name}")
    if backend == "realsense" and not values.get("serial"):
        raise ConfigError(
            f"{where}.serial",
            "is required for a realsense camera (the device's serial number, rs-enumerate-devices -s)",
        )
    config = cls(**values)
    config.validate()
    return config


def load_cameras_config(path: str | Path) -> dict[str, CameraConfig]:
    """``{name: config}`` of the ``cameras:`` section of ``path`` (cameras.yaml)."""
    path = Path(path).expanduser()
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError("cameras", f"cannot read the camera config: {exc}", file=str(path)) from exc
    except yaml.YAMLError as exc:
        raise ConfigError("cameras", f"not valid YAML: {exc}", file=str(path)) from exc
    if not isinstance(data, Mapping) or not isinstance(data.get("cameras"), Mapping) or not data["cameras"]:
        raise ConfigError("cameras", "needs a non-empty 'cameras:' mapping", file=str(path))
    out: dict[str, CameraConfig] = {}
    for key, entry in data["cameras"].items():
        try:
            out[str(key)] = camera_config(str(key), entry)
        except ConfigError as exc:
            raise ConfigError(exc.field, exc.message, file=str(path)) from exc
    return out


def make_camera(config: CameraConfig, devices: DeviceSource | None = None) -> Camera:
    """The camera of ``config``; ``devices`` replaces the RealSense USB enumeration (tests)."""
    if isinstance(config, RealSenseCameraConfig):
        from .realsense import RealSenseCamera

        return RealSenseCamera(config, devices)
    if isinstance(config, OpenCVCameraConfig):
        from .opencv import OpenCVCamera

        return OpenCVCamera(config)
    raise ConfigError(f"cameras.{config.name}.backend", f"no camera for {type(config).__name__}")
