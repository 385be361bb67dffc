"""sensor_msgs/Image and numpy arrays (the role of ROS's cv_bridge): rgb8 / bgr8 colour and 16UC1 depth."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

COLOR_ENCODINGS = ("rgb8", "bgr8")
DEPTH_ENCODING = "16UC1"


class ImageError(ValueError):
    """An Image whose encoding is not supported here or whose size does not match its fields."""


def image_fields(pixels: npt.NDArray[Any], encoding: str = "rgb8") -> dict[str, Any]:
    """The fields of a sensor_msgs/Image (all but ``header``) holding ``pixels``: (H, W, 3) uint8 for
    ``rgb8``/``bgr8`` (channels already in that order), (H, W) uint16 for ``16UC1`` (little-endian)."""
    if encoding in COLOR_ENCODINGS:
        if pixels.ndim != 3 or pixels.shape[2] != 3:
            raise ImageError(f"{encoding} needs (H, W, 3) pixels, got {pixels.shape}")
        data = np.ascontiguousarray(pixels, dtype=np.uint8).reshape(-1)
        channels_bytes = 3
    elif encoding == DEPTH_ENCODING:
        if pixels.ndim != 2:
            raise ImageError(f"{encoding} needs (H, W) pixels, got {pixels.shape}")
        data = np.ascontiguousarray(pixels, dtype="<u2").view(np.uint8).reshape(-1)
        channels_bytes = 2
    else:
        raise ImageError(f"unsupported encoding {encoding!r} (one of {[*COLOR_ENCODINGS, DEPTH_ENCODING]})")
    h, w = pixels.shape[:2]
    return {"height": h, "width": w, "encoding": encoding, "is_bigendian": 0, "step": w * channels_bytes,
            "data": data}  # fmt: skip


def to_rgb(msg: Any) -> npt.NDArray[np.uint8]:
    """(H, W, 3) uint8 RGB of an ``rgb8`` or ``bgr8`` Image (rows may be padded: ``step`` >= 3 W), in its own
    (read-only) buffer, independent of the message."""
    enc, h, w, step = str(msg.encoding), int(msg.height), int(msg.width), int(msg.step)
    if enc not in COLOR_ENCODINGS:
        raise ImageError(f"not a colour image: encoding {enc!r}")
    data = np.frombuffer(bytes(msg.data), dtype=np.uint8)
    if h * w == 0 or step < 3 * w or data.size != h * step:
        raise ImageError(f"{h}x{w} {enc} image with step {step} holds {data.size} bytes")
    rgb = data.reshape(h, step)[:, : 3 * w].reshape(h, w, 3)
    return np.ascontiguousarray(rgb[:, :, ::-1] if enc == "bgr8" else rgb)
