"""Launch descriptions as plain data: arguments, nodes, their parameters and remappings.

One ``LaunchDescriptionData`` feeds both launchers: ROS 2 launch files (via ``ros_launch``) and the runner
(node processes over one backend, via ``runner``). Strings in a node's namespace, parameters,
remappings and arguments may contain ``$(arg name)``; a ``condition`` names a boolean launch argument
(``"record"``) or its negation (``"not record"``). A node with a ``ready_line`` is up once its output contains
that text: the runner starts the nodes after it only then (ROS 2 launch's ``OnProcessIO`` role, as data).
Descriptions are validated at construction.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodegraph.launch import substitution
from nodegraph.launch.errors import LaunchArgumentError, LaunchDescriptionError

ParameterSource = str | Mapping[str, Any]
"""A YAML file path relative to ``config/`` (``str``), or a dict of parameter values (nested: dotted)."""

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TRUE = ("true", "1")
_FALSE = ("false", "0")


def parse_bool(value: str, what: str) -> bool:
    """ROS launch booleans: ``true``/``false``/``1``/``0``, any case."""
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise LaunchArgumentError(f"{what} must be true or false, got {value!r}")


@dataclass(frozen=True)
class LaunchArgument:
    """A launch argument given as ``name:=value``; ``default=None`` makes it mandatory."""

    name: str
    default: str | None = None
    description: str = ""
    choices: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not _IDENTIFIER.match(self.name):
            raise LaunchDescriptionError(f"launch argument name {self.name!r} is not an identifier")
        if self.choices is not None and self.default is not None and self.default not in self.choices:
            raise LaunchDescriptionError(
                f"launch argument {self.name!r}: default {self.default!r} is not one of {list(self.choices)}"
            )


@dataclass(frozen=True)
class NodeEntry:
    """One node process: a console script ``executable`` of ``package``, run as node ``name``.

    ``ready_line``: text the node prints once it is up (e.g. a server's "serving on"); the runner waits for it,
    at most ``ready_timeout_s``, before starting the nodes after this one (``None``: up once started)."""

    package: str
    executable: str
    name: str
    namespace: str = ""
    parameters: tuple[ParameterSource, ...] = ()
    remappings: tuple[tuple[str, str], ...] = ()
    arguments: tuple[str, ...] = ()
    required: bool = False
    condition: str | None = None
    ready_line: str | None = None
    ready_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if not _IDENTIFIER.match(self.name):
            raise LaunchDescriptionError(f"node name {self.name!r} is not a valid ROS name")
        if self.ready_line is not None and not self.ready_line.strip():
            raise LaunchDescriptionError(f"node {self.name!r}: ready_line must be text, or None")
        if not self.ready_timeout_s > 0:
            raise LaunchDescriptionError(f"node {self.name!r}: ready_timeout_s must be > 0, got {self.ready_timeout_s}")
        if isinstance(self.parameters, (str, Mapping)):
            raise LaunchDescriptionError(f"node {self.name!r}: parameters must be a tuple of sources")
        for source in self.parameters:
            if not isinstance(source, (str, Mapping)):
                raise LaunchDescriptionError(
                    f"node {self.name!r}: a parameter source must be a config/ path or a dict, got {source!r}"
                )
        for remap in self.remappings:
            if len(remap) != 2 or not all(isinstance(side, str) and side for side in remap):
                raise LaunchDescriptionError(f"node {self.name!r}: remapping {remap!r} must be (from, to)")
        self.condition_argument()

    def condition_argument(self) -> tuple[str, bool] | None:
        """``(argument name, negated)`` of a boolean condition (``ARG`` / ``not ARG``), or ``None``."""
        if self.condition is None or self.condition_member() is not None:
            return None
        words = self.condition.split()
        if len(words) == 2 and words[0] == "not":
            return words[1], True
        if len(words) == 1:
            return words[0], False
        raise LaunchDescriptionError(
            f"node {self.name!r}: condition {self.condition!r} must be 'ARG' or 'not ARG' "
            "(or 'ITEM in ARG' for a YAML-list argument)"
        )

    def condition_member(self) -> tuple[str, str] | None:
        """``(item, argument name)`` of a membership condition ``ITEM in ARG`` (ARG a YAML list), or ``None``."""
        words = (self.condition or "").split()
        if len(words) == 3 and words[1] == "in":
            return words[0], words[2]
        return None

    def templates(self) -> Iterator[str]:
        """Every string of this entry that may hold ``$(arg ...)``."""
        yield self.namespace
        for source in self.parameters:
            yield from [source] if isinstance(source, str) else _strings(source)
        for remap in self.remappings:
            yield from remap
        yield from self.arguments


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


@dataclass(frozen=True)
class LaunchDescriptionData:
    """A named launch: its arguments and nodes."""

    name: str
    description: str
    arguments: tuple[LaunchArgument, ...] = ()
    nodes: tuple[NodeEntry, ...] = ()

    def __post_init__(self) -> None:
        names = [argument.name for argument in self.arguments]
        if duplicates := sorted({n for n in names if names.count(n) > 1}):
            raise LaunchDescriptionError(f"launch {self.name!r}: duplicate arguments {duplicates}")
        seen: set[tuple[str, str]] = set()
        for node in self.nodes:
            key = (node.namespace, node.name)
            if key in seen:
                raise LaunchDescriptionError(f"launch {self.name!r}: two nodes named {node.name!r}")
            seen.add(key)
            for text in node.templates():
                for ref in substitution.referenced_arguments(text):
                    if ref not in names:
                        raise LaunchDescriptionError(
                            f"launch {self.name!r}, node {node.name!r}: $(arg {ref}) is not a declared "
                            f"argument (declared: {', '.join(names) or 'none'})"
                        )
            if (member := node.condition_member()) is not None and member[1] not in names:
                raise LaunchDescriptionError(
                    f"launch {self.name!r}, node {node.name!r}: condition names undeclared argument {member[1]!r}"
                )
            if (condition := node.condition_argument()) is not None:
                argument = self.argument(condition[0]) if condition[0] in names else None
                if argument is None:
                    raise LaunchDescriptionError(
                        f"launch {self.name!r}, node {node.name!r}: condition names undeclared argument "
                        f"{condition[0]!r}"
                    )
                if argument.default is not None:
                    try:
                        parse_bool(argument.default, f"default of {argument.name!r}")
                    except LaunchArgumentError as exc:
                        raise LaunchDescriptionError(f"launch {self.name!r}: {exc}") from None

    def argument(self, name: str) -> LaunchArgument:
        for argument in self.arguments:
            if argument.name == name:
                return argument
        raise KeyError(name)

    def uses_parameter_files(self) -> bool:
        return any(isinstance(source, str) for node in self.nodes for source in node.parameters)

    def parse_arguments(self, argv: Sequence[str]) -> dict[str, str]:
        """Validate ``name:=value`` strings and fill in defaults; returns every argument's value."""
        known = {argument.name: argument for argument in self.arguments}
        values: dict[str, str] = {}
        for item in argv:
            name, sep, value = item.partition(":=")
            if not sep or not name:
                raise LaunchArgumentError(f"launch arguments are name:=value, got {item!r}")
            if name not in known:
                valid = ", ".join(sorted(known)) or "none"
                raise LaunchArgumentError(
                    f"unknown argument {name!r} for launch {self.name!r}; valid arguments: {valid}"
                )
            choices = known[name].choices
            if choices is not None and value not in choices:
                raise LaunchArgumentError(f"argument {name!r}: {value!r} is not one of {list(choices)}")
            values[name] = value
        for argument in self.arguments:
            if argument.name not in values:
                if argument.default is None:
                    raise LaunchArgumentError(
                        f"launch {self.name!r} needs argument {argument.name}:=VALUE ({argument.description})"
                    )
                values[argument.name] = argument.default
        return values

    def describe(self) -> str:
        """Human-readable argument list, like ``ros2 launch --show-args``."""
        lines = [f"{self.name}: {self.description}", "Arguments (pass as name:=value):"]
        for argument in self.arguments:
            default = "required" if argument.default is None else f"default: {argument.default!r}"
            choices = f", one of {list(argument.choices)}" if argument.choices else ""
            lines.append(f"    {argument.name}  {argument.description} ({default}{choices})")
        if not self.arguments:
            lines.append("    none")
        return "\n".join(lines)
