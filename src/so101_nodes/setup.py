"""ament_python package so101_nodes (description below)."""

from setuptools import find_packages, setup

PACKAGE = "so101_nodes"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
    ],
    install_requires=["nodegraph", "so101_core", "so101_hardware", "numpy"],
    zip_safe=False,
    maintainer="so101 developers",
    maintainer_email="dev@so101.dev",
    description="SO-101 nodes: driver, leader, teleop, cameras, twin, state publisher, expert, recorders",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={
        "console_scripts": [
            "joint_state_source = so101_nodes.joint_state_source_node:main",
            "recorder = so101_nodes.recorder_node:main",
            "sim = so101_nodes.sim_node:main",
            "robot_state_publisher = so101_nodes.robot_state_publisher_node:main",
            "driver = so101_nodes.driver_node:main",
            "leader = so101_nodes.leader_node:main",
            "teleop = so101_nodes.teleop_node:main",
            "scripted_expert = so101_nodes.scripted_expert_node:main",
            "seed_recorder = so101_nodes.seed_recorder_node:main",
            "camera = so101_nodes.camera_node:main",
        ]
    },
)
