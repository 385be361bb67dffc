"""Synthetic camera sources that run through the real vendor stacks, for tests and demos without hardware.

- :class:`SyntheticRealSense`: a RealSense D4xx made of librealsense's ``software_device``: a "Stereo Module"
  (z16, depth units, extrinsics to colour) and an "RGB Camera" sensor (rgb8), fed synthetic frames by a
  thread at ``fps`` in the device's hardware-clock domain. It is a :class:`~.realsense.DeviceSource`:
  ``unplug()`` stops the frames and hides the device (a USB drop-out), ``plug()`` brings it back.
- :func:`write_video`: an MJPG/AVI file of synthetic frames for ``cv2.VideoCapture``.

Frame ``n`` (from 1): colour ``R = n % 256``, ``G = x % 256``, ``B = y % 256``; depth ``depth_mm`` everywhere.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .base import pinhole_k


def synthetic_rgb(n: int, width: int, height: int) -> npt.NDArray[np.uint8]:
    """(H, W, 3) uint8 test frame ``n``: R = n % 256, G = column % 256, B = row % 256."""
    rgb = np.empty((height, width, 3), dtype=np.uint8)
    rgb[..., 0] = n % 256
    rgb[..., 1] = (np.arange(width) % 256)[None, :]
    rgb[..., 2] = (np.arange(height) % 256)[:, None]
    return rgb


def write_video(path: str | Path, frames: int, width: int, height: int, fps: float) -> Path:
    """Write ``frames`` synthetic frames (BGR on disk, :func:`synthetic_rgb` once decoded) as MJPG/AVI."""
    import cv2

    path = Path(path)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), fps, (width, height))
    if not writer.isOpened():
        raise RuntimeError(f"cv2.VideoWriter cannot write {path}")
    try:
        for n in range(1, frames + 1):
            writer.write(np.ascontiguousarray(synthetic_rgb(n, width, height)[..., ::-1]))
    finally:
        writer.release()
    return path


class SyntheticRealSense:
    """A software RealSense device with colour and depth, fed at ``fps`` while plugged in.

    Args:
        serial: serial number it reports.
        width / height / fps: colour (and depth) stream, px and frames/s.
        hfov_deg: horizontal field of view of both streams (pinhole K), degrees.
        distortion: Brown-Conrady coefficients (5) of the colour stream.
        depth_mm: depth of every pixel, mm.
        depth_units: m per z16 unit (0.001 = mm, as a D4xx by default).
        one_sensor: both streams on the "Stereo Module" (as a D405) instead of a separate "RGB Camera".
    """

    def __init__(
        self,
        serial: str = "123456789012",
        width: int = 64,
        height: int = 48,
        fps: int = 30,
        hfov_deg: float = 69.0,
        distortion: Sequence[float] = (0.0, 0.0, 0.0, 0.0, 0.0),
        depth_mm: int = 800,
        depth_units: float = 0.001,
        one_sensor: bool = False,
    ) -> None:
        import pyrealsense2 as rs

        self.rs = rs
        self.serial, self.width, self.height, self.fps = serial, width, height, fps
        self.k = pinhole_k(width, height, hfov_deg)
        self.distortion = tuple(float(c) for c in distortion)
        self.depth_mm, self.depth_units = depth_mm, depth_units
        self.device = rs.software_device()
        self.device.register_info(rs.camera_info.name, "Intel RealSense D435 (software device)")
        self.device.register_info(rs.camera_info.serial_number, serial)
        self.depth_sensor = self.device.add_sensor("Stereo Module")
        self.color_sensor = self.depth_sensor if one_sensor else self.device.add_sensor("RGB Camera")
        self.color_profile = self.color_sensor.add_video_stream(self._stream(rs.stream.color, rs.format.rgb8, 3, 0))
        self.depth_profile = self.depth_sensor.add_video_stream(self._stream(rs.stream.depth, rs.format.z16, 2, 1))
        self.depth_sensor.add_read_only_option(rs.option.depth_units, depth_units)
        extrinsics = rs.extrinsics()
        extrinsics.rotation = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
        extrinsics.translation = [0.0, 0.0, 0.0]
        self.depth_profile.register_extrinsics_to(self.color_profile, extrinsics)
        self.frames_sent = 0
        self.first_timestamp_ms = 1000.0
        self._plugged = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _stream(self, kind: Any, fmt: Any, bpp: int, uid: int) -> Any:
        rs = self.rs
        intr = rs.intrinsics()
        intr.width, intr.height = self.width, self.height
        intr.fx, intr.fy = float(self.k[0, 0]), float(self.k[1, 1])
        intr.ppx, intr.ppy = float(self.k[0, 2]), float(self.k[1, 2])
        intr.model = rs.distortion.brown_conrady
        intr.coeffs = list(self.distortion) if kind == rs.stream.color else [0.0] * 5
        stream = rs.video_stream()
        stream.type, stream.index, stream.uid = kind, 0, uid
        stream.width, stream.height, stream.fps, stream.bpp, stream.fmt = self.width, self.height, self.fps, bpp, fmt
        stream.intrinsics = intr
        return stream

    # ------------------------------------------------------------------ DeviceSource
    def query_devices(self) -> list[Any]:
        """The device while plugged in, else nothing (as a USB enumeration)."""
        return [self.device] if self._plugged.is_set() else []

    # ------------------------------------------------------------------ control
    def timestamp_ms(self, n: int) -> float:
        """Hardware-clock timestamp of frame ``n``, ms."""
        return self.first_timestamp_ms + (n - 1) * 1000.0 / self.fps

    def plug(self) -> None:
        """Appear on the enumeration and feed frames at ``fps``."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._feed, name=f"realsense-{self.serial}", daemon=True)
            self._thread.start()
        self._plugged.set()

    def unplug(self) -> None:
        """Stop the frames and disappear from the enumeration (a drop-out)."""
        self._plugged.clear()

    def close(self) -> None:
        self._plugged.clear()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def __enter__(self) -> SyntheticRealSense:
        self.plug()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _frame(self, profile: Any, pixels: npt.NDArray[Any], bpp: int, n: int) -> Any:
        frame = self.rs.software_video_frame()
        frame.pixels = pixels
        frame.stride, frame.bpp = self.width * bpp, bpp
        frame.timestamp = self.timestamp_ms(n)
        frame.domain = self.rs.timestamp_domain.hardware_clock
        frame.frame_number = n
        frame.profile = profile.as_video_stream_profile()
        return frame

    def _feed(self) -> None:
        depth = np.full((self.height, self.width), round(self.depth_mm / (self.depth_units * 1000.0)), np.uint16)
        next_due = time.monotonic()
        while not self._stop.is_set():
            if not self._plugged.wait(0.05):
                next_due = time.monotonic()
                continue
            n = self.frames_sent + 1
            dframe = self._frame(self.depth_profile, depth, 2, n)
            dframe.depth_units = self.depth_units
            self.depth_sensor.on_video_frame(dframe)  # depth first: it is there when colour arrives
            self.color_sensor.on_video_frame(
                self._frame(self.color_profile, synthetic_rgb(n, self.width, self.height), 3, n)
            )
            self.frames_sent = n
            next_due += 1.0 / self.fps
            time.sleep(max(0.0, next_due - time.monotonic()))
