"""``demo``: a joint-state source publishing ``joint_states`` and a recorder writing them to a bag."""

from nodegraph.launch.description import LaunchArgument, LaunchDescriptionData, NodeEntry

DESCRIPTION = LaunchDescriptionData(
    name="demo",
    description="A joint_state_source publishing joint_states and a recorder recording them.",
    arguments=(
        LaunchArgument("rate", "50", "joint_states publish rate [Hz]"),
        LaunchArgument("record", "true", "run the recorder", choices=("true", "false")),
        LaunchArgument("output", "", "bag directory (empty: the recorder picks a timestamped name)"),
        LaunchArgument("namespace", "", "namespace pushed onto every node"),
    ),
    nodes=(
        NodeEntry(
            package="so101_nodes",
            executable="joint_state_source",
            name="joint_state_source",
            namespace="$(arg namespace)",
            parameters=({"rate_hz": "$(arg rate)"},),
            required=True,
        ),
        NodeEntry(
            package="so101_nodes",
            executable="recorder",
            name="recorder",
            namespace="$(arg namespace)",
            parameters=({"topics": ["joint_states"], "output": "$(arg output)"},),
            condition="record",
        ),
    ),
)
