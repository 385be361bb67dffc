"""ament_python package so101_dataset: kept demos → rendered LeRobot v3.0 / v2.1 datasets, bags, mixes, reports."""

from setuptools import find_packages, setup

PACKAGE = "so101_dataset"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
    ],
    include_package_data=True,
    # lerobot with its [dataset] extra (datasets, av): requirements/runtime.txt
    install_requires=["numpy", "pandas", "pyarrow", "matplotlib", "so101_core", "nodegraph", "so101_skillgen"],
    zip_safe=False,
    maintainer="so101 developers",
    maintainer_email="dev@so101.dev",
    description="Kept demos to rendered LeRobot v3.0 / v2.1 datasets, rosbags, co-training mixes and reports",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={"console_scripts": []},
)
