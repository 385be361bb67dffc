"""ament_python package lerobot_env_so101_vial_rack: the twin's vial-rack task as a LeRobot environment plugin.

The distribution name starts with ``lerobot_env_``: LeRobot's ``register_third_party_plugins`` imports it by that
name (``lerobot-eval``, ``lerobot-train``), which registers the ``so101_vial_rack`` env type."""

from setuptools import find_packages, setup

PACKAGE = "lerobot_env_so101_vial_rack"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
    ],
    install_requires=["so101_core", "so101_policy", "numpy", "torch", "gymnasium", "lerobot"],
    zip_safe=False,
    maintainer="so101 developers",
    maintainer_email="dev@so101.dev",
    description="The so101 twin's vial-rack task as a LeRobot environment (env type so101_vial_rack)",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={"console_scripts": []},
)
