"""The seed recorder node in teleop mode on both backends (a real zenoh router; rclpy over DDS): the sim node, the
recorder and a stand-in leader arm run in this process on three sessions or DDS participants (the wire between
them is real); episode boundaries come from the recorder's ``~/next_episode`` and ``~/stop`` services."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from nodegraph.bag import info
from nodegraph.graph.api import Node
from nodegraph.interfaces.messages import make, serialize, time_message
from nodegraph.testing import wait_until
from nodegraph.testing.graph import GraphBackend
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.node import ZenohNode
from nodegraph.transport.zenoh.router import RouterProcess
from so101_core.robot_spec import JOINT_NAMES
from so101_core.seeds import load_seed
from so101_core.sim.twin import Twin
from so101_nodes.seed_recorder_node import JOINT_STATE, TARGET, SeedRecorder, SeedRecorderParams
from so101_nodes.sim_node import SimNode

LEADER_HZ = 50.0


class Leader:
    """A stand-in leader arm: publishes ``leader/joint_states`` (a slow sine on the shoulder) at 50 Hz."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.published: list[np.ndarray] = []
        self.lock = threading.Lock()
        self.publisher = node.create_publisher("sensor_msgs/msg/JointState", "leader/joint_states")
        self.start = time.monotonic()
        node.create_timer(1.0 / LEADER_HZ, self.on_timer)

    def on_timer(self) -> None:
        t = time.monotonic() - self.start
        q = np.array([0.2 * math.sin(t), -1.0, 0.8, 1.0, 0.0, 0.3 + 0.1 * math.cos(t)])
        header = self.node.message("std_msgs/msg/Header", stamp=self.node.stamp(), frame_id="")
        self.publisher.publish(
            self.node.message("sensor_msgs/msg/JointState", header=header, name=list(JOINT_NAMES), position=q)
        )
        with self.lock:
            self.published.append(q)


@pytest.fixture
def contexts(router: RouterProcess) -> Iterator[list[Context]]:
    made = [Context(router.endpoint) for _ in range(3)]
    for ctx in made:
        assert ctx.wait_for_router(10.0)
    yield made
    for ctx in made:
        ctx.close()


def call_trigger(node: Node, service: str) -> Any:
    client = node.create_client("std_srvs/srv/Trigger", service)
    assert client.wait_for_service(10.0)
    return client.call(node.message("std_srvs/srv/Trigger_Request"), 10.0)


def test_teleop_episodes_end_on_services(own_graph_backend: GraphBackend, tmp_path: Path) -> None:
    out = tmp_path / "seeds"
    sim_node = own_graph_backend.node("sim", parameter_overrides={"cameras": [], "real_time_factor": 4.0})
    sim = SimNode(sim_node)
    leader_node = own_graph_backend.node("leader")
    leader = Leader(leader_node)
    rec_node = own_graph_backend.node(
        "seed_recorder",
        parameter_overrides={"output": str(out), "mode": "teleop", "episodes": 0, "seed": 3},
    )
    recorder = SeedRecorder(rec_node)
    try:
        wait_until(lambda: recorder._episode is not None and len(recorder._episode.t_ns) >= 30, 20.0)
        assert call_trigger(leader_node, "/seed_recorder/next_episode").success
        wait_until(lambda: len(recorder.results) == 1, 20.0)
        wait_until(lambda: recorder._episode is not None and len(recorder._episode.t_ns) >= 30, 20.0)
        assert call_trigger(leader_node, "/seed_recorder/stop").success
        wait_until(lambda: rec_node.is_shutdown, 20.0)  # stops by itself after ~/stop
    finally:
        rec_node.shutdown()
        recorder.close()
        leader_node.shutdown()
        sim_node.shutdown()
        sim.close()

    assert [r.end_reason for r in recorder.results] == ["next_episode", "stop"]
    assert sim.resets == 2 and sim.seed == 4  # sim/reset before each episode, seeds 3 and 4
    published = np.array(leader.published)
    for index, (seed, reason) in enumerate([(3, "next_episode"), (4, "stop")]):
        demo = load_seed(out / f"seed_{index:03d}.npz")
        assert (demo.source, demo.seed, demo.extra["end_reason"]) == ("teleop", seed, reason)
        assert demo.extra["action_topic"] == "/leader/joint_states"
        standing = {"standing_vial_0", "standing_vial_1"}
        assert demo.steps >= 30 and set(demo.object_poses) == {"vial", "rack", *standing}
        assert not demo.success and demo.extra["success_source"] == "detector"  # nothing was placed
        sample = Twin().reset(seed)  # judged against the episode's target slot, the sim's sim/target_slot
        assert (demo.extra["target_slot"], demo.extra["prefilled"]) == (sample.target_slot, list(sample.prefilled))
        # every action is a leader sample (sample and hold), and the samples change over the episode
        distance = np.abs(demo.actions[:, None, :] - published[None, :, :]).max(axis=2).min(axis=1)
        assert distance.max() < 1e-9
        assert np.ptp(demo.actions[:, 0]) > 0.0
        counts = {t.name: t.message_count for t in info(out / f"seed_{index:03d}").topics}
        assert counts["/leader/joint_states"] > 0 and counts["/joint_states"] >= demo.steps


@dataclass(frozen=True)
class SentAt:
    """A received message's info: when its publisher sent it (host clock, ns)."""

    source_timestamp_ns: int
    sequence_number: int = 0


