"""ament_python package so101_pipeline: the whole so101 pipeline as one resumable command"""

from setuptools import find_packages, setup

PACKAGE = "so101_pipeline"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
    ],
    include_package_data=True,
    install_requires=[
        "numpy",
        "pyyaml",
        "rich",
        "mlflow",
        "matplotlib",
        "nodegraph",
        "so101_core",
        "so101_skillgen",
        "so101_dataset",
        "so101_policy",
    ],
    zip_safe=False,
    maintainer="so101 developers",
    maintainer_email="dev@so101.dev",
    description="The whole so101 pipeline (seeds, SkillGen, dataset, train, eval, report) as one resumable command",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={"console_scripts": []},
)
