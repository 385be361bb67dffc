"""ament_python package so101_bringup (robot side of so101)."""

import os
from glob import glob

from setuptools import find_packages, setup

PACKAGE = "so101_bringup"
REPO = os.path.relpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def repo_files(pattern: str) -> list[str]:
    """Files of the repository root (launch/, config/) to install under share/so101_bringup."""
    return sorted(glob(os.path.join(REPO, pattern)))


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
        ("share/" + PACKAGE + "/launch", repo_files("launch/*.launch.py")),
        ("share/" + PACKAGE + "/config", repo_files("config/*.yaml")),
        ("share/" + PACKAGE + "/config/rviz", repo_files("config/rviz/*.rviz")),
    ],
    package_data={PACKAGE: ["interfaces/std/*/*/*"]},
    install_requires=["numpy", "pyyaml", "eclipse-zenoh", "rosbags", "mcap", "xxhash", "typer", "rich"],
    zip_safe=False,
    maintainer="so101 developers",
    maintainer_email="dev@so101.dev",
    description="Robot side of so101: graph runtime (rclpy and Zenoh), drivers, MuJoCo twin, launch, CLI",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={
        "console_scripts": [
            "so101 = so101_bringup.cli.main:main",
            "joint_state_source = so101_bringup.nodes.joint_state_source_node:main",
            "recorder = so101_bringup.nodes.recorder_node:main",
            "sim = so101_bringup.nodes.sim_node:main",
            "robot_state_publisher = so101_bringup.nodes.robot_state_publisher_node:main",
            "driver = so101_bringup.nodes.driver_node:main",
            "leader = so101_bringup.nodes.leader_node:main",
            "teleop = so101_bringup.nodes.teleop_node:main",
            "scripted_expert = so101_bringup.nodes.scripted_expert_node:main",
            "seed_recorder = so101_bringup.seeds.recorder:main",
            "camera = so101_bringup.nodes.camera_node:main",
        ]
    },
)
