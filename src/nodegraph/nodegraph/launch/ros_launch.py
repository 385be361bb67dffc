"""Turn a ``LaunchDescriptionData`` into a ROS 2 ``launch.LaunchDescription`` for a ROS 2 launch file.

Each argument becomes a ``DeclareLaunchArgument``, each node a ``launch_ros.actions.Node``; ``$(arg x)``
becomes ``LaunchConfiguration("x")``, a condition ``IfCondition``/``UnlessCondition``, a required node gets
``on_exit=Shutdown()``, and parameter files are joined to the config directory given.

A node's ``ready_line`` is not carried over: ``ros2 launch`` starts every node at once. (The runner's order
would take an ``OnProcessIO`` handler per ready node that starts the nodes after it, a timer for its timeout,
and the negated condition for a ready node that is skipped; not worth it for a wait that only orders start-up.)
So the nodes after a ready node must bear its absence for a while, as the policy node does the server's.

``launch`` and ``launch_ros`` are imported lazily: they exist only in a ROS 2 environment. This machine has
none, so the tests check the mapping against a minimal stand-in of those two packages (the lowest boundary
that can exist here); running the files for real needs ``ros2 launch``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nodegraph.launch import substitution
from nodegraph.launch.description import LaunchDescriptionData, NodeEntry
from nodegraph.launch.resolve import ConfigDir, config_directory


def _ros(module: str) -> Any:
    """Import a ``launch``/``launch_ros`` module at call time (they exist only where ROS 2 is installed)."""
    return importlib.import_module(module)


def _substitutions(text: str) -> str | list[Any]:
    """A plain string, or a list of strings and ``LaunchConfiguration``s that concatenate."""
    parts = substitution.parse(text)
    if not any(isinstance(part, substitution.ArgRef) for part in parts):
        return text
    launch_configuration = _ros("launch.substitutions").LaunchConfiguration
    return [part if isinstance(part, str) else launch_configuration(part.name) for part in parts]


def _list_argument(name: str) -> Any:
    """A YAML-list launch argument as a parameter value that never reaches launch_ros empty: ``[]`` becomes
    ``['']`` (launch_ros refuses an empty sequence, "Expected a non-empty sequence", and rcl's YAML parser
    cannot type one); the nodes read ``''`` entries as absent, the runner's ``[]`` and this mean the same."""
    value = _ros("launch.substitutions").LaunchConfiguration(name)
    q = "'" * 3  # the value inside a triple-quoted Python string
    expression = ["\"['']\" if " + q, value, q + ".strip() in ('[]', '') else " + q, value, q]
    return _ros("launch.substitutions").PythonExpression(expression)


def _parameter_value(value: Any, list_arguments: frozenset[str] = frozenset()) -> Any:
    if isinstance(value, Mapping):
        return {key: _parameter_value(item, list_arguments) for key, item in value.items()}
    if isinstance(value, str):
        parts = substitution.parse(value)
        if len(parts) == 1 and isinstance(parts[0], substitution.ArgRef) and parts[0].name in list_arguments:
            return _list_argument(parts[0].name)
        return _substitutions(value)
    if isinstance(value, (list, tuple)) and any(
        isinstance(item, str) and substitution.has_substitutions(item) for item in value
    ):
        # launch_ros reads a list of lists as a list of strings (a flat list would concatenate), so wrap
        # plain items too.
        wrapped = [_substitutions(item if isinstance(item, str) else str(item)) for item in value]
        return [item if isinstance(item, list) else [item] for item in wrapped]
    return list(value) if isinstance(value, tuple) else value


def _parameters(entry: NodeEntry, config: Path, list_arguments: frozenset[str]) -> list[Any]:
    out: list[Any] = []
    for source in entry.parameters:
        if isinstance(source, str):
            subs = _substitutions(source)
            # a parameter file path with substitutions: one flat list of text and substitutions, which
            # launch_ros concatenates (Jazzy's PathJoinSubstitution refuses a nested list)
            out.append(str(config / source) if isinstance(subs, str) else [f"{config}/", *subs])
        else:
            out.append(_parameter_value(source, list_arguments))
    return out


def _node(entry: NodeEntry, config: Path, list_arguments: frozenset[str] = frozenset()) -> Any:
    actions, conditions = _ros("launch.actions"), _ros("launch.conditions")
    kwargs: dict[str, Any] = {
        "package": entry.package,
        "executable": entry.executable,
        "name": entry.name,
        "output": "screen",
    }
    if entry.namespace:
        kwargs["namespace"] = _substitutions(entry.namespace)
    if entry.parameters:
        kwargs["parameters"] = _parameters(entry, config, list_arguments)
    if entry.remappings:
        kwargs["remappings"] = [(_substitutions(old), _substitutions(new)) for old, new in entry.remappings]
    if entry.arguments:
        kwargs["arguments"] = [_substitutions(argument) for argument in entry.arguments]
    if (member := entry.condition_member()) is not None:  # the YAML-list text contains the item
        item, name = member
        subs = _ros("launch.substitutions")
        expression = subs.PythonExpression([f"'{item}' in '", subs.LaunchConfiguration(name), "'"])
        kwargs["condition"] = conditions.IfCondition(expression)
    if (condition := entry.condition_argument()) is not None:
        name, negated = condition
        kind = conditions.UnlessCondition if negated else conditions.IfCondition
        kwargs["condition"] = kind(_ros("launch.substitutions").LaunchConfiguration(name))
    if entry.required:
        kwargs["on_exit"] = actions.Shutdown(reason=f"required node {entry.name} exited")
    return _ros("launch_ros.actions").Node(**kwargs)


def to_launch_description(data: LaunchDescriptionData, *, config_dir: ConfigDir = None) -> Any:
    """The ``launch.LaunchDescription`` equivalent of ``data`` (parameter files joined to ``config_dir``)."""
    directory = config_directory(data, config_dir)
    actions: list[Any] = []
    for argument in data.arguments:
        kwargs: dict[str, Any] = {"description": argument.description}
        if argument.default is not None:
            kwargs["default_value"] = argument.default
        if argument.choices is not None:
            kwargs["choices"] = list(argument.choices)
        actions.append(_ros("launch.actions").DeclareLaunchArgument(argument.name, **kwargs))
    list_arguments = frozenset(a.name for a in data.arguments if (a.default or "").strip().startswith("["))
    actions.extend(_node(entry, directory, list_arguments) for entry in data.nodes)
    return _ros("launch").LaunchDescription(actions)
