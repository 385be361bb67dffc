"""Loop-rate grading of the driver's /diagnostics (pure, clock-injected)."""

from __future__ import annotations

from nodegraph.diagnostics import ERROR, WARN, LoopRateMonitor


def run(monitor: LoopRateMonitor, hz: float, seconds: float, start: float = 0.0) -> float:
    t = start
    while t < start + seconds:
        monitor.tick(t)
        t += 1.0 / hz
    return t


def test_loop_rate_grades_warn_below_the_rate_and_error_below_the_floor() -> None:
    monitor = LoopRateMonitor(rate_hz=100.0, warn_fraction=0.8, floor_hz=30.0)
    assert monitor.grade(0.0) is None  # too young to tell
    t = run(monitor, 100.0, 2.0)
    assert monitor.grade(t) is None and abs(monitor.rate(t) - 100.0) < 2.0
    t = run(monitor, 50.0, 1.5, t)
    level, message = monitor.grade(t) or (0, "")
    assert level == WARN and "below the configured 100 Hz" in message
    t = run(monitor, 20.0, 1.5, t)
    assert (monitor.grade(t) or (0, ""))[0] == ERROR
    assert (monitor.grade(t + 2.0) or (0, ""))[0] == ERROR  # a stalled loop (no cycles at all) is an ERROR too
