"""Control safety shared by the driver and the twin: ``robot.safety``'s settings, joint-limit clamp, per-cycle step
limit, command watchdog, e-stop and the command filter that combines them.

Pure and clock-injected (``now`` arguments, seconds on a monotonic clock), so they test without sleeping.
Arrays are (6,) joint vectors in canonical order, rad.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from so101_core.arrays import F64
from so101_core.config import ConfigError, Fields, load_yaml

TORQUE_RECOVERY = ("manual", "when_clear")


@dataclass(frozen=True)
class SafetyConfig:
    """``robot.safety`` of ``robot.yaml``: the settings shared by the driver and the twin.

    Attributes:
        max_step_rad: largest goal change per control cycle of ``rate_hz``, rad.
        rate_hz: the driver's control rate, Hz (the cycle ``max_step_rad`` refers to).
        watchdog_timeout_s: no command for this long -> hold; older commands are refused, s.
        min_rate_hz: loop rate below which ``/diagnostics`` says ERROR, Hz (WARN below
            ``rate_warn_fraction`` x ``rate_hz``).
        rate_warn_fraction: fraction of ``rate_hz`` below which the loop rate is a WARN.
        max_temperature_c / min_voltage_v / max_load: health warning thresholds (°C, V, fraction of max torque).
        calibration_margin_rad: a joint reading further than this outside its calibrated range when the driver
            (re)connects is reported as a WARN on ``/diagnostics`` (the calibration may have drifted), rad.
        torque_recovery: after a servo lost torque: ``manual`` (only ``~/enable_torque``) or ``when_clear``
            (torque back on by itself once the servo reports no error bits, holding where it is).
    """

    max_step_rad: float = 0.05
    rate_hz: float = 100.0
    watchdog_timeout_s: float = 0.5
    min_rate_hz: float = 30.0
    rate_warn_fraction: float = 0.8
    max_temperature_c: float = 65.0
    min_voltage_v: float = 6.0
    max_load: float = 0.9
    calibration_margin_rad: float = 0.05
    torque_recovery: str = "manual"

    @property
    def max_speed_rad_s(self) -> float:
        """The step limit as a speed: ``max_step_rad * rate_hz``, rad/s."""
        return self.max_step_rad * self.rate_hz


def parse_safety_config(data: Any) -> SafetyConfig:
    """:class:`SafetyConfig` from the decoded ``robot.safety`` section (absent or null: the defaults; absent keys
    keep theirs; every number > 0, ``rate_warn_fraction`` <= 1, unknown keys refused; errors name
    ``robot.safety.<key>``)."""
    section = Fields(data or {}, "robot.safety")
    values: dict[str, Any] = {}
    for key, default in vars(SafetyConfig()).items():
        if isinstance(default, str):
            values[key] = section.text(key, default, choices=TORQUE_RECOVERY)
        else:
            upper = 1.0 if key == "rate_warn_fraction" else None
            values[key] = section.num(key, default, lo=0.0, lo_open=True, hi=upper)
    section.finish()
    return SafetyConfig(**values)


def load_safety_config(path: str | Path) -> SafetyConfig:
    """``robot.safety`` of the ``robot.yaml`` at ``path`` (defaults where the section or a key is absent); the
    twin's reader, which needs none of the hardware sections."""
    return parse_safety_config(load_yaml(path, "document").sub("robot", {}).raw("safety", {}))


@dataclass(frozen=True)
class JointLimits:
    """Per-joint position limits, rad: ``lower`` and ``upper`` of equal length, ``lower < upper``."""

    lower: tuple[float, ...]
    upper: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.lower) != len(self.upper) or not self.lower:
            raise ConfigError("limits", "joint limits need equally long, non-empty lower and upper")
        for i, (lo, hi) in enumerate(zip(self.lower, self.upper, strict=True)):
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ConfigError(f"limits[{i}]", f"joint {i}: need finite lower < upper, got {lo}, {hi}")

    @classmethod
    def from_arrays(cls, lower: npt.ArrayLike, upper: npt.ArrayLike) -> JointLimits:
        return cls(tuple(float(v) for v in np.ravel(lower)), tuple(float(v) for v in np.ravel(upper)))

    def intersect(self, other: JointLimits) -> JointLimits:
        """The tighter of both limits, joint by joint."""
        lo = np.maximum(self.lower, other.lower)
        hi = np.minimum(self.upper, other.upper)
        return JointLimits.from_arrays(lo, hi)


def _vector(values: npt.ArrayLike, n: int, what: str) -> F64:
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.shape != (n,):
        raise ValueError(f"{what}: expected {n} values, got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what}: values must be finite, got {arr.tolist()}")
    return arr


