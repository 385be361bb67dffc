"""Robot-agnostic ROS 2 graph runtime: node interface, Zenoh and rclpy backends, typestore, bags."""
