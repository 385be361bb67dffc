"""USB (UVC) cameras through OpenCV's ``cv2.VideoCapture`` (V4L2 on Linux), or any source it opens (a video file).

Frames are converted BGR -> RGB. Intrinsics come from the config (a calibration) or, without one, from a
pinhole guess of the horizontal field of view. Stamps: V4L2 buffer timestamps (``CLOCK_MONOTONIC``) mapped
to the epoch when OpenCV reports them, else the host clock right after ``grab()``. A file source is paced
at ``fps`` (a device paces itself) and loops; it drops out when the file disappears or is emptied.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from .base import (
    Camera,
    CameraDisconnectedError,
    CameraError,
    CameraNotFoundError,
    Frame,
    OpenCVCameraConfig,
    pinhole_k,
)


class VideoCaptureLike(Protocol):
    """What this backend uses of ``cv2.VideoCapture``."""

    def isOpened(self) -> bool: ...  # noqa: N802 (OpenCV's names)
    def grab(self) -> bool: ...
    def retrieve(self) -> tuple[bool, Any]: ...
    def set(self, prop: int, value: float) -> bool: ...
    def get(self, prop: int) -> float: ...
    def release(self) -> None: ...


def open_video_capture(source: int | str) -> VideoCaptureLike:
    """``cv2.VideoCapture`` of a device index (V4L2 on Linux) or a path (device or file)."""
    import cv2

    if isinstance(source, int):
        api = cv2.CAP_V4L2 if sys.platform.startswith("linux") else cv2.CAP_ANY
        return cv2.VideoCapture(source, api)
    return cv2.VideoCapture(source)


def _is_device(source: int | str) -> bool:
    return isinstance(source, int) or str(source).startswith("/dev/")


class OpenCVCamera(Camera):
    """A camera opened with OpenCV.

    Args:
        config: validated :class:`OpenCVCameraConfig`.
        opener: ``source -> VideoCapture`` (default :func:`open_video_capture`).
    """

    def __init__(
        self, config: OpenCVCameraConfig, opener: Callable[[int | str], VideoCaptureLike] = open_video_capture
    ) -> None:
        config.validate()
        self.config: OpenCVCameraConfig = config
        self._opener = opener
        self._cap: VideoCaptureLike | None = None
        self._is_file = not _is_device(config.source)
        self._next_due = 0.0
        self._k = (
            np.array(config.k, dtype=np.float64).reshape(3, 3)
            if config.k is not None
            else pinhole_k(config.width, config.height, config.hfov_deg)
        )
        coeffs = list(config.distortion) or [0.0] * 5
        self._distortion = np.array(coeffs + [0.0] * (5 - len(coeffs)), dtype=np.float64)  # 4 -> k3 = 0
        self._model = "rational_polynomial" if len(coeffs) == 8 else "plumb_bob"

    @property
    def describe(self) -> str:
        return f"opencv:{self.config.source}"

    @property
    def is_connected(self) -> bool:
        return self._cap is not None

    def connect(self) -> None:
        """Open the source, request width/height/fps (and the fourcc), check the first frame's size."""
        import cv2

        if self._cap is not None:
            return
        cfg = self.config
        if self._is_file and not Path(str(cfg.source)).is_file():
            raise CameraNotFoundError(f"camera {cfg.name!r}: no video file {cfg.source}", camera=cfg.name)
        cap = self._opener(cfg.source)
        if not cap.isOpened():
            cap.release()
            raise CameraNotFoundError(f"camera {cfg.name!r}: cannot open {cfg.source!r}", camera=cfg.name)
        if not self._is_file:
            if cfg.fourcc:
                cap.set(cv2.CAP_PROP_FOURCC, cv2.VideoWriter.fourcc(*cfg.fourcc))
            cap.set(cv2.CAP_PROP_FRAME_WIDTH, cfg.width)
            cap.set(cv2.CAP_PROP_FRAME_HEIGHT, cfg.height)
            cap.set(cv2.CAP_PROP_FPS, cfg.fps)
        size = (int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT)))
        if size != (cfg.width, cfg.height):
            cap.release()
            raise CameraError(
                f"camera {cfg.name!r}: {cfg.source!r} gives {size[0]}x{size[1]} px, not the configured "
                f"{cfg.width}x{cfg.height} (cameras.{cfg.name}.width/height)",
                camera=cfg.name,
            )
        self._cap = cap
        self._next_due = time.monotonic()

    def disconnect(self) -> None:
        cap, self._cap = self._cap, None
        if cap is not None:
            with contextlib.suppress(Exception):
                cap.release()

    def _file_readable(self) -> bool:
        path = Path(str(self.config.source))
        return self._is_file and path.is_file() and path.stat().st_size > 0

    def read(self) -> Frame:
        """The next frame: rgb (H, W, 3) uint8, no depth, K from the config or the pinhole guess."""
        import cv2

        cap = self._cap
        if cap is None:
            raise CameraDisconnectedError(f"camera {self.config.name!r} is not connected", camera=self.config.name)
        if self._is_file:  # a file is not paced by a device: play it at fps
            delay = self._next_due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self._next_due = max(self._next_due + 1.0 / self.config.fps, time.monotonic() - 1.0)
        ok = cap.grab()
        if not ok and self._file_readable():  # the end of a file that is still there: play it again
            cap.set(cv2.CAP_PROP_POS_FRAMES, 0)
            ok = cap.grab()
        host_ns, mono_ns = time.time_ns(), time.monotonic_ns()
        bgr = cap.retrieve()[1] if ok else None
        if bgr is None or getattr(bgr, "ndim", 0) != 3:
            self.disconnect()
            raise CameraDisconnectedError(
                f"camera {self.config.name!r}: no frame from {self.config.source!r} (unplugged or ended)",
                camera=self.config.name,
            )
        rgb: npt.NDArray[np.uint8] = np.ascontiguousarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), dtype=np.uint8)
        if rgb.shape[:2] != (self.config.height, self.config.width):
            self.disconnect()
            raise CameraDisconnectedError(
                f"camera {self.config.name!r}: frame of {rgb.shape[1]}x{rgb.shape[0]} px, expected "
                f"{self.config.width}x{self.config.height}",
                camera=self.config.name,
            )
        stamp_ns = host_ns
        if not self._is_file:  # V4L2 reports the buffer's CLOCK_MONOTONIC timestamp in ms
            buffer_ns = round(cap.get(cv2.CAP_PROP_POS_MSEC) * 1e6)
            if 0 <= mono_ns - buffer_ns < 1_000_000_000:
                stamp_ns = host_ns - (mono_ns - buffer_ns)
        return Frame(
            rgb=rgb,
            depth=None,
            stamp_ns=stamp_ns,
            k=self._k.copy(),
            distortion=self._distortion.copy(),
            distortion_model=self._model,
        )
