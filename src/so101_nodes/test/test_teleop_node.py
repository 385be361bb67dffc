"""The teleop node on both backends (a real zenoh router; rclpy over DDS): mapping, staleness, and leader ->
teleop -> driver end to end."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from nodegraph.testing import wait_until
from nodegraph.testing.graph import GraphBackend, byte_value
from so101_core.robot_spec import JOINT_NAMES
from so101_hardware.feetech.emulator import FeetechEmulator
from so101_hardware.feetech.testing import joint_position, move_by_hand, park_at_middle, write_calibration
from so101_nodes.driver_node import Driver
from so101_nodes.leader_node import Leader
from so101_nodes.teleop_node import Teleop

LEADER = [0.2, -0.3, 0.4, 0.1, -0.5, 1.0]
SCALE = [1.0, 1.0, 1.0, 1.0, -1.0, 0.5]
OFFSET = [0.1, 0.0, 0.0, 0.0, 0.0, 0.0]
STALE_S = 0.2


def start(stack: contextlib.ExitStack, factory: Any, name: str, backend: GraphBackend, **parameters: Any) -> Any:
    """A node running ``factory``'s logic; shut down (then its ``close()``, as run_node does) at teardown."""
    node = backend.node(name, parameter_overrides=parameters)
    stack.callback(node.shutdown)
    logic = factory(node)
    if hasattr(logic, "close"):
        stack.callback(logic.close)
    stack.callback(node.shutdown)
    return logic


def test_teleop_maps_forwards_and_stops_when_stale(
    own_graph_backend: GraphBackend,
    stack: contextlib.ExitStack,
) -> None:
    teleop = start(
        stack,
        Teleop,
        "teleop",
        own_graph_backend,
        scale=SCALE,
        offset_rad=OFFSET,
        stale_timeout_s=STALE_S,
        rate_hz=50.0,
    )
    client = own_graph_backend.node("client")
    stack.callback(client.shutdown)
    lock = threading.Lock()
    commands: list[tuple[float, Any]] = []

    def on_command(msg: Any) -> None:
        with lock:
            commands.append((time.monotonic(), msg))

    client.create_subscription("sensor_msgs/msg/JointState", "/joint_commands", on_command)
    leader = client.create_publisher("sensor_msgs/msg/JointState", "/leader/joint_states")

    def publish_leader(seconds: float, stamp_age_s: float = 0.0, names: list[str] | None = None) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ns = client.now_ns() - round(stamp_age_s * 1e9)
            stamp = client.message("builtin_interfaces/msg/Time", sec=ns // 10**9, nanosec=ns % 10**9)
            header = client.message("std_msgs/msg/Header", stamp=stamp)
            positions = [LEADER[JOINT_NAMES.index(n)] for n in (names or JOINT_NAMES)]
            leader.publish(
                client.message(
                    "sensor_msgs/msg/JointState", header=header, name=names or list(JOINT_NAMES), position=positions
                )
            )
            time.sleep(0.02)

    publish_leader(0.6)
    wait_until(lambda: len(commands) > 5, 5.0, "forwarded commands")
    msg = commands[-1][1]
    assert list(msg.name) == list(JOINT_NAMES)
    expected = np.array(SCALE) * np.array(LEADER) + np.array(OFFSET)
    assert np.allclose(msg.position, expected)

    # the leader went quiet: forwarding stops (no command for 0.3 s), and stays stopped
    wait_until(lambda: time.monotonic() - commands[-1][0] > 0.3, 10.0, "forwarding stopped")
    count = len(commands)
    time.sleep(0.4)
    assert len(commands) == count

    publish_leader(0.4, stamp_age_s=1.0)  # delayed (old) messages are not forwarded
    publish_leader(0.4, names=list(JOINT_NAMES[:5]))  # incomplete ones neither
    wait_until(lambda: teleop.dropped >= 20, 5.0, "old and incomplete leader messages dropped")  # as they arrive
    assert len(commands) == count

    publish_leader(0.4)  # fresh again: resumes
    wait_until(lambda: len(commands) > count + 5, 5.0, "forwarding resumed")


def test_leader_drives_follower_end_to_end(
    own_graph_backend: GraphBackend,
    stack: contextlib.ExitStack,
    tmp_path: Path,
) -> None:
    follower_cal_path, cal = write_calibration(tmp_path, "follower")
    leader_cal_path, _ = write_calibration(tmp_path, "leader", "teleoperators/so_leader")
    leader_emu = stack.enter_context(FeetechEmulator(seed=1))
    follower_emu = stack.enter_context(FeetechEmulator(seed=2))
    park_at_middle(leader_emu, cal)
    park_at_middle(follower_emu, cal)
    config = tmp_path / "robot.yaml"
    config.write_text(
        "robot:\n"
        f"  follower: {{id: follower, calibration: {follower_cal_path}, bus: {{port: {follower_emu.port}}}}}\n"
        f"  leader: {{id: leader, calibration: {leader_cal_path}, bus: {{port: {leader_emu.port}}}}}\n"
    )
    driver = start(stack, Driver, "driver", own_graph_backend, robot_config=str(config))
    start(stack, Leader, "leader", own_graph_backend, robot_config=str(config))
    start(stack, Teleop, "teleop", own_graph_backend)
    wait_until(lambda: driver.latest_state() is not None, 30.0, "driver running")

    move_by_hand(leader_emu, cal, "shoulder_pan", 0.6)
    move_by_hand(leader_emu, cal, "wrist_flex", -0.4)
    wait_until(lambda: abs(joint_position(follower_emu, cal, "shoulder_pan") - 0.6) < 0.01, 30.0, "pan follows")
    wait_until(lambda: abs(joint_position(follower_emu, cal, "wrist_flex") + 0.4) < 0.01, 30.0, "wrist follows")


def test_teleop_reports_a_silent_leader_on_diagnostics(
    own_graph_backend: GraphBackend,
    stack: contextlib.ExitStack,
) -> None:
    """Defect 12 of issue 13: a silent leader is told on /diagnostics, not only by the follower's watchdog."""
    start(
        stack, Teleop, "teleop", own_graph_backend, stale_timeout_s=STALE_S, diagnostics_period_s=0.1, check_stamp=False
    )
    client = own_graph_backend.node("client")
    stack.callback(client.shutdown)
    statuses: list[Any] = []
    client.create_subscription(
        "diagnostic_msgs/msg/DiagnosticArray", "/diagnostics", lambda m: statuses.extend(m.status)
    )
    leader = client.create_publisher("sensor_msgs/msg/JointState", "/leader/joint_states")

    def latest() -> Any:
        return statuses[-1] if statuses else None

    wait_until(lambda: latest() is not None and byte_value(latest().level) == 2, 5.0, "ERROR before any leader message")
    assert "no leader message" in latest().message and latest().name == "teleop: leader"

    def forwarding() -> bool:
        leader.publish(client.message("sensor_msgs/msg/JointState", name=list(JOINT_NAMES), position=LEADER))
        return latest() is not None and byte_value(latest().level) == 0

    wait_until(forwarding, 10.0, "OK while the leader publishes")
    assert latest().message == "forwarding"
    wait_until(lambda: byte_value(latest().level) == 1, 5.0, "WARN once the leader is silent")
    assert "leader stale" in latest().message
