"""Safety helpers: joint-limit clamp, step limit, watchdog (fake clock), e-stop and the command filter."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from so101_core.config import ConfigError
from so101_core.control.safety import (
    CommandFilter,
    EStop,
    JointLimits,
    SafetyConfig,
    Watchdog,
    clamp_to_limits,
    limit_step,
    load_safety_config,
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


def _filter(clock: FakeClock, step: float = 0.1) -> CommandFilter:
    return CommandFilter(LIMITS, step, Watchdog(0.5, clock), EStop(), period_s=0.01)


def test_command_filter_chain() -> None:
    clock = FakeClock()
    filt = _filter(clock)
    present = np.zeros(6)
    first = filt.step(present, clock.t)
    assert first.hold and first.reason == "no command yet" and first.goal == pytest.approx(present)
    assert filt.command([2.0, 0.05, 0, 0, 0, 0], clock.t) is None
    clock.t += 0.01
    d = filt.step(present, clock.t)
    assert not d.hold and d.clamped and d.step_limited
    assert d.goal[:2] == pytest.approx([0.1, 0.05])
    clock.t += 1.0
    sag = np.full(6, -0.02)
    held = filt.step(sag, clock.t)
    assert held.hold and "watchdog" in (held.reason or "")
    assert held.goal[0] == pytest.approx(0.0)  # toward the present position, at the step limit
    clock.t += 0.01
    assert filt.step(sag - 0.01, clock.t).goal == pytest.approx(sag)  # hold pose = present when the hold began
    assert filt.command([0.0] * 6, clock.t) is None
    filt.estop.engage("operator")
    clock.t += 0.01
    assert filt.step(present, clock.t).reason == "e-stop: operator"
    assert filt.command([0.5] * 6, clock.t) == "e-stop: operator"  # refused, not queued
    with pytest.raises(ValueError):
        filt.command([math.inf] * 6)


def test_step_limit_is_from_the_previous_goal_in_time() -> None:
    clock = FakeClock()
    filt = _filter(clock, step=0.05)
    filt.reset(np.zeros(6), clock.t)
    goals = [filt.goal]
    for k in range(20):  # alternating far commands, while the arm lags behind (present stays 0)
        filt.command([0.8 if k % 2 else -0.8] + [0.0] * 5, clock.t)
        clock.t += 0.01
        goals.append(filt.step(np.zeros(6), clock.t).goal)
    deltas = np.abs(np.diff(np.array(goals)[:, 0]))
    assert deltas.max() <= 0.05 + 1e-12  # per write, from the previous goal, never from the present pose
    filt.command([0.8] + [0.0] * 5, clock.t)
    clock.t += 0.002  # 2 ms after a full step: 20 % of a step has refilled
    before = filt.goal
    assert before is not None
    assert abs(filt.step(np.zeros(6), clock.t).goal[0] - before[0]) == pytest.approx(0.01)
    filt.drop_target()
    for _ in range(3):  # at rest (held) the bucket fills up to one step, not more
        clock.t += 0.01
        filt.step(np.zeros(6), clock.t)
    filt.reset(filt.goal, clock.t - 0.05)
    held = filt.goal
    assert held is not None
    filt.command(held + 0.8, clock.t)
    clock.t += 0.0005  # a command right after the last write moves at once by up to one full step
    assert np.abs(filt.step(np.zeros(6), clock.t).goal - held).max() == pytest.approx(0.05)


def test_reset_holds_where_the_arm_is_and_eases_into_limits() -> None:
    clock = FakeClock()
    filt = _filter(clock, step=0.05)
    present = np.array([1.3, 0.2, 0, 0, 0, 0])  # shoulder_pan 0.3 rad beyond its upper limit
    filt.reset(present, clock.t)
    goals = []
    for _ in range(10):
        clock.t += 0.01
        goals.append(filt.step(present, clock.t).goal)
    g = np.array(goals)
    assert g[0, 0] == pytest.approx(1.25) and g[-1, 0] == pytest.approx(1.0)  # eased, step by step
    assert np.all(g[:, 1] == 0.2)  # inside its limits: it does not move at all
    # outside a limit, a command further out is not pushed inward by the clamp: motion only shrinks
    filt.reset(present, clock.t)
    filt.command([1.5, 0.2, 0, 0, 0, 0], clock.t)
    clock.t += 0.01
    d = filt.step(present, clock.t)
    assert d.goal[0] == pytest.approx(1.3) and d.clamped


def test_commands_during_a_fault_are_never_executed() -> None:
    clock = FakeClock()
    filt = _filter(clock)
    filt.reset(np.zeros(6), clock.t)
    filt.set_fault("gripper overload", np.zeros(6))
    assert filt.command([0.5] * 6, clock.t) == "fault: gripper overload"
    clock.t += 0.01
    assert filt.step(np.zeros(6), clock.t).hold
    filt.clear_fault(np.full(6, 0.01), clock.t)
    for _ in range(5):
        clock.t += 0.01
        d = filt.step(np.full(6, 0.01), clock.t)
        assert d.hold and d.goal == pytest.approx(np.full(6, 0.01))  # holds the present pose after the fault
    assert filt.command([0.5] * 6, clock.t, age_s=0.6) is not None  # older than the watchdog: refused
    assert filt.refused == 2


def test_limp_joints_follow_the_present_position() -> None:
    clock = FakeClock()
    filt = _filter(clock)
    filt.reset(np.zeros(6), clock.t)
    clock.t += 0.01
    moved = np.array([0, 0, 0, 0, 0, 0.9])  # the gripper was pushed while limp
    d = filt.step(moved, clock.t, limp=[False] * 5 + [True])
    assert d.goal[5] == 0.9 and np.all(d.goal[:5] == 0.0)


def test_the_twin_reads_robot_safety_alone_and_names_a_bad_value(tmp_path: Path) -> None:
    path = tmp_path / "robot.yaml"
    path.write_text("robot:\n  follower: {port: /dev/null}\n  safety:\n    max_step_rad: 0.02\n")
    assert load_safety_config(path).max_step_rad == 0.02  # the hardware sections are not the twin's business
    path.write_text("robot:\n  safety:\n")
    assert load_safety_config(path) == SafetyConfig()
    path.write_text("robot:\n  safety:\n    max_step_rad: -1\n")
    with pytest.raises(ConfigError) as exc:
        load_safety_config(path)
    assert exc.value.field == "robot.safety.max_step_rad"
    path.write_text("robot:\n  safety:\n    max_stepp_rad: 0.1\n")
    with pytest.raises(ConfigError, match="unknown field"):
        load_safety_config(path)
