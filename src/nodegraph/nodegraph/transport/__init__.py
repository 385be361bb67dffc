"""Transport backends implementing the node interface (rclpy, zenoh)."""
