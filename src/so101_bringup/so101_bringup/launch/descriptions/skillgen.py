"""``skillgen``: the ``/skillgen/generate`` action server and the ``/so101/solve_ik`` + ``/so101/plan_motion``
services, e.g. ``so101 launch skillgen workers:=4``."""

from nodegraph.launch.description import LaunchArgument, LaunchDescriptionData

from so101_bringup.launch.descriptions import node

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
        node(
            "so101_skillgen",
            "skillgen",
            {
                "config": "$(arg config)",
                "dr_profile": "$(arg dr_profile)",
                "workers": "$(arg workers)",
                "executor": "$(arg executor)",
                "address": "$(arg address)",
            },
            required=True,
        ),
        node("so101_skillgen", "so101_ik", {"backend": "$(arg ik_backend)"}, required=True),
    ),
)
