"""Launch descriptions as data and the two launchers built from them: ROS 2 launch files, ``so101 launch``."""
