"""ROS 2 command-line arguments (``--ros-args ... [--]``), parsed the way rcl reads them.

Supported: ``-p name:=value``, ``--params-file FILE``, ``-r from:=to`` (with ``__node`` and ``__ns``),
``--log-level LEVEL``. Values are YAML scalars, as in ROS (``-p rate:=30`` is an int).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


class ArgumentError(ValueError):
    """The ROS arguments are malformed."""


@dataclass
class RosArguments:
    """What ``--ros-args`` said; ``remaining`` holds the arguments outside it (for the program)."""

    node_name: str | None = None
    namespace: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    params_files: list[Path] = field(default_factory=list)
    remaps: dict[str, str] = field(default_factory=dict)
    log_level: str | None = None
    remaining: list[str] = field(default_factory=list)


def format_parameter_value(value: Any) -> str:
    """A ``-p name:=value`` value that YAML reads back as ``value`` (strings quoted only when needed)."""
    if isinstance(value, str):
        try:
            plain = value != "" and yaml.safe_load(value) == value and "\n" not in value
        except yaml.YAMLError:
            plain = False
        return value if plain else json.dumps(value)
    return json.dumps(value)


def ros_arguments(parameters: Mapping[str, Any], node_name: str | None = None) -> list[str]:
    """``--ros-args [-r __node:=NAME] -p k:=v ...``: what :func:`parse_ros_arguments` reads back as
    ``parameters`` (and ``node_name``)."""
    out = ["--ros-args"]
    if node_name:
        out += ["-r", f"__node:={node_name}"]
    for key, value in parameters.items():
        out += ["-p", f"{key}:={format_parameter_value(value)}"]
    return out


def _split_assignment(flag: str, text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":=")
    if not sep or not name:
        raise ArgumentError(f"{flag} expects name:=value, got {text!r}")
    return name, value


def parse_ros_arguments(argv: list[str]) -> RosArguments:
    """Parse ``argv`` (without the program name)."""
    out = RosArguments()
    inside = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--ros-args":
            inside = True
        elif inside and arg == "--":
            inside = False
        elif not inside:
            out.remaining.append(arg)
        else:
            if arg in ("-p", "--param", "-r", "--remap", "--params-file", "--log-level"):
                if i + 1 >= len(argv):
                    raise ArgumentError(f"{arg} needs a value")
                value = argv[i + 1]
                i += 1
                if arg in ("-p", "--param"):
                    name, raw = _split_assignment(arg, value)
                    out.parameters[name] = yaml.safe_load(raw) if raw else ""
                elif arg in ("-r", "--remap"):
                    name, target = _split_assignment(arg, value)
                    if name == "__node" or name.endswith(":__node"):
                        out.node_name = target
                    elif name == "__ns" or name.endswith(":__ns"):
                        out.namespace = target
                    else:
                        out.remaps[name] = target
                elif arg == "--params-file":
                    out.params_files.append(Path(value))
                else:
                    out.log_level = value
            else:
                raise ArgumentError(f"unknown ROS argument {arg!r}")
        i += 1
    return out
