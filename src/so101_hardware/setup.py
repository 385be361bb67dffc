"""ament_python package so101_hardware (description below)."""

from setuptools import find_packages, setup

PACKAGE = "so101_hardware"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
    ],
    install_requires=["so101_core", "numpy", "pyyaml", "feetech-servo-sdk", "pyserial", "opencv-python-headless"],
    zip_safe=False,
    maintainer="so101 developers",
    maintainer_email="dev@so101.dev",
    description="SO-101 hardware library: Feetech bus and emulator, cameras, calibration (no transport)",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={"console_scripts": []},
)
