"""A recording stand-in of ROS 2's ``launch``/``launch_ros`` for tests of ``nodegraph.launch.ros_launch``.

ROS 2 cannot be installed everywhere the tests run, so :func:`install` swaps the real packages in
``sys.modules`` for classes that remember their constructor arguments: the lowest boundary that exists there.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest


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


def install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Put the stand-ins in ``sys.modules`` as ``launch``, ``launch.actions``, … and ``launch_ros.actions``."""
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


def python_expression_value(expression: PythonExpression, argument: str) -> str:
    """What launch's PythonExpression yields for ``expression`` when the argument's value is ``argument``."""
    (parts,) = expression.args
    text = "".join(argument if isinstance(p, LaunchConfiguration) else p for p in parts)
    return str(eval(text))  # as launch.substitutions.PythonExpression does
