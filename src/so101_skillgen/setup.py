"""ament_python package so101_skillgen: SkillGen demo multiplier for so101: kinematics, IK, retargeting, generation"""

from setuptools import find_packages, setup

PACKAGE = "so101_skillgen"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
    ],
    include_package_data=True,
    install_requires=["so101_core", "nodegraph", "numpy", "torch"],
    zip_safe=False,
    maintainer="so101 developers",
    maintainer_email="dev@so101.dev",
    description="SkillGen demo multiplier for so101: kinematics, IK, retargeting, generation",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={
        "console_scripts": [
            "skillgen = so101_skillgen.skillgen_node:main",
            "so101_ik = so101_skillgen.ik_service_node:main",
        ]
    },
)
