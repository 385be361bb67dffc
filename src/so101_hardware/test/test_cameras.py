"""Camera backends through the real vendor stacks, without a device: RealSense through librealsense's software
device (our code opens its sensors, queues, aligns and reads intrinsics as on a USB D4xx; only the USB
enumeration is replaced), OpenCV through a real ``cv2.VideoCapture`` on an MJPG/AVI file; drop-outs by
unplugging the software device or deleting the file. Plus the cameras.yaml loader."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from nodegraph.testing import wait_until
from so101_core.config_paths import config_dir
from so101_hardware.cameras import (
    CameraError,
    CameraLink,
    CameraNotFoundError,
    OpenCVCameraConfig,
    RealSenseCameraConfig,
    camera_config,
    load_cameras_config,
    make_camera,
    pinhole_k,
)
from so101_hardware.cameras.link import ERROR, OK, WARN
from so101_hardware.cameras.opencv import OpenCVCamera
from so101_hardware.cameras.realsense import RealSenseCamera
from so101_hardware.cameras.synthetic import SyntheticRealSense, write_video
from so101_hardware.errors import ConfigError, HardwareError

W, H, FPS = 64, 48, 30


class Log:
    """A logger that keeps what it is told."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def info(self, msg: str) -> None:
        self.lines.append(("info", msg))

    def warning(self, msg: str) -> None:
        self.lines.append(("warning", msg))

    def error(self, msg: str) -> None:
        self.lines.append(("error", msg))


class Devices:
    """A USB bus with several software devices on it."""

    def __init__(self, *devices: SyntheticRealSense) -> None:
        self.devices = devices

    def query_devices(self) -> list[Any]:
        return [d for dev in self.devices for d in dev.query_devices()]


@pytest.fixture
def realsense() -> Iterator[SyntheticRealSense]:
    with SyntheticRealSense(
        serial="123456789012", width=W, height=H, fps=FPS, distortion=(0.1, -0.05, 0.001, 0.002, 0.0)
    ) as device:
        yield device


def rs_config(**overrides: Any) -> RealSenseCameraConfig:
    values: dict[str, Any] = {"name": "side", "serial": "123456789012", "width": W, "height": H, "fps": FPS}
    return RealSenseCameraConfig(**{**values, "timeout_s": 0.5, **overrides})


# ---------------------------------------------------------------------------------------------- RealSense
def test_realsense_reads_colour_aligned_depth_intrinsics_and_device_stamps(realsense: SyntheticRealSense) -> None:
    with RealSenseCamera(rs_config(), realsense) as camera:
        assert camera.is_connected
        frames = [camera.read() for _ in range(4)]
    assert not camera.is_connected
    for frame in frames:
        assert frame.rgb.shape == (H, W, 3) and frame.rgb.dtype == np.uint8
        n = int(frame.rgb[0, 0, 0])  # the frame number, exact: rgb8 is not compressed
        assert np.all(frame.rgb[..., 0] == n)
        assert np.array_equal(frame.rgb[3, :, 1], np.arange(W))
        assert np.array_equal(frame.rgb[:, 5, 2], np.arange(H))
        assert frame.depth is not None and frame.depth.shape == (H, W) and frame.depth.dtype == np.uint16
        # rs.align leaves a few holes (0) where projected pixels round past each other
        assert np.mean(frame.depth == 800) > 0.85 and set(np.unique(frame.depth)) <= {0, 800}
        np.testing.assert_allclose(frame.k, realsense.k, atol=1e-4)
        np.testing.assert_allclose(frame.distortion, [0.1, -0.05, 0.001, 0.002, 0.0], atol=1e-6)
        assert frame.distortion_model == "plumb_bob"
    numbers = [int(f.rgb[0, 0, 0]) for f in frames]
    assert numbers == sorted(numbers) and len(set(numbers)) == 4
    # stamps from the device's hardware clock: exactly its spacing, mapped near the host's epoch clock
    for a, b, na, nb in zip(frames, frames[1:], numbers, numbers[1:], strict=False):
        expected_ns = (realsense.timestamp_ms(nb) - realsense.timestamp_ms(na)) * 1e6
        assert abs((b.stamp_ns - a.stamp_ns) - expected_ns) < 1e3
    assert abs(frames[-1].stamp_ns - time.time_ns()) < 2e9


def test_realsense_depth_units_are_converted_to_mm() -> None:
    with (
        SyntheticRealSense(serial="555", width=W, height=H, fps=FPS, depth_mm=1234, depth_units=0.0001) as device,
        RealSenseCamera(rs_config(serial="555"), device) as camera,
    ):
        frame = camera.read()
    assert frame.depth is not None and np.mean(frame.depth == 1234) > 0.85


