"""The radian ↔ LeRobot SO-101 follower unit mapping, checked against lerobot's own follower definition."""

from __future__ import annotations

import numpy as np
from so101_core.lerobot_units import LEROBOT_JOINT_NAMES, from_lerobot, to_lerobot
from so101_core.robot_spec import JOINT_NAMES


def test_round_trip_and_known_values() -> None:
    rng = np.random.default_rng(0)
    q = rng.uniform(-1.5, 1.5, size=(50, 6))
    np.testing.assert_allclose(from_lerobot(to_lerobot(q)), q, atol=1e-12)
    v = to_lerobot(np.array([np.pi / 2, 0.0, -np.pi / 4, 0.0, 0.0, -0.17453]))
    np.testing.assert_allclose(v[:5], [90.0, 0.0, -45.0, 0.0, 0.0], atol=1e-9)
    assert abs(v[5]) < 1e-3  # gripper closed end of the twin's range → 0
    assert abs(to_lerobot(np.array([0, 0, 0, 0, 0, 1.74533]))[5] - 100.0) < 1e-3


def test_names_units_and_robot_type_match_lerobot_so_follower() -> None:
    """lerobot's follower cannot be built here (its Feetech bus needs deepdiff), so read its definition:
    class name attribute, the config default, and the motor table of ``SOFollower.__init__``."""
    import inspect
    import re

    from lerobot.robots.so_follower import SO101Follower, SO101FollowerConfig
    from lerobot.robots.so_follower.so_follower import SOFollower

    assert SO101Follower.name == "so_follower"  # lerobot-record writes robot_type=robot.name
    assert SO101FollowerConfig(port="/dev/null").use_degrees is True  # arm joints in degrees
    table = dict(re.findall(r'"(\w+)": Motor\(\d, "sts3215", ([\w.]+)\)', inspect.getsource(SOFollower.__init__)))
    assert tuple(f"{m}.pos" for m in table) == LEROBOT_JOINT_NAMES  # _motors_ft = f"{motor}.pos"
    assert tuple(table) == JOINT_NAMES
    assert table["gripper"] == "MotorNormMode.RANGE_0_100"
    assert all(table[n] == "norm_mode_body" for n in JOINT_NAMES[:5])  # DEGREES when use_degrees
