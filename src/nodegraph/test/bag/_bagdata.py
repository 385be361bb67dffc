"""Messages shared by the bag tests: JointState, a 640×480 rgb8 Image and a so101_msgs type, as CDR."""

from __future__ import annotations

import numpy as np
from nodegraph.interfaces.messages import make, serialize

JOINTS = ["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper"]
JS, IMG, FB = (
    "sensor_msgs/msg/JointState",
    "sensor_msgs/msg/Image",
    "so101_msgs/action/GenerateDemos_FeedbackMessage",
)


def joint_state(i: int) -> bytes:
    positions = np.arange(6, dtype=np.float64) * 0.1 + i
    return serialize(make(JS, name=JOINTS, position=positions), JS)


def image(i: int) -> bytes:
    pixels = np.full(640 * 480 * 3, i % 256, dtype=np.uint8)
    pixels[:3] = (1, 2, 3)
    return serialize(make(IMG, height=480, width=640, encoding="rgb8", step=640 * 3, data=pixels), IMG)


def feedback(i: int) -> bytes:
    msg = make(FB, feedback={"stage": f"stage-{i}", "attempted": i, "succeeded": i // 2, "eta_s": 1.5})
    return serialize(msg, FB)