def test_realsense_with_colour_and_depth_on_one_sensor() -> None:
    """A D405 streams colour from its stereo module: one sensor opened with both profiles."""
    with (
        SyntheticRealSense(serial="405", width=W, height=H, fps=FPS, one_sensor=True) as device,
        RealSenseCamera(rs_config(serial="405"), device) as camera,
    ):
        assert len(device.device.query_sensors()) == 1
        frames = [camera.read() for _ in range(3)]
    assert [int(f.rgb[0, 0, 0]) for f in frames] == sorted({int(f.rgb[0, 0, 0]) for f in frames})
    assert all(f.depth is not None and np.mean(f.depth == 800) > 0.85 for f in frames)


def test_realsense_is_selected_by_serial_and_reports_the_ones_it_sees(realsense: SyntheticRealSense) -> None:
    with SyntheticRealSense(serial="999999999999", width=W, height=H, fps=FPS, depth_mm=500) as other:
        bus = Devices(other, realsense)
        with RealSenseCamera(rs_config(), bus) as camera:
            frame = camera.read()
        assert frame.depth is not None and np.max(frame.depth) == 800
        with RealSenseCamera(rs_config(serial="999999999999"), bus) as camera:
            frame = camera.read()
        assert frame.depth is not None and np.max(frame.depth) == 500
        missing = RealSenseCamera(rs_config(serial="111"), bus)
        with pytest.raises(CameraNotFoundError, match=r"serial 111.*123456789012") as info:
            missing.connect()
        assert isinstance(info.value, HardwareError) and not missing.is_connected


def test_realsense_without_depth_and_with_an_unsupported_mode(realsense: SyntheticRealSense) -> None:
    with RealSenseCamera(rs_config(depth=False), realsense) as camera:
        assert camera.read().depth is None
    with pytest.raises(CameraError, match=r"width/height/fps.*64x48@30"):
        RealSenseCamera(rs_config(fps=60), realsense).connect()


def test_realsense_drop_out_is_reported_and_it_reconnects(realsense: SyntheticRealSense) -> None:
    log = Log()
    link = CameraLink(RealSenseCamera(rs_config(timeout_s=0.3), realsense), log, 0.1, error_after_s=1.5)
    assert link.poll() is not None and link.status()[0] == OK
    realsense.unplug()  # frames stop, the device leaves the enumeration
    wait_until(lambda: link.poll() is None)
    assert not link.connected and link.dropouts == 1
    level, message = link.status()
    assert level == WARN and "dropped out" in message and "did not arrive" in message
    wait_until(lambda: link.poll() is None and link.status()[0] == ERROR)
    assert "no RealSense with serial 123456789012" in link.values()["last_error"]
    realsense.plug()
    wait_until(lambda: link.poll() is not None)
    assert link.connected and link.status() == (OK, "streaming")
    assert ("info", "camera reconnected: realsense:123456789012") in log.lines
    link.close()


# ---------------------------------------------------------------------------------------------- OpenCV
@pytest.fixture
def video(tmp_path: Path) -> Path:
    return write_video(tmp_path / "ego.avi", 12, W, H, FPS)


def test_opencv_reads_a_video_source_as_rgb_with_pinhole_intrinsics(video: Path) -> None:
    config = OpenCVCameraConfig(name="ego", path=str(video), width=W, height=H, fps=FPS, hfov_deg=90.0)
    with make_camera(config) as camera:
        assert isinstance(camera, OpenCVCamera)
        frame = camera.read()
    assert frame.rgb.shape == (H, W, 3) and frame.rgb.dtype == np.uint8 and frame.depth is None
    # RGB, not BGR: green follows the column, blue the row (JPEG-compressed, hence the tolerance)
    middle = frame.rgb[8:40, 8:56].astype(int)
    assert np.abs(middle[..., 1] - np.arange(8, 56)[None, :]).max() <= 12
    assert np.abs(middle[..., 2] - np.arange(8, 40)[:, None]).max() <= 12
    np.testing.assert_allclose(frame.k, np.array([[32.0, 0.0, 31.5], [0.0, 32.0, 23.5], [0.0, 0.0, 1.0]]))
    np.testing.assert_allclose(frame.k, pinhole_k(W, H, 90.0))
    assert abs(frame.stamp_ns - time.time_ns()) < 2e9


