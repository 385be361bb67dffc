"""ROS 2-compatible messaging over eclipse-zenoh, following rmw_zenoh_cpp's wire conventions."""
