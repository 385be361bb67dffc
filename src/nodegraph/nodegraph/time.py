"""builtin_interfaces Time and Duration as numbers: the one home of the ``sec``/``nanosec`` arithmetic."""

from __future__ import annotations

from typing import Any

NS_PER_S = 1_000_000_000


def to_ns(stamp: Any) -> int:
    """A builtin_interfaces/msg/Time or Duration (anything with ``sec`` and ``nanosec``) in ns."""
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)


def to_s(stamp: Any) -> float:
    """A builtin_interfaces/msg/Time or Duration in s (float)."""
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9


def sec_nanosec(ns: int) -> tuple[int, int]:
    """``ns`` as the (``sec``, ``nanosec``) fields of a Time or Duration (``nanosec`` in [0, 1e9))."""
    sec, nanosec = divmod(int(ns), NS_PER_S)
    return sec, nanosec


def s_to_ns(seconds: float) -> int:
    """``seconds`` in whole ns (rounded): split with :func:`sec_nanosec`, a value just under a second carries over."""
    return round(seconds * NS_PER_S)
