"""The scripted expert node driving the sim node through a real zenoh router (both in this process, on two
contexts; a third context watches): commands answer states stamp for stamp, ``~/start``/``~/stop``/``~/done``,
the episode's target slot is honoured."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from nodegraph.testing import wait_until
from nodegraph.time import to_ns
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.node import ZenohNode
from nodegraph.transport.zenoh.router import RouterProcess
from so101_core.geometry import quat_to_mat
from so101_core.robot_spec import JOINT_NAMES
from so101_nodes.scripted_expert_node import ScriptedExpertNode, ScriptedExpertParams
from so101_nodes.sim_node import SimNode


class Graph:
    def __init__(self, process: RouterProcess) -> None:
        self.contexts = [Context(process.endpoint) for _ in range(3)]
        for ctx in self.contexts:
            assert ctx.wait_for_router(10.0)
        self.sim_node = ZenohNode(
            "sim", args=[], context=self.contexts[0], parameter_overrides={"cameras": [], "real_time_factor": 4.0}
        )
        self.sim = SimNode(self.sim_node)
        self.expert_node = ZenohNode(
            "scripted_expert", args=[], context=self.contexts[1], parameter_overrides={"autostart": False}
        )
        self.expert = ScriptedExpertNode(self.expert_node)
        self.watch = ZenohNode("watch", args=[], context=self.contexts[2])
        self.lock = threading.Lock()
        self.states: set[int] = set()
        self.state_count = 0
        self.commands: list[Any] = []
        self.done: list[bool] = []
        self.watch.create_subscription("sensor_msgs/msg/JointState", "joint_states", self._on_state)
        self.watch.create_subscription("sensor_msgs/msg/JointState", "joint_commands", self._on_command)
        self.watch.create_subscription("std_msgs/msg/Bool", "scripted_expert/done", self._on_done)

    def _on_state(self, msg: Any) -> None:
        with self.lock:
            self.states.add(to_ns(msg.header.stamp))
            self.state_count += 1

    def _on_command(self, msg: Any) -> None:
        with self.lock:
            self.commands.append(msg)

    def _on_done(self, msg: Any) -> None:
        with self.lock:
            self.done.append(bool(msg.data))

    def wait_states(self, count: int) -> None:
        """Let ``count`` more joint_states arrive: control periods of the sim pass."""
        start = self.state_count
        wait_until(lambda: self.state_count >= start + count, 30.0, f"{count} joint_states")

    def trigger(self, service: str) -> Any:
        client = self.watch.create_client("std_srvs/srv/Trigger", service)
        assert client.wait_for_service(10.0)
        return client.call(self.watch.message("std_srvs/srv/Trigger_Request"), 10.0)

    def close(self) -> None:
        for node in (self.watch, self.expert_node, self.sim_node):
            node.shutdown()
        self.expert.close()
        self.sim.close()
        for ctx in self.contexts:
            ctx.close()


@pytest.fixture
def graph(router: RouterProcess) -> Iterator[Graph]:
    made = Graph(router)
    yield made
    made.close()


def test_expert_waits_for_start_then_places_the_vial(graph: Graph) -> None:
    wait_until(lambda: len(graph.states) > 20, 20.0)
    assert graph.commands == []  # autostart false: nothing before ~/start
    assert graph.trigger("/scripted_expert/start").success
    wait_until(lambda: bool(graph.done) and graph.done[-1], 30.0)
    with graph.lock:
        commands, states = list(graph.commands), set(graph.states)
    assert len(commands) > 150
    for msg in commands:
        assert tuple(msg.name) == JOINT_NAMES and len(msg.position) == 6
    # each command answers one joint_states message: same stamp, one per control period
    stamps = [to_ns(m.header.stamp) for m in commands]
    assert set(stamps) <= states and len(set(stamps)) == len(stamps)
    assert graph.expert.expert.done
    # done: no more commands, the arm holds
    count = len(graph.commands)
    graph.wait_states(10)
    assert len(graph.commands) == count
    # a new start after a reset runs a new episode; ~/stop makes it idle at once
    reset = graph.watch.create_client("so101_msgs/srv/ResetSim", "sim/reset")
    assert reset.wait_for_service(5.0)
    assert reset.call(graph.watch.message("so101_msgs/srv/ResetSim_Request", seed=1), 10.0).success
    assert graph.trigger("/scripted_expert/start").success
    wait_until(lambda: len(graph.commands) > count + 10, 20.0)
    assert graph.trigger("/scripted_expert/stop").success
    graph.wait_states(5)  # commands already on the wire arrive
    count = len(graph.commands)
    graph.wait_states(10)
    assert len(graph.commands) == count
    assert graph.expert.episodes == 2


def test_invalid_control_rate_is_named(context: Context) -> None:
    node = ZenohNode("scripted_expert", args=[], context=context, parameter_overrides={"control_hz": -1.0})
    try:
        with pytest.raises(ValueError, match="'control_hz'"):
            ScriptedExpertParams.declare(node)
    finally:
        node.shutdown()


def test_expert_places_the_vial_in_the_episodes_target_slot(graph: Graph) -> None:
    """The sim publishes its episode's target slot (seed 2: a vial stands in the first slot of fill_order, the
    target is the second, 6) and the expert places the vial there, past the standing one, which stays."""
    reset = graph.watch.create_client("so101_msgs/srv/ResetSim", "sim/reset")
    assert reset.wait_for_service(5.0)
    assert reset.call(graph.watch.message("so101_msgs/srv/ResetSim_Request", seed=2), 10.0).success
    episode = graph.sim.twin.episode
    assert episode is not None and episode.prefilled == (8,) and episode.target_slot == 6
    wait_until(lambda: graph.expert.sim_slot == 6, 20.0)
    assert graph.trigger("/scripted_expert/start").success
    wait_until(lambda: bool(graph.done) and graph.done[-1], 40.0)
    assert graph.expert.slot == 6
    time.sleep(0.5)  # the vial settles in the rack
    poses = graph.sim.twin.object_poses()
    rack = poses["rack"]
    offsets = np.asarray(graph.sim.twin.config.rack.slot_offsets(), dtype=np.float64)
    for name, slot in (("vial", 6), ("standing_vial_0", 8)):
        local = quat_to_mat(rack.quaternion).T @ (poses[name].position - rack.position)
        dist = np.linalg.norm(offsets - local[:2], axis=1)
        assert int(np.argmin(dist)) == slot and float(dist[slot]) < 0.013, (name, dist)


def test_target_slot_parameter_is_checked(context: Context) -> None:
    for bad, match in ((-2, "'target_slot' must be -1 or a slot"), (9, "'target_slot' 9 is not one of the 9 slots")):
        node = ZenohNode("scripted_expert", args=[], context=context, parameter_overrides={"target_slot": bad})
        try:
            with pytest.raises(ValueError, match=match):
                ScriptedExpertNode(node)
        finally:
            node.shutdown()
