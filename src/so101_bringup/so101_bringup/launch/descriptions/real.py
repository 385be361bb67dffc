"""``real``: the real SO-101 — Feetech driver, cameras of ``config/cameras.yaml``, robot state publisher, and
optionally the leader arm + teleop and the recorder. Same topics as the ``sim`` launch."""

from nodegraph.launch.description import LaunchArgument, LaunchDescriptionData, NodeEntry
from so101_core.robot_spec import CAMERA_NAMES

from so101_bringup.launch.descriptions import node
from so101_bringup.launch.descriptions.teleop import LEADER_PARAMETERS


def camera_node(name: str) -> NodeEntry:
    """The camera node for camera ``name`` of config/cameras.yaml, started when ``cameras`` lists it."""
    parameters = {"config": "$(arg cameras_config)", "camera": name}
    return node("so101_nodes", "camera", parameters, name=f"{name}_camera", condition=f"{name} in cameras")


DESCRIPTION = LaunchDescriptionData(
    name="real",
    description="Real arm: driver (joint_states, joint_commands, FollowJointTrajectory, diagnostics), cameras, "
    "robot state publisher; optional leader/teleop and recorder.",
    arguments=(
        LaunchArgument("port", "", "serial port of the follower's bus (empty: from config/robot.yaml)"),
        LaunchArgument("robot_config", "", "robot.yaml (empty: config/robot.yaml)"),
        LaunchArgument("calibration", "", "LeRobot calibration JSON (empty: LeRobot's location for the robot id)"),
        LaunchArgument("rate", "0.0", "driver control rate [Hz] (0: robot.safety.rate_hz of robot.yaml)"),
        LaunchArgument(
            "shutdown",
            "",
            "what the arm does when the driver stops (empty: robot.follower.shutdown of robot.yaml)",
            choices=("", "hold", "torque_off", "rest_then_torque_off"),
        ),
        LaunchArgument("cameras_config", "", "cameras.yaml (empty: config/cameras.yaml)"),
        LaunchArgument(
            "cameras", f"[{', '.join(CAMERA_NAMES)}]", "cameras to start, YAML list ([] = none; as the sim launch)"
        ),
        LaunchArgument("teleop", "false", "start the leader arm and teleop", choices=("true", "false")),
        LaunchArgument("leader_port", "", "serial port of the leader arm (empty: from config/robot.yaml)"),
        LaunchArgument("leader_calibration", "", "the leader's LeRobot calibration JSON (empty: from robot.yaml)"),
        LaunchArgument("record", "false", "record the standard topics to a bag", choices=("true", "false")),
        LaunchArgument("output", "", "bag directory when recording (empty: timestamped name)"),
        LaunchArgument("namespace", "", "namespace pushed onto every node"),
    ),
    nodes=(
        node(
            "so101_nodes",
            "driver",
            {
                "port": "$(arg port)",
                "robot_config": "$(arg robot_config)",
                "calibration": "$(arg calibration)",
                "rate_hz": "$(arg rate)",
                "shutdown": "$(arg shutdown)",
            },
            required=True,
        ),
        *(camera_node(name) for name in CAMERA_NAMES),
        node("so101_nodes", "robot_state_publisher"),
        node("so101_nodes", "leader", LEADER_PARAMETERS, condition="teleop"),
        node("so101_nodes", "teleop", condition="teleop"),
        node(
            "so101_nodes",
            "recorder",
            {"all": True, "exclude": ["/robot_description"], "output": "$(arg output)"},
            condition="record",
        ),
    ),
)
