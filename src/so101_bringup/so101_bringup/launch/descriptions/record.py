"""``record``: record topics to a rosbag2 (MCAP) bag, e.g. ``so101 launch record topics:=[/joint_states]``."""

from nodegraph.launch.description import LaunchArgument, LaunchDescriptionData

from so101_bringup.launch.descriptions import node

DESCRIPTION = LaunchDescriptionData(
    name="record",
    description="Record topics to a rosbag2 (MCAP) bag.",
    arguments=(
        LaunchArgument("topics", "[/joint_states]", "topics to record, as a YAML list"),
        LaunchArgument("output", "", "bag directory (empty: the recorder picks a timestamped name)"),
        LaunchArgument("namespace", "", "namespace of the recorder node"),
    ),
    nodes=(node("so101_nodes", "recorder", {"topics": "$(arg topics)", "output": "$(arg output)"}, required=True),),
)
