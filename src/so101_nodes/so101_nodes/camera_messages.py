"""sensor_msgs helpers shared by the camera publishers (camera node; the sim node builds the same messages):
stamped headers, rgb8 / 16UC1 Images and CameraInfo from K and distortion."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from nodegraph.graph.api import Message, Node
from nodegraph.images import image_fields


def header(node: Node, stamp_ns: int, frame_id: str = "") -> Message:
    """std_msgs/Header stamped ``stamp_ns`` (ns since the epoch, or sim time)."""
    return node.message("std_msgs/msg/Header", stamp=node.stamp(stamp_ns), frame_id=frame_id)


def rgb_image(node: Node, head: Message, rgb: npt.NDArray[np.uint8]) -> Message:
    """sensor_msgs/Image, encoding rgb8, of ``rgb`` (H, W, 3) uint8."""
    return node.message("sensor_msgs/msg/Image", header=head, **image_fields(rgb, "rgb8"))


def depth_image(node: Node, head: Message, depth_mm: npt.NDArray[np.uint16]) -> Message:
    """sensor_msgs/Image, encoding 16UC1 (little-endian), of ``depth_mm`` (H, W) uint16 mm (0 = no data)."""
    return node.message("sensor_msgs/msg/Image", header=head, **image_fields(depth_mm, "16UC1"))


def camera_info(
    node: Node,
    head: Message,
    width: int,
    height: int,
    k: npt.NDArray[np.float64],
    distortion: npt.NDArray[np.float64] | None = None,
    distortion_model: str = "plumb_bob",
) -> Message:
    """sensor_msgs/CameraInfo: K (3, 3) px, D (``distortion_model``; zeros when ``None``), R = I, P = [K | 0]."""
    d = np.zeros(5) if distortion is None else np.asarray(distortion, dtype=np.float64)
    p = np.hstack([np.asarray(k, dtype=np.float64), np.zeros((3, 1))])
    return node.message(
        "sensor_msgs/msg/CameraInfo",
        header=head,
        height=height,
        width=width,
        distortion_model=distortion_model,
        d=d,
        k=np.asarray(k, dtype=np.float64).reshape(-1),
        r=np.eye(3).reshape(-1),
        p=p.reshape(-1),
    )
