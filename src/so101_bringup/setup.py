"""ament_python package so101_bringup: launch descriptions, and the repo-root launch/ and config/ files."""

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
        ("share/" + PACKAGE + "/config/arms", repo_files("config/arms/*.yaml")),
    ],
    install_requires=["nodegraph", "so101_core", "so101_nodes", "so101_policy", "pyyaml"],
    zip_safe=False,
    maintainer="so101 developers",
    maintainer_email="dev@so101.dev",
    description="Bringup of so101: launch descriptions, launch files, YAML configuration",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={"console_scripts": []},
)
