"""JointState in and out: a command vector from a (partial) JointState, a JointState from an arm read."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from nodegraph.graph.api import Message, Node
from so101_core.arrays import F64
from so101_core.robot_spec import JOINT_NAMES
from so101_hardware.robot import ArmState


def joint_vector(msg: Any, base: F64) -> F64:
    """(6,) rad from a JointState: by name (others keep ``base``) or, without names, in canonical order.

    Raises:
        ValueError: unknown or duplicate names, wrong length, non-finite positions.
    """
    names = list(msg.name)
    pos = np.asarray(msg.position, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(pos)):
        raise ValueError(f"non-finite positions {pos.tolist()}")
    if not names:
        if pos.shape != (len(JOINT_NAMES),):
            raise ValueError(f"without names, need {len(JOINT_NAMES)} positions in canonical order, got {pos.size}")
        return pos.copy()
    if len(names) != pos.size:
        raise ValueError(f"{len(names)} names but {pos.size} positions")
    unknown = [n for n in names if n not in JOINT_NAMES]
    if unknown or len(set(names)) != len(names):
        raise ValueError(f"names must be distinct joints of {list(JOINT_NAMES)}, got {names}")
    out = np.array(base, dtype=np.float64)
    for n, v in zip(names, pos, strict=True):
        out[JOINT_NAMES.index(n)] = v
    return out


def joint_state_message(node: Node, state: ArmState) -> Message:
    """sensor_msgs/JointState of one read: canonical names, rad, rad/s, N·m (from Present_Load), stamped when the
    servos were sampled (half-way through the read; now when unknown). Joints whose servo did not answer are left
    out (a JointState with fewer names, as ROS consumers merge by name)."""
    now = node.now_ns()
    if math.isfinite(state.sampled):
        now -= max(0, round((time.monotonic() - state.sampled) * 1e9))
    header = node.message("std_msgs/msg/Header", stamp=node.stamp(now), frame_id="")
    valid = state.valid
    return node.message(
        "sensor_msgs/msg/JointState",
        header=header,
        name=[n for n, ok in zip(JOINT_NAMES, valid, strict=True) if ok],
        position=state.positions[valid].astype(np.float64),
        velocity=state.velocities[valid].astype(np.float64),
        effort=state.efforts[valid].astype(np.float64),
    )
