"""The policy node on its node clock (issue 28): under ``use_sim_time`` its loop ticks per period of ``/clock``
time, which the test publishes itself over a real zenoh router (``SimClock``), and input staleness is measured in
sim seconds; wall time passing with the clock stopped neither ticks the loop nor ages its inputs. The server is a
fake one on a real ZMQ socket; inputs go to the node's own callbacks, stamped on receipt by its clock."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import numpy as np
import pytest
from nodegraph.testing import graph as graph_testing
from nodegraph.testing import wait_until
from nodegraph.testing.clock import SimClock
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.node import ZenohNode
from nodegraph.transport.zenoh.router import RouterProcess
from so101_core.lerobot_units import to_lerobot
from so101_core.robot_spec import JOINT_NAMES
from so101_policy.nodes.policy_node import PolicyNode
from so101_policy.testing.fake_server import FakeServer, ScriptedBackend

endpoint = graph_testing.endpoint
router = graph_testing.router

RATE_HZ = 20.0
P = 50_000_000  # ns: a control period at RATE_HZ
T0 = 500 * 10**9  # ns: the sim clock's first reading
Q0 = np.array([0.0, -1.60, 0.3, 0.2, 0.0, 0.5])  # rad
WALL_WHILE_S = 0.4  # wall seconds with the clock stopped: 8 periods of wall time, longer than any staleness bound


class RampBackend(ScriptedBackend):
    """Row t of the chunk asked at step s: Q0 with shoulder_pan + 0.01 (s + t) rad."""

    def get_action(self, observation: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict, dict]:
        self.calls += 1
        step = int((options or {}).get("step", 0))
        self.steps.append(step)
        chunk = np.repeat(Q0[None], self.horizon, axis=0)
        chunk[:, 0] += 0.01 * (step + np.arange(self.horizon))
        out = to_lerobot(chunk).astype(np.float32)[None]
        return {"single_arm": out[:, :, :5], "gripper": out[:, :, 5:]}, {}


class SimTimed:
    """A policy node under ``use_sim_time`` and the ``/clock`` that drives it, each on a session of its own."""

    def __init__(self, stack: contextlib.ExitStack, router: RouterProcess, **params: Any) -> None:
        self.backend = RampBackend(("top",), horizon=16)
        server = FakeServer(self.backend)
        stack.callback(server.stop)
        overrides = {"cameras": ["top"], "server_port": server.port, "server_timeout_ms": 10000, "autostart": True}
        overrides |= {"rate_hz": RATE_HZ, "use_sim_time": True, **params}
        self.node = ZenohNode("policy", args=[], context=self._context(stack, router), parameter_overrides=overrides)
        stack.callback(self.node.shutdown)
        self.policy = PolicyNode(self.node)
        stack.callback(self.policy.close)
        clock_node = ZenohNode("clock", args=[], context=self._context(stack, router))
        stack.callback(clock_node.shutdown)
        self.clock = SimClock(clock_node)
        self.image = self.node.message("sensor_msgs/msg/Image", height=4, width=6, encoding="rgb8", step=18,
                                       data=bytes(72))  # fmt: skip

    @staticmethod
    def _context(stack: contextlib.ExitStack, router: RouterProcess) -> Context:
        ctx = Context(router.endpoint)
        stack.callback(ctx.close)
        assert ctx.wait_for_router(10.0)
        return ctx

    @property
    def ticks(self) -> int:
        return self.policy.stats["published"] + self.policy.stats["held"]

    def feed(self, joints: bool = True, image: bool = True) -> None:
        """Hand the node a joint state (Q0) and a camera image, received now by its clock."""
        if joints:
            msg = self.node.message("sensor_msgs/msg/JointState", name=list(JOINT_NAMES), position=list(Q0))
            self.policy.on_joint_state(msg)
        if image:
            self.policy.on_image("top", self.image)

    def step(self) -> None:
        """Advance /clock by one period; wait for the tick it causes and for the reply to a query it sent."""
        ticks = self.ticks
        self.clock.advance(P, self.node)
        wait_until(lambda: self.ticks > ticks, 10.0, "a tick")
        assert self.ticks == ticks + 1
        if self.policy._inflight:  # the reply is taken by the next tick
            wait_until(lambda: not self.policy._replies.empty(), 20.0, "a reply from the server", 0.002)


def test_the_loop_and_its_replans_follow_the_clock(router: RouterProcess, stack: contextlib.ExitStack) -> None:
    t = SimTimed(stack, router, horizon=8, replan_steps=4, stale_joint_s=600.0, stale_camera_s=600.0)
    t.feed()
    time.sleep(WALL_WHILE_S)  # wall time passes before the first /clock message: no tick, no query
    assert t.ticks == 0 and t.backend.calls == 0
    t.clock.set(T0, t.node)
    for _ in range(10):
        t.feed()
        t.step()
    # ten periods of sim time, ten ticks: queries at steps 0, 4, 8 (ticks run steps 0, 0, 1, 2, ...)
    assert t.backend.steps == [0, 4, 8] and t.policy.stats["held"] == 1
    assert t.policy._last_command is not None and t.policy._last_command[0] == pytest.approx(0.01 * 8, abs=1e-5)
    calls, ticks = t.backend.calls, t.ticks
    time.sleep(WALL_WHILE_S)  # the clock stops (a paused sim): the loop waits, asking nothing
    assert (t.backend.calls, t.ticks) == (calls, ticks)
    t.feed()
    t.step()
    assert t.policy.stats["held"] == 1 and t.policy._last_command[0] == pytest.approx(0.01 * 9, abs=1e-5)


def test_input_staleness_is_measured_in_sim_seconds(router: RouterProcess, stack: contextlib.ExitStack) -> None:
    t = SimTimed(stack, router, stale_joint_s=0.22, stale_camera_s=0.32)
    t.clock.set(T0, t.node)
    t.feed()  # received at T0; nothing more comes
    for _ in range(3):
        t.step()
    assert "stale" not in t.policy.status()[1]
    ticks = t.ticks
    time.sleep(WALL_WHILE_S)  # more wall time than either bound, with the clock stopped: the inputs do not age
    assert t.ticks == ticks
    t.step()  # 0.20 sim s old
    assert "stale" not in t.policy.status()[1], t.policy.status()
    t.step()  # 0.25 sim s old: the joint state is stale, the image (bound 0.32 s) not yet
    message = t.policy.status()[1]
    assert "joint state stale (0.25 s old)" in message and "camera" not in message
    t.step()
    t.step()  # 0.35 sim s
    assert "camera top stale (0.35 s old)" in t.policy.status()[1]
    t.feed()
    t.step()  # fresh inputs at the clock's time: running again
    assert "stale" not in t.policy.status()[1]
