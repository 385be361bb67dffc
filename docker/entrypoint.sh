#!/bin/bash
# Source ROS 2 Jazzy and the colcon workspace, then run the command (default: the sim launch).
set -e
source /opt/ros/jazzy/setup.bash
source /ws/install/setup.bash
exec "$@"
