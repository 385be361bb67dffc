"""ament_python package so101_policy: Policy server, client, training and evaluation for so101"""

from setuptools import find_packages, setup

PACKAGE = "so101_policy"

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
        "so101_core",
        "nodegraph",
        "so101_nodes",
        "numpy",
        "torch",
        "lerobot[dataset]",
        "pyzmq",
        "msgpack",
        "mlflow",
        "matplotlib",
        "gymnasium",
    ],
    zip_safe=False,
    maintainer="so101 developers",
    maintainer_email="dev@so101.dev",
    description="Policy server, client, training and evaluation for so101",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={
        "console_scripts": [
            "policy = so101_policy.nodes.policy_node:main",
            "policy_server = so101_policy.serve:main",
        ]
    },
)
