"""Sim and real answer a large command step the same way (issue 13, defect 11): the driver (over the Feetech
emulator) and the sim node (MuJoCo twin, namespace ``twin``) share one graph (on each backend) and one robot.yaml
and get the same command at the same time; both arms move at the configured step limit (``max_step_rad`` x
``rate_hz``) instead of the twin jumping to the target. Observed: the emulator's present position (wall clock: a
loaded machine can only slow the driver's 100 Hz cycle, never speed it up) and the twin's ``joint_states`` on
their own stamps (sim clock: exact whatever the load)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from nodegraph.testing import wait_until
from nodegraph.testing.graph import GraphBackend
from nodegraph.time import to_s
from so101_nodes.sim_node import SimNode
from test_driver_node import MAX_STEP_RAD, RigFactory, rig_backend, rig_factory  # noqa: F401

SPEED = MAX_STEP_RAD * 100.0  # rad/s: the driver's 100 Hz cycle
PAN = 0


@pytest.fixture
def sim(own_graph_backend: GraphBackend) -> Iterator[Any]:
    """``sim(robot_config)``: a sim node on the graph of the test's rig (``rig_factory``'s backend)."""
    with contextlib.ExitStack() as stack:

        def make(robot_config: str) -> SimNode:
            overrides = {"cameras": [], "randomize": False, "robot_config": robot_config}
            node = own_graph_backend.node("sim", namespace="twin", parameter_overrides=overrides)
            stack.callback(node.shutdown)
            sim = SimNode(node)
            stack.callback(sim.close)
            stack.callback(node.shutdown)
            return sim

        yield make


def ramp_speed(samples: list[tuple[float, float]]) -> float:
    """Speed (rad/s) of a goal trace [(t, q)]: the least-squares slope over 20 % to 80 % of its move."""
    t = np.array([s[0] for s in samples])
    q = np.array([s[1] for s in samples])
    frac = (q - q[0]) / (q[-1] - q[0])
    ramp = (frac >= 0.2) & (frac <= 0.8)
    assert ramp.sum() >= 3, f"the move is a jump: {ramp.sum()} samples on its ramp"
    return float(abs(np.polyfit(t[ramp], q[ramp], 1)[0]))


def test_sim_and_driver_ramp_a_large_step_at_the_same_speed(rig_factory: RigFactory, sim: Any) -> None:  # noqa: F811
    rig = rig_factory()
    wait_until(lambda: rig.latest() is not None, 10.0, "driver running")
    sim(rig.driver.params.robot_config)  # the same robot.yaml: the same safety section
    twin_states: list[tuple[float, float]] = []
    rig.client.create_subscription(
        "sensor_msgs/msg/JointState",
        "/twin/joint_states",
        lambda m: twin_states.append((to_s(m.header.stamp), float(m.position[PAN]))),
    )
    twin_commands = rig.client.create_publisher("sensor_msgs/msg/JointState", "/twin/joint_commands")
    wait_until(lambda: len(twin_states) > 10, 10.0, "twin joint_states")
    target = 1.0  # shoulder_pan: ~1 rad away from both start poses
    msg = rig.client.message("sensor_msgs/msg/JointState", name=["shoulder_pan"], position=[target])
    stop = threading.Event()

    def publish() -> None:
        while not stop.is_set():
            rig.commands.publish(msg)
            twin_commands.publish(msg)
            time.sleep(0.02)

    driver_trace: list[tuple[float, float]] = []
    start = len(twin_states)
    sender = threading.Thread(target=publish, daemon=True)
    sender.start()
    try:
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            driver_trace.append((time.monotonic(), rig.position("shoulder_pan")))
            time.sleep(0.003)
    finally:
        stop.set()
        sender.join()
    traces = {"driver": driver_trace, "sim": twin_states[start:]}
    for name, trace in traces.items():
        assert abs(trace[-1][1] - target) < 0.05, f"{name} did not reach the target: {trace[-1][1]:.3f}"
    speeds = {name: ramp_speed(trace) for name, trace in traces.items()}
    assert speeds["sim"] == pytest.approx(SPEED, rel=0.15), speeds  # sim clock: the configured speed
    assert 0.5 * SPEED <= speeds["driver"] <= 1.15 * SPEED, speeds  # wall clock: at most the limit, never a jump
