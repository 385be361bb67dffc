"""The launch engine: descriptions as data, their resolution, and two launchers (node processes over one
backend, ROS 2 launch files); robot-agnostic, the descriptions themselves live with the product."""
