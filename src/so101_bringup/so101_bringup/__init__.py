"""so101 bringup: launch descriptions (data) for `so101 launch` and the launch_ros files in launch/."""
