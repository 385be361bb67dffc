"""ROS 2 launch file for ``demo``; nodes and arguments are data in ``so101_bringup.launch.descriptions``.

Same launch without ROS: ``so101 launch demo [name:=value ...]``.
"""

from typing import Any

from so101_bringup.launch.catalog import generate_for


def generate_launch_description() -> Any:
    return generate_for("demo")
