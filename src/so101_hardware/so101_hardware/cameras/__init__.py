"""Cameras behind one ABC (LeRobot's ``cameras/`` style): USB cameras through OpenCV, RealSense through
librealsense, a supervising link that reconnects after a drop-out, and the ``cameras.yaml`` loader."""

from .base import (
    BACKENDS,
    Camera,
    CameraConfig,
    CameraDisconnectedError,
    CameraError,
    CameraNotFoundError,
    Frame,
    OpenCVCameraConfig,
    RealSenseCameraConfig,
    pinhole_k,
)
from .config import camera_config, load_cameras_config, make_camera
from .link import CameraLink

__all__ = [
    "BACKENDS",
    "Camera",
    "CameraConfig",
    "CameraDisconnectedError",
    "CameraError",
    "CameraLink",
    "CameraNotFoundError",
    "Frame",
    "OpenCVCameraConfig",
    "RealSenseCameraConfig",
    "camera_config",
    "load_cameras_config",
    "make_camera",
    "pinhole_k",
]
