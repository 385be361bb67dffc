"""The policy node on both backends (a real zenoh router; rclpy over DDS): with the twin (in-process sim node, one
tiny camera) and a fake policy server on a real ZMQ socket that returns NaN, out-of-range, late and no replies →
hold + diagnostics, then recovery (after a refusal loop, on ~/start); and without the twin, stale inputs and the
horizon. The chunk rule itself, ticked directly: test_policy_node_chunks.py."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from nodegraph.graph.api import Node
from nodegraph.testing import wait_until
from nodegraph.testing.graph import GraphBackend, byte_value
from nodegraph.time import to_ns
from so101_core.robot_spec import JOINT_NAMES
from so101_policy.config import load_policy_config
from so101_policy.nodes.policy_node import ERROR, OK, WARN, PolicyNode, PolicyParams
from so101_policy.testing.fake_server import FakeServer, ScriptedBackend


class Watch:
    """The client side: latest commands (with their arrival time and their stamp) and the policy node's
    diagnostics."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.lock = threading.Lock()
        self.commands: list[tuple[float, int, np.ndarray]] = []
        self.status: list[tuple[int, str]] = []
        node.create_subscription("sensor_msgs/msg/JointState", "/joint_commands", self._on_command)
        node.create_subscription("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics", self._on_diag)

    def _on_command(self, msg: Any) -> None:
        with self.lock:
            self.commands.append((time.monotonic(), to_ns(msg.header.stamp), np.asarray(msg.position, np.float64)))

    def _on_diag(self, msg: Any) -> None:
        for s in msg.status:
            if str(s.name).startswith("policy: "):
                with self.lock:
                    self.status.append((byte_value(s.level), str(s.message)))

    def last_status(self) -> tuple[int, str]:
        with self.lock:
            return self.status[-1] if self.status else (-1, "")

    def wait_status(self, level: int, text: str, timeout_s: float = 8.0) -> None:
        wait_until(
            lambda: self.last_status()[0] == level and text in self.last_status()[1],
            timeout_s,
            f"diagnostics level {level} with {text!r} (last: {self.last_status()})",
        )

    def commands_since(self, t: float) -> list[np.ndarray]:
        """The commands received since ``t`` (monotonic s)."""
        with self.lock:
            return [c for (ts, _, c) in self.commands if ts >= t]

    def commands_stamped_since(self, t_ns: int) -> list[np.ndarray]:
        """The commands the node published at or after ``t_ns`` (its stamp, ns of the graph's clock): none that
        was already on the wire then."""
        with self.lock:
            return [c for (_, stamp, c) in self.commands if stamp >= t_ns]

    def wait_commands(self, t_ns: int, count: int) -> list[np.ndarray]:
        """The commands published since ``t_ns`` (graph clock), once there are ``count`` of them."""
        wait_until(lambda: len(self.commands_stamped_since(t_ns)) >= count, 10.0, f"{count} commands")
        return self.commands_stamped_since(t_ns)

    def wait_reports(self, count: int) -> None:
        """Let ``count`` more diagnostics reports of the node arrive: time passes as the node runs it."""
        with self.lock:
            start = len(self.status)
        wait_until(lambda: len(self.status) >= start + count, 10.0, f"{count} diagnostics reports")

    def trigger(self, service: str) -> Any:
        client = self.node.create_client("std_srvs/srv/Trigger", service)
        assert client.wait_for_service(10.0)
        return client.call(self.node.message("std_srvs/srv/Trigger_Request"), 10.0)


def start_policy(stack: contextlib.ExitStack, backend: GraphBackend, **params: Any) -> PolicyNode:
    node = backend.node("policy", parameter_overrides=params)
    logic = PolicyNode(node)
    stack.callback(logic.close)
    stack.callback(node.shutdown)
    return logic


def test_policy_config_gives_the_defaults_and_every_parameter_stays_settable(
    own_graph_backend: GraphBackend, tmp_path: Path
) -> None:
    config = tmp_path / "policy.yaml"
    config.write_text("horizon: 4\ntask: stack the vials\ncameras: [top]\n")
    node = own_graph_backend.node("policy", parameter_overrides={"policy_config": str(config), "rate_hz": 15})
    params = PolicyParams.declare(node)
    file = load_policy_config(config)
    assert (file.horizon, file.task, file.cameras) == (4, "stack the vials", ("top",))
    assert params == PolicyParams(**{**vars(file), "rate_hz": 15.0})
    assert node.get_parameter("policy_config") == str(config) and node.get_parameter("horizon") == 4
    assert all(r.successful for r in node.set_parameters({"policy_config": "", "horizon": 2, "sim": True}))


