"""The ROS 2 launch converter, checked against a minimal stand-in of ``launch``/``launch_ros``.

ROS 2 cannot be installed here, so the real ``launch`` and ``launch_ros`` are swapped via ``sys.modules`` for
recording classes: the lowest boundary that can exist on this machine. This checks the mapping only; running
the launch files needs ``ros2 launch``.
"""

from __future__ import annotations

import runpy
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from so101_bringup.launch.description import LaunchArgument, LaunchDescriptionData, NodeEntry
from so101_bringup.launch.ros_launch import to_launch_description

REPO = Path(__file__).resolve().parents[4]


class Recorded:
    """Remembers its constructor arguments; equal to another of the same class and arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Recorded) or type(other) is not type(self):
            return False
        return (self.args, self.kwargs) == (other.args, other.kwargs)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(*{self.args!r}, **{self.kwargs!r})"


class LaunchDescription(Recorded): ...


class DeclareLaunchArgument(Recorded): ...


class Shutdown(Recorded): ...


class LaunchConfiguration(Recorded): ...


class PathJoinSubstitution(Recorded): ...


class PythonExpression(Recorded): ...


class IfCondition(Recorded): ...


class UnlessCondition(Recorded): ...


class Node(Recorded): ...


def LC(name: str) -> LaunchConfiguration:  # noqa: N802 - reads like the class it builds
    return LaunchConfiguration(name)


@pytest.fixture(autouse=True)
def fake_ros(monkeypatch: pytest.MonkeyPatch) -> None:
    modules: dict[str, dict[str, Any]] = {
        "launch": {"LaunchDescription": LaunchDescription},
        "launch.actions": {"DeclareLaunchArgument": DeclareLaunchArgument, "Shutdown": Shutdown},
        "launch.substitutions": {
            "LaunchConfiguration": LaunchConfiguration,
            "PathJoinSubstitution": PathJoinSubstitution,
            "PythonExpression": PythonExpression,
        },
        "launch.conditions": {"IfCondition": IfCondition, "UnlessCondition": UnlessCondition},
        "launch_ros": {},
        "launch_ros.actions": {"Node": Node},
    }
    for name, attributes in modules.items():
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        monkeypatch.setitem(sys.modules, name, module)


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


def _python_expression_value(expression: PythonExpression, argument: str) -> str:
    """What launch's PythonExpression yields for ``expression`` when the argument's value is ``argument``."""
    (parts,) = expression.args
    text = "".join(argument if isinstance(p, LaunchConfiguration) else p for p in parts)
    return str(eval(text))  # as launch.substitutions.PythonExpression does


@pytest.mark.parametrize(("name", "parameter", "argument"), [("sim", "cameras", "cameras"),
                                                             ("record", "topics", "topics")])  # fmt: skip
def test_an_empty_list_argument_never_reaches_launch_ros_empty(name: str, parameter: str, argument: str) -> None:
    """``ros2 launch ... 'cameras:=[]'`` was refused by launch_ros ("Expected a non-empty sequence")."""
    from so101_bringup.launch.catalog import get_launch

    description = to_launch_description(get_launch(name), config_dir=Path("/cfg"))
    values = [
        params[parameter]
        for action in description.args[0]
        if isinstance(action, Node)
        for params in action.kwargs.get("parameters", [])
        if isinstance(params, dict) and parameter in params
    ]
    assert values and all(isinstance(v, PythonExpression) for v in values)
    for value in values:
        assert _python_expression_value(value, "[]") == "['']"
        assert _python_expression_value(value, " [] ") == "['']"
        assert _python_expression_value(value, "[ego, side]") == "[ego, side]"
    assert all(not isinstance(p, PathJoinSubstitution) for n in description.args[0] if isinstance(n, Node)
               for p in n.kwargs.get("parameters", []))  # fmt: skip


@pytest.mark.parametrize("name", ["demo", "record"])
def test_launch_files_build_from_the_catalog(name: str) -> None:
    namespace = runpy.run_path(str(REPO / "launch" / f"{name}.launch.py"))
    description = namespace["generate_launch_description"]()
    actions = description.args[0]
    declared = [a.args[0] for a in actions if isinstance(a, DeclareLaunchArgument)]
    nodes = [a for a in actions if isinstance(a, Node)]
    assert "namespace" in declared and "output" in declared
    assert all(n.kwargs["package"] == "so101_nodes" for n in nodes)
    if name == "demo":
        source, recorder = nodes
        assert source.kwargs["parameters"] == [{"rate_hz": [LC("rate")]}]
        assert source.kwargs["on_exit"] == Shutdown(reason="required node joint_state_source exited")
        assert recorder.kwargs["condition"] == IfCondition(LC("record"))
        assert "on_exit" not in recorder.kwargs
    else:
        (recorder,) = nodes
        (params,) = recorder.kwargs["parameters"]
        assert params["output"] == [LC("output")]
        assert _python_expression_value(params["topics"], "[/a, /b]") == "[/a, /b]"


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
