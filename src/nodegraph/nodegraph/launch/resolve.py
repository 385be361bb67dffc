"""Resolve a launch description for given arguments: substitutions applied, conditions evaluated, files found.

Substitution semantics follow launch_ros: a literal string parameter stays a string; a parameter value
containing ``$(arg ...)`` is read as YAML after substitution (``rate:=30`` gives an int), except inside lists,
whose items stay strings. ``ResolvedNode.ros_arguments()`` is the node's command line after the program.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nodegraph.graph.arguments import format_parameter_value
from nodegraph.launch import substitution
from nodegraph.launch.description import LaunchDescriptionData, NodeEntry, parse_bool
from nodegraph.launch.errors import LaunchArgumentError, LaunchError

ResolvedParameters = Path | dict[str, Any]
ConfigDir = Path | Callable[[], Path] | None
"""Where a description's parameter files lie: a directory, or a function giving it (called only when the
description names a file); ``None`` is an error for a description that names one."""


def config_directory(data: LaunchDescriptionData, config_dir: ConfigDir) -> Path:
    """The directory ``data``'s parameter files are relative to (``config`` when it names none)."""
    if isinstance(config_dir, Path):
        return config_dir
    if not data.uses_parameter_files():
        return Path("config")
    if config_dir is None:
        raise LaunchError(f"launch {data.name!r} names parameter files but no config directory was given")
    return config_dir()


@dataclass(frozen=True)
class ResolvedNode:
    """A node entry with every substitution applied; ``parameters`` are absolute files or flat dicts."""

    package: str
    executable: str
    name: str
    namespace: str
    parameters: tuple[ResolvedParameters, ...]
    remappings: tuple[tuple[str, str], ...]
    arguments: tuple[str, ...]
    required: bool
    ready_line: str | None = None
    ready_timeout_s: float = 60.0

    @property
    def fully_qualified_name(self) -> str:
        return f"{self.namespace.rstrip('/')}/{self.name}"

    def ros_arguments(self) -> list[str]:
        """``arguments --ros-args -r __node:=N [-r __ns:=NS] (--params-file F | -p k:=v)* (-r a:=b)*``."""
        out = [*self.arguments, "--ros-args", "-r", f"__node:={self.name}"]
        if self.namespace:
            out += ["-r", f"__ns:={self.namespace}"]
        for source in self.parameters:
            if isinstance(source, Path):
                out += ["--params-file", str(source)]
            else:
                for key, value in source.items():
                    out += ["-p", f"{key}:={format_parameter_value(value)}"]
        for old, new in self.remappings:
            out += ["-r", f"{old}:={new}"]
        return out


@dataclass(frozen=True)
class ResolvedLaunch:
    """What a launch does for one set of argument values."""

    name: str
    arguments: Mapping[str, str]
    nodes: tuple[ResolvedNode, ...]
    skipped: tuple[str, ...] = field(default=())
    """Names of nodes whose condition is false."""


def normalize_namespace(namespace: str) -> str:
    """``""`` → ``""`` (root); ``arm`` / ``/arm/`` → ``/arm``."""
    stripped = namespace.strip().strip("/")
    return f"/{stripped}" if stripped else ""


def flatten_parameters(tree: Mapping[str, Any], values: Mapping[str, str], prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts to dotted names and apply substitutions."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten_parameters(value, values, name + "."))
        elif isinstance(value, str) and substitution.has_substitutions(value):
            flat[name] = _yaml_value(substitution.substitute(value, values))
        elif isinstance(value, (list, tuple)):
            flat[name] = [substitution.substitute(v, values) if isinstance(v, str) else v for v in value]
        else:
            flat[name] = value
    return flat


def _yaml_value(text: str) -> Any:
    if not text.strip():
        return text
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return text if isinstance(value, Mapping) or value is None else value


def resolve_node(entry: NodeEntry, values: Mapping[str, str], config_dir: Path) -> ResolvedNode:
    parameters: list[ResolvedParameters] = []
    for source in entry.parameters:
        if isinstance(source, str):
            path = config_dir / substitution.substitute(source, values)
            if not path.is_file():
                raise LaunchArgumentError(f"node {entry.name!r}: parameter file not found: {path}")
            parameters.append(path)
        else:
            parameters.append(flatten_parameters(source, values))
    return ResolvedNode(
        package=entry.package,
        executable=entry.executable,
        name=entry.name,
        namespace=normalize_namespace(substitution.substitute(entry.namespace, values)),
        parameters=tuple(parameters),
        remappings=tuple(
            (substitution.substitute(old, values), substitution.substitute(new, values))
            for old, new in entry.remappings
        ),
        arguments=tuple(substitution.substitute(argument, values) for argument in entry.arguments),
        required=entry.required,
        ready_line=entry.ready_line,
        ready_timeout_s=entry.ready_timeout_s,
    )


def parse_list(value: str, what: str) -> list[str]:
    """A YAML list argument (``[ego, side]``; ``[]`` = none) as strings; ``LaunchArgumentError`` otherwise."""
    try:
        items = yaml.safe_load(value) if value.strip() else []
    except yaml.YAMLError as exc:
        raise LaunchArgumentError(f"{what} must be a YAML list like [a, b], got {value!r}: {exc}") from None
    if items is None:
        items = []
    if not isinstance(items, list):
        raise LaunchArgumentError(f"{what} must be a YAML list like [a, b], got {value!r}")
    return [str(i) for i in items]


def resolve_launch(
    data: LaunchDescriptionData, argv: Sequence[str] = (), *, config_dir: ConfigDir = None
) -> ResolvedLaunch:
    """Parse ``name:=value`` arguments, evaluate conditions, substitute (errors: ``LaunchArgumentError``)."""
    values = data.parse_arguments(argv)
    directory = config_directory(data, config_dir)
    nodes: list[ResolvedNode] = []
    skipped: list[str] = []
    for entry in data.nodes:
        if (member := entry.condition_member()) is not None:
            item, name = member
            if item not in parse_list(values[name], f"argument {name!r}"):
                skipped.append(entry.name)
                continue
        if (condition := entry.condition_argument()) is not None:
            name, negated = condition
            if parse_bool(values[name], f"argument {name!r}") == negated:
                skipped.append(entry.name)
                continue
        nodes.append(resolve_node(entry, values, directory))
    return ResolvedLaunch(data.name, values, tuple(nodes), tuple(skipped))
