"""The ``so101`` CLI as a user runs it: separate processes on a real router."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
from mcap_ros2.reader import read_ros2_messages
from nodegraph.testing import bag_messages_on_disk, wait_until
from nodegraph.testing.graph import Peer
from rosbags.highlevel import AnyReader

SO101 = [sys.executable, "-m", "so101_cli.main"]


def run(*args: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SO101, *args], capture_output=True, text=True, timeout=timeout_s, env=os.environ.copy())


def test_bag_record_is_readable_by_independent_readers(router: object, peers: list[Peer], tmp_path: Path) -> None:
    bag = tmp_path / "js_bag"
    recorder = subprocess.Popen([*SO101, "bag", "record", "/joint_states", "-o", str(bag)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    peers.append(Peer("joint_states", "40"))  # it publishes once the recorder has subscribed
    assert peers[-1].wait(60) == 0
    wait_until(lambda: bag_messages_on_disk(bag) >= 40, 30.0, "all 40 messages recorded")
    recorder.send_signal(signal.SIGINT)
    out, err = recorder.communicate(timeout=30)
    assert recorder.returncode == 0, err
    assert "recorded 40 messages" in out

    expected = [[i * 0.1 + j for j in range(6)] for i in range(40)]
    mcap_file = next(bag.glob("*.mcap"))
    decoded = [m.ros_msg for m in read_ros2_messages(str(mcap_file))]
    assert len(decoded) == 40
    for msg, positions in zip(decoded, expected, strict=True):
        np.testing.assert_allclose(msg.position, positions)
        assert list(msg.name)[5] == "gripper"

    with AnyReader([bag]) as reader:
        rows = [reader.deserialize(raw, conn.msgtype) for conn, _, raw in reader.messages()]
    assert [r.position.tolist() for r in rows] == [m.position for m in decoded]

    info = run("bag", "info", str(bag))
    assert info.returncode == 0
    assert "/joint_states" in info.stdout and "Count: 40" in info.stdout


def test_topic_pub_echo_and_graph(router: object, tmp_path: Path) -> None:
    echo = subprocess.Popen([*SO101, "topic", "echo", "/chatter", "std_msgs/msg/String", "-n", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    # the publisher keeps publishing until the end: the echo gets its two messages whenever it subscribes
    pub = subprocess.Popen([*SO101, "topic", "pub", "/chatter", "std_msgs/msg/String", "{data: hello}",
                            "--rate", "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        out, err = echo.communicate(timeout=40)
        assert echo.returncode == 0, err
        assert out.count("data: hello") == 2
        graph = run("graph", "--wait", "1.5")
        assert "/chatter" in graph.stdout and "std_msgs/msg/String" in graph.stdout
    finally:
        pub.send_signal(signal.SIGINT)
        pub.wait(timeout=20)


def test_action_send_goal_prints_feedback_and_result(router: object, peers: list[Peer]) -> None:
    peers.append(Peer("action_server"))
    peers[-1].wait_line("READY")
    done = run("action", "send-goal", "/skillgen/generate", "so101_msgs/action/GenerateDemos", "{num_demos: 3}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Feedback:") == 3
    assert "Goal finished with status: SUCCEEDED" in done.stdout

    command = [
        *SO101,
        "action",
        "send-goal",
        "/skillgen/generate",
        "so101_msgs/action/GenerateDemos",
        "{num_demos: 200}",
    ]
    sender = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert sender.stdout is not None
    for line in sender.stdout:  # until the goal is running (its first feedback)
        if line.startswith("Feedback:"):
            break
    sender.send_signal(signal.SIGINT)
    out, _ = sender.communicate(timeout=30)
    assert "Goal finished with status: CANCELED" in out
    assert sender.returncode == 1

    rejected = run("action", "send-goal", "/skillgen/generate", "so101_msgs/action/GenerateDemos", "{num_demos: 0}")
    assert rejected.returncode == 1 and "rejected" in rejected.stderr


def test_bad_cli_input_is_a_clear_error(router: object) -> None:
    bad_yaml = run("topic", "pub", "/x", "std_msgs/msg/String", "{data: [unclosed", "--once")
    assert bad_yaml.returncode != 0 and "invalid YAML" in bad_yaml.stderr
    bad_field = run("topic", "pub", "/x", "std_msgs/msg/String", "{nope: 1}", "--once")
    assert bad_field.returncode != 0 and "has no field" in bad_field.stderr
    missing = run("bag", "info", "/nonexistent/bag")
    assert missing.returncode == 1 and "so101 bag info" in missing.stderr


def test_launch_show_args_and_unknown_launch() -> None:
    shown = run("launch", "real", "--show-args")
    assert shown.returncode == 0 and "port" in shown.stdout and "teleop" in shown.stdout
    unknown = run("launch", "nope", "-s")
    assert unknown.returncode == 2 and "no launch named 'nope'" in unknown.stderr
