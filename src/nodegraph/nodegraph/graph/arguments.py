"""ROS 2 command-line arguments (``--ros-args ... [--]``), parsed the way rcl reads them.

Supported: ``-p name:=value``, ``--params-file FILE``, ``-r from:=to`` (with ``__node`` and ``__ns``),
``--log-level LEVEL``. Values are YAML scalars, as in ROS (``-p rate:=30`` is an int).
"""

from __future__ import annotations

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
