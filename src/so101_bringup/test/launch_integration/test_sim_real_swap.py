"""Sim and real are swapped by the launch file, nothing else: ``so101 launch real`` (driver on the Feetech
emulator's pty, cameras off) and ``so101 launch sim`` (twin, cameras off) offer the same standard interfaces."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.node import ZenohNode
from so101_cli.graph_cmd import summarize
from so101_core.robot_spec import JOINT_NAMES
from so101_hardware.feetech.emulator import FeetechEmulator
from so101_hardware.feetech.testing import park_at_middle, write_calibration

SO101 = [sys.executable, "-m", "so101_cli.main"]
STANDARD = {
    ("topics", "/joint_states"): "sensor_msgs/msg/JointState",
    ("topics", "/joint_commands"): "sensor_msgs/msg/JointState",
    ("topics", "/diagnostics"): "diagnostic_msgs/msg/DiagnosticArray",
    ("topics", "/tf"): "tf2_msgs/msg/TFMessage",
    ("topics", "/robot_description"): "std_msgs/msg/String",
    ("actions", "/arm_controller/follow_joint_trajectory"): "control_msgs/action/FollowJointTrajectory",
}


class Launcher:
    """Runs ``so101 launch ...`` processes against the test's router; ``stop`` ends the current one."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.process: subprocess.Popen[str] | None = None

    def start(self, *args: str) -> ZenohNode:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen([*SO101, "launch", *args], env=env, text=True)
        return ZenohNode(f"observer_{self.process.pid}", args=[], context=self.context)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            assert self.process.wait(timeout=30) == 0
        self.process = None


@pytest.fixture
def launcher(context: Context) -> Iterator[Launcher]:
    launcher = Launcher(context)
    yield launcher
    launcher.stop()


def standard_interfaces(node: ZenohNode, timeout_s: float = 75.0) -> dict[tuple[str, str], set[str]]:
    """The standard names on the graph with their types, once /joint_states flows with all six joints.
    The wait is long: on a loaded 2-core CI host the launched processes were seen to need 40 s to start. A servo
    that misses a read (the emulator's pseudo-terminal on a loaded host) leaves its joint out of that cycle's
    message (the driver's contract): every message names joints in the canonical order, one names all six."""
    got: list[Any] = []
    node.create_subscription("sensor_msgs/msg/JointState", "/joint_states", got.append)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        summary = summarize(node.context.graph.tokens(), node.name)
        found = {key: set(summary[key[0]].get(key[1], set())) for key in STANDARD}
        names = [list(m.name) for m in got]
        for n in names:
            assert n == [j for j in JOINT_NAMES if j in n], n  # canonical names, canonical order
        if list(JOINT_NAMES) in names and all(found.values()):
            return found
        time.sleep(0.2)
    raise AssertionError(f"standard interfaces missing: {found}, joint_states received: {len(got)}")


def test_real_launch_on_the_emulator_and_sim_launch_offer_the_same_interfaces(
    launcher: Launcher, context: Context, tmp_path: Path
) -> None:
    cal_path, calibration = write_calibration(tmp_path, "swap_arm")
    with FeetechEmulator(range(1, 7), seed=7) as emulator:
        park_at_middle(emulator, calibration)
        real = launcher.start("real", f"port:={emulator.port}", f"calibration:={cal_path}", "cameras:=[]")
        real_interfaces = standard_interfaces(real)
        real.shutdown()
        launcher.stop()
    for key, type_name in STANDARD.items():
        assert real_interfaces[key] == {type_name}, key
    assert context.graph.wait_for(lambda tokens: not any(t.node_name == "driver" for t in tokens), 10.0)

    sim = launcher.start("sim", "cameras:=[]")
    sim_interfaces = standard_interfaces(sim)
    assert sim_interfaces == real_interfaces
