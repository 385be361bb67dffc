"""The policy node's chunk rule (issue 23, defect 1), ticked directly: the node's timers are cancelled and each
test calls ``on_tick`` itself, waiting for the server's reply (a real ZMQ socket) before the next tick, so a
query at step s is always taken at step s + 1. Out-of-range rows are clamped, not refused; only the rows that
execute are checked; a refused chunk keeps the queued plan; a refusal loop holds, reports ERROR and asks no more
until ~/start. Commands are read back from what the node published."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from nodegraph.testing import graph as graph_testing
from nodegraph.testing import wait_until
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.node import ZenohNode
from so101_core.joints import twin_ranges
from so101_core.lerobot_units import to_lerobot
from so101_core.robot_spec import JOINT_NAMES
from so101_policy.nodes.policy_node import ERROR, OK, WARN, PolicyNode
from so101_policy.testing.fake_server import FakeServer, ScriptedBackend

endpoint = graph_testing.endpoint
router = graph_testing.router
context = graph_testing.context

LOWER = np.asarray(twin_ranges().lower)
Q0 = np.array([0.0, -1.60, 0.3, 0.2, 0.0, 0.5])  # rad, the arm stays here (nothing moves it in these tests)


class PathBackend(ScriptedBackend):
    """Row t of the chunk asked at step s is ``path(s + t)`` (rad), then ``spoil(call, chunk)`` may break it."""

    def __init__(self, path: Callable[[int], np.ndarray], horizon: int = 16) -> None:
        super().__init__(("top",), horizon)
        self.path = path
        self.spoil: Callable[[int, np.ndarray], None] = lambda call, chunk: None

    def get_action(self, observation: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict, dict]:
        self.calls += 1
        step = int((options or {}).get("step", 0))
        self.steps.append(step)
        chunk = np.array([self.path(step + t) for t in range(self.horizon)])
        self.spoil(self.calls, chunk)
        out = to_lerobot(chunk).astype(np.float32)[None]
        return {"single_arm": out[:, :, :5], "gripper": out[:, :, 5:]}, {}


def ramp(step: int) -> np.ndarray:
    """A slow move of shoulder_pan, 0.01 rad per step from Q0."""
    q = Q0.copy()
    q[0] += 0.01 * step
    return q


class Ticked:
    """A policy node with its timers cancelled, fed Q0 and a camera image before each tick."""

    def __init__(self, stack: contextlib.ExitStack, ctx: Context, backend: PathBackend, **params: Any) -> None:
        self.backend = backend
        server = FakeServer(backend)
        stack.callback(server.stop)
        overrides = {"cameras": ["top"], "server_port": server.port, "server_timeout_ms": 10000, "autostart": True}
        overrides |= {"stale_joint_s": 600.0, "stale_camera_s": 600.0, **params}
        self.node = ZenohNode("policy", args=[], context=ctx, parameter_overrides=overrides)
        stack.callback(self.node.shutdown)
        self.policy = PolicyNode(self.node)
        stack.callback(self.policy.close)
        for timer in self.policy._timers:
            timer.cancel()
        self.commands: list[np.ndarray] = []
        image = self.node.message("sensor_msgs/msg/Image", height=4, width=6, encoding="rgb8", step=18, data=bytes(72))
        self.image = image

    def tick(self, n: int = 1) -> None:
        for _ in range(n):
            joints = self.node.message("sensor_msgs/msg/JointState", name=list(JOINT_NAMES), position=list(Q0))
            self.policy.on_joint_state(joints)
            self.policy.on_image("top", self.image)
            published = self.policy.stats["published"] + self.policy.stats["held"]
            self.policy.on_tick()
            if self.policy.stats["published"] + self.policy.stats["held"] > published:
                assert self.policy._last_command is not None
                self.commands.append(self.policy._last_command.copy())
            if self.policy._inflight:  # the reply is taken by the next tick
                wait_until(lambda: not self.policy._replies.empty(), 20.0, "a reply from the server", 0.002)


def test_rows_just_outside_the_range_are_clamped_not_refused(context: Context, stack: contextlib.ExitStack) -> None:
    """Issue 23's case: shoulder_lift −1.795…−1.799 rad in rows 6–14 (limit −1.745) froze the arm."""

    def dip(step: int) -> np.ndarray:
        q = ramp(step)
        if 6 <= step <= 14:
            q[1] = -1.795 - 0.0005 * (step - 6)
        return q

    t = Ticked(stack, context, PathBackend(dip), sim=True, horizon_sim=16)
    t.tick(21)
    p = t.policy
    assert p.stats["rejected_chunks"] == 0 and p.stats["held"] == 1  # only the first tick, waiting for a chunk
    lift = np.array([c[1] for c in t.commands[1:]])
    assert np.all(lift >= LOWER[1]) and np.sum(lift == LOWER[1]) == 9  # steps 6..14 pinned at the limit
    assert lift[0] == pytest.approx(-1.60, abs=1e-5) and lift[15] == pytest.approx(-1.60, abs=1e-5)
    # the chunk asked at step 8 is taken at 9: it clamps the 6 rows of steps 9..14; the one asked at 16 none
    assert p.stats["clamped_chunks"] == 2 and p.stats["clamped_values"] == 9 + 6
    assert p.status() == (OK, "running")
    values = p.diagnostic_values()
    assert values["clamped_values"] == str(p.stats["clamped_values"]) and values["rejected_chunks"] == "0"


