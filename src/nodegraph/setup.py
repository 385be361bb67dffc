"""ament_python package nodegraph (description below)."""

from setuptools import find_packages, setup

PACKAGE = "nodegraph"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
    ],
    package_data={"nodegraph": ["interfaces/std/*/*/*"]},
    install_requires=["numpy", "pyyaml", "eclipse-zenoh", "rosbags", "mcap", "xxhash"],
    zip_safe=False,
    maintainer="so101 developers",
    maintainer_email="dev@so101.dev",
    description="Robot-agnostic ROS 2 graph runtime: node interface, Zenoh/rclpy backends, typestore, bags, launch",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={"console_scripts": []},
)
