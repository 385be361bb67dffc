"""The ROS 2 launch converter, checked against the recording stand-in of ``launch``/``launch_ros``
(:mod:`nodegraph.testing.ros_launch`): the mapping only; running a launch file needs ``ros2 launch``."""

from __future__ import annotations

from pathlib import Path

import pytest
from nodegraph.launch.description import LaunchArgument, LaunchDescriptionData, NodeEntry
from nodegraph.launch.errors import LaunchError
from nodegraph.launch.ros_launch import to_launch_description
from nodegraph.testing import ros_launch
from nodegraph.testing.ros_launch import (
    LC,
    DeclareLaunchArgument,
    IfCondition,
    LaunchDescription,
    Node,
    PythonExpression,
    Shutdown,
    UnlessCondition,
)


@pytest.fixture(autouse=True)
def fake_ros(monkeypatch: pytest.MonkeyPatch) -> None:
    ros_launch.install(monkeypatch)


def test_mapping_of_every_field(tmp_path: Path) -> None:
    data = LaunchDescriptionData(
        "t",
        "test",
        (
            LaunchArgument("robot", None, "robot id"),
            LaunchArgument("mode", "sim", "backend", choices=("sim", "real")),
            LaunchArgument("gui", "false", "viewer"),
        ),
        (
            NodeEntry(
                "so101_bringup",
                "driver",
                "driver",
                namespace="$(arg robot)",
                parameters=("robot.yaml", "robots/$(arg robot).yaml", {"mode": "$(arg mode)", "hz": 30}),
                remappings=(("joint_states", "/$(arg robot)/joint_states"),),
                arguments=("--mode", "$(arg mode)"),
                required=True,
            ),
            NodeEntry(
                "so101_bringup",
                "viewer",
                "viewer",
                parameters=({"topics": ["/a", "/$(arg robot)/b", 3], "plain": ["x", "y"], "n": {"k": "v"}},),
                condition="not gui",
            ),
        ),
    )
    description = to_launch_description(data, config_dir=tmp_path)
    assert isinstance(description, LaunchDescription)
    declare, *_ = description.args
    assert declare[:3] == [
        DeclareLaunchArgument("robot", description="robot id"),
        DeclareLaunchArgument("mode", description="backend", default_value="sim", choices=["sim", "real"]),
        DeclareLaunchArgument("gui", description="viewer", default_value="false"),
    ]
    assert declare[3] == Node(
        package="so101_bringup",
        executable="driver",
        name="driver",
        output="screen",
        namespace=[LC("robot")],
        parameters=[
            str(tmp_path / "robot.yaml"),
            [f"{tmp_path}/", "robots/", LC("robot"), ".yaml"],  # flat: Jazzy refuses a nested PathJoin
            {"mode": [LC("mode")], "hz": 30},
        ],
        remappings=[("joint_states", ["/", LC("robot"), "/joint_states"])],
        arguments=["--mode", [LC("mode")]],
        on_exit=Shutdown(reason="required node driver exited"),
    )
    assert declare[4] == Node(
        package="so101_bringup",
        executable="viewer",
        name="viewer",
        output="screen",
        parameters=[
            {
                # a list holding a substitution becomes a list of lists: launch_ros then gives a string list
                "topics": [["/a"], ["/", LC("robot"), "/b"], ["3"]],
                "plain": ["x", "y"],
                "n": {"k": "v"},
            }
        ],
        condition=UnlessCondition(LC("gui")),
    )


def test_list_membership_condition_becomes_a_python_expression() -> None:
    data = LaunchDescriptionData(
        "t",
        "test",
        (LaunchArgument("cameras", "[ego, side]", "cameras"),),
        (NodeEntry("so101_nodes", "camera", "ego_camera", condition="ego in cameras"),),
    )
    description = to_launch_description(data)
    (node,) = [a for a in description.args[0] if isinstance(a, Node)]
    assert node.kwargs["condition"] == IfCondition(PythonExpression(["'ego' in '", LC("cameras"), "'"]))


def test_parameter_files_need_a_config_directory(tmp_path: Path) -> None:
    data = LaunchDescriptionData("t", "test", nodes=(NodeEntry("p", "e", "n", parameters=("n.yaml",)),))
    with pytest.raises(LaunchError, match="names parameter files but no config directory was given"):
        to_launch_description(data)
    (node,) = to_launch_description(data, config_dir=lambda: tmp_path).args[0]
    assert node.kwargs["parameters"] == [str(tmp_path / "n.yaml")]


def test_a_ready_line_is_not_carried_over() -> None:
    """``ros2 launch`` starts every node at once (the module docstring says why)."""
    plain = NodeEntry("so101_policy", "policy_server", "server")
    ready = NodeEntry("so101_policy", "policy_server", "server", ready_line="serving on", ready_timeout_s=5.0)
    converted = [to_launch_description(LaunchDescriptionData("t", "test", nodes=(n,))).args[0] for n in (plain, ready)]
    assert converted[0] == converted[1]
