"""Pub/sub, services and actions between real processes, on both backends: through a real zenoh router on
loopback, and through rclpy (Fast DDS) in a ROS domain of the module's own."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from nodegraph.graph.api import GoalStatus, Node
from nodegraph.testing import wait_until
from nodegraph.testing.graph import GraphBackend, Peer


def collect(node: Node, type_name: str, topic: str, count: int, timeout_s: float = 20.0) -> list[Any]:
    got: list[Any] = []
    done = threading.Event()

    def on_message(msg: Any) -> None:
        got.append(msg)
        if len(got) >= count:
            done.set()

    node.create_subscription(type_name, topic, on_message)
    done.wait(timeout_s)
    return got


def test_joint_states_across_processes(graph_backend: GraphBackend, peers: list[Peer]) -> None:
    node = graph_backend.node("listener")
    peers.append(Peer("joint_states", "20"))
    got = collect(node, "sensor_msgs/msg/JointState", "/joint_states", 20)
    assert len(got) == 20
    assert list(got[0].name) == [
        "shoulder_pan",
        "shoulder_lift",
        "elbow_flex",
        "wrist_flex",
        "wrist_roll",
        "gripper",
    ]
    for i, msg in enumerate(got):
        np.testing.assert_allclose(msg.position, [i * 0.1 + j for j in range(6)])
    assert peers[0].wait(20) == 0


def test_image_640x480_across_processes(graph_backend: GraphBackend, peers: list[Peer]) -> None:
    node = graph_backend.node("viewer")
    peers.append(Peer("image", "5"))
    got = collect(node, "sensor_msgs/msg/Image", "/cameras/side/image_raw", 5)
    assert len(got) == 5
    for i, msg in enumerate(got):
        assert (msg.height, msg.width, msg.encoding, msg.step) == (480, 640, "rgb8", 1920)
        expected = (np.arange(480 * 640 * 3, dtype=np.uint32) * (i + 1) % 251).astype(np.uint8)
        np.testing.assert_array_equal(msg.data, expected)


def test_service_call_across_processes(graph_backend: GraphBackend, peers: list[Peer]) -> None:
    peers.append(Peer("add_server"))
    peers[-1].wait_line("READY")
    node = graph_backend.node("caller")
    client = node.create_client("example_interfaces/srv/AddTwoInts", "/add_two_ints")
    assert client.wait_for_service(10.0)
    for a, b in ((2, 40), (-5, 5), (2**40, 1)):
        response = client.call(node.message("example_interfaces/srv/AddTwoInts_Request", a=a, b=b), 5.0)
        assert response.sum == a + b


def test_action_feedback_result_and_cancel(graph_backend: GraphBackend, peers: list[Peer]) -> None:
    peers.append(Peer("action_server"))
    peers[-1].wait_line("READY")
    node = graph_backend.node("commander")
    client = node.create_action_client("so101_msgs/action/GenerateDemos", "/skillgen/generate")
    assert client.wait_for_server(10.0)

    feedback: list[Any] = []
    goal = node.message("so101_msgs/action/GenerateDemos_Goal", num_demos=5, task="vial_to_rack")
    handle = client.send_goal(goal, feedback.append)
    assert handle.accepted
    status, result = handle.result(timeout_s=20.0)
    assert status == GoalStatus.SUCCEEDED
    assert (result.succeeded, result.message) == (5, "done")
    assert [f.attempted for f in feedback] == [0, 1, 2, 3, 4]

    long_goal = node.message("so101_msgs/action/GenerateDemos_Goal", num_demos=100)
    progress: list[Any] = []
    handle = client.send_goal(long_goal, progress.append)
    assert handle.accepted
    wait_until(lambda: progress, 20.0, "a first feedback")
    assert handle.cancel()
    status, result = handle.result(timeout_s=20.0)
    assert status == GoalStatus.CANCELED
    assert result.message == "canceled"
    assert 0 < result.attempted < 100

    rejected = client.send_goal(node.message("so101_msgs/action/GenerateDemos_Goal", num_demos=0))
    assert not rejected.accepted


def test_sigint_stops_a_node_and_removes_it_from_the_graph(graph_backend: GraphBackend, peers: list[Peer]) -> None:
    peers.append(Peer("add_server"))
    peers[-1].wait_line("READY")
    node = graph_backend.node("observer")

    def peer_on_graph() -> bool:  # its /rosout publisher, which every node has
        return any(info.node_name == "peer_add_server" for info in node.publishers_info_by_topic("/rosout"))

    assert wait_until(peer_on_graph, 10.0)
    assert peers[-1].stop() == 0
    assert wait_until(lambda: not peer_on_graph(), 10.0)
