"""Safety helpers for the driver loop: joint-limit clamp, per-cycle step limit, command watchdog, e-stop.

Pure and clock-injected (``now`` arguments, seconds on a monotonic clock), so they test without sleeping.
Arrays are (6,) joint vectors in canonical order, rad.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .errors import ConfigError

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class JointLimits:
    """Per-joint position limits, rad: ``lower`` and ``upper`` of equal length, ``lower < upper``."""

    lower: tuple[float, ...]
    upper: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.lower) != len(self.upper) or not self.lower:
            raise ConfigError("joint limits need equally long, non-empty lower and upper", field="limits")
        for i, (lo, hi) in enumerate(zip(self.lower, self.upper, strict=True)):
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ConfigError(f"joint {i}: need finite lower < upper, got {lo}, {hi}", field=f"limits[{i}]")

    @classmethod
    def from_arrays(cls, lower: npt.ArrayLike, upper: npt.ArrayLike) -> JointLimits:
        return cls(tuple(float(v) for v in np.ravel(lower)), tuple(float(v) for v in np.ravel(upper)))

    def intersect(self, other: JointLimits) -> JointLimits:
        """The tighter of both limits, joint by joint."""
        lo = np.maximum(self.lower, other.lower)
        hi = np.minimum(self.upper, other.upper)
        return JointLimits.from_arrays(lo, hi)


def _vector(values: npt.ArrayLike, n: int, what: str) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.shape != (n,):
        raise ValueError(f"{what}: expected {n} values, got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what}: values must be finite, got {arr.tolist()}")
    return arr


def clamp_to_limits(positions: npt.ArrayLike, limits: JointLimits) -> FloatArray:
    """Clip each joint into ``[lower, upper]``, rad; NaN/inf raise ``ValueError``."""
    q = _vector(positions, len(limits.lower), "positions")
    return np.clip(q, limits.lower, limits.upper)


def limit_step(target: npt.ArrayLike, current: npt.ArrayLike, max_step: float | npt.ArrayLike) -> FloatArray:
    """Move from ``current`` toward ``target`` by at most ``max_step`` per joint (rad per cycle)."""
    cur = _vector(current, np.size(current), "current")
    tgt = _vector(target, cur.shape[0], "target")
    step = np.broadcast_to(np.asarray(max_step, dtype=np.float64), cur.shape)
    if np.any(step < 0) or not np.all(np.isfinite(step)):
        raise ValueError(f"max_step must be finite and >= 0, got {step.tolist()}")
    return cur + np.clip(tgt - cur, -step, step)


class Watchdog:
    """Expires when no command was fed for ``timeout_s`` seconds; the driver then holds position.

    Starts expired until the first :meth:`feed` (no command yet = nothing to follow).
    """

    def __init__(self, timeout_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not timeout_s > 0:
            raise ConfigError(f"watchdog timeout must be > 0 s, got {timeout_s}", field="watchdog_timeout_s")
        self.timeout_s = timeout_s
        self._clock = clock
        self._last: float | None = None

    def feed(self, now: float | None = None) -> None:
        """Record a fresh command at ``now`` (default: the clock)."""
        self._last = self._clock() if now is None else now

    def expired(self, now: float | None = None) -> bool:
        """True when never fed or the last feed is older than the timeout."""
        if self._last is None:
            return True
        t = self._clock() if now is None else now
        return t - self._last > self.timeout_s

    def age(self, now: float | None = None) -> float:
        """Seconds since the last feed (``inf`` if never fed)."""
        if self._last is None:
            return math.inf
        return (self._clock() if now is None else now) - self._last

    def reset(self) -> None:
        """Forget the last command (expired again)."""
        self._last = None


class EStop:
    """Latched emergency stop: once engaged it stays engaged until :meth:`release` is called explicitly."""

    def __init__(self) -> None:
        self._reason: str | None = None

    @property
    def engaged(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        return self._reason

    def engage(self, reason: str) -> None:
        """Latch the stop; the first reason is kept."""
        if self._reason is None:
            self._reason = reason or "e-stop"

    def release(self) -> None:
        self._reason = None


@dataclass(frozen=True)
class SafetyDecision:
    """Outcome of :meth:`CommandFilter.apply`: the goal to send (rad) and why it differs from the request."""

    goal: FloatArray
    hold: bool
    reason: str | None
    clamped: bool
    step_limited: bool


class CommandFilter:
    """Chains e-stop, watchdog, joint-limit clamp and step limit: request + present state -> safe goal.

    Args:
        limits: joint limits, rad.
        max_step: largest change of the goal per cycle, rad (scalar or per joint).
        watchdog: command watchdog (fed by :meth:`command`).
        estop: the e-stop latch.
    """

    def __init__(self, limits: JointLimits, max_step: float | npt.ArrayLike, watchdog: Watchdog, estop: EStop) -> None:
        self.limits = limits
        self.max_step = max_step
        self.watchdog = watchdog
        self.estop = estop
        self._target: FloatArray | None = None
        self._hold: FloatArray | None = None

    def command(self, positions: npt.ArrayLike, now: float | None = None) -> None:
        """A new target from ``/joint_commands``; rejects NaN / wrong length with ``ValueError``."""
        self._target = _vector(positions, len(self.limits.lower), "command")
        self.watchdog.feed(now)

    def apply(self, present: npt.ArrayLike, now: float | None = None) -> SafetyDecision:
        """Goal for this cycle from the latest target and the present positions (rad).

        When holding (e-stop, no command, watchdog expired) the goal is the present position latched at the
        start of the hold, so a sagging joint is pulled back instead of drifting with it.
        """
        cur = _vector(present, len(self.limits.lower), "present")
        reason: str | None = None
        if self.estop.engaged:
            reason = f"e-stop: {self.estop.reason}"
        elif self._target is None:
            reason = "no command yet"
        elif self.watchdog.expired(now):
            reason = f"watchdog: no command for {self.watchdog.timeout_s} s"
        if reason is not None:
            if self._hold is None:
                self._hold = clamp_to_limits(cur, self.limits)
            return SafetyDecision(self._hold.copy(), True, reason, False, False)
        self._hold = None
        assert self._target is not None
        clamped = clamp_to_limits(self._target, self.limits)
        stepped = limit_step(clamped, cur, self.max_step)
        return SafetyDecision(
            stepped,
            False,
            None,
            bool(np.any(clamped != self._target)),
            bool(np.any(stepped != clamped)),
        )
