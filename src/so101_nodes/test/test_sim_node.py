"""The sim node on both backends: the twin runs in-process as a node on a session (zenoh, through a real router)
or a DDS participant (rclpy) of its own, the client side on another (the wire between them is real); the error
exits run as real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from nodegraph.graph.api import GoalStatus
from nodegraph.testing import graph as graph_testing
from nodegraph.testing import wait_until
from nodegraph.testing.graph import GraphBackend
from nodegraph.time import to_ns
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.node import ZenohNode
from so101_core.sim import JOINT_NAMES
from so101_core.sim.config import default_config_dir
from so101_core.sim.errors import ConfigError
from so101_nodes.sim_node import SimNode

# The router fixtures of the graph tests (re-exported so that pytest finds them here).
endpoint = graph_testing.endpoint
router = graph_testing.router
context = graph_testing.context

FJT = "control_msgs/action/FollowJointTrajectory"
INVALID_JOINTS = -2
SUCCEEDED, CANCELED, ABORTED = GoalStatus.SUCCEEDED, GoalStatus.CANCELED, GoalStatus.ABORTED


class Graph:
    """A sim node and a client node of one backend."""

    def __init__(self, backend: GraphBackend, **overrides: Any) -> None:
        params = {"cameras": [], **overrides}
        self.sim_node = backend.node("sim", parameter_overrides=params)
        self.sim = SimNode(self.sim_node)
        self.client = backend.node("client")

    def latest(self, type_name: str, topic: str) -> Callable[[], Any]:
        """Subscribe; the returned function gives the latest message (waits up to 10 s for the first)."""
        box: list[Any] = []
        arrived = threading.Event()

        def on_message(msg: Any) -> None:
            box[:] = [msg]
            arrived.set()

        self.client.create_subscription(type_name, topic, on_message)

        def get() -> Any:
            assert arrived.wait(10.0), f"nothing on {topic}"
            return box[0]

        return get

    def call(self, type_name: str, service: str, **fields: Any) -> Any:
        client = self.client.create_client(type_name, service)
        assert client.wait_for_service(10.0)
        return client.call(self.client.message(f"{type_name}_Request", **fields), 10.0)

    def close(self) -> None:
        self.sim_node.shutdown()
        self.sim.close()
        self.client.shutdown()


@pytest.fixture(scope="module")
def graph(graph_backend: GraphBackend) -> Iterator[Graph]:
    """One sim (no cameras) per backend, shared by the tests that do not need their own parameters."""
    g = Graph(graph_backend)
    yield g
    g.close()


def test_topics_carry_the_driver_names_and_types(graph: Graph) -> None:
    expected = {
        "/joint_states": "sensor_msgs/msg/JointState",
        "/joint_commands": "sensor_msgs/msg/JointState",
        "/clock": "rosgraph_msgs/msg/Clock",
        "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
        "/sim/objects/vial/pose": "geometry_msgs/msg/PoseStamped",
        "/sim/objects/rack/pose": "geometry_msgs/msg/PoseStamped",
        "/sim/objects/standing_vial_1/pose": "geometry_msgs/msg/PoseStamped",
        "/sim/target_slot": "std_msgs/msg/Int32",
        "/arm_controller/follow_joint_trajectory/_action/status": "action_msgs/msg/GoalStatusArray",
        "/arm_controller/controller_state": "control_msgs/msg/JointTrajectoryControllerState",
    }

    def seen() -> bool:
        topics = graph.client.topic_names_and_types()
        return all(t in topics.get(name, set()) for name, t in expected.items())

    assert wait_until(seen, 10.0), graph.client.topic_names_and_types()
    assert not any(name.startswith("/cameras/") for name in graph.client.topic_names_and_types())
    assert graph.client.create_client("so101_msgs/srv/ResetSim", "/sim/reset").wait_for_service(10.0)
    assert graph.client.create_client("so101_msgs/srv/SetObjectPose", "/sim/set_object_pose").wait_for_service(10.0)
    assert graph.client.create_action_client(FJT, "/arm_controller/follow_joint_trajectory").wait_for_server(10.0)

    state = graph.latest("sensor_msgs/msg/JointState", "/joint_states")()
    assert list(state.name) == list(JOINT_NAMES)
    assert len(state.position) == len(state.velocity) == len(state.effort) == 6
    control = graph.latest("control_msgs/msg/JointTrajectoryControllerState", "/arm_controller/controller_state")()
    assert list(control.joint_names) == list(JOINT_NAMES) and len(control.output.positions) == 6
    vial = graph.latest("geometry_msgs/msg/PoseStamped", "/sim/objects/vial/pose")()
    assert vial.header.frame_id == "world"
    assert 0.0 < vial.pose.position.z < 0.2
    diag = graph.latest("diagnostic_msgs/msg/DiagnosticArray", "/diagnostics")()
    assert diag.status[0].name == "sim: twin"
    assert {kv.key for kv in diag.status[0].values} >= {"sim_time_s", "real_time_factor", "seed"}


def test_joint_states_at_the_control_rate_with_the_sim_clock(graph: Graph) -> None:
    stamps: list[int] = []
    clocks: list[int] = []
    graph.client.create_subscription(
        "sensor_msgs/msg/JointState",
        "/joint_states",
        lambda m: stamps.append(to_ns(m.header.stamp)),
    )
    graph.client.create_subscription("rosgraph_msgs/msg/Clock", "/clock", lambda m: clocks.append(to_ns(m.clock)))
    assert wait_until(lambda: len(stamps) > 0, 10.0)
    n0 = len(stamps)
    assert wait_until(lambda: len(stamps) >= n0 + 21, 10.0)  # streaming; rates are benchmarks, not tests
    assert all(np.diff(stamps) > 0), "stamps must increase"
    steps = np.diff(stamps[-20:]) * 1e-9
    np.testing.assert_allclose(steps, 1 / 30, atol=1.5e-3)  # sim time: one control period per message
    assert clocks and abs(clocks[-1] - stamps[-1]) < 0.2e9


def test_a_joint_command_reaches_its_target(graph: Graph) -> None:
    states = graph.latest("sensor_msgs/msg/JointState", "/joint_states")
    states()
    pub = graph.client.create_publisher("sensor_msgs/msg/JointState", "/joint_commands")
    target = {"shoulder_pan": 0.4, "elbow_flex": 1.2, "wrist_roll": -0.5}
    cmd = graph.client.message("sensor_msgs/msg/JointState", name=list(target), position=list(target.values()))
    index = [JOINT_NAMES.index(n) for n in target]

    def reached() -> bool:
        pub.publish(cmd)
        return bool(np.all(np.abs(np.asarray(states().position)[index] - list(target.values())) < 0.03))

    assert wait_until(reached, 5.0), f"position {np.asarray(states().position).round(3)}"
    rejected = graph.sim.rejected_commands
    pub.publish(graph.client.message("sensor_msgs/msg/JointState", name=["elbow"], position=[0.1]))
    assert wait_until(lambda: graph.sim.rejected_commands == rejected + 1, 5.0)


def trajectory_goal(graph: Graph, names: list[str], points: list[tuple[float, list[float]]]) -> Any:
    msg = graph.client.message
    pts = [
        msg(
            "trajectory_msgs/msg/JointTrajectoryPoint",
            positions=np.asarray(pos, dtype=np.float64),
            time_from_start=msg("builtin_interfaces/msg/Duration", sec=int(t), nanosec=round((t % 1) * 1e9)),
        )
        for t, pos in points
    ]
    traj = msg("trajectory_msgs/msg/JointTrajectory", joint_names=names, points=pts)
    return msg(f"{FJT}_Goal", trajectory=traj)


def test_follow_joint_trajectory_succeeds_cancels_and_rejects(graph: Graph) -> None:
    client = graph.client.create_action_client(FJT, "/arm_controller/follow_joint_trajectory")
    assert client.wait_for_server(10.0)
    states = graph.latest("sensor_msgs/msg/JointState", "/joint_states")
    names = ["shoulder_pan", "wrist_flex"]
    feedback: list[Any] = []
    goal = trajectory_goal(graph, names, [(0.5, [0.1, 0.6]), (1.0, [-0.2, 0.8])])
    handle = client.send_goal(goal, feedback.append)
    assert handle.accepted
    status, result = handle.result(15.0)
    assert (status, result.error_code) == (SUCCEEDED, 0), result.error_string
    pos = np.asarray(states().position)
    np.testing.assert_allclose(pos[[0, 3]], [-0.2, 0.8], atol=0.05)
    assert feedback and list(feedback[-1].joint_names) == names

    long_goal = trajectory_goal(graph, ["shoulder_pan"], [(5.0, [1.0])])
    handle = client.send_goal(long_goal)
    wait_until(lambda: states().position[0] > -0.1, 10.0, "pan on its way to 1.0")
    assert handle.cancel()
    status, _ = handle.result(10.0)
    assert status == CANCELED
    stopped = states().position[0]
    assert stopped < 0.9  # stopped on the way, not at the end

    status, result = client.send_goal(trajectory_goal(graph, ["elbow"], [(1.0, [0.0])])).result(10.0)
    assert (status, result.error_code) == (ABORTED, INVALID_JOINTS)
    status, result = client.send_goal(trajectory_goal(graph, ["gripper"], [(1.0, [9.0])])).result(10.0)
    assert status == ABORTED and "outside" in result.error_string


def object_poses(graph: Graph) -> np.ndarray:
    got = []
    for name in ("vial", "rack"):
        msg = graph.latest("geometry_msgs/msg/PoseStamped", f"/sim/objects/{name}/pose")()
        p, q = msg.pose.position, msg.pose.orientation
        got.append([p.x, p.y, p.z, q.w, q.x, q.y, q.z])
    return np.array(got)


def reset_and_settle(graph: Graph, seed: int) -> np.ndarray:
    response = graph.call("so101_msgs/srv/ResetSim", "/sim/reset", seed=seed)
    assert response.success, response.message
    assert f"seed {seed}" in response.message
    time.sleep(0.6)  # > several control periods: the published poses are from after the reset
    return object_poses(graph)


def test_reset_with_the_same_seed_gives_the_same_scene(graph: Graph) -> None:
    a = reset_and_settle(graph, 11)
    other = reset_and_settle(graph, 12)
    b = reset_and_settle(graph, 11)
    np.testing.assert_allclose(a, b, atol=1e-4)
    assert np.max(np.abs(a[:, :3] - other[:, :3])) > 1e-3, "different seeds should place objects differently"
    assert graph.sim.seed == 11


def test_the_standing_vials_and_the_target_slot_are_published(graph: Graph) -> None:
    """Seed 1 stands vials in the first two slots of fill_order (8, 6): their poses show them upright there and
    sim/target_slot names the next slot of the order (4); seed 0 stands one, the other waits parked."""
    offsets = np.asarray(graph.sim.twin.config.rack.slot_offsets())
    for seed, prefilled, target in ((1, (8, 6), 4), (0, (8,), 6)):
        reset_and_settle(graph, seed)
        episode = graph.sim.twin.episode
        assert episode is not None and (episode.prefilled, episode.target_slot) == (prefilled, target)
        assert graph.latest("std_msgs/msg/Int32", "/sim/target_slot")().data == target
        rack = object_poses(graph)[1]
        yaw = 2 * np.arctan2(rack[6], rack[3])
        turn = np.array([[np.cos(yaw), -np.sin(yaw)], [np.sin(yaw), np.cos(yaw)]])
        for k, name in enumerate(("standing_vial_0", "standing_vial_1")):
            msg = graph.latest("geometry_msgs/msg/PoseStamped", f"/sim/objects/{name}/pose")()
            p, o = msg.pose.position, msg.pose.orientation
            if k < len(prefilled):
                slot = rack[:2] + turn @ offsets[prefilled[k]]
                upright = o.x**2 + o.y**2 < 1e-4  # a turn about z at most
                assert np.linalg.norm([p.x - slot[0], p.y - slot[1]]) < 3e-3 and p.z > 0.05 and upright, name
            else:
                assert p.z < -0.4, name  # parked out of view


def test_set_object_pose(graph: Graph) -> None:
    pose = graph.client.message(
        "geometry_msgs/msg/Pose",
        position=graph.client.message("geometry_msgs/msg/Point", x=0.3, y=0.05, z=0.0),
        orientation=graph.client.message("geometry_msgs/msg/Quaternion", x=0.0, y=0.0, z=0.0, w=1.0),
    )
    response = graph.call("so101_msgs/srv/SetObjectPose", "/sim/set_object_pose", name="rack", pose=pose)
    assert response.success, response.message
    moved = lambda: np.allclose(object_poses(graph)[1][:2], [0.3, 0.05], atol=5e-3)  # noqa: E731
    assert wait_until(moved, 5.0), object_poses(graph)[1]  # the next pose messages show it
    response = graph.call("so101_msgs/srv/SetObjectPose", "/sim/set_object_pose", name="beaker", pose=pose)
    assert not response.success and "beaker" in response.message and "vial" in response.message


def test_one_small_camera_publishes_image_and_camera_info(own_graph_backend: GraphBackend) -> None:
    sim_node = own_graph_backend.node(
        "sim",
        parameter_overrides={"cameras": ["side"], "width": 64, "height": 48, "camera_rate_hz": 5.0, "depth": True},
    )
    sim = SimNode(sim_node)
    client = own_graph_backend.node("viewer")
    try:
        got: dict[str, list[Any]] = {"image": [], "info": [], "depth": []}
        client.create_subscription("sensor_msgs/msg/Image", "/cameras/side/image_raw", got["image"].append)
        client.create_subscription("sensor_msgs/msg/CameraInfo", "/cameras/side/camera_info", got["info"].append)
        client.create_subscription("sensor_msgs/msg/Image", "/cameras/side/depth/image_raw", got["depth"].append)
        assert wait_until(lambda: all(len(v) >= 2 for v in got.values()), 15.0), {k: len(v) for k, v in got.items()}
        image, info, depth = got["image"][-1], got["info"][-1], got["depth"][-1]
        assert (image.height, image.width, image.encoding, image.step) == (48, 64, "rgb8", 192)
        assert len(image.data) == 48 * 64 * 3 and np.asarray(image.data).std() > 1.0  # not a blank frame
        assert image.header.frame_id == info.header.frame_id == "side_camera_optical_frame"
        assert (info.height, info.width, info.distortion_model) == (48, 64, "plumb_bob")
        k = np.asarray(info.k).reshape(3, 3)
        np.testing.assert_allclose(k, sim.twin.camera_intrinsics("side", 64, 48))
        np.testing.assert_allclose(np.asarray(info.p).reshape(3, 4)[:, :3], k)
        np.testing.assert_array_equal(info.d, np.zeros(5))
        assert (depth.encoding, depth.step, depth.is_bigendian) == ("16UC1", 128, 0)
        mm = np.frombuffer(bytes(np.asarray(depth.data, dtype=np.uint8)), dtype="<u2")
        assert 100 < np.median(mm[mm > 0]) < 2000  # the side camera is ~0.6 m from the scene
        topics = client.topic_names_and_types()
        assert not any(t.startswith(("/cameras/ego", "/cameras/top")) for t in topics)
    finally:
        sim_node.shutdown()
        sim.close()
        client.shutdown()


def test_bad_camera_name_is_a_clear_error(context: Context) -> None:
    node = ZenohNode("sim", args=[], context=context, parameter_overrides={"cameras": ["side", "wrist"]})
    try:
        with pytest.raises(ValueError, match=r"parameter 'cameras': unknown camera 'wrist' \(known: ego, side, top\)"):
            SimNode(node)
    finally:
        node.shutdown()


def test_bad_sim_config_names_the_field(context: Context, tmp_path: Path) -> None:
    data = yaml.safe_load((default_config_dir() / "sim.yaml").read_text())
    data["physics"]["control_hz"] = -30.0
    bad = tmp_path / "sim.yaml"
    bad.write_text(yaml.safe_dump(data))
    node = ZenohNode("sim", args=[], context=context, parameter_overrides={"cameras": [], "sim_config": str(bad)})
    try:
        with pytest.raises(ConfigError, match=r"sim\.physics\.control_hz"):
            SimNode(node)
    finally:
        node.shutdown()


def test_robot_id_loads_that_arms_twin_and_a_missing_one_is_an_error(context: Context, tmp_path: Path) -> None:
    arm = tmp_path / "lab_arm.yaml"
    arm.write_text("robot_id: lab_arm\njoints:\n  elbow_flex: {kp: 21.5, latency_s: 0.03}\n")
    params = {"cameras": [], "robot_id": "lab_arm", "arm_file": str(arm), "real_time_factor": 0.0}
    node = ZenohNode("sim", args=[], context=context, parameter_overrides=params)
    sim = SimNode(node)
    try:
        twin = sim.twin
        assert twin.dynamics is not None and twin.dynamics["elbow_flex"].latency_s == 0.03
        assert twin.model.actuator_gainprm[twin.index.actuator_ids[2], 0] == 21.5
    finally:
        node.shutdown()
        sim.close()
    node = ZenohNode("sim", args=[], context=context, parameter_overrides={"cameras": [], "robot_id": "ghost"})
    try:
        with pytest.raises(ConfigError, match="no identified twin for arm 'ghost'"):
            SimNode(node)
    finally:
        node.shutdown()


@pytest.mark.usefixtures("router")
def test_the_sim_process_exits_non_zero_on_a_bad_camera() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "so101_nodes.sim_node", "--ros-args", "-p", "cameras:=[side, bogus]"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SO101_TRANSPORT": "zenoh"},
    )
    assert result.returncode == 1
    assert "unknown camera 'bogus'" in result.stderr and "cameras" in result.stderr
