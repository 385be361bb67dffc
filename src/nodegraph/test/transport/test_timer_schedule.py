"""``ZenohTimer``'s ROS-time schedule on a fake clock (a function of the test), read as the executor reads it:
after every callback it runs, so several times per reading."""

from __future__ import annotations

from nodegraph.transport.zenoh.entities import ZenohTimer

T0 = 1_000 * 10**9  # ns


class FakeClock:
    def __init__(self) -> None:
        self.ns: int | None = None

    def __call__(self) -> int | None:
        return self.ns


def fires_at(timer: ZenohTimer, clock: FakeClock, readings: list[int], reads_per_reading: int = 3) -> list[int]:
    """The readings on which ``timer`` fired."""
    fired = []
    for ns in readings:
        clock.ns = ns
        for _ in range(reads_per_reading):  # other callbacks of the node run before the next /clock
            if timer.take(0.0):
                fired.append(ns)
    return fired


def twin_clock(steps: int) -> list[int]:
    """The twin's /clock at 30 Hz: control steps of 16 or 17 physics steps of 2 ms (ns from T0)."""
    return [T0 + round(k * 50 / 3) * 2_000_000 for k in range(steps + 1)]


def test_on_the_twins_clock_a_30_hz_timer_fires_once_per_step_on_the_phase_of_its_start() -> None:
    clock = FakeClock()
    timer = ZenohTimer(1 / 30, lambda: None, clock)
    readings = twin_clock(300)
    fired = fires_at(timer, clock, readings)
    assert fired == readings[1:]  # every step but the first reading, which starts the schedule
    # ... each on the reading nearest its due time T0 + k / 30 s: within half a clock step (1 ms here)
    assert max(abs(ns - (T0 + round(k * 1e9 / 30))) for k, ns in enumerate(fired, 1)) <= 1_000_000


def test_a_fine_clock_fires_within_half_its_step_and_a_repeated_reading_fires_nothing() -> None:
    clock = FakeClock()
    timer = ZenohTimer(0.05, lambda: None, clock)
    readings = [T0 + k * 3_000_000 for k in range(1001)]  # 3 ms steps for 3 s
    fired = fires_at(timer, clock, readings, reads_per_reading=5)
    assert len(fired) == 60
    assert all(abs(ns - (T0 + k * 50_000_000)) <= 1_500_000 for k, ns in enumerate(fired, 1))


def test_none_before_the_first_reading_then_jumps_forward_and_back() -> None:
    clock = FakeClock()
    timer = ZenohTimer(0.05, lambda: None, clock)
    p = 50_000_000
    assert fires_at(timer, clock, []) == [] and not timer.take(0.0)  # no /clock yet
    assert fires_at(timer, clock, [T0, T0 + p, T0 + 2 * p]) == [T0 + p, T0 + 2 * p]
    assert fires_at(timer, clock, [T0 + 102 * p + p // 2, T0 + 103 * p]) == [T0 + 102 * p + p // 2, T0 + 103 * p]
    # back (a sim reset) to before the last firing: the schedule restarts there, a period later it fires
    back = [T0 - 7 * p, T0 - 6 * p - p // 2, T0 - 6 * p - p // 4, T0 - 6 * p]  # quarter-period steps at the end
    assert fires_at(timer, clock, back) == [T0 - 6 * p]