def clamp_to_limits(positions: npt.ArrayLike, limits: JointLimits) -> F64:
    """Clip each joint into ``[lower, upper]``, rad; NaN/inf raise ``ValueError``."""
    q = _vector(positions, len(limits.lower), "positions")
    return np.clip(q, limits.lower, limits.upper)


def limit_step(target: npt.ArrayLike, current: npt.ArrayLike, max_step: float | npt.ArrayLike) -> F64:
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
            raise ConfigError("watchdog_timeout_s", f"watchdog timeout must be > 0 s, got {timeout_s}")
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
    """Outcome of :meth:`CommandFilter.step`: the goal to send (rad) and why it differs from the request."""

    goal: F64
    hold: bool
    reason: str | None
    clamped: bool
    step_limited: bool


class CommandFilter:
    """The one rule set between every command source and the actuators (driver and twin alike).

    Rules, in order:

    1. The goal never moves more than ``max_step_rad`` from the **previous goal** per write, and on average at
       most ``max_step_rad`` per ``period_s``: a token bucket per joint (capacity one step, refilled at one step
       per period) lets a command that arrives between cycles move at once from rest, never faster over time.
    2. The hold pose is the **present** position, taken when the hold begins; :meth:`reset` (startup, every
       reconnect, a cleared fault) makes the present position the previous goal and the hold pose, dropping
       any target, and eases into ``limits`` at the step limit only when the present pose is outside them.
    3. A command older than the watchdog, or sent while faulted / e-stopped / not yet synced, is refused
       and never executed later; a fresh command is needed after every hold.
    4. A limit clamp only makes motion smaller: the clamped goal lies between the previous goal and the target.

    ``now`` (s) times the step budget: the driver passes monotonic time, the twin its sim time. The watchdog
    always runs on its own clock (the commander's wall clock). Arrays: (6,) rad, canonical order.

    Args:
        limits: joint limits, rad.
        max_step_rad: largest goal change per write and per period, rad (scalar or per joint).
        period_s: the control period the step limit refers to, s.
        watchdog: the command watchdog.
        estop: the e-stop latch.
    """

    def __init__(
        self,
        limits: JointLimits,
        max_step_rad: float | npt.ArrayLike,
        watchdog: Watchdog,
        estop: EStop,
        period_s: float = 0.01,
    ) -> None:
        n = len(limits.lower)
        step = np.broadcast_to(np.asarray(max_step_rad, dtype=np.float64), (n,)).copy()
        if np.any(step <= 0) or not np.all(np.isfinite(step)):
            raise ConfigError("max_step_rad", f"max_step_rad must be finite and > 0, got {step.tolist()}")
        if not (math.isfinite(period_s) and period_s > 0):
            raise ConfigError("period_s", f"period_s must be > 0, got {period_s}")
        self.limits = limits
        self.max_step = step
        self.period_s = period_s
        self.watchdog = watchdog
        self.estop = estop
        self._lower = np.asarray(limits.lower)
        self._upper = np.asarray(limits.upper)
        self._goal: F64 | None = None  # the previous goal
        self._goal_time: float | None = None
        self._tokens = step.copy()  # rad each joint may still move now (token bucket, capacity max_step)
        self._target: F64 | None = None
        self._hold: F64 | None = None
        self._hold_reason: str | None = None
        self._fault: str | None = None
        self.refused = 0

    # ------------------------------------------------------------------ state
    @property
    def goal(self) -> F64 | None:
        """The previous goal (rad), ``None`` before the first :meth:`reset`."""
        return None if self._goal is None else self._goal.copy()

    @property
    def synced(self) -> bool:
        return self._goal is not None

    @property
    def hold_reason(self) -> str | None:
        """Why the last :meth:`step` held instead of following a target (``None``: it followed one)."""
        return self._hold_reason

    @property
    def fault(self) -> str | None:
        """The reason of the active fault hold, ``None`` when not faulted."""
        return self._fault

    def active_target(self, now: float | None = None) -> F64 | None:
        """The target being followed (``None`` while holding)."""
        if self._target is None or self._refusal(now) is not None:
            return None
        return self._target.copy()

    def _now(self, now: float | None) -> float:
        return self.watchdog._clock() if now is None else now

    def _refusal(self, now: float | None) -> str | None:
        if self._fault is not None:
            return f"fault: {self._fault}"
        if self.estop.engaged:
            return f"e-stop: {self.estop.reason}"
        if self._goal is None:
            return "not synced with the arm"
        if self._target is None:
            return "no command yet"
        if self.watchdog.expired():
            return f"watchdog: no command for {self.watchdog.timeout_s:g} s"
        return None

    # ------------------------------------------------------------------ inputs
    def reset(self, present: npt.ArrayLike, now: float | None = None) -> None:
        """Startup, reconnect, cleared fault: the present position (rad) becomes the previous goal; the hold
        pose is the present position clamped into the limits (reached at the step limit); targets dropped."""
        cur = _vector(present, len(self.limits.lower), "present")
        self._goal = cur.copy()
        self._goal_time = self._now(now)
        self._tokens = np.zeros_like(self.max_step)  # the first step refills with time
        self._hold = np.clip(cur, self._lower, self._upper)
        self._hold_reason = "no command yet"
        self._target = None
        self.watchdog.reset()

    def command(self, positions: npt.ArrayLike, now: float | None = None, age_s: float = 0.0) -> str | None:
        """A new target (rad); returns ``None`` when accepted, else why it was refused (it is then dropped).

        Args:
            positions: (6,) target, rad; NaN / wrong length raise ``ValueError``.
            now: arrival time, s (unused: the watchdog reads its own clock).
            age_s: how old the command already is on arrival (from its stamp), s.
        """
        target = _vector(positions, len(self.limits.lower), "command")
        reason: str | None = None
        if self._fault is not None:
            reason = f"fault: {self._fault}"
        elif self.estop.engaged:
            reason = f"e-stop: {self.estop.reason}"
        elif self._goal is None:
            reason = "not synced with the arm"
        elif age_s > self.watchdog.timeout_s:
            reason = f"command is {age_s:.3f} s old (watchdog {self.watchdog.timeout_s:g} s)"
        if reason is not None:
            self.refused += 1
            return reason
        self._target = target
        self.watchdog.feed()
        return None

    def set_fault(self, reason: str, present: npt.ArrayLike) -> None:
        """Enter a fault hold at the present position (rad); commands are refused until :meth:`clear_fault`."""
        if self._fault is None:
            self._hold = _vector(present, len(self.limits.lower), "present")
            self._hold_reason = None
        self._fault = reason
        self._target = None
        self.watchdog.reset()

    def clear_fault(self, present: npt.ArrayLike, now: float | None = None) -> None:
        """The fault is gone: re-sync at the present position; a fresh command is needed to move."""
        self._fault = None
        self.reset(present, now)

    def drop_target(self) -> None:
        """Forget the target (after an e-stop release, a cancel, torque back on): hold at the present position
        until a fresh command."""
        self._target = None
        self._hold = None
        self.watchdog.reset()

    # ------------------------------------------------------------------ output
    def step(
        self,
        present: npt.ArrayLike,
        now: float | None = None,
        limp: npt.ArrayLike | None = None,
    ) -> SafetyDecision:
        """The goal of this write from the target (or the hold pose), the previous goal and ``now``.

        Args:
            present: (6,) present positions, rad (the hold pose when a hold begins).
            now: s.
            limp: (6,) bool, joints without torque: their goal follows the present position.
        """
        t = self._now(now)
        cur = _vector(present, len(self.limits.lower), "present")
        if self._goal is None:
            self.reset(cur, t)
        assert self._goal is not None and self._goal_time is not None
        prev = self._goal
        reason = self._refusal(t)
        clamped = False
        if reason is None:
            assert self._target is not None
            self._hold = None
            self._hold_reason = None
            candidate = np.clip(self._target, self._lower, self._upper)
            requested = self._target - prev
            # a clamp only makes motion smaller: stay between the previous goal and the target
            motion = np.clip(candidate - prev, np.minimum(requested, 0.0), np.maximum(requested, 0.0))
            wanted = prev + motion
            clamped = bool(np.any(wanted != self._target))
        else:
            if self._hold is None:
                self._hold = cur.copy()
            self._hold_reason = reason
            wanted = self._hold
        elapsed = max(0.0, t - self._goal_time)
        self._tokens = np.minimum(self.max_step, self._tokens + self.max_step * (elapsed / self.period_s))
        goal = prev + np.clip(wanted - prev, -self._tokens, self._tokens)
        self._tokens = np.maximum(0.0, self._tokens - np.abs(goal - prev))
        if limp is not None:
            mask = np.asarray(limp, dtype=bool)
            goal = np.where(mask, cur, goal)
            if self._hold is not None:  # a limp joint is held where it was moved to, once torque is back
                self._hold = np.where(mask, cur, self._hold)
        stepped = bool(np.any(np.abs(goal - wanted) > 1e-12))
        self._goal, self._goal_time = goal, t
        return SafetyDecision(goal.copy(), reason is not None, reason, clamped, stepped)
