"""/so101/solve_ik and /so101/plan_motion on both backends (a real zenoh router; rclpy over DDS): FK → IK → FK,
unreachable targets answered cleanly, and a planned trajectory executed by the twin's FollowJointTrajectory
reaching its goal untouched."""

# ruff: noqa: N803, N806  (math notation: T pose)

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from nodegraph.graph.api import GoalStatus
from nodegraph.testing import wait_until
from nodegraph.testing.graph import GraphBackend
from nodegraph.time import to_s
from so101_core.geometry import mat_to_quat
from so101_nodes.sim_node import SimNode
from so101_skillgen.ik_service_node import IKServiceNode
from so101_skillgen.kinematics import ArmKinematics

FJT = "control_msgs/action/FollowJointTrajectory"
SUCCEEDED = GoalStatus.SUCCEEDED


class Graph:
    """The sim, the IK service node and a client, each on its own session or DDS participant."""

    def __init__(self, backend: GraphBackend) -> None:
        self.sim_node = backend.node("sim", parameter_overrides={"cameras": [], "randomize": False})
        self.sim = SimNode(self.sim_node)
        self.ik_node = backend.node("so101_ik")
        self.ik = IKServiceNode(self.ik_node)
        self.client = backend.node("client")
        self.msg = self.client.message

    def latest(self, type_name: str, topic: str) -> Any:
        box: list[Any] = []
        got = threading.Event()
        self.client.create_subscription(type_name, topic, lambda m: (box.__setitem__(slice(None), [m]), got.set()))
        assert got.wait(10.0), topic
        return lambda: box[0]

    def call(self, type_name: str, name: str, **fields: Any) -> Any:
        client = self.client.create_client(type_name, name)
        assert client.wait_for_service(10.0), name
        return client.call(self.msg(f"{type_name}_Request", **fields), 30.0)

    def pose(self, T: np.ndarray) -> Any:
        q = mat_to_quat(T[:3, :3])
        return self.msg(
            "geometry_msgs/msg/Pose",
            position=self.msg("geometry_msgs/msg/Point", x=float(T[0, 3]), y=float(T[1, 3]), z=float(T[2, 3])),
            orientation=self.msg("geometry_msgs/msg/Quaternion", w=float(q[0]), x=float(q[1]), y=float(q[2]),
                                 z=float(q[3])),
        )  # fmt: skip

    def close(self) -> None:
        for n in (self.client, self.ik_node, self.sim_node):
            n.shutdown()
        self.sim.close()


@pytest.fixture(scope="module")
def graph(graph_backend: GraphBackend) -> Iterator[Graph]:
    g = Graph(graph_backend)
    yield g
    g.close()


def test_fk_ik_fk_and_unreachable_targets(graph: Graph) -> None:
    kin = ArmKinematics.from_urdf()
    q = kin.random_q(8, torch.Generator().manual_seed(4))
    T = kin.fk(q).numpy()
    for i in range(len(T)):
        res = graph.call("so101_msgs/srv/SolveIK", "/so101/solve_ik", target=graph.pose(T[i]), partial_pose=True)
        assert res.success, res.message
        got = kin.fk(torch.tensor([list(res.joints)], dtype=torch.float64))[0].numpy()
        assert np.linalg.norm(got[:3, 3] - T[i, :3, 3]) < 1e-3 and res.position_error < 1e-3
        assert np.degrees(np.arccos(np.clip(got[:3, 2] @ T[i, :3, 2], -1, 1))) < 2.0
    far = T[0].copy()
    far[:3, 3] = [0.9, 0.0, 0.2]
    res = graph.call("so101_msgs/srv/SolveIK", "/so101/solve_ik", target=graph.pose(far), partial_pose=True)
    assert not res.success and "unreachable" in res.message and res.position_error > 0.3
    bad = graph.pose(T[0])
    bad.orientation.w = bad.orientation.x = bad.orientation.y = bad.orientation.z = 0.0
    res = graph.call("so101_msgs/srv/SolveIK", "/so101/solve_ik", target=bad)
    assert not res.success and "quaternion" in res.message
    res = graph.call("so101_msgs/srv/SolveIK", "/so101/solve_ik", target=graph.pose(T[0]), seed_joints=[0.1, 0.2])
    assert not res.success and "joints must be" in res.message


def test_planned_trajectory_runs_on_the_twin_and_reaches_its_goal_untouched(graph: Graph) -> None:
    rack = graph.latest("geometry_msgs/msg/PoseStamped", "/sim/objects/rack/pose")
    states = graph.latest("sensor_msgs/msg/JointState", "/joint_states")
    r0 = rack().pose.position
    above = np.eye(4)  # jaws 45° down toward the rack, 8 cm above its top centre
    radial = np.array([r0.x, r0.y, 0.0]) / np.hypot(r0.x, r0.y)
    z = radial * np.sin(np.pi / 4) - np.array([0.0, 0.0, np.cos(np.pi / 4)])
    y = np.cross(z, radial) / np.linalg.norm(np.cross(z, radial))
    above[:3, :3] = np.stack([-np.cross(y, z), -y, z], axis=1)
    above[:3, 3] = [r0.x, r0.y, r0.z + 0.04 + 0.08]
    time.sleep(0.5)  # the planner has seen the joint states and object poses
    plan = graph.call(
        "so101_msgs/srv/PlanMotion", "/so101/plan_motion", use_goal_pose=True, goal_pose=graph.pose(above)
    )
    assert plan.success, plan.message
    traj = plan.trajectory
    assert list(traj.joint_names)[:5] == ["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll"]
    pos = np.array([list(p.positions) for p in traj.points])
    t = np.array([to_s(p.time_from_start) for p in traj.points])
    assert np.all(np.diff(t) > 0) and np.max(np.abs(np.diff(pos, axis=0)) / np.diff(t)[:, None]) <= 1.0 + 1e-6
    action = graph.client.create_action_client(FJT, "/arm_controller/follow_joint_trajectory")
    assert action.wait_for_server(10.0)
    status, result = action.send_goal(graph.msg(f"{FJT}_Goal", trajectory=traj)).result(60.0)
    assert (status, result.error_code) == (SUCCEEDED, 0), result.error_string
    wait_until(lambda: np.allclose(np.asarray(states().position)[:5], pos[-1], atol=0.05), 10.0, "the plan's end")
    np.testing.assert_allclose(np.asarray(states().position)[:5], pos[-1], atol=0.05)
    r1 = rack().pose.position
    assert np.hypot(r1.x - r0.x, r1.y - r0.y) < 1e-3  # nothing hit the rack
    kin = ArmKinematics.from_urdf()
    tip = kin.fk(torch.tensor([pos[-1]], dtype=torch.float64))[0].numpy()
    assert np.linalg.norm(tip[:3, 3] - above[:3, 3]) < 1e-3
    # a goal inside the mat is refused, not planned
    low = above.copy()
    low[2, 3] = -0.02
    plan = graph.call("so101_msgs/srv/PlanMotion", "/so101/plan_motion", use_goal_pose=True, goal_pose=graph.pose(low))
    assert not plan.success and plan.message
