"""``sim``: the MuJoCo digital twin with the same topics as the real arm, the robot state publisher, and
optionally the recorder and RViz (RViz needs ROS 2: ``ros2 launch so101_bringup sim.launch.py rviz:=true``)."""

from nodegraph.launch.description import LaunchArgument, LaunchDescriptionData, NodeEntry
from nodegraph.launch.errors import LaunchError

from so101_bringup.launch.descriptions import node
from so101_bringup.launch.paths import config_dir

try:
    RVIZ_CONFIG = str(config_dir() / "rviz" / "so101.rviz")
except LaunchError:  # no config directory found: the user passes rviz_config:=PATH
    RVIZ_CONFIG = ""

DESCRIPTION = LaunchDescriptionData(
    name="sim",
    description="MuJoCo twin (joint_states, cameras, /clock, FollowJointTrajectory), robot state publisher, "
    "optional recorder and RViz.",
    arguments=(
        LaunchArgument("cameras", "[ego, side, top]", "cameras to render, YAML list ([] = none; CPU is slow)"),
        LaunchArgument("camera_rate", "10.0", "camera publish rate [Hz]"),
        LaunchArgument("seed", "0", "scene randomization seed of the first reset"),
        LaunchArgument(
            "robot_id", "", "arm whose identified twin to load, config/arms/<robot_id>.yaml (empty: the nominal twin)"
        ),
        LaunchArgument("real_time_factor", "1.0", "sim speed vs wall clock (0 = as fast as possible)"),
        LaunchArgument("record", "false", "record the standard topics to a bag", choices=("true", "false")),
        LaunchArgument("output", "", "bag directory when recording (empty: timestamped name)"),
        LaunchArgument(
            "rviz", "false", "start RViz with config/rviz/so101.rviz (ROS 2 only)", choices=("true", "false")
        ),
        LaunchArgument("rviz_config", RVIZ_CONFIG, "RViz config file"),
        LaunchArgument("namespace", "", "namespace pushed onto every node"),
    ),
    nodes=(
        node(
            "so101_nodes",
            "sim",
            {
                "cameras": "$(arg cameras)",
                "camera_rate_hz": "$(arg camera_rate)",
                "seed": "$(arg seed)",
                "real_time_factor": "$(arg real_time_factor)",
                "robot_id": "$(arg robot_id)",
            },
            required=True,
        ),
        node("so101_nodes", "robot_state_publisher", {"use_sim_time": True}),
        node(
            "so101_nodes",
            "recorder",
            {"all": True, "exclude": ["/robot_description"], "output": "$(arg output)", "use_sim_time": True},
            condition="record",
        ),
        NodeEntry(
            package="rviz2",
            executable="rviz2",
            name="rviz",
            arguments=("-d", "$(arg rviz_config)"),
            condition="rviz",
        ),
    ),
)
