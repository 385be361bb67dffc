"""camera: one real camera (USB through OpenCV, or RealSense) as a node, with the sim node's camera topics.

A capture thread reads frames (each read blocks until the device delivers, at most ``timeout_s``) and
publishes them stamped with the capture time and frame id ``<name>_camera_optical_frame``:
  - ``cameras/<name>/image_raw`` (sensor_msgs/Image, rgb8) and ``cameras/<name>/camera_info`` (K and
    distortion of the device or the config, P = [K | 0]);
  - with ``depth`` (RealSense): ``cameras/<name>/depth/image_raw`` (16UC1, mm, aligned to the colour image,
    0 = no data) and ``cameras/<name>/depth/camera_info`` (the colour intrinsics, as depth is aligned).

Faults: a camera that drops out (read fails or times out, device unplugged, file gone) is disconnected and
reconnected every ``reconnect_period_s``; the node stays up and resumes publishing when it is back.
``/diagnostics`` carries one status ``<node>: camera <name>``: OK while streaming, WARN from the drop-out
(or while connecting at start), ERROR once it has been down ``error_after_s``.

Parameters: ``config`` (cameras.yaml path; "" = the config directory's) and ``camera`` (its key; "" = no
file, everything from parameters); then, defaulting to that entry: ``name`` (topic name, default the key or
``ego``), ``backend`` (``opencv`` | ``realsense``), ``serial`` (RealSense serial number), ``index`` (OpenCV
``/dev/video<index>``, -1 = none), ``path`` (OpenCV device path or video file), ``width`` / ``height`` (px),
``fps``, ``depth`` (bool, RealSense only; false without a config entry), ``timeout_s`` (s), ``fourcc``
(OpenCV pixel format), ``hfov_deg`` (OpenCV pinhole guess, degrees); and ``reconnect_period_s`` (s, 1.0),
``error_after_s`` (s, 3.0), ``diagnostics_period_s`` (s, 1.0).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from nodegraph.diagnostics import diagnostic_array, diagnostics_publisher, status_message
from nodegraph.graph.api import Message, Node
from nodegraph.graph.declared_params import check_bounds, declare_params
from so101_core.config_paths import config_dir
from so101_core.robot_spec import optical_frame
from so101_hardware.cameras.base import (
    BACKENDS,
    CameraConfig,
    Frame,
    OpenCVCameraConfig,
    RealSenseCameraConfig,
)
from so101_hardware.cameras.config import camera_config, load_cameras_config, make_camera
from so101_hardware.cameras.link import CameraLink
from so101_hardware.cameras.realsense import DeviceSource
from so101_hardware.errors import ConfigError

from so101_nodes import camera_messages as cm

# the parameters that make a camera config, per backend (the rest of a config entry, e.g. k, comes from the file)
CAMERA_PARAMETERS = {
    "opencv": ("index", "path", "width", "height", "fps", "timeout_s", "fourcc", "hfov_deg"),
    "realsense": ("serial", "width", "height", "fps", "timeout_s", "depth"),
}


def default_cameras_config() -> Path:
    """``cameras.yaml`` of the so101 config directory."""
    return config_dir() / "cameras.yaml"


@dataclasses.dataclass(frozen=True)
class _Source:
    """``config`` and ``camera``, declared first: the entry they name gives the other parameters' defaults."""

    config: str = ""
    camera: str = ""


@dataclasses.dataclass(frozen=True)
class _CameraFields:
    """The camera's parameters, declared with the entry's values (else the config classes') as defaults."""

    name: str
    backend: str
    serial: str
    index: int
    path: str
    width: int
    height: int
    fps: float
    timeout_s: float
    fourcc: str
    hfov_deg: float
    depth: bool


@dataclasses.dataclass(frozen=True)
class _Timing:
    """The node's reconnection and diagnostics timing (s), declared last."""

    reconnect_period_s: float = 1.0
    error_after_s: float = 3.0
    diagnostics_period_s: float = 1.0


