"""Launch descriptions as data: validation, ``name:=value`` arguments, substitution, resolution, executables."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from nodegraph.graph.arguments import format_parameter_value, parse_ros_arguments
from nodegraph.launch.description import LaunchArgument, LaunchDescriptionData, NodeEntry
from nodegraph.launch.errors import (
    ExecutableNotFoundError,
    LaunchArgumentError,
    LaunchDescriptionError,
    LaunchError,
)
from nodegraph.launch.executables import EntryPointResolver, ScriptResolver
from nodegraph.launch.resolve import resolve_launch
from nodegraph.launch.substitution import ArgRef, parse, substitute

ARGS = (
    LaunchArgument("rate", "50", "publish rate"),
    LaunchArgument("mode", "sim", "backend", choices=("sim", "real")),
    LaunchArgument("record", "false", "record a bag"),
    LaunchArgument("robot", None, "robot id (mandatory)"),
    LaunchArgument("tag", "", "empty by default"),
)


def launch(*nodes: NodeEntry) -> LaunchDescriptionData:
    return LaunchDescriptionData("test", "a test launch", ARGS, nodes)


def test_substitution_parsing() -> None:
    assert parse("a$(arg x)b$( arg  y )") == ("a", ArgRef("x"), "b", ArgRef("y"))
    assert substitute("$(arg x)/$(arg x)", {"x": "ns"}) == "ns/ns"
    with pytest.raises(LaunchDescriptionError, match=r"only \$\(arg NAME\)"):
        parse("$(find so101_bringup)/config")


def test_arguments_defaults_choices_and_errors() -> None:
    data = launch()
    assert data.parse_arguments(["robot:=r1", "mode:=real"]) == {
        "rate": "50",
        "mode": "real",
        "record": "false",
        "robot": "r1",
        "tag": "",
    }
    with pytest.raises(
        LaunchArgumentError,
        match=r"unknown argument 'rat' .* valid arguments: mode, rate, record, robot, tag",
    ):
        data.parse_arguments(["robot:=r1", "rat:=3"])
    with pytest.raises(LaunchArgumentError, match=r"'mars' is not one of \['sim', 'real'\]"):
        data.parse_arguments(["robot:=r1", "mode:=mars"])
    with pytest.raises(LaunchArgumentError, match=r"needs argument robot:=VALUE \(robot id"):
        data.parse_arguments([])
    with pytest.raises(LaunchArgumentError, match="name:=value, got 'robot=r1'"):
        data.parse_arguments(["robot=r1"])
    assert "robot  robot id (mandatory) (required)" in data.describe()


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: launch(NodeEntry("p", "x", "n", arguments=("$(arg nope)",))),
            r"\$\(arg nope\) is not a declared",
        ),
        (
            lambda: launch(NodeEntry("p", "x", "n", condition="missing")),
            "condition names undeclared argument",
        ),
        (lambda: launch(NodeEntry("p", "x", "n", condition="not not rate")), "must be 'ARG' or 'not ARG'"),
        (
            lambda: launch(NodeEntry("p", "x", "n", condition="rate")),
            "default of 'rate' must be true or false",
        ),
        (lambda: launch(NodeEntry("p", "x", "n"), NodeEntry("p", "y", "n")), "two nodes named 'n'"),
        (lambda: NodeEntry("p", "x", "bad-name"), "not a valid ROS name"),
        (lambda: NodeEntry("p", "x", "n", parameters="a.yaml"), "must be a tuple"),
        (lambda: NodeEntry("p", "x", "n", remappings=(("a",),)), r"must be \(from, to\)"),
        (lambda: NodeEntry("p", "x", "n", ready_line=" "), "ready_line must be text"),
        (lambda: NodeEntry("p", "x", "n", ready_line="up", ready_timeout_s=0), "ready_timeout_s must be > 0"),
        (lambda: LaunchArgument("m", "x", choices=("a", "b")), "default 'x' is not one of"),
        (
            lambda: LaunchDescriptionData("t", "", (LaunchArgument("a"), LaunchArgument("a"))),
            "duplicate arguments",
        ),
    ],
)
def test_invalid_descriptions_are_rejected(build: object, message: str) -> None:
    with pytest.raises(LaunchDescriptionError, match=message):
        build()  # type: ignore[operator]


def test_resolution_substitutes_and_evaluates_conditions(tmp_path: Path) -> None:
    (tmp_path / "robots").mkdir()
    (tmp_path / "robots" / "r1.yaml").write_text("/**:\n  ros__parameters:\n    port: /dev/ttyACM0\n")
    data = launch(
        NodeEntry(
            "so101_bringup",
            "driver",
            "driver",
            namespace="$(arg robot)",
            parameters=(
                "robots/$(arg robot).yaml",
                {"rate": "$(arg rate)", "label": "$(arg mode)", "literal": "50", "nested": {"on": True}},
                {"topics": ["/a", "$(arg robot)/b"], "empty": "$(arg tag)"},
            ),
            remappings=(("joint_states", "$(arg robot)/joint_states"),),
            arguments=("--mode", "$(arg mode)"),
            required=True,
        ),
        NodeEntry("so101_bringup", "recorder", "recorder", condition="record"),
        NodeEntry("so101_bringup", "viewer", "viewer", condition="not record"),
    )
    resolved = resolve_launch(data, ["robot:=r1"], config_dir=tmp_path)
    assert [n.name for n in resolved.nodes] == ["driver", "viewer"] and resolved.skipped == ("recorder",)
    driver = resolved.nodes[0]
    assert driver.namespace == "/r1" and driver.fully_qualified_name == "/r1/driver" and driver.required
    assert driver.parameters == (
        tmp_path / "robots" / "r1.yaml",
        {"rate": 50, "label": "sim", "literal": "50", "nested.on": True},  # substituted values are YAML-typed
        {"topics": ["/a", "r1/b"], "empty": ""},
    )
    assert driver.ros_arguments() == [
        "--mode", "sim", "--ros-args", "-r", "__node:=driver", "-r", "__ns:=/r1",
        "--params-file", str(tmp_path / "robots" / "r1.yaml"),
        "-p", "rate:=50", "-p", "label:=sim", "-p", 'literal:="50"', "-p", "nested.on:=true",
        "-p", 'topics:=["/a", "r1/b"]', "-p", 'empty:=""',
        "-r", "joint_states:=r1/joint_states",
    ]  # fmt: skip
    # The node side (graph.arguments, what every node's main() uses) reads back exactly what was meant.
    parsed = parse_ros_arguments(driver.ros_arguments())
    assert (parsed.node_name, parsed.namespace, parsed.remaining) == ("driver", "/r1", ["--mode", "sim"])
    assert parsed.parameters == {"rate": 50, "label": "sim", "literal": "50", "nested.on": True,
                                 "topics": ["/a", "r1/b"], "empty": ""}  # fmt: skip
    assert parsed.params_files == [tmp_path / "robots" / "r1.yaml"]
    assert parsed.remaps == {"joint_states": "r1/joint_states"}

    recording = resolve_launch(data, ["robot:=r1", "record:=TRUE"], config_dir=tmp_path)
    assert [n.name for n in recording.nodes] == ["driver", "recorder"]
    with pytest.raises(LaunchArgumentError, match="argument 'record' must be true or false, got 'yes'"):
        resolve_launch(data, ["robot:=r1", "record:=yes"], config_dir=tmp_path)
    with pytest.raises(LaunchArgumentError, match=r"parameter file not found: .*robots/r2\.yaml"):
        resolve_launch(data, ["robot:=r2"], config_dir=tmp_path)


@pytest.mark.parametrize("value", ["plain", "", "50", "true", "a: b", "[x]", "null", "#x", 3, 2.5, False, [1, 2]])
def test_parameter_values_round_trip_through_yaml(value: object) -> None:
    parsed = parse_ros_arguments(["--ros-args", "-p", f"v:={format_parameter_value(value)}"])
    assert parsed.parameters["v"] == value


def test_executables_resolve_to_console_scripts_and_scripts(tmp_path: Path) -> None:
    command = EntryPointResolver()("pytest", "pytest")  # an installed distribution's console script
    assert command[1] == "-c" and "sys.argv[0] = 'pytest'" in command[2]
    ran = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert ran.returncode == 0 and "pytest" in ran.stdout + ran.stderr
    with pytest.raises(ExecutableNotFoundError, match=r"no executable 'nope'; it declares: .*pytest"):
        EntryPointResolver()("pytest", "nope")
    with pytest.raises(ExecutableNotFoundError, match="'not_a_package' is not installed"):
        EntryPointResolver()("not_a_package", "x")
    (tmp_path / "tool.py").write_text("")
    assert ScriptResolver(tmp_path)("any", "tool")[1] == str(tmp_path / "tool.py")
    with pytest.raises(ExecutableNotFoundError, match="no script"):
        ScriptResolver(tmp_path)("any", "other")


def test_a_config_directory_is_needed_only_for_parameter_files(tmp_path: Path) -> None:
    (tmp_path / "n.yaml").write_text("/**:\n  ros__parameters:\n    x: 1\n")
    files = LaunchDescriptionData("t", "test", nodes=(NodeEntry("p", "e", "n", parameters=("n.yaml",)),))
    with pytest.raises(LaunchError, match="names parameter files but no config directory was given"):
        resolve_launch(files)
    assert resolve_launch(files, config_dir=lambda: tmp_path).nodes[0].parameters == (tmp_path / "n.yaml",)
    asked: list[int] = []

    def directory() -> Path:
        asked.append(1)
        return tmp_path

    plain = LaunchDescriptionData("t", "test", nodes=(NodeEntry("p", "e", "n"),))
    assert resolve_launch(plain, config_dir=directory).nodes
    assert not asked  # the directory is looked up only when a file needs it
