"""The cv_bridge-role image helpers and the stamp arithmetic, on real message objects of the typestore."""

from __future__ import annotations

import numpy as np
import pytest
from nodegraph.images import ImageError, image_fields, to_rgb
from nodegraph.interfaces.messages import make
from nodegraph.time import to_ns, to_s


def image(pixels: np.ndarray, encoding: str) -> object:
    return make("sensor_msgs/msg/Image", **image_fields(pixels, encoding))


def test_colour_round_trips_and_bgr_comes_back_as_rgb() -> None:
    rgb = np.random.default_rng(0).integers(0, 256, size=(5, 7, 3), dtype=np.uint8)
    assert np.array_equal(to_rgb(image(rgb, "rgb8")), rgb)
    assert np.array_equal(to_rgb(image(rgb[:, :, ::-1], "bgr8")), rgb)


def test_padded_rows_are_cut_and_short_data_refused() -> None:
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    padded = np.zeros((2, 12), np.uint8)
    padded[:, :9] = rgb.reshape(2, 9)
    msg = make("sensor_msgs/msg/Image", height=2, width=3, encoding="rgb8", step=12, data=padded.reshape(-1))
    assert np.array_equal(to_rgb(msg), rgb)
    short = make("sensor_msgs/msg/Image", height=2, width=3, encoding="rgb8", step=9, data=np.zeros(17, np.uint8))
    with pytest.raises(ImageError, match="17 bytes"):
        to_rgb(short)


def test_depth_is_little_endian_16uc1_and_not_a_colour_image() -> None:
    depth = np.array([[0, 1], [258, 65535]], dtype=np.uint16)
    fields = image_fields(depth, "16UC1")
    assert fields["step"] == 4 and bytes(fields["data"][:4]) == b"\x00\x00\x01\x00"
    with pytest.raises(ImageError, match="not a colour image"):
        to_rgb(make("sensor_msgs/msg/Image", **fields))
    with pytest.raises(ImageError, match="unsupported encoding"):
        image_fields(depth, "mono16")
    with pytest.raises(ImageError, match=r"\(H, W, 3\)"):
        image_fields(depth, "rgb8")


def test_stamps_in_ns_and_s() -> None:
    stamp = make("builtin_interfaces/msg/Time", sec=3, nanosec=250_000_000)
    assert to_ns(stamp) == 3_250_000_000 and to_s(stamp) == 3.25
    assert to_ns(make("builtin_interfaces/msg/Duration", sec=1, nanosec=1)) == 1_000_000_001


def test_seconds_split_into_sec_and_nanosec_carry_over() -> None:
    """A time just under a whole second rounds up into it, never to (sec, 0) a second early; negative ns (a
    Duration) keep nanosec in [0, 1e9) as builtin_interfaces wants."""
    from nodegraph.time import s_to_ns, sec_nanosec

    assert sec_nanosec(s_to_ns(1.9999999999)) == (2, 0)
    assert sec_nanosec(s_to_ns(2.5)) == (2, 500_000_000)
    assert sec_nanosec(1_700_000_000_123_456_789) == (1_700_000_000, 123_456_789)
    assert sec_nanosec(-1) == (-1, 999_999_999)
    stamp = type("Stamp", (), {"sec": 2, "nanosec": 500_000_000})()
    assert to_ns(stamp) == s_to_ns(2.5) and to_s(stamp) == 2.5
