"""ament_python package so101_bringup (robot side of so101)."""

from setuptools import find_packages, setup

PACKAGE = "so101_bringup"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
    ],
    include_package_data=True,
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
        ]
    },
)