def test_a_refused_chunk_keeps_the_plan_and_only_executed_rows_count(
    context: Context, stack: contextlib.ExitStack
) -> None:
    """The real arm's horizon (8 of 16 rows): rows beyond it and rows already past are not checked; a chunk
    refused for a NaN in a row that would execute leaves the queued plan running."""
    backend = PathBackend(ramp)

    def spoil(call: int, chunk: np.ndarray) -> None:
        chunk[12, 2] = np.nan  # beyond the horizon: never executes
        if call == 2:
            chunk[0, 1] = np.inf  # asked at step 4, taken at step 5: row 0 is past
        if call == 3:
            chunk[3, 2] = np.nan  # executes: refused

    backend.spoil = spoil
    t = Ticked(stack, context, backend, sim=False, horizon=8, replan_steps=4)
    t.tick(10)  # queries at steps 0 (call 1), 4 (call 2), 8 (call 3; ticks run steps 0, 0, 1, 2, ...)
    p = t.policy
    assert backend.steps[:3] == [0, 4, 8] and p.stats["rejected_chunks"] == 0
    t.tick()  # step 9: call 3 refused; the plan from call 2 (rows for steps 5..11) runs on, re-asked at once
    assert p.stats["rejected_chunks"] == 1 and p._refusals == 1
    level, message = p.status()
    assert level == WARN and message.startswith("running: chunk refused: chunk has NaN/inf actions (elbow_flex")
    t.tick(4)
    pan = np.array([c[0] for c in t.commands[1:]])
    assert pan == pytest.approx(0.01 * np.arange(len(pan)), abs=1e-5)  # every step on the path: no hold
    assert p.stats["held"] == 1 and p.stats["rejected_chunks"] == 1 and p._refusals == 0
    assert p.status() == (OK, "running")


def test_a_refusal_loop_holds_reports_and_stops_asking_until_start(
    context: Context, stack: contextlib.ExitStack
) -> None:
    backend = PathBackend(ramp)
    backend.spoil = lambda call, chunk: chunk.__setitem__((slice(None), 1), 7.0 if call > 1 else chunk[:, 1])
    t = Ticked(stack, context, backend, sim=True, horizon_sim=16, refusal_limit=3)
    t.tick(13)  # the first chunk, then the ones asked at steps 8, 9, 10 refused (taken at 9, 10, 11): a loop
    p = t.policy
    assert p.stats["rejected_chunks"] == 3 and p.stats["refusal_loops"] == 1
    level, message = p.status()
    assert level == ERROR and "refusal loop: 3 chunks refused in a row" in message and "out of range" in message
    assert "until ~/start" in message
    calls = backend.calls
    t.tick(30)
    assert backend.calls == calls and p.stats["rejected_chunks"] == 3  # no more queries
    assert all(np.array_equal(c, Q0) for c in t.commands[-30:])  # holds the measured position
    assert p.diagnostic_values()["state"] == "holding"

    backend.spoil = lambda call, chunk: None
    p.on_start(None, p.node.message("std_srvs/srv/Trigger_Response"))
    t.tick(3)
    assert backend.calls > calls and p.status() == (OK, "running")
