"""ament_python package so101_cli (description below)."""

from setuptools import find_packages, setup

PACKAGE = "so101_cli"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
    ],
    install_requires=[
        "nodegraph",
        "so101_core",
        "so101_hardware",
        "so101_nodes",
        "so101_bringup",
        "so101_skillgen",
        "so101_dataset",
        "so101_policy",
        "so101_pipeline",
        "typer",
        "rich",
        "matplotlib",
    ],
    zip_safe=False,
    maintainer="so101 developers",
    maintainer_email="dev@so101.dev",
    description="The so101 command and the benchmark runners",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={"console_scripts": ["so101 = so101_cli.main:main"]},
)
