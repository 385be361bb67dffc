# ROS 2 Jazzy image for the so101 graph (rclpy backend, rmw_zenoh_cpp, launch_ros).
# Build from the repository root:  docker build -f docker/jazzy.Dockerfile -t so101:jazzy .
# Not built in this repository's CI (no Docker engine there); see README "What is verified here".
FROM ros:jazzy-ros-base

RUN apt-get update && apt-get install -y --no-install-recommends \
        ros-jazzy-rmw-zenoh-cpp ros-jazzy-control-msgs ros-jazzy-launch-ros \
        python3-pip python3-venv libegl1 libgl1 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /ws
COPY requirements/ src/so101_ws/requirements/
RUN pip3 install --break-system-packages -c src/so101_ws/requirements/constraints.txt \
        -r src/so101_ws/requirements/runtime.txt
COPY . src/so101_ws/
RUN . /opt/ros/jazzy/setup.sh && colcon build --base-paths src/so101_ws/src

ENV RMW_IMPLEMENTATION=rmw_zenoh_cpp MUJOCO_GL=egl HF_HUB_OFFLINE=1
CMD ["bash", "-c", ". /ws/install/setup.bash && ros2 launch so101_bringup demo.launch.py"]
