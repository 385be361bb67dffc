# ROS 2 Jazzy image for the so101 graph: every package built by colcon (so101_msgs with rosidl, the Python
# packages), the launch files and config installed to share/so101_bringup, rmw_zenoh_cpp as the middleware.
# Build from the repository root:  docker build -f docker/jazzy.Dockerfile -t so101:jazzy .
# Run (sim, real, policy node): docker/README.md. Not built here (no Docker engine on the dev machines).
FROM ros:jazzy-ros-base

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update && apt-get install -y --no-install-recommends \
        ros-jazzy-rmw-zenoh-cpp ros-jazzy-control-msgs ros-jazzy-launch-ros ros-jazzy-diagnostic-msgs \
        ros-jazzy-tf2-msgs ros-jazzy-rosbag2-storage-mcap \
        python3-pip python3-venv libegl1 libgl1 libgles2 libusb-1.0-0 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /ws
# Python dependencies first (their layer survives source edits); exact versions from constraints.txt.
COPY requirements/ src/so101_ws/requirements/
RUN pip3 install --no-cache-dir --break-system-packages --ignore-installed \
        -c src/so101_ws/requirements/constraints.txt -r src/so101_ws/requirements/runtime.txt

COPY src/ src/so101_ws/src/
COPY launch/ src/so101_ws/launch/
COPY config/ src/so101_ws/config/
COPY docker/entrypoint.sh /entrypoint.sh
RUN source /opt/ros/jazzy/setup.bash && colcon build --base-paths src/so101_ws/src \
    && rm -rf build log

ENV RMW_IMPLEMENTATION=rmw_zenoh_cpp MUJOCO_GL=egl HF_HUB_OFFLINE=1 SO101_TRANSPORT=rclpy
# Calibration files (LeRobot's layout): mount the host's ~/.cache/huggingface/lerobot/calibration here.
VOLUME ["/root/.cache/huggingface/lerobot/calibration"]
ENTRYPOINT ["/entrypoint.sh"]
CMD ["ros2", "launch", "so101_bringup", "sim.launch.py"]