def test_hold_and_recover_with_the_twin(own_graph_backend: GraphBackend, stack: contextlib.ExitStack) -> None:
    from so101_nodes.sim_node import SimNode

    sim_node = own_graph_backend.node(
        "sim",
        parameter_overrides={"cameras": ["top"], "width": 32, "height": 24, "camera_rate_hz": 15.0, "randomize": False},
    )
    sim = SimNode(sim_node)
    stack.callback(sim.close)
    stack.callback(sim_node.shutdown)
    backend = ScriptedBackend(("top",))
    backend.offset[0] = 3.0  # degrees: the policy keeps nudging shoulder_pan
    server = FakeServer(backend)
    stack.callback(server.stop)
    policy = start_policy(
        stack,
        own_graph_backend,
        cameras=["top"],
        server_port=server.port,
        server_timeout_ms=300,
        sim=True,
        horizon_sim=16,
        diagnostics_period_s=0.3,
    )
    client = own_graph_backend.node("client")
    stack.callback(client.shutdown)
    watch = Watch(client)
    watch.wait_reports(3)
    assert watch.commands_since(0.0) == []  # nothing moves before ~/start
    assert watch.trigger("/policy/start").success
    watch.wait_status(OK, "running")
    # a loaded host may run 10 commands of the first 16-step chunk before the second query: wait for both
    wait_until(lambda: len(watch.commands_since(0.0)) > 10 and backend.calls >= 2, 5.0, "commands, two queries")
    q0 = sim.twin.joint_positions()
    lead = np.degrees(watch.commands_since(0.0)[-1][0] - q0[0])
    assert 0.2 < lead <= 3.0 + 1e-6  # commands lead the arm by at most the chunk's offset (blended)
    assert backend.resets == 1 and backend.calls >= 2

    backend.mode = "lead"
    calls = backend.calls
    wait_until(lambda: backend.calls >= calls + 2, 10.0, "two chunks with a wrist_roll lead")
    watch.wait_status(OK, "running")  # a wrist_roll lead like the demos' is not a jump
    # a policy that keeps returning a bad chunk: the queued plan runs out, the node holds, and after
    # refusal_limit refusals in a row it reports a refusal loop, asks no more and waits for ~/start
    cases = (("nan", "NaN"), ("range", "out of range"), ("jump", "on shoulder_pan (max 0.5)"), ("late", ""))
    for mode, text in cases:
        backend.mode = mode
        watch.wait_status(ERROR, "refusal loop" if text else "did not answer")
        assert text in watch.last_status()[1]
        t, calls = client.now_ns(), backend.calls  # the node publishes its hold from the tick that reported it
        held = watch.wait_commands(t, 10)
        assert len(held) >= 5 and all(np.array_equal(c, held[0]) for c in held), f"{mode}: not holding"
        backend.mode = "good"
        if text:
            assert backend.calls == calls  # no queries in the loop's safe state
            watch.wait_reports(2)
            assert watch.last_status()[0] == ERROR  # ... which only ~/start ends
            assert watch.trigger("/policy/start").success
        watch.wait_status(OK, "running", 10.0)

    server.stop()  # the server dies
    watch.wait_status(ERROR, "did not answer")
    held = watch.wait_commands(client.now_ns(), 10)
    assert len(held) >= 5 and all(np.array_equal(c, held[0]) for c in held)
    server.start()  # and comes back on the same port
    watch.wait_status(OK, "running", 10.0)
    assert policy.stats["rejected_chunks"] >= 3 * 5 and policy.stats["refusal_loops"] == 3
    assert policy.stats["failures"] >= 2

    assert watch.trigger("/policy/stop").success
    watch.wait_status(OK, "stopped")
    t = client.now_ns()
    watch.wait_reports(2)
    assert watch.commands_stamped_since(t) == []  # stopped: nothing published


def publish_inputs(node: Node, q: np.ndarray, image: bool = True) -> None:
    stamp = node.stamp()
    header = node.message("std_msgs/msg/Header", stamp=stamp)
    node_pub = publish_inputs.pubs  # type: ignore[attr-defined]
    node_pub["joints"].publish(
        node.message("sensor_msgs/msg/JointState", header=header, name=list(JOINT_NAMES), position=q)
    )
    if image:
        node_pub["image"].publish(
            node.message(
                "sensor_msgs/msg/Image",
                header=header,
                height=4,
                width=6,
                encoding="rgb8",
                step=18,
                data=np.zeros(72, np.uint8),
            )
        )


