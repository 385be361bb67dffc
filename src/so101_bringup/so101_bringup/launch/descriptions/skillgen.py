"""``skillgen``: the ``/skillgen/generate`` action server, e.g. ``so101 launch skillgen workers:=4``."""

from so101_bringup.launch.description import LaunchArgument, LaunchDescriptionData, NodeEntry

DESCRIPTION = LaunchDescriptionData(
    name="skillgen",
    description="SkillGen demo generation as an action server (/skillgen/generate).",
    arguments=(
        LaunchArgument("config", "", "skillgen.yaml path (empty: the config directory's)"),
        LaunchArgument("dr_profile", "", "dr.yaml profile, e.g. wide (empty: the base ranges)"),
        LaunchArgument("workers", "1", "attempt workers (1: in the node's process)"),
        LaunchArgument("executor", "local", "local (processes) | ray"),
        LaunchArgument("address", "", "Ray cluster address (empty: a local Ray)"),
        LaunchArgument("namespace", "", "namespace of the node"),
    ),
    nodes=(
        NodeEntry(
            package="so101_skillgen",
            executable="skillgen",
            name="skillgen",
            namespace="$(arg namespace)",
            parameters=(
                {
                    "config": "$(arg config)",
                    "dr_profile": "$(arg dr_profile)",
                    "workers": "$(arg workers)",
                    "executor": "$(arg executor)",
                    "address": "$(arg address)",
                },
            ),
            required=True,
        ),
    ),
)