def test_opencv_uses_calibrated_intrinsics_and_checks_the_size(video: Path) -> None:
    k = (50.0, 0.0, 30.0, 0.0, 51.0, 22.0, 0.0, 0.0, 1.0)
    calibrated = OpenCVCameraConfig(name="ego", path=str(video), width=W, height=H, k=k, distortion=(0.1, 0, 0, 0, 0))
    with OpenCVCamera(calibrated) as camera:
        frame = camera.read()
    np.testing.assert_allclose(frame.k.reshape(-1), k)
    np.testing.assert_allclose(frame.distortion, [0.1, 0, 0, 0, 0])
    with pytest.raises(CameraError, match=r"gives 64x48 px, not the configured 640x480"):
        OpenCVCamera(OpenCVCameraConfig(name="ego", path=str(video))).connect()
    with pytest.raises(CameraNotFoundError, match="no video file"):
        OpenCVCamera(OpenCVCameraConfig(name="ego", path=str(video.with_name("gone.avi")), width=W, height=H)).connect()


def test_opencv_file_source_is_paced_and_loops(video: Path) -> None:
    config = OpenCVCameraConfig(name="ego", path=str(video), width=W, height=H, fps=100)
    with OpenCVCamera(config) as camera:
        start = time.monotonic()
        frames = [camera.read() for _ in range(30)]  # the file has 12
        elapsed = time.monotonic() - start
    assert all(f.rgb.shape == (H, W, 3) for f in frames)
    assert elapsed > 0.25  # 100 frames/s, not as fast as the decoder goes


def test_opencv_drop_out_when_the_source_disappears_and_resume(video: Path) -> None:
    data = video.read_bytes()
    config = OpenCVCameraConfig(name="ego", path=str(video), width=W, height=H, fps=120, timeout_s=0.5)
    link = CameraLink(OpenCVCamera(config), Log(), 0.05, error_after_s=1.5)
    assert link.poll() is not None
    video.unlink()  # the source goes away: the open stream runs dry, reopening fails
    wait_until(lambda: link.poll() is None and link.dropouts == 1)
    assert link.status()[0] == WARN
    wait_until(lambda: link.poll() is None and link.status()[0] == ERROR)
    assert "no video file" in link.last_error
    video.write_bytes(data)
    wait_until(lambda: link.poll() is not None)
    assert link.status()[0] == OK and link.frames >= 2
    link.close()


# ---------------------------------------------------------------------------------------------- config
def test_the_shipped_cameras_yaml_loads() -> None:
    cameras = load_cameras_config(config_dir() / "cameras.yaml")
    assert set(cameras) == {"ego", "side", "top"}
    ego, side, top = cameras["ego"], cameras["side"], cameras["top"]
    assert isinstance(ego, OpenCVCameraConfig) and ego.source == 0 and ego.fourcc == "MJPG"
    assert isinstance(side, RealSenseCameraConfig) and side.serial and side.depth
    assert isinstance(top, RealSenseCameraConfig) and top.serial != side.serial
    assert (ego.width, ego.height, ego.fps) == (640, 480, 30.0)


@pytest.mark.parametrize(
    ("entry", "field", "text"),
    [
        ({"backend": "gige", "index": 0}, "cameras.cam.backend", "unknown: 'gige'"),
        ({"index": 0}, "cameras.cam.backend", "is required"),
        ({"backend": "realsense", "width": 640}, "cameras.cam.serial", "serial: is required"),
        ({"backend": "opencv"}, "cameras.cam.index", "needs an index or a path"),
        ({"backend": "opencv", "index": 0, "width": "640"}, "cameras.cam.width", "must be an integer"),
        ({"backend": "opencv", "index": 0, "fps": 0}, "cameras.cam.fps", "must be > 0"),
        ({"backend": "opencv", "index": 0, "serial": "1"}, "cameras.cam.serial", "not a opencv camera field"),
        ({"backend": "opencv", "index": 0, "k": [1, 2]}, "cameras.cam.k", "9 finite numbers"),
        ({"backend": "realsense", "serial": "12", "depth": "yes"}, "cameras.cam.depth", "true or false"),
    ],
)
def test_bad_camera_entries_name_the_field(entry: dict[str, Any], field: str, text: str) -> None:
    with pytest.raises(ConfigError, match=text) as info:
        camera_config("cam", entry)
    assert info.value.field == field and field in str(info.value)


def test_bad_cameras_file_names_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "cameras.yaml"
    path.write_text("cameras:\n  side:\n    backend: realsense\n    depth: true\n")
    with pytest.raises(ConfigError, match=r"cameras\.yaml: cameras\.side\.serial: is required") as info:
        load_cameras_config(path)
    assert info.value.field == "cameras.side.serial"
    path.write_text("robot: {}\n")
    with pytest.raises(ConfigError, match="needs a non-empty 'cameras:' mapping"):
        load_cameras_config(path)
    serial_as_number = camera_config("side", {"backend": "realsense", "serial": 123456789012})
    assert isinstance(serial_as_number, RealSenseCameraConfig) and serial_as_number.serial == "123456789012"