def test_stale_inputs_hold_and_the_horizon_bounds_a_chunk(
    own_graph_backend: GraphBackend, stack: contextlib.ExitStack
) -> None:
    backend = ScriptedBackend(("top",), horizon=40)
    backend.ramp = 0.5  # degrees per row: row t of a chunk is the observed shoulder_pan + 0.5 t
    server = FakeServer(backend)
    stack.callback(server.stop)
    start_policy(
        stack,
        own_graph_backend,
        cameras=["top"],
        server_port=server.port,
        server_timeout_ms=300,
        horizon=8,
        replan_steps=8,
        blend_alpha=0.2,
        autostart=True,
        diagnostics_period_s=0.3,
        stale_camera_s=0.3,
    )
    client = own_graph_backend.node("client")
    stack.callback(client.shutdown)
    publish_inputs.pubs = {  # type: ignore[attr-defined]
        "joints": client.create_publisher("sensor_msgs/msg/JointState", "/joint_states"),
        "image": client.create_publisher("sensor_msgs/msg/Image", "/cameras/top/image_raw"),
    }
    watch = Watch(client)
    q = np.array([0.1, -0.2, 0.3, 0.0, 0.0, 0.5])
    stop = threading.Event()
    images = threading.Event()
    images.set()

    def feed() -> None:
        while not stop.is_set():
            publish_inputs(client, q, image=images.is_set())
            time.sleep(1 / 60)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    stack.callback(lambda: (stop.set(), feeder.join(2.0)))
    backend.good_calls = 1  # one good reply, then the server hangs
    wait_until(lambda: backend.calls >= 1, 5.0, "a first query")
    watch.wait_status(ERROR, "did not answer")
    moving = [c for c in watch.commands_since(0.0) if not np.allclose(c, q)]
    pan = np.degrees(np.array([c[0] for c in moving])) - np.degrees(q[0])
    # row t of the chunk = +0.5 t degrees; rows already past when the reply arrived are skipped and at most the
    # horizon (8 of the 40 rows) is executed: then the node holds
    rows = np.round(pan / 0.5, 6)
    assert len(rows) >= 1 and np.allclose(rows, np.round(rows)) and rows.max() <= 7
    assert np.all(np.diff(rows) >= 0) and len(set(rows)) <= 8
    held = watch.wait_commands(client.now_ns(), 8)
    assert held and all(np.array_equal(c, held[0]) for c in held)

    backend.good_calls, backend.mode = None, "good"
    watch.wait_status(OK, "running", 10.0)
    images.clear()  # the camera goes quiet → hold
    watch.wait_status(WARN, "camera top stale")
    images.set()
    watch.wait_status(OK, "running", 5.0)


class _SlowFirstReply(ScriptedBackend):
    """A server warming up: its first answer takes 1 s (30 control periods), the rest are prompt."""

    def get_action(self, observation: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict, dict]:
        if self.calls == 0:
            time.sleep(1.0)
        return super().get_action(observation, options)


def test_steps_count_from_the_first_action_not_from_start(
    own_graph_backend: GraphBackend, stack: contextlib.ExitStack
) -> None:
    """A slow first reply must not move a step-indexed policy (a replay) ahead of the arm: the step sent with
    each query counts control periods from the run's first action."""
    backend = _SlowFirstReply(("top",), horizon=16)
    server = FakeServer(backend)
    stack.callback(server.stop)
    start_policy(
        stack, own_graph_backend, cameras=["top"], server_port=server.port, server_timeout_ms=5000, horizon=16,
        replan_steps=8, autostart=True, stale_camera_s=5.0, stale_joint_s=5.0,
    )  # fmt: skip
    client = own_graph_backend.node("client")
    stack.callback(client.shutdown)
    publish_inputs.pubs = {  # type: ignore[attr-defined]
        "joints": client.create_publisher("sensor_msgs/msg/JointState", "/joint_states"),
        "image": client.create_publisher("sensor_msgs/msg/Image", "/cameras/top/image_raw"),
    }
    q = np.array([0.1, -0.2, 0.3, 0.0, 0.0, 0.5])
    stop = threading.Event()

    def feed() -> None:
        while not stop.is_set():
            publish_inputs(client, q)
            time.sleep(1 / 60)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    stack.callback(lambda: (stop.set(), feeder.join(2.0)))
    wait_until(lambda: len(backend.steps) >= 3, 15.0, "three queries")
    assert backend.steps[0] == 0
    # the next query follows the plan from the first action (due at step 8), not the ~30 periods spent waiting
    assert 0 < backend.steps[1] <= 16 and backend.steps[1] < backend.steps[2], backend.steps