def test_messages_of_the_scene_before_a_reset_stay_out_of_the_episode(
    own_graph_backend: GraphBackend, tmp_path: Path
) -> None:
    """A recorder lagging its topics on a busy host still reads the scene before ``sim/reset`` after the new
    episode began: the previous scene's target slot, arm and poses must not become the episode's."""
    out = tmp_path / "seeds"
    sim_node = own_graph_backend.node("sim", parameter_overrides={"cameras": [], "real_time_factor": 2.0})
    sim = SimNode(sim_node)
    leader_node = own_graph_backend.node("leader")
    Leader(leader_node)
    rec_node = own_graph_backend.node(
        "seed_recorder", parameter_overrides={"output": str(out), "mode": "teleop", "episodes": 0, "seed": 3}
    )
    before_reset = time.time_ns()
    recorder = SeedRecorder(rec_node)
    try:
        wait_until(lambda: recorder._episode is not None and len(recorder._episode.t_ns) >= 10, 20.0)
        # late deliveries from before the reset: seed 0's scene (target slot 6), an arm far from the reset pose
        stale = SentAt(before_reset)
        late_target = serialize(make(TARGET, data=6), TARGET)
        far = np.array([1.0, 0.5, 0.5, 0.5, 1.0, 1.0])
        next_step_ns = recorder._episode.t_ns[-1] + recorder.period_ns
        header = make("std_msgs/msg/Header", stamp=time_message(next_step_ns), frame_id="")
        late_state = serialize(make(JOINT_STATE, header=header, name=list(JOINT_NAMES), position=far), JOINT_STATE)
        steps_before = len(recorder._episode.t_ns)
        recorder.on_raw(recorder.target_topic, (late_target, stale))
        recorder.on_raw(recorder.joint_states_topic, (late_state, stale))
        assert recorder.target_slot == Twin().reset(3).target_slot  # the reset's scene, not the late one
        assert not np.allclose(recorder._episode.q[-1], far)
        assert call_trigger(leader_node, "/seed_recorder/stop").success
        wait_until(lambda: rec_node.is_shutdown, 20.0)
    finally:
        rec_node.shutdown()
        recorder.close()
        leader_node.shutdown()
        sim_node.shutdown()
        sim.close()
    assert sim.resets == 1 and steps_before >= 10
    demo = load_seed(out / "seed_000.npz")
    sample = Twin().reset(3)
    assert (demo.extra["target_slot"], demo.extra["prefilled"]) == (sample.target_slot, list(sample.prefilled))
    assert not np.any(np.all(np.isclose(demo.joint_positions, far), axis=1))  # no step holds the late arm


def test_scripted_mode_without_a_sim_fails_clearly(contexts: list[Context], tmp_path: Path) -> None:
    node = ZenohNode(
        "seed_recorder",
        args=[],
        context=contexts[0],
        parameter_overrides={"output": str(tmp_path), "mode": "scripted", "service_timeout_s": 0.5},
    )
    recorder = SeedRecorder(node)
    wait_until(lambda: node.is_shutdown, 10.0)
    node.shutdown()
    assert recorder.error is not None and "sim/reset" in recorder.error
    with pytest.raises(RuntimeError, match="is the sim running"):
        recorder.close()
    assert not list(tmp_path.glob("*.npz"))


@pytest.mark.parametrize(
    ("changes", "name"),
    [
        ({"output": ""}, "output"),
        ({"mode": "dance"}, "mode"),
        ({"episodes": -1}, "episodes"),
        ({"episodes": 0}, "episodes"),
        ({"max_steps": -5}, "max_steps"),
        ({"episode_timeout_s": 0.0}, "episode_timeout_s"),
        ({"service_timeout_s": math.nan}, "service_timeout_s"),
    ],
)
def test_invalid_parameters_are_named(changes: dict[str, Any], name: str) -> None:
    params = {"output": "x", **changes}
    with pytest.raises(ValueError, match=f"'{name}'"):
        SeedRecorderParams(**params).validate()


def test_a_scripted_episode_without_success_is_recorded_again(contexts: list[Context], tmp_path: Path) -> None:
    """Scripted mode: an episode cut off by max_steps (no success) is recorded again on the same scene; the failed
    try moves to failed/ with its bag, and the kept file says how many tries it took."""
    from so101_nodes.scripted_expert_node import ScriptedExpertNode

    out = tmp_path / "seeds"
    sim_node = ZenohNode(
        "sim", args=[], context=contexts[0], parameter_overrides={"cameras": [], "real_time_factor": 4.0}
    )
    sim = SimNode(sim_node)
    expert_node = ZenohNode("scripted_expert", args=[], context=contexts[1], parameter_overrides={"autostart": False})
    expert = ScriptedExpertNode(expert_node)
    params = {"output": str(out), "mode": "scripted", "episodes": 1, "seed": 5, "max_steps": 20, "retries": 1}
    rec_node = ZenohNode("seed_recorder", args=[], context=contexts[2], parameter_overrides=params)
    recorder = SeedRecorder(rec_node)
    try:
        wait_until(lambda: rec_node.is_shutdown, 60.0)  # exit_when_done
    finally:
        rec_node.shutdown()
        recorder.close()
        expert_node.shutdown()
        expert.close()
        sim_node.shutdown()
        sim.close()
    assert [(r.index, r.success, r.end_reason) for r in recorder.results] == [(0, False, "max_steps")] * 2
    assert sim.resets == 2 and sim.seed == 5  # the same scene twice
    kept = load_seed(out / "seed_000.npz")
    assert (kept.seed, kept.success, kept.extra["tries"]) == (5, False, 2)  # no tries left: kept as it ended
    failed = load_seed(out / "failed" / "seed_000_try_1.npz")
    assert (failed.seed, failed.success, failed.extra["tries"]) == (5, False, 1)
    assert (out / "failed" / "seed_000_try_1").is_dir() and (out / "seed_000").is_dir()
    assert sorted(p.name for p in out.glob("*.npz")) == ["seed_000.npz"]
