"""``demo``: a joint-state source publishing ``joint_states`` and a recorder writing them to a bag."""

from nodegraph.launch.description import LaunchArgument, LaunchDescriptionData

from so101_bringup.launch.descriptions import node

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
        node("so101_nodes", "joint_state_source", {"rate_hz": "$(arg rate)"}, required=True),
        node("so101_nodes", "recorder", {"topics": ["joint_states"], "output": "$(arg output)"}, condition="record"),
    ),
)
