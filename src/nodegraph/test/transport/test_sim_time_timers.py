"""Timers on ROS time (zenoh backend, a real router): under ``use_sim_time`` a timer fires per period of
``/clock`` time, published here by the test (``SimClock``), not per period of wall time: none before the first
``/clock`` message, none while the clock stands still, one (not a burst) for a large forward jump, and its
schedule restarts when the clock jumps back (a sim reset); on a clock stepping as coarsely as its period (the
twin's 32 / 34 ms steps at 30 Hz) it fires once per step. A wall-time timer beside it keeps firing on its own."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from nodegraph.testing import wait_until
from nodegraph.testing.clock import SimClock
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.node import ZenohNode
from nodegraph.transport.zenoh.router import RouterProcess

PERIOD_S = 0.05
P = 50_000_000  # the period in ns
T0 = 1_000 * 10**9  # ns: the sim clock's first reading


class Ticks:
    """A timer's firings, each recorded as its node's ROS time (ns)."""

    def __init__(self, node: ZenohNode, period_s: float = PERIOD_S) -> None:
        self.node = node
        self.lock = threading.Lock()
        self.at: list[int] = []
        node.create_timer(period_s, self._on_timer)

    def _on_timer(self) -> None:
        with self.lock:
            self.at.append(self.node.now_ns())

    def __len__(self) -> int:
        with self.lock:
            return len(self.at)

    def wait(self, count: int) -> list[int]:
        """The firings once there are ``count`` of them."""
        wait_until(lambda: len(self) >= count, 10.0, f"{count} firings")
        with self.lock:
            return list(self.at)


@pytest.fixture
def nodes(router: RouterProcess) -> Iterator[Any]:
    """``make(name, use_sim_time)``: a node on a zenoh session of its own to the router."""
    with contextlib.ExitStack() as stack:

        def make(name: str, use_sim_time: bool = False) -> ZenohNode:
            ctx = Context(router.endpoint)
            stack.callback(ctx.close)
            assert ctx.wait_for_router(10.0)
            node = ZenohNode(name, args=[], context=ctx, parameter_overrides={"use_sim_time": use_sim_time})
            stack.callback(node.shutdown)
            return node

        yield make


def test_a_sim_time_timer_fires_per_period_of_clock_time_and_a_wall_timer_as_before(nodes: Any) -> None:
    sim_node, wall_node = nodes("sim_timed", use_sim_time=True), nodes("wall_timed")
    clock = SimClock(nodes("clock"))
    sim, wall = Ticks(sim_node), Ticks(wall_node)
    wall.wait(5)  # 5 wall periods pass: the wall timer fires...
    assert len(sim) == 0  # ... the sim-time one waits for /clock

    clock.set(T0, sim_node)  # the first reading starts the schedule
    for k in range(1, 11):  # ten periods of sim time, as fast as the wire goes
        clock.advance(P, sim_node)
        sim.wait(k)
    assert sim.wait(10) == [T0 + k * P for k in range(1, 11)]

    seen = len(wall)
    wall.wait(seen + 10)  # the clock stands still for 10 wall periods: the sim-time timer does not fire
    assert len(sim) == 10

    clock.advance(100 * P + P // 2, sim_node)  # a large forward jump: one firing, not a burst of 100
    clock.advance(P // 2, sim_node)  # the schedule keeps its phase: due again at T0 + 111 P
    assert sim.wait(12)[10:] == [T0 + 110 * P + P // 2, T0 + 111 * P]
    seen = len(wall)
    wall.wait(seen + 5)
    assert len(sim) == 12


def test_a_clock_jumping_back_restarts_the_schedule(nodes: Any) -> None:
    sim_node = nodes("sim_reset", use_sim_time=True)
    clock = SimClock(nodes("clock"))
    sim = Ticks(sim_node)
    clock.set(T0, sim_node)
    for k in range(1, 4):
        clock.advance(P, sim_node)
        sim.wait(k)
    clock.set(T0 - 50 * P, sim_node)  # a sim reset: the clock goes back 53 periods
    clock.advance(P // 2, sim_node)
    clock.advance(P // 2, sim_node)  # a period after the jump: fires (a frozen schedule would wait 53 periods)
    clock.advance(P, sim_node)
    assert sim.wait(5) == [T0 + P, T0 + 2 * P, T0 + 3 * P, T0 - 49 * P, T0 - 48 * P]


def test_a_sim_time_timer_made_while_the_clock_runs_starts_from_its_reading(nodes: Any) -> None:
    sim_node, wall_node = nodes("sim_late", use_sim_time=True), nodes("wall_late")
    clock = SimClock(nodes("clock"))
    clock.set(T0 + P // 5, sim_node)
    sim, wall = Ticks(sim_node), Ticks(wall_node)  # due at T0 + 1.2 P
    wall.wait(3)
    assert len(sim) == 0
    for tenth in range(3, 13):  # the clock in tenths of a period up to T0 + 1.2 P: it fires on that reading
        clock.set(T0 + tenth * P // 10, sim_node)
    assert sim.wait(1) == [T0 + 12 * P // 10]


def test_a_timer_at_the_clocks_own_rate_fires_once_per_step(nodes: Any) -> None:
    """The twin's clock at 30 Hz: control steps of 16 or 17 physics steps of 2 ms (32 or 34 ms); a 30 Hz timer on
    it fires once per step (on the reading nearest each due time), not on 2 of every 3."""
    sim_node = nodes("sim_twin", use_sim_time=True)
    clock = SimClock(nodes("clock"))
    clock.set(T0, sim_node)
    sim = Ticks(sim_node, 1 / 30)
    physics = 0  # physics steps of 2 ms since T0
    for k in range(1, 31):
        physics += round(k * 50 / 3) - round((k - 1) * 50 / 3)
        clock.set(T0 + physics * 2_000_000, sim_node)
        sim.wait(k)
    assert len(sim.wait(30)) == 30
