"""Intel RealSense D4xx through librealsense (``pyrealsense2``): colour, and depth aligned to it.

The device is found by serial number among what a :class:`DeviceSource` enumerates (by default a
``pyrealsense2.context``: USB devices). The colour and depth sensors are opened directly (the sensor whose
profiles offer the stream, so a D405, colour on the stereo module, works too) and stream into frame queues;
``read()`` pairs each colour frame with the nearest depth frame and aligns depth to colour with
``rs.align``. K and distortion come from the colour stream's intrinsics; depth is converted to mm with the
depth sensor's depth units. Stamps: the device's timestamp (global time / system time: epoch ms; hardware
clock: mapped to the host clock once per connection).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from .base import Camera, CameraDisconnectedError, CameraError, CameraNotFoundError, Frame, RealSenseCameraConfig

QUEUE_CAPACITY = 2  # frames kept per stream: the newest ones


class DeviceSource(Protocol):
    """Where RealSense devices come from: ``pyrealsense2.context`` has this method (USB enumeration)."""

    def query_devices(self) -> Iterable[Any]: ...


def _rs() -> Any:
    try:
        import pyrealsense2 as rs
    except ImportError as exc:  # the wheel needs libusb-1.0 (apt: libusb-1.0-0)
        raise CameraError(f"pyrealsense2 does not import ({exc}); pip install pyrealsense2") from exc
    return rs


def distortion_model(model: Any) -> str:
    """The sensor_msgs name of a librealsense distortion model (Brown-Conrady variants -> plumb_bob)."""
    rs = _rs()
    if model == rs.distortion.kannala_brandt4:
        return "equidistant"
    return "plumb_bob"


def intrinsics_k(intr: Any) -> npt.NDArray[np.float64]:
    """(3, 3) K (px) of ``rs.intrinsics``."""
    return np.array([[intr.fx, 0.0, intr.ppx], [0.0, intr.fy, intr.ppy], [0.0, 0.0, 1.0]], dtype=np.float64)


def _serial(device: Any) -> str:
    rs = _rs()
    try:
        return str(device.get_info(rs.camera_info.serial_number))
    except RuntimeError:  # a device without a serial, or one being unplugged
        return ""


def _name(sensor: Any) -> str:
    return str(sensor.get_info(_rs().camera_info.name))


class RealSenseCamera(Camera):
    """A RealSense camera selected by serial number.

    Args:
        config: validated :class:`RealSenseCameraConfig`.
        devices: the device enumeration (default: a ``pyrealsense2.context``, i.e. USB).
    """

    def __init__(self, config: RealSenseCameraConfig, devices: DeviceSource | None = None) -> None:
        config.validate()
        self.config: RealSenseCameraConfig = config
        self._devices = devices
        self._sensors: list[Any] = []
        self._color_queue: Any = None
        self._depth_queue: Any = None
        self._align: Any = None
        self._k = np.eye(3)
        self._distortion: npt.NDArray[np.float64] = np.zeros(5)
        self._model = "plumb_bob"
        self._depth_mm_per_unit = 1.0
        self._clock_offset_ns: int | None = None
        self._last_depth: Any = None
        self._pending_depth: Any = None
        self._compose: Any = None
        self._composed: Any = None

    @property
    def describe(self) -> str:
        return f"realsense:{self.config.serial or 'any'}"

    @property
    def is_connected(self) -> bool:
        return self._color_queue is not None

    # ------------------------------------------------------------------ connect
    def _find_device(self) -> Any:
        rs = _rs()
        source = self._devices if self._devices is not None else rs.context()
        devices = list(source.query_devices())
        serials = [_serial(d) for d in devices]
        if self.config.serial:
            for device, serial in zip(devices, serials, strict=True):
                if serial == self.config.serial:
                    return device
        elif len(devices) == 1:
            return devices[0]
        wanted = f"serial {self.config.serial}" if self.config.serial else "exactly one device (no serial set)"
        raise CameraNotFoundError(
            f"camera {self.config.name!r}: no RealSense with {wanted}; connected: {serials or 'none'}",
            camera=self.config.name,
        )

    def _profile(self, device: Any, stream: Any, fmt: Any, width: int, height: int) -> tuple[Any, Any]:
        """(sensor, video stream profile) offering ``stream`` in ``fmt`` at width x height and the fps."""
        offered = []
        for sensor in device.query_sensors():
            for profile in sensor.get_stream_profiles():
                if profile.stream_type() != stream or not profile.is_video_stream_profile():
                    continue
                video = profile.as_video_stream_profile()
                offered.append(f"{video.width()}x{video.height()}@{video.fps()} {video.format()}")
                if (
                    video.format() == fmt
                    and (video.width(), video.height()) == (width, height)
                    and abs(video.fps() - self.config.fps) < 0.5
                ):
                    return sensor, video
        raise CameraError(
            f"camera {self.config.name!r}: {self.describe} offers no {stream} {fmt} {width}x{height}@"
            f"{self.config.fps:g} (cameras.{self.config.name}.width/height/fps); offered: {sorted(set(offered))}",
            camera=self.config.name,
        )

    def connect(self) -> None:
        """Find the device, open the colour (rgb8) and depth (z16) sensors and start streaming."""
        if self.is_connected:
            return
        rs = _rs()
        cfg = self.config
        device = self._find_device()
        try:
            color_sensor, color = self._profile(device, rs.stream.color, rs.format.rgb8, cfg.width, cfg.height)
            # keyed by sensor name: query_sensors() gives new wrappers of the same sensor on every call
            opened: dict[str, tuple[Any, list[Any]]] = {_name(color_sensor): (color_sensor, [color])}
            depth_sensor = None
            if cfg.depth:
                size = (cfg.depth_width or cfg.width, cfg.depth_height or cfg.height)
                depth_sensor, depth = self._profile(device, rs.stream.depth, rs.format.z16, *size)
                opened.setdefault(_name(depth_sensor), (depth_sensor, []))[1].append(depth)
                units = float(depth_sensor.get_option(rs.option.depth_units))
                self._depth_mm_per_unit = units * 1000.0
            intr = color.get_intrinsics()
            self._k = intrinsics_k(intr)
            self._distortion = np.array(list(intr.coeffs), dtype=np.float64)
            self._model = distortion_model(intr.model)
            self._color_queue = rs.frame_queue(QUEUE_CAPACITY, keep_frames=True)
            self._depth_queue = rs.frame_queue(QUEUE_CAPACITY, keep_frames=True) if cfg.depth else None
            queues = {rs.stream.color: self._color_queue, rs.stream.depth: self._depth_queue}
            for sensor, profiles in opened.values():
                sensor.open(profiles if len(profiles) > 1 else profiles[0])
                self._sensors.append(sensor)
                if len(profiles) == 1:
                    sensor.start(queues[profiles[0].stream_type()])
                else:  # one sensor for both streams (D405): route each frame to its queue
                    sensor.start(self._router(queues))
            if cfg.depth:
                self._align = rs.align(rs.stream.color)
                self._make_composer()
        except RuntimeError as exc:  # librealsense reports device errors as RuntimeError
            self.disconnect()
            raise CameraError(f"camera {cfg.name!r}: {self.describe}: {exc}", camera=cfg.name) from exc
        except CameraError:
            self.disconnect()
            raise
        self._clock_offset_ns = None
        self._last_depth = None

    @staticmethod
    def _router(queues: dict[Any, Any]) -> Any:
        def route(frame: Any) -> None:
            queue = queues.get(frame.get_profile().stream_type())
            if queue is not None:
                queue.enqueue(frame)

        return route

    def disconnect(self) -> None:
        """Stop and close the sensors (errors of a device that is gone are ignored)."""
        sensors, self._sensors = self._sensors, []
        for sensor in sensors:
            with contextlib.suppress(RuntimeError):
                sensor.stop()
            with contextlib.suppress(RuntimeError):
                sensor.close()
        self._color_queue = self._depth_queue = self._align = self._last_depth = self._pending_depth = None
        self._compose = self._composed = None

    # ------------------------------------------------------------------ read
    def read(self) -> Frame:
        """The next colour frame (H, W, 3) uint8 with aligned depth (H, W) uint16 mm when ``depth``."""
        queue = self._color_queue
        if queue is None:
            raise CameraDisconnectedError(f"camera {self.config.name!r} is not connected", camera=self.config.name)
        timeout_ms = round(self.config.timeout_s * 1000)
        try:
            color = queue.wait_for_frame(timeout_ms)
            depth = self._depth_for(color, timeout_ms) if self._depth_queue is not None else None
            rgb = np.array(np.asanyarray(color.get_data()), dtype=np.uint8, copy=True)
            depth_mm = self._aligned_depth_mm(color, depth) if depth is not None else None
            stamp_ns = self._stamp_ns(color)
        except RuntimeError as exc:  # "Frame didn't arrive within ..." or a device error
            self.disconnect()
            raise CameraDisconnectedError(
                f"camera {self.config.name!r}: {self.describe} dropped out: {exc}", camera=self.config.name
            ) from exc
        return Frame(
            rgb=rgb,
            depth=depth_mm,
            stamp_ns=stamp_ns,
            k=self._k.copy(),
            distortion=self._distortion.copy(),
            distortion_model=self._model,
        )

    def _depth_for(self, color: Any, timeout_ms: int) -> Any:
        """The newest depth frame, waiting for the next one when it lags ``color`` by more than a period."""
        queue = self._depth_queue
        while True:  # drain: keep the newest
            ok, frame = queue.try_wait_for_frame(0)
            if not ok:
                break
            self._last_depth = frame
        depth = self._last_depth
        if depth is None or depth.get_timestamp() < color.get_timestamp() - 1000.0 / self.config.fps:
            ok, frame = queue.try_wait_for_frame(timeout_ms)
            if not ok:
                raise RuntimeError(f"no depth frame within {timeout_ms} ms")
            depth = self._last_depth = frame
        return depth

    def _aligned_depth_mm(self, color: Any, depth: Any) -> npt.NDArray[np.uint16]:
        """Depth aligned to the colour image, (H, W) uint16 mm (``rs.align`` on a depth+colour frameset)."""
        self._pending_depth = depth
        self._compose.invoke(color)
        frameset = self._composed.wait_for_frame(1000).as_frameset()
        aligned = self._align.process(frameset).get_depth_frame()
        raw = np.asanyarray(aligned.get_data())
        if abs(self._depth_mm_per_unit - 1.0) < 1e-6:
            return np.array(raw, dtype=np.uint16, copy=True)
        mm = np.rint(raw.astype(np.float64) * self._depth_mm_per_unit)
        return np.clip(mm, 0, 65535).astype(np.uint16)

    def _make_composer(self) -> None:
        """A processing block that turns (pending depth, colour) into one frameset for ``rs.align``."""
        rs = _rs()

        def compose(frame: Any, source: Any) -> None:
            source.frame_ready(source.allocate_composite_frame([self._pending_depth, frame]))

        self._composed = rs.frame_queue(1, keep_frames=True)
        self._compose = rs.processing_block(compose)
        self._compose.start(self._composed)

    def _stamp_ns(self, frame: Any) -> int:
        """Epoch ns of ``frame``: global/system time as is, the hardware clock mapped to the host clock."""
        rs = _rs()
        device_ns = round(frame.get_timestamp() * 1e6)
        if frame.get_frame_timestamp_domain() in (rs.timestamp_domain.global_time, rs.timestamp_domain.system_time):
            return int(device_ns)
        if self._clock_offset_ns is None:
            self._clock_offset_ns = time.time_ns() - device_ns
        return int(device_ns + self._clock_offset_ns)
