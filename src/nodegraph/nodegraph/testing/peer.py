"""A graph peer run as a separate process by the transport tests: ``python -m nodegraph.testing.peer ROLE [ROS
args]`` (:class:`nodegraph.testing.graph.Peer`).

Roles: ``joint_states N`` and ``image N`` publish N messages once a subscriber is seen; ``add_server`` serves
``/add_two_ints``; ``action_server`` serves ``/skillgen/generate``; ``params`` prints its parameters as JSON;
``listen TOPIC`` prints each JointState position it gets; ``talker`` has parameters, /chatter at 20 Hz
and a /boom service whose callback raises. Every role stops on SIGINT/SIGTERM. The backend is
``$SO101_TRANSPORT``'s (the test's ``graph_backend``).
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from nodegraph.graph.api import Node
from nodegraph.testing import wait_until
from nodegraph.transport.runtime import create_node, install_signal_handlers

JOINTS = ["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper"]


def wait_for_subscriber(node: Node, topic: str, timeout_s: float = 60.0) -> None:
    """Until ``topic`` has a subscriber (a process started beside this one may take long to start on a loaded
    host), then 0.3 s for its routes to settle; publishes anyway past ``timeout_s`` (the test counts what came)."""
    with contextlib.suppress(AssertionError):
        wait_until(lambda: node.subscriptions_info_by_topic(topic), timeout_s, f"a subscriber of {topic}", 0.05)
    time.sleep(0.3)


def image(node: Node, index: int) -> Any:
    data = (np.arange(480 * 640 * 3, dtype=np.uint32) * (index + 1) % 251).astype(np.uint8)
    return node.message("sensor_msgs/msg/Image", height=480, width=640, encoding="rgb8", step=1920, data=data)


def main() -> int:
    install_signal_handlers()
    role, rest = sys.argv[1], sys.argv[2:]
    split = rest.index("--ros-args") if "--ros-args" in rest else len(rest)
    positional = rest[:split]
    node = create_node(f"peer_{role}", rest[split:])
    if role in ("joint_states", "image"):
        count = int(positional[0])
        topic = "/joint_states" if role == "joint_states" else "/cameras/side/image_raw"
        type_name = "sensor_msgs/msg/JointState" if role == "joint_states" else "sensor_msgs/msg/Image"
        publisher = node.create_publisher(type_name, topic)
        wait_for_subscriber(node, topic)
        for i in range(count):
            if role == "joint_states":
                msg = node.message(type_name, name=JOINTS, position=[i * 0.1 + j for j in range(6)])
            else:
                msg = image(node, i)
            publisher.publish(msg)
            time.sleep(0.02)
        time.sleep(0.5)
        node.shutdown()
        return 0
    if role == "add_server":

        def add(request: Any, response: Any) -> Any:
            response.sum = request.a + request.b
            return response

        node.create_service("example_interfaces/srv/AddTwoInts", "/add_two_ints", add)
    elif role == "action_server":

        def execute(goal: Any) -> Any:
            result = node.message("so101_msgs/action/GenerateDemos_Result")
            for i in range(goal.request.num_demos):
                if goal.is_cancel_requested:
                    goal.canceled()
                    result.message = "canceled"
                    result.attempted = i
                    return result
                goal.publish_feedback(
                    node.message("so101_msgs/action/GenerateDemos_Feedback", stage="generating", attempted=i)
                )
                time.sleep(0.1)
            goal.succeed()
            result.succeeded = result.attempted = goal.request.num_demos
            result.message = "done"
            return result

        node.create_action_server(
            "so101_msgs/action/GenerateDemos",
            "/skillgen/generate",
            execute,
            goal_callback=lambda goal: goal.num_demos > 0,
        )
    elif role == "params":
        values = {
            name: node.declare_parameter(name, default)
            for name, default in (("rate_hz", 30.0), ("camera", "side"), ("enabled", False), ("joints", [""]))
        }
        print(json.dumps(values), flush=True)
        node.shutdown()
        return 0
    elif role == "talker":  # a node as a ROS user meets it: parameters (one live, one read-only), services
        from nodegraph.graph.parameters import SetParametersResult

        node.declare_parameter("rate_hz", 20.0)
        node.declare_parameter("frame", "base_link", read_only=True)
        node.declare_parameter("gain.max_step", 0.1)

        def check(values: Mapping[str, Any]) -> SetParametersResult:
            step = values.get("gain.max_step", 0.1)
            if step <= 0:
                return SetParametersResult(False, f"gain.max_step must be > 0, got {step}")
            return SetParametersResult(True)

        node.add_on_set_parameters_callback(check)
        chatter = node.create_publisher("std_msgs/msg/String", "/chatter")
        node.create_timer(0.05, lambda: chatter.publish(node.message("std_msgs/msg/String", data="hi")))

        def boom(request: Any, response: Any) -> Any:
            raise RuntimeError("boom on purpose")

        node.create_service("std_srvs/srv/Trigger", "/boom", boom)
        node.logger.info("talker up")
    elif role == "listen":
        node.create_subscription(
            "sensor_msgs/msg/JointState",
            "/joint_states",
            lambda m: print(f"GOT {m.position[0]:.1f}", flush=True),
        )
    print("READY", flush=True)
    node.spin()
    print("STOPPED", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