@dataclasses.dataclass(frozen=True, kw_only=True)
class CameraParams(_Timing):
    """Camera node parameters (units in the module docstring); read once at start."""

    camera: CameraConfig

    @classmethod
    def declare(cls, node: Node) -> CameraParams:
        """Declare the parameters (defaults from the ``camera`` entry of ``config``) and validate them.

        Raises:
            ValueError / ConfigError: naming the parameter (or the config field) at fault.
        """
        source = declare_params(node, _Source, read_only=False)
        path, key = source.config, source.camera
        entry: CameraConfig | None = None
        if key:
            configs = load_cameras_config(path or default_cameras_config())
            if key not in configs:
                raise ConfigError(
                    "parameter 'camera'",
                    f"no camera {key!r} in {path or default_cameras_config()} (has: {', '.join(configs)})",
                )
            entry = configs[key]
        elif path:
            raise ValueError("camera: parameter 'camera' must name an entry of the file given in 'config'")
        base: dict[str, Any] = dataclasses.asdict(entry) if entry is not None else {}
        defaults = {**_field_defaults(), **base, "name": base.get("name", key or "ego"),
                    "backend": entry.backend if entry is not None else "opencv",
                    "depth": bool(base.get("depth", False))}  # fmt: skip
        fields = _CameraFields(**{f.name: defaults[f.name] for f in dataclasses.fields(_CameraFields)})
        values = dataclasses.asdict(declare_params(node, _CameraFields, fields, read_only=False))
        backend = values.pop("backend")
        if backend not in BACKENDS:
            raise ValueError(f"camera: parameter 'backend' must be one of {', '.join(BACKENDS)}, got {backend!r}")
        if backend == "opencv" and values["depth"]:
            raise ValueError("camera: parameter 'depth': the opencv backend has no depth; use depth:=false")
        mapping: dict[str, Any] = {"backend": backend}
        mapping.update({p: values[p] for p in CAMERA_PARAMETERS[backend]})
        for extra in ("k", "distortion", "depth_width", "depth_height"):  # file-only fields of this backend
            if extra in base and entry is not None and entry.backend == backend and base[extra] not in (None, ()):
                mapping[extra] = list(base[extra]) if isinstance(base[extra], tuple) else base[extra]
        try:
            camera = camera_config(values["name"], mapping)
        except ConfigError as exc:
            parameter = (exc.field or "").rsplit(".", 1)[-1]
            raise ConfigError(f"parameter {parameter!r}", exc.message) from exc  # a ROS user sets parameters
        params = cls(camera=camera, **dataclasses.asdict(declare_params(node, _Timing, read_only=False)))
        params.validate()
        return params

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first invalid parameter."""
        check_bounds(
            "camera", self, positive=("reconnect_period_s", "diagnostics_period_s"), non_negative=("error_after_s",)
        )


def _field_defaults() -> dict[str, Any]:
    """Defaults of every camera parameter, from the config dataclasses."""
    out: dict[str, Any] = {}
    for cls in (OpenCVCameraConfig, RealSenseCameraConfig):
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                out.setdefault(f.name, f.default)
    return out


class CameraNode:
    """One camera published on the graph (see the module docstring).

    Args:
        node: the node.
        devices: RealSense device enumeration (default: USB through librealsense); tests pass a software device.
    """

    def __init__(self, node: Node, devices: DeviceSource | None = None) -> None:
        self.node = node
        self.params = p = CameraParams.declare(node)
        self.config = cfg = p.camera
        self.frame_id = optical_frame(cfg.name)
        self.link = CameraLink(make_camera(cfg, devices), node.logger, p.reconnect_period_s, p.error_after_s)
        base = f"cameras/{cfg.name}"
        self.image = node.create_publisher("sensor_msgs/msg/Image", f"{base}/image_raw")
        self.info = node.create_publisher("sensor_msgs/msg/CameraInfo", f"{base}/camera_info")
        depth = isinstance(cfg, RealSenseCameraConfig) and cfg.depth
        self.depth_image = node.create_publisher("sensor_msgs/msg/Image", f"{base}/depth/image_raw") if depth else None
        self.depth_info = (
            node.create_publisher("sensor_msgs/msg/CameraInfo", f"{base}/depth/camera_info") if depth else None
        )
        self.diagnostics = diagnostics_publisher(node)
        self._published: deque[float] = deque(maxlen=int(max(2, 2 * cfg.fps)))
        self._stop = threading.Event()
        self._timer = node.create_timer(p.diagnostics_period_s, self.publish_diagnostics)
        self._thread = threading.Thread(target=self._run, name=f"camera-{cfg.name}", daemon=True)
        self._thread.start()
        node.logger.info(
            f"camera {cfg.name!r}: {self.link.camera.describe} {cfg.width}x{cfg.height}@{cfg.fps:g}"
            + (" with depth" if depth else "")
            + f" on {node.resolve(f'{base}/image_raw')}"
        )

    # ------------------------------------------------------------------ capture thread
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                frame = self.link.poll()
            except Exception as exc:  # a bug or an SDK surprise: report, keep the node alive, retry
                self.node.logger.error(f"capture failed: {type(exc).__name__}: {exc}")
                with contextlib.suppress(Exception):
                    self.link.camera.disconnect()
                frame = None
            if frame is None:
                self._stop.wait(min(0.5, max(0.01, self.link.seconds_to_retry())))
                continue
            try:
                self.publish(frame)
            except Exception as exc:
                if self._stop.is_set() or getattr(self.node, "is_shutdown", False):
                    return  # shutting down: the publishers are gone
                self.node.logger.error(f"publishing failed: {type(exc).__name__}: {exc}")

    def publish(self, frame: Frame) -> None:
        """Publish one frame: image, camera_info and, with depth, the depth image and its camera_info."""
        node = self.node
        head = cm.header(node, frame.stamp_ns, self.frame_id)
        info = cm.camera_info(node, head, frame.width, frame.height, frame.k, frame.distortion, frame.distortion_model)
        self.image.publish(cm.rgb_image(node, head, frame.rgb))
        self.info.publish(info)
        if frame.depth is not None and self.depth_image is not None and self.depth_info is not None:
            self.depth_image.publish(cm.depth_image(node, head, frame.depth))
            self.depth_info.publish(info)
        self._published.append(time.monotonic())

    # ------------------------------------------------------------------ diagnostics
    def diagnostics_message(self) -> Message:
        """The DiagnosticArray with this camera's status (link state, rate, counters)."""
        level, message = self.link.status()
        stamps = list(self._published)
        now = time.monotonic()
        recent = [t for t in stamps if now - t <= 1.0]
        rate = (len(recent) - 1) / (recent[-1] - recent[0]) if len(recent) > 2 and recent[-1] > recent[0] else 0.0
        values = {
            **self.link.values(),
            "rate_hz": f"{rate:.1f}",
            "target_rate_hz": f"{self.config.fps:g}",
            "resolution": f"{self.config.width}x{self.config.height}",
            "frame_id": self.frame_id,
        }
        status = status_message(
            self.node, f"camera {self.config.name}", level, message, self.link.camera.describe, values
        )
        return diagnostic_array(self.node, [status])

    def publish_diagnostics(self) -> None:
        self.diagnostics.publish(self.diagnostics_message())

    # ------------------------------------------------------------------ shutdown
    def close(self) -> None:
        """Stop capturing and release the camera."""
        self._stop.set()
        with contextlib.suppress(Exception):  # the node may already be destroyed
            self._timer.cancel()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.config.timeout_s + 5.0)
        self.link.close()


def main(args: list[str] | None = None) -> int:
    from nodegraph.transport.runtime import run_node

    return run_node(CameraNode, "camera", args)


if __name__ == "__main__":
    raise SystemExit(main())
