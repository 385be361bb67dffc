"""Camera abstraction in LeRobot's style: configs, the frame a camera returns, errors, and the ``Camera`` ABC.

A camera is ``connect / disconnect / is_connected / read``, usable as a context manager. ``read()`` blocks
until the next frame (at most ``timeout_s``) and raises :class:`CameraDisconnectedError` when the source has
dropped out; the camera is then disconnected and a later ``connect()`` may bring it back
(see :class:`~so101_hardware.cameras.link.CameraLink`).
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass, field
from types import TracebackType
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError, HardwareError

BACKENDS = ("opencv", "realsense")
DISTORTION_MODELS = ("plumb_bob", "rational_polynomial", "equidistant")


class CameraError(HardwareError):
    """Base of the camera errors; ``camera`` names the camera."""

    def __init__(self, message: str, *, camera: str = "") -> None:
        super().__init__(message)
        self.camera = camera


class CameraNotFoundError(CameraError):
    """No device matches the configured serial number / index / path."""


class CameraDisconnectedError(CameraError):
    """The camera dropped out (read failed or timed out, device unplugged); it is now disconnected."""


@dataclass(frozen=True, kw_only=True)
class CameraConfig:
    """What every camera has.

    Attributes:
        name: camera name (``ego``, ``side``, ``top``): topics ``cameras/<name>/...``.
        width / height: px of the colour image (and of the aligned depth image).
        fps: frames per second requested.
        timeout_s: s a ``read()`` waits for a frame before the camera counts as dropped out.
    """

    backend: ClassVar[str] = ""
    name: str
    width: int = 640
    height: int = 480
    fps: float = 30.0
    timeout_s: float = 1.0

    def validate(self) -> None:
        """Raise :class:`ConfigError` naming the first invalid field (``cameras.<name>.<field>``)."""
        if not self.name or not self.name.replace("_", "").isalnum():
            raise ConfigError("cameras.name", f"must be letters, digits or '_', got {self.name!r}")
        for key in ("width", "height"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or not 8 <= value <= 8192:
                raise self._error(key, f"must be an integer 8..8192 px, got {value!r}")
        for key in ("fps", "timeout_s"):
            value = getattr(self, key)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (math.isfinite(value) and value > 0)
            ):
                raise self._error(key, f"must be > 0, got {value!r}")

    def _error(self, key: str, problem: str) -> ConfigError:
        path = f"cameras.{self.name}.{key}"
        return ConfigError(path, problem)


@dataclass(frozen=True, kw_only=True)
class OpenCVCameraConfig(CameraConfig):
    """A USB (UVC) camera through OpenCV / V4L2, or any source ``cv2.VideoCapture`` opens (a video file).

    Attributes:
        index: ``/dev/video<index>`` (used when ``path`` is empty).
        path: device path (``/dev/v4l/by-id/...``, stable across replugs) or video file.
        fourcc: pixel format to request (``"MJPG"`` for 640x480@30 on most USB cameras), "" = the driver's.
        hfov_deg: horizontal field of view, degrees; gives a pinhole guess of K when ``k`` is not set.
        k: row-major 3x3 intrinsic matrix (px) from a calibration, or ``None``.
        distortion: coefficients of that calibration: plumb_bob (k1, k2, p1, p2[, k3]) or, with 8,
            rational_polynomial (k1, k2, p1, p2, k3, k4, k5, k6); empty = none.
    """

    backend: ClassVar[str] = "opencv"
    index: int = -1
    path: str = ""
    fourcc: str = ""
    hfov_deg: float = 70.0
    k: tuple[float, ...] | None = None
    distortion: tuple[float, ...] = ()

    @property
    def source(self) -> int | str:
        """What ``cv2.VideoCapture`` opens: the path when set, else the index."""
        return self.path or self.index

    def validate(self) -> None:
        super().validate()
        if not self.path and self.index < 0:
            raise self._error("index", "needs an index or a path (an index >= 0 or a device / file path)")
        if self.fourcc and len(self.fourcc) != 4:
            raise self._error("fourcc", f"must be 4 characters, got {self.fourcc!r}")
        if not (math.isfinite(self.hfov_deg) and 1.0 <= self.hfov_deg < 180.0):
            raise self._error("hfov_deg", f"must be in [1, 180) degrees, got {self.hfov_deg!r}")
        if self.k is not None and (len(self.k) != 9 or not all(math.isfinite(v) for v in self.k)):
            raise self._error("k", "must be 9 finite numbers (row-major 3x3)")
        if len(self.distortion) not in (0, 4, 5, 8) or not all(math.isfinite(v) for v in self.distortion):
            raise self._error("distortion", "must be 0, 4, 5 or 8 finite coefficients")


@dataclass(frozen=True, kw_only=True)
class RealSenseCameraConfig(CameraConfig):
    """An Intel RealSense D4xx through librealsense.

    Attributes:
        serial: the device's serial number (``rs-enumerate-devices -s``); "" = the only one connected.
        depth: also stream depth, aligned to the colour image (mm).
        depth_width / depth_height: px of the depth stream before alignment; 0 = the colour size.
    """

    backend: ClassVar[str] = "realsense"
    serial: str = ""
    depth: bool = True
    depth_width: int = 0
    depth_height: int = 0

    def validate(self) -> None:
        super().validate()
        if self.serial and not self.serial.isalnum():
            raise self._error("serial", f"must be the device's serial number (letters and digits), got {self.serial!r}")
        for key in ("depth_width", "depth_height"):
            value = getattr(self, key)
            if value != 0 and not 8 <= value <= 8192:
                raise self._error(key, f"must be 0 (the colour size) or 8..8192 px, got {value!r}")


@dataclass(frozen=True)
class Frame:
    """One capture.

    Attributes:
        rgb: (H, W, 3) uint8, RGB.
        depth: (H, W) uint16 depth in mm aligned to ``rgb`` (0 = no data), or ``None``.
        stamp_ns: capture time, ns since the Unix epoch (from the device clock when it has one).
        k: (3, 3) float64 intrinsic matrix of ``rgb``, px.
        distortion: (N,) float64 coefficients of ``distortion_model`` (plumb_bob: k1, k2, p1, p2, k3).
        distortion_model: ``plumb_bob`` | ``rational_polynomial`` | ``equidistant`` (sensor_msgs names).
    """

    rgb: npt.NDArray[np.uint8]
    depth: npt.NDArray[np.uint16] | None
    stamp_ns: int
    k: npt.NDArray[np.float64]
    distortion: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(5))
    distortion_model: str = "plumb_bob"

    @property
    def width(self) -> int:
        return int(self.rgb.shape[1])

    @property
    def height(self) -> int:
        return int(self.rgb.shape[0])


def pinhole_k(width: int, height: int, hfov_deg: float) -> npt.NDArray[np.float64]:
    """(3, 3) K of an ideal pinhole camera: square pixels, principal point at the image centre, px."""
    fx = (width / 2.0) / math.tan(math.radians(hfov_deg) / 2.0)
    return np.array([[fx, 0.0, (width - 1) / 2.0], [0.0, fx, (height - 1) / 2.0], [0.0, 0.0, 1.0]])


class Camera(abc.ABC):
    """A camera behind ``connect / disconnect / is_connected / read``, usable as a context manager."""

    config: CameraConfig

    @property
    @abc.abstractmethod
    def is_connected(self) -> bool: ...

    @abc.abstractmethod
    def connect(self) -> None:
        """Open the device and start streaming. Raises :class:`CameraNotFoundError` / :class:`CameraError`."""

    @abc.abstractmethod
    def disconnect(self) -> None:
        """Stop streaming and release the device. Idempotent; never raises for a device that is gone."""

    @abc.abstractmethod
    def read(self) -> Frame:
        """The next frame. Raises :class:`CameraDisconnectedError` (and disconnects) when the source dropped out."""

    @property
    def describe(self) -> str:
        """A short id of the device for logs and diagnostics (``realsense:123456789012``)."""
        return f"{self.config.backend}:{self.config.name}"

    def __enter__(self) -> Camera:
        self.connect()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.disconnect()
