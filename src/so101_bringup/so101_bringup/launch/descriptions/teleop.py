"""``teleop``: the leader arm (torque off) publishing ``leader/joint_states`` and the teleop node forwarding it
to ``joint_commands`` — for the real follower (``real`` launch) or the twin (``sim`` launch), started beside it."""

from collections.abc import Mapping
from typing import Final

from nodegraph.launch.description import LaunchArgument, LaunchDescriptionData

from so101_bringup.launch.descriptions import node

LEADER_PARAMETERS: Final[Mapping[str, str]] = {
    "port": "$(arg leader_port)",
    "robot_config": "$(arg robot_config)",
    "calibration": "$(arg leader_calibration)",
}
"""The leader node's bus, robot.yaml and calibration, from its launch arguments (also the ``real`` launch's leader)."""

DESCRIPTION = LaunchDescriptionData(
    name="teleop",
    description="Leader arm and teleop (leader/joint_states -> joint_commands) for the real arm or the twin.",
    arguments=(
        LaunchArgument("leader_port", "", "serial port of the leader arm's bus (empty: from config/robot.yaml)"),
        LaunchArgument("leader_calibration", "", "the leader's LeRobot calibration JSON (empty: from robot.yaml)"),
        LaunchArgument("robot_config", "", "robot.yaml (empty: config/robot.yaml)"),
        LaunchArgument("rate", "100.0", "leader read / command rate [Hz]"),
        LaunchArgument("namespace", "", "namespace pushed onto every node"),
    ),
    nodes=(
        node("so101_nodes", "leader", {**LEADER_PARAMETERS, "rate_hz": "$(arg rate)"}, required=True),
        node("so101_nodes", "teleop", {"rate_hz": "$(arg rate)"}, required=True),
    ),
)
