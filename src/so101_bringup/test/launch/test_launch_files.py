"""so101's ROS 2 launch files (``launch/*.launch.py``), built from the catalog against the recording stand-in
of ``launch``/``launch_ros`` (:mod:`nodegraph.testing.ros_launch`)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from nodegraph.launch.ros_launch import to_launch_description
from nodegraph.testing import ros_launch
from nodegraph.testing.ros_launch import (
    LC,
    DeclareLaunchArgument,
    IfCondition,
    Node,
    PathJoinSubstitution,
    PythonExpression,
    Shutdown,
    python_expression_value,
)
from so101_bringup.launch.catalog import get_launch

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(autouse=True)
def fake_ros(monkeypatch: pytest.MonkeyPatch) -> None:
    ros_launch.install(monkeypatch)


@pytest.mark.parametrize(("name", "parameter", "argument"), [("sim", "cameras", "cameras"),
                                                             ("record", "topics", "topics")])  # fmt: skip
def test_an_empty_list_argument_never_reaches_launch_ros_empty(name: str, parameter: str, argument: str) -> None:
    """``ros2 launch ... 'cameras:=[]'`` was refused by launch_ros ("Expected a non-empty sequence")."""
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
        assert python_expression_value(value, "[]") == "['']"
        assert python_expression_value(value, " [] ") == "['']"
        assert python_expression_value(value, "[ego, side]") == "[ego, side]"
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
        assert python_expression_value(params["topics"], "[/a, /b]") == "[/a, /b]"


def test_the_evaluation_launch_file_builds_from_the_catalog() -> None:
    namespace = runpy.run_path(str(REPO / "launch" / "evaluation.launch.py"))
    actions = namespace["generate_launch_description"]().args[0]
    declared = {a.args[0]: a.kwargs for a in actions if isinstance(a, DeclareLaunchArgument)}
    assert "default_value" not in declared["checkpoint"] and declared["server_port"]["default_value"] == "5555"
    server, sim, policy = (a for a in actions if isinstance(a, Node))
    assert server.kwargs["arguments"][:4] == ["--checkpoint", [LC("checkpoint")], "--device", [LC("device")]]
    assert sim.kwargs["parameters"][0]["seed"] == [LC("seed")]
    assert python_expression_value(policy.kwargs["parameters"][0]["cameras"], "[top]") == "[top]"
