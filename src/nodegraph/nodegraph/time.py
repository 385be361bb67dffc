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
