"""``skillgen``: the ``/skillgen/generate`` action server and the ``/so101/solve_ik`` + ``/so101/plan_motion``
services, e.g. ``so101 launch skillgen workers:=4``."""

from nodegraph.launch.description import LaunchArgument, LaunchDescriptionData, NodeEntry

DESCRIPTION = LaunchDescriptionData(
    name="skillgen",
    description="SkillGen demo generation (/skillgen/generate) and the IK / planning services (/so101/...).",
    arguments=(
        LaunchArgument("config", "", "skillgen.yaml path (empty: the config directory's)"),
        LaunchArgument("dr_profile", "", "dr.yaml profile, e.g. wide (empty: the base ranges)"),
        LaunchArgument("workers", "1", "attempt workers (1: in the node's process)"),
        LaunchArgument("executor", "local", "local (processes) | ray"),
        LaunchArgument("address", "", "Ray cluster address (empty: a local Ray)"),
        LaunchArgument("ik_backend", "", "IK backend of the services (empty: ik.yaml's)"),
        LaunchArgument("namespace", "", "namespace of the nodes"),
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
        NodeEntry(
            package="so101_skillgen",
            executable="so101_ik",
            name="so101_ik",
            namespace="$(arg namespace)",
            parameters=({"backend": "$(arg ik_backend)"},),
            required=True,
        ),
    ),
)
