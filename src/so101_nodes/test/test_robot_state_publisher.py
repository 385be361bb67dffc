"""The URDF forward kinematics against MuJoCo's twin, and the robot_state_publisher node through a real router.

The URDF and the MJCF of the wheel come from the same CAD export: every link frame agrees with the MJCF body
of the same part to well under 1 mm / 0.01°. The one constant difference is the end-effector frame: URDF
``gripper_frame_link`` = MJCF site ``gripperframe`` rotated +90° about its y axis (the URDF puts z along the
jaws, the approach axis; the twin's site puts x along them); both share the same origin.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from nodegraph.graph.qos import LATCHED
from nodegraph.testing import graph as graph_testing
from nodegraph.testing import wait_until
from nodegraph.time import to_s
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.node import ZenohNode
from so101_core.description.urdf import (
    UrdfError,
    load_urdf,
    parse_urdf,
    rpy_to_matrix,
)
from so101_core.geometry import mat_to_quat_xyzw
from so101_core.sim import JOINT_NAMES
from so101_core.sim.randomization import DRConfig
from so101_core.sim.twin import Twin
from so101_nodes.robot_state_publisher_node import RobotStatePublisher
from so101_nodes.sim_node import SimNode

# The router fixtures of the graph tests (re-exported so that pytest finds them here).
endpoint = graph_testing.endpoint
router = graph_testing.router
context = graph_testing.context

# URDF link -> MJCF body of the same part
LINK_TO_BODY = {
    "base_link": "base",
    "shoulder_link": "shoulder",
    "upper_arm_link": "upper_arm",
    "lower_arm_link": "lower_arm",
    "wrist_link": "wrist",
    "gripper_link": "gripper",
    "moving_jaw_so101_v1_link": "moving_jaw_so101_v1",
}
EE_OFFSET = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # R_site^T R_urdf = Ry(+90°)


def angle_between(a: np.ndarray, b: np.ndarray) -> float:
    """Angle (rad) of the rotation taking ``a`` (3, 3) to ``b`` (3, 3)."""
    return math.acos(float(np.clip((np.trace(a.T @ b) - 1.0) / 2.0, -1.0, 1.0)))


@pytest.fixture(scope="module")
def twin() -> Iterator[Twin]:
    t = Twin(dr=DRConfig.disabled())
    yield t
    t.close()


# ---------------------------------------------------------------------- URDF library


def test_urdf_fk_matches_the_twin_bodies(twin: Twin) -> None:
    model = load_urdf()
    assert model.root == "base_link"
    assert [j.name for j in model.moving_joints] == [*JOINT_NAMES[:5], "gripper"]
    lower = twin.model.actuator_ctrlrange[twin.index.actuator_ids, 0]
    upper = twin.model.actuator_ctrlrange[twin.index.actuator_ids, 1]
    rng = np.random.default_rng(3)
    for q in [np.zeros(6), *rng.uniform(lower, upper, size=(20, 6))]:
        twin.set_joint_positions(q)
        poses = model.link_poses(dict(zip(JOINT_NAMES, q, strict=True)))
        for link, body in LINK_TO_BODY.items():
            b = twin.model.body(body).id
            assert np.linalg.norm(poses[link][:3, 3] - twin.data.xpos[b]) < 1e-4, link  # 0.1 mm
            assert angle_between(twin.data.xmat[b].reshape(3, 3), poses[link][:3, :3]) < 1e-3, link
        site = twin.index.ee_site
        ee = poses["gripper_frame_link"]
        assert np.linalg.norm(ee[:3, 3] - twin.data.site_xpos[site]) < 1e-4
        np.testing.assert_allclose(twin.data.site_xmat[site].reshape(3, 3).T @ ee[:3, :3], EE_OFFSET, atol=1e-3)


def test_robot_description_has_absolute_mesh_uris() -> None:
    model = load_urdf()
    assert 'filename="assets/' not in model.xml
    assert 'filename="file:///' in model.xml


@pytest.mark.parametrize(
    "rot",
    [np.eye(3), rpy_to_matrix([math.pi, 0, 0]), rpy_to_matrix([0, math.pi, 0]), rpy_to_matrix([0.3, -1.2, 2.9])],
)
def test_quaternion_round_trip_near_0_and_180_degrees(rot: np.ndarray) -> None:
    x, y, z, w = mat_to_quat_xyzw(rot)
    back = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )
    np.testing.assert_allclose(back, rot, atol=1e-12)


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        ("<robot", "not valid XML"),
        ("<model/>", "root element must be <robot>"),
        ('<robot><link name="a"/><link name="b"/></robot>', "exactly one root link"),
        (
            '<robot><link name="a"/><link name="b"/><joint name="j" type="ball"><parent link="a"/>'
            '<child link="b"/></joint></robot>',
            "unsupported type 'ball'",
        ),
        (
            '<robot><link name="a"/><joint name="j" type="fixed"><parent link="a"/><child link="c"/></joint></robot>',
            "unknown link 'c'",
        ),
    ],
)
def test_bad_urdf_is_a_clear_error(xml: str, message: str) -> None:
    with pytest.raises(UrdfError, match=message):
        parse_urdf(xml)


# ---------------------------------------------------------------------- the node


def pose_of(transform: Any) -> np.ndarray:
    t, r = transform.translation, transform.rotation
    x, y, z, w = r.x, r.y, r.z, r.w
    out = np.eye(4)
    out[:3, :3] = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ]
    out[:3, 3] = [t.x, t.y, t.z]
    return out


def chain(transforms: list[Any], frame: str, root: str = "world") -> np.ndarray:
    """Pose (4, 4) of ``frame`` in ``root`` from a list of TransformStamped."""
    by_child = {t.child_frame_id: t for t in transforms}
    pose = np.eye(4)
    while frame != root:
        t = by_child[frame]
        pose = pose_of(t.transform) @ pose
        frame = t.header.frame_id
    return pose


class Inbox:
    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.event = threading.Event()

    def __call__(self, msg: Any) -> None:
        self.messages.append(msg)
        self.event.set()

    def wait(self, timeout_s: float = 10.0) -> Any:
        assert self.event.wait(timeout_s), "no message"
        return self.messages[-1]


def test_node_publishes_description_static_and_dynamic_tf(context: Context, twin: Twin) -> None:
    rsp_node = ZenohNode(
        "robot_state_publisher", args=[], context=context, parameter_overrides={"publish_frequency": 0.0}
    )
    rsp = RobotStatePublisher(rsp_node)
    client_ctx = Context(context.endpoint)
    client = ZenohNode("client", args=[], context=client_ctx)
    try:
        time.sleep(0.3)  # late joiners: the latched topics must still arrive
        description, static, tf = Inbox(), Inbox(), Inbox()
        client.create_subscription("std_msgs/msg/String", "/robot_description", description, LATCHED)
        client.create_subscription("tf2_msgs/msg/TFMessage", "/tf_static", static, LATCHED)
        client.create_subscription("tf2_msgs/msg/TFMessage", "/tf", tf)
        assert description.wait().data == rsp.model.xml
        static_tfs = list(static.wait().transforms)
        assert {(t.header.frame_id, t.child_frame_id) for t in static_tfs} == {
            ("world", "base_link"),
            ("gripper_link", "gripper_frame_link"),
        }

        q = np.array([0.3, -0.8, 0.9, 0.4, -1.1, 0.6])
        pub = client.create_publisher("sensor_msgs/msg/JointState", "/joint_states")
        header = client.message("std_msgs/msg/Header", stamp=client.message("builtin_interfaces/msg/Time", sec=42))
        state = client.message("sensor_msgs/msg/JointState", header=header, name=list(JOINT_NAMES), position=q)

        def published() -> bool:
            pub.publish(state)
            return tf.event.is_set()

        wait_until(published, 10.0, "/tf from the published joint state", 0.1)
        msg = tf.wait()
        assert {t.child_frame_id for t in msg.transforms} == {
            "shoulder_link",
            "upper_arm_link",
            "lower_arm_link",
            "wrist_link",
            "gripper_link",
            "moving_jaw_so101_v1_link",
        }
        assert all(t.header.stamp.sec == 42 for t in msg.transforms)

        # The published frames, chained, put every link where MuJoCo puts its body (world = twin world).
        twin.set_joint_positions(q)
        transforms = [*static_tfs, *msg.transforms]
        for link, body in LINK_TO_BODY.items():
            pose = chain(transforms, link)
            b = twin.model.body(body).id
            assert np.linalg.norm(pose[:3, 3] - twin.data.xpos[b]) < 1e-3, link
            assert angle_between(twin.data.xmat[b].reshape(3, 3), pose[:3, :3]) < 2e-3, link
    finally:
        rsp_node.shutdown()
        client.shutdown()
        client_ctx.close()


def test_tf_follows_the_sim_joint_states(context: Context) -> None:
    """sim + robot_state_publisher, as in the sim launch: tf arrives, stamped with the sim clock."""
    sim_node = ZenohNode("sim", args=[], context=context, parameter_overrides={"cameras": []})
    sim = SimNode(sim_node)
    rsp_node = ZenohNode("robot_state_publisher", args=[], context=context)
    RobotStatePublisher(rsp_node)
    client_ctx = Context(context.endpoint)
    client = ZenohNode("client", args=[], context=client_ctx)
    try:
        tf = Inbox()
        client.create_subscription("tf2_msgs/msg/TFMessage", "/tf", tf)
        msg = tf.wait(10.0)
        stamp_s = to_s(msg.transforms[0].header.stamp)
        assert stamp_s < 60.0  # sim time (starts at 0), not the wall clock
        assert len(msg.transforms) == 6
    finally:
        sim_node.shutdown()
        sim.close()
        rsp_node.shutdown()
        client.shutdown()
        client_ctx.close()


def test_bad_publish_frequency_is_a_clear_error(context: Context) -> None:
    node = ZenohNode("robot_state_publisher", args=[], context=context, parameter_overrides={"publish_frequency": -1.0})
    try:
        with pytest.raises(ValueError, match="publish_frequency must be >= 0"):
            RobotStatePublisher(node)
    finally:
        node.shutdown()


def test_missing_urdf_file_is_a_clear_error(context: Context) -> None:
    node = ZenohNode("robot_state_publisher", args=[], context=context, parameter_overrides={"urdf_path": "/nope.urdf"})
    try:
        with pytest.raises(UrdfError, match=r"cannot read URDF /nope\.urdf"):
            RobotStatePublisher(node)
    finally:
        node.shutdown()
