"""``$(arg name)`` substitutions in launch strings (the only kind supported; same syntax as ROS 2 launch)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from nodegraph.launch.errors import LaunchDescriptionError

_ARG = re.compile(r"\$\(\s*arg\s+([A-Za-z_][A-Za-z0-9_]*)\s*\)")


@dataclass(frozen=True)
class ArgRef:
    """A reference to the launch argument ``name``."""

    name: str


def parse(text: str) -> tuple[str | ArgRef, ...]:
    """Split ``text`` into literal parts and ``ArgRef``s; other ``$(...)`` forms are an error."""
    parts: list[str | ArgRef] = []
    pos = 0
    for match in _ARG.finditer(text):
        if match.start() > pos:
            parts.append(text[pos : match.start()])
        parts.append(ArgRef(match.group(1)))
        pos = match.end()
    if pos < len(text):
        parts.append(text[pos:])
    for part in parts:
        if isinstance(part, str) and "$(" in part:
            raise LaunchDescriptionError(f"unsupported substitution in {text!r}: only $(arg NAME) exists")
    return tuple(parts)


def has_substitutions(text: str) -> bool:
    return any(isinstance(part, ArgRef) for part in parse(text))


def referenced_arguments(text: str) -> set[str]:
    return {part.name for part in parse(text) if isinstance(part, ArgRef)}


def substitute(text: str, values: Mapping[str, str]) -> str:
    """Replace every ``$(arg name)`` with ``values[name]``."""
    return "".join(part if isinstance(part, str) else values[part.name] for part in parse(text))
