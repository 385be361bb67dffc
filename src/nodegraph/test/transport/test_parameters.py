"""Parameters from ``ros__parameters`` YAML and ``-p`` overrides, as rcl reads them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from nodegraph.graph.arguments import ArgumentError, parse_ros_arguments, ros_arguments
from nodegraph.graph.declared_params import READ_ONLY, declare_params
from nodegraph.graph.names import InvalidNameError, resolve_name
from nodegraph.graph.parameters import ParameterError, ParameterStore, parameters_from_file
from nodegraph.testing.graph import Peer
from nodegraph.transport.zenoh.context import Context

YAML = """
/**:
  ros__parameters:
    rate_hz: 15.0
    camera: top
peer_params:
  ros__parameters:
    camera: ego
    joints: [shoulder_pan, gripper]
other_node:
  ros__parameters:
    enabled: true
"""


def test_yaml_and_overrides_reach_a_node_process(context: Context, peers: list[Peer], tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text(YAML)
    peers.append(Peer("params", "--ros-args", "--params-file", str(params), "-p", "enabled:=true", "-p", "rate_hz:=60"))
    values = json.loads(peers[-1].wait_line("{"))
    assert values == {
        "rate_hz": 60.0,
        "camera": "ego",
        "enabled": True,
        "joints": ["shoulder_pan", "gripper"],
    }


def test_file_precedence_and_nesting(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("/robot/driver:\n  ros__parameters:\n    bus: {port: /dev/ttyACM0, baud: 1000000}\n"
                    "/**:\n  ros__parameters:\n    bus: {baud: 500000}\n")  # fmt: skip
    assert parameters_from_file(path, "/robot/driver") == {"bus.baud": 1000000, "bus.port": "/dev/ttyACM0"}
    assert parameters_from_file(path, "/other") == {"bus.baud": 500000}


def test_ros_arguments() -> None:
    args = parse_ros_arguments(
        ["prog-arg", "--ros-args", "-r", "__node:=arm", "-r", "__ns:=/left", "-r", "chatter:=talk",
         "-p", "x:=[1, 2]", "--log-level", "debug", "--", "tail"]
    )  # fmt: skip
    assert (args.node_name, args.namespace, args.log_level) == ("arm", "/left", "debug")
    assert args.remaps == {"chatter": "talk"}
    assert args.parameters == {"x": [1, 2]}
    assert args.remaining == ["prog-arg", "tail"]
    with pytest.raises(ArgumentError, match="name:=value"):
        parse_ros_arguments(["--ros-args", "-p", "novalue"])
    with pytest.raises(ArgumentError, match="unknown ROS argument"):
        parse_ros_arguments(["--ros-args", "--bogus"])


def test_rendered_ros_arguments_parse_back() -> None:
    params = {"cameras": ["ego", "side"], "rate": 30, "alpha": 0.2, "autostart": False, "task": "put it: there",
              "token": "", "seed": "007"}  # fmt: skip
    parsed = parse_ros_arguments(["prog-arg", *ros_arguments(params, "policy")])
    assert parsed.parameters == params and parsed.node_name == "policy" and parsed.remaining == ["prog-arg"]
    assert ros_arguments({}) == ["--ros-args"]


@dataclass(frozen=True)
class _Params:
    cameras: tuple[str, ...] = ("top",)
    rate_hz: float = 30.0
    name: str = "arm"


class _Declarer:  # what declare_params needs of a node: declare_parameter on a parameter store
    def __init__(self, overrides: dict[str, object]) -> None:
        self.store = ParameterStore(overrides)

    def declare_parameter(self, name: str, default: object, *, read_only: bool = False) -> object:
        return self.store.declare(name, default, read_only=read_only)


def test_dataclass_parameters_are_declared_read_only_with_their_defaults() -> None:
    node = _Declarer({"cameras": [""], "rate_hz": 60})  # ros2 launch's [""] for an empty list; an int widens
    params = declare_params(node, _Params, _Params(name="follower"))  # type: ignore[arg-type]
    assert params == _Params(cameras=(), rate_hz=60.0, name="follower")
    assert isinstance(params.rate_hz, float)
    assert not node.store.set({"name": "other"})[0].successful  # read once: a change is refused, not ignored
    assert declare_params(_Declarer({}), _Params) == _Params()  # type: ignore[arg-type]
    settable = _Declarer({})
    declare_params(settable, _Params, read_only=False)  # type: ignore[arg-type]
    assert settable.store.set({"name": "other"})[0].successful


@dataclass(frozen=True)
class _MixedParams:
    topics: tuple[str, ...] = ("",)  # ros2 launch's [""]: declared so, read as no topic
    compression: str = field(default="zstd", metadata=READ_ONLY)


def test_a_field_read_only_metadata_overrides_the_call() -> None:
    node = _Declarer({"topics": ["/a", ""]})
    params = declare_params(node, _MixedParams, read_only=False)  # type: ignore[arg-type]
    assert params == _MixedParams(topics=("/a",))
    assert node.store.set({"topics": ["/b"]})[0].successful
    refused = node.store.set({"compression": "lz4"})[0]
    assert not refused.successful and refused.reason == "Trying to set a read-only parameter: compression."
    assert node.store.get("compression") == "zstd"
    declared = _Declarer({})
    assert declare_params(declared, _MixedParams, read_only=False) == _MixedParams(topics=())  # type: ignore[arg-type]
    assert declared.store.get("topics") == [""]  # the declared default, as a hand-rolled [""] was


def test_parameter_types_are_checked() -> None:
    store = ParameterStore({"rate_hz": "fast", "count": 3, "gain": 2})
    with pytest.raises(ParameterError, match=r"rate_hz.*expected float, got str"):
        store.declare("rate_hz", 30.0)
    assert store.declare("count", 1) == 3
    assert store.declare("gain", 1.5) == 2.0
    with pytest.raises(ParameterError, match="declared twice"):
        store.declare("count", 1)
    with pytest.raises(ParameterError, match="not declared"):
        store.get("missing")


def test_bad_parameter_files(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="not found"):
        parameters_from_file(tmp_path / "missing.yaml", "/n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("n:\n  params: {a: 1}\n")
    with pytest.raises(ParameterError, match="no 'ros__parameters'"):
        parameters_from_file(bad, "/n")
    bad.write_text("n: [unclosed\n")
    with pytest.raises(ParameterError, match="invalid YAML"):
        parameters_from_file(bad, "/n")


def test_name_resolution() -> None:
    assert resolve_name("joint_states", "driver", "/arm") == "/arm/joint_states"
    assert resolve_name("/clock", "driver", "/arm") == "/clock"
    assert resolve_name("~/status", "driver", "/arm") == "/arm/driver/status"
    assert resolve_name("joint_states", "driver", "/", {"joint_states": "/leader/joint_states"}) == (
        "/leader/joint_states"
    )
    with pytest.raises(InvalidNameError):
        resolve_name("bad name", "n", "/")
