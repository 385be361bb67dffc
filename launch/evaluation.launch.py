"""ROS 2 launch file for ``evaluation``; nodes and arguments are data in ``so101_policy.evaluation_graph``.

Same launch without ROS: ``so101 launch evaluation checkpoint:=DIR [name:=value ...]``.
"""

from typing import Any

from so101_bringup.launch.catalog import generate_for


def generate_launch_description() -> Any:
    return generate_for("evaluation")
