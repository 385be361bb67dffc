"""Safety helpers: joint-limit clamp, step limit, watchdog (fake clock), e-stop and the command filter."""

from __future__ import annotations

import math

import numpy as np
import pytest
from so101_hardware.errors import ConfigError
from so101_hardware.safety import (
    CommandFilter,
    EStop,
    JointLimits,
    Watchdog,
    clamp_to_limits,
    limit_step,
)

LIMITS = JointLimits((-1.0,) * 6, (1.0,) * 6)


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_clamp_to_limits() -> None:
    out = clamp_to_limits([2.0, -2.0, 0.5, 1.0, -1.0, 0.0], LIMITS)
    assert out.tolist() == [1.0, -1.0, 0.5, 1.0, -1.0, 0.0]
    with pytest.raises(ValueError, match="finite"):
        clamp_to_limits([math.nan] * 6, LIMITS)
    with pytest.raises(ValueError, match="expected 6"):
        clamp_to_limits([0.0] * 3, LIMITS)


def test_joint_limits_validation_and_intersection() -> None:
    with pytest.raises(ConfigError):
        JointLimits((1.0,), (0.0,))
    tight = LIMITS.intersect(JointLimits((-0.5,) * 6, (2.0,) * 6))
    assert tight.lower[0] == -0.5 and tight.upper[0] == 1.0


def test_limit_step_per_joint() -> None:
    out = limit_step([1.0, -1.0, 0.01], [0.0, 0.0, 0.0], 0.1)
    assert out == pytest.approx([0.1, -0.1, 0.01])
    out = limit_step([1.0, 1.0], [0.0, 0.0], [0.2, 0.05])
    assert out == pytest.approx([0.2, 0.05])
    with pytest.raises(ValueError):
        limit_step([1.0], [0.0], -0.1)


def test_watchdog_with_injected_clock() -> None:
    clock = FakeClock()
    dog = Watchdog(0.5, clock)
    assert dog.expired() and dog.age() == math.inf
    dog.feed()
    clock.t += 0.4
    assert not dog.expired()
    clock.t += 0.2
    assert dog.expired() and dog.age() == pytest.approx(0.6)
    with pytest.raises(ConfigError):
        Watchdog(0.0)


def test_estop_latches_until_released() -> None:
    stop = EStop()
    stop.engage("button")
    stop.engage("second")
    assert stop.engaged and stop.reason == "button"
    stop.release()
    assert not stop.engaged


def test_command_filter_chain() -> None:
    clock = FakeClock()
    filt = CommandFilter(LIMITS, 0.1, Watchdog(0.5, clock), EStop())
    present = np.zeros(6)
    first = filt.apply(present)
    assert first.hold and first.reason == "no command yet"
    filt.command([2.0, 0.05, 0, 0, 0, 0])
    d = filt.apply(present)
    assert not d.hold and d.clamped and d.step_limited
    assert d.goal[:2] == pytest.approx([0.1, 0.05])
    clock.t += 1.0
    sag = np.full(6, -0.02)
    held = filt.apply(sag)
    assert held.hold and "watchdog" in (held.reason or "")
    assert filt.apply(sag - 0.01).goal == pytest.approx(sag)  # hold pose latched, not drifting
    filt.command([0.0] * 6)
    filt.estop.engage("operator")
    assert filt.apply(present).reason == "e-stop: operator"
    with pytest.raises(ValueError):
        filt.command([math.inf] * 6)
